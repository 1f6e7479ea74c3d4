// Front end of the fused optimizer updates: validation, contiguous operands, fresh outputs.
#include "ember/tensor/ops/optim.hpp"

#include "ember/autodiff/autodiff.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "internal.hpp"

namespace ember {

bool has_fused_adam(Device device, DType dtype) {
  return detail::backend_for(device).supports(OpFamily::Optim, dtype);
}

AdamTensors adam_step(const AdamTensors& s, const DynTensor& grad, const AdamParams& p) {
  const char* op = "adam_step";
  const DynTensor* inputs[] = {&s.param, &grad, &s.exp_avg, &s.exp_avg_sq};
  for (const DynTensor* t : inputs) {
    detail::check_defined(*t, op);
    detail::check_same_device(s.param, *t, op);
    EMBER_CHECK(t->shape() == s.param.shape() && t->dtype() == s.param.dtype(), "[", op,
                "] every tensor must match the parameter's ", s.param.shape(), " ", s.param.dtype(),
                ", got ", t->shape(), " ", t->dtype());
  }
  if (p.amsgrad) {
    detail::check_defined(s.max_exp_avg_sq, op, "max_exp_avg_sq");
    EMBER_CHECK(
        s.max_exp_avg_sq.shape() == s.param.shape() && s.max_exp_avg_sq.dtype() == s.param.dtype(),
        "[", op, "] max_exp_avg_sq ", s.max_exp_avg_sq.shape(), " ", s.max_exp_avg_sq.dtype(),
        " does not match the parameter");
  }
  detail::check_supported(s.param, OpFamily::Optim, s.param.dtype(), op);
  auto in = [](const DynTensor& t) { return t.defined() ? contiguous(detach(t)) : t; };
  const DynTensor param = in(s.param), g = in(grad), m = in(s.exp_avg), v = in(s.exp_avg_sq),
                  vmax = p.amsgrad ? in(s.max_exp_avg_sq) : DynTensor();
  auto fresh = [&] {
    return detail::make_empty(param.shape(), param.dtype(), param.device(), "adam_step");
  };
  AdamTensors out{fresh(), fresh(), fresh(), p.amsgrad ? fresh() : DynTensor()};
  detail::backend_of(param).adam_step(
      param.raw(), g.raw(), m.raw(), v.raw(), vmax.defined() ? vmax.raw() : RawTensor(), p,
      out.param.raw(), out.exp_avg.raw(), out.exp_avg_sq.raw(),
      out.max_exp_avg_sq.defined() ? out.max_exp_avg_sq.raw() : RawTensor());
  return out;
}

}  // namespace ember
