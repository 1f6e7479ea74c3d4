// The Adam step: validation, then the backend's fused kernel (OpFamily::Optim) when it has one,
// or the same arithmetic as 13 tensor ops (adam_step_composite) when it has not.
#include "ember/tensor/ops/optim.hpp"

#include "ember/autodiff/autodiff.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "internal.hpp"

namespace ember {
namespace {

AdamTensors adam_step_fused(const AdamTensors& s, const DynTensor& grad, const AdamParams& p) {
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

// p + value * x (PyTorch's add_(x, alpha=value)).
DynTensor add_scaled(const DynTensor& p, const DynTensor& x, double value) {
  return add(p, mul(x, value));
}

}  // namespace

namespace detail {

// torch.optim's single-tensor Adam, op for op (so float64 results agree to the last bits).
AdamTensors adam_step_composite(const AdamTensors& s, const DynTensor& grad, const AdamParams& p) {
  auto guard = no_grad();
  DynTensor param = detach(s.param), g = detach(grad);
  if (p.weight_decay != 0) {
    if (p.decoupled) {
      param = mul(param, 1 - p.lr * p.weight_decay);
    } else {
      g = add_scaled(g, param, p.weight_decay);
    }
  }
  AdamTensors out;
  out.exp_avg = lerp(detach(s.exp_avg), g, 1 - p.beta1);
  out.exp_avg_sq = add_scaled(mul(detach(s.exp_avg_sq), p.beta2), mul(g, g), 1 - p.beta2);
  const double step_size = p.lr / p.bias_correction1;
  DynTensor denom;
  if (p.amsgrad) {
    out.max_exp_avg_sq = maximum(detach(s.max_exp_avg_sq), out.exp_avg_sq);
    denom = add(div(sqrt(out.max_exp_avg_sq), p.bias_correction2_sqrt), p.eps);
  } else {
    denom = add(div(sqrt(out.exp_avg_sq), p.bias_correction2_sqrt), p.eps);
  }
  out.param = add_scaled(param, div(out.exp_avg, denom), -step_size);
  return out;
}

}  // namespace detail

AdamTensors adam_step(const AdamTensors& s, const DynTensor& grad, const AdamParams& p) {
  const char* op = "adam_step";
  const DynTensor* inputs[] = {&s.param, &grad, &s.exp_avg, &s.exp_avg_sq, &s.max_exp_avg_sq};
  bool one_dtype = true;
  for (const DynTensor* t : inputs) {
    if (t == &s.max_exp_avg_sq && !p.amsgrad) break;
    detail::check_defined(*t, op, t == &s.max_exp_avg_sq ? "max_exp_avg_sq" : "input");
    detail::check_same_device(s.param, *t, op);
    EMBER_CHECK(t->shape() == s.param.shape() && is_floating(t->dtype()), "[", op,
                "] every tensor must match the parameter's ", s.param.shape(), " ", s.param.dtype(),
                ", got ", t->shape(), " ", t->dtype());
    one_dtype = one_dtype && t->dtype() == s.param.dtype();
  }
  // Mixed dtypes promote, as in PyTorch: only the composite does that.
  const bool fused =
      one_dtype && detail::backend_of(s.param).supports(OpFamily::Optim, s.param.dtype());
  return fused ? adam_step_fused(s, grad, p) : detail::adam_step_composite(s, grad, p);
}

}  // namespace ember
