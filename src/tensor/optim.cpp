// The Adam step: validation, then the backend's fused kernel (OpFamily::Optim) when it has one,
// or the same arithmetic as 13 tensor ops (adam_step_composite) when it has not. The in-place
// SGD step: the backend's multi-tensor kernel where it has one, else tensor ops per parameter.
#include "ember/tensor/ops/optim.hpp"

#include "ember/autodiff/autodiff.hpp"
#include "ember/tensor/device_graph.hpp"
#include "ember/tensor/ops/creation.hpp"
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

SgdTensors sgd_step_composite(const SgdTensors& s, const DynTensor& grad, const SgdParams& p) {
  auto guard = no_grad();
  const DynTensor param = detach(s.param);
  DynTensor g = detach(grad);
  if (p.weight_decay != 0) g = add_scaled(g, param, p.weight_decay);
  SgdTensors out;
  if (p.momentum != 0) {
    out.momentum_buffer =
        p.first ? clone(g)
                : add_scaled(mul(detach(s.momentum_buffer), p.momentum), g, 1 - p.dampening);
    g = p.nesterov ? add_scaled(g, out.momentum_buffer, p.momentum) : out.momentum_buffer;
  }
  out.param = add_scaled(param, g, -p.lr);
  return out;
}

}  // namespace detail

namespace {

// The in-place steps take one gradient and one set of constants per parameter.
void check_counts(size_t states, size_t grads, size_t params, const char* op) {
  EMBER_CHECK(states == grads && states == params, "[", op, "] ", states, " parameters, ", grads,
              " gradients and ", params, " step constants: one each");
}

// Checks one parameter's tensors; whether they share the parameter's dtype.
bool check_adam_inputs(const AdamTensors& s, const DynTensor& grad, const AdamParams& p,
                       const char* op) {
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
  return one_dtype;
}

}  // namespace

AdamTensors adam_step(const AdamTensors& s, const DynTensor& grad, const AdamParams& p) {
  const bool one_dtype = check_adam_inputs(s, grad, p, "adam_step");
  // Mixed dtypes promote, as in PyTorch: only the composite does that.
  const bool fused =
      one_dtype && detail::backend_of(s.param).supports(OpFamily::Optim, s.param.dtype());
  return fused ? adam_step_fused(s, grad, p) : detail::adam_step_composite(s, grad, p);
}

void adam_step_in_place(const std::vector<AdamTensors>& states, const std::vector<DynTensor>& grads,
                        const std::vector<AdamParams>& params) {
  constexpr const char* op = "adam_step_in_place";
  check_counts(states.size(), grads.size(), params.size(), op);
  auto guard = no_grad();
  // Everything is checked before anything is written: a bad input updates nothing.
  std::vector<char> one_dtype(states.size());
  for (size_t i = 0; i < states.size(); ++i) {
    one_dtype[i] = check_adam_inputs(states[i], grads[i], params[i], op);
  }
  // The backend's multi-tensor kernel takes contiguous tensors of one float dtype per batch;
  // any other parameter takes adam_step and has its results written back.
  std::vector<Backend::AdamStepItem> batch;
  std::vector<DynTensor> keep;  // contiguous gradients, alive until the batch is queued
  for (size_t i = 0; i < states.size(); ++i) {
    const AdamTensors& s = states[i];
    const DynTensor* ts[] = {&s.param, &s.exp_avg, &s.exp_avg_sq, &s.max_exp_avg_sq};
    bool contiguous_state = true;
    for (const DynTensor* t : ts) {
      if (t->defined()) contiguous_state = contiguous_state && t->is_contiguous();
    }
    const Backend& be = detail::backend_of(s.param);
    const bool multi = one_dtype[i] && contiguous_state &&
                       be.supports(OpFamily::Optim, s.param.dtype()) &&
                       (batch.empty() || (batch.front().param.device() == s.param.device() &&
                                          batch.front().param.dtype == s.param.dtype() &&
                                          batch.front().params.amsgrad == params[i].amsgrad &&
                                          batch.front().params.decoupled == params[i].decoupled));
    if (multi) {
      const DynTensor g = contiguous(detach(grads[i]));
      keep.push_back(g);
      batch.push_back(
          {detach(s.param).raw(), g.raw(), detach(s.exp_avg).raw(), detach(s.exp_avg_sq).raw(),
           params[i].amsgrad ? detach(s.max_exp_avg_sq).raw() : RawTensor(), params[i]});
      continue;
    }
    const AdamTensors next = adam_step(s, grads[i], params[i]);
    copy_into(s.param, next.param);
    copy_into(s.exp_avg, next.exp_avg);
    copy_into(s.exp_avg_sq, next.exp_avg_sq);
    if (params[i].amsgrad) copy_into(s.max_exp_avg_sq, next.max_exp_avg_sq);
  }
  if (!batch.empty()) detail::backend_for(batch.front().param.device()).adam_step_multi(batch);
}

void sgd_step_in_place(const std::vector<SgdTensors>& states, const std::vector<DynTensor>& grads,
                       const std::vector<SgdParams>& params) {
  constexpr const char* op = "sgd_step_in_place";
  check_counts(states.size(), grads.size(), params.size(), op);
  auto guard = no_grad();
  // Everything is checked before anything is written: a bad input updates nothing.
  std::vector<char> one_dtype(states.size());
  for (size_t i = 0; i < states.size(); ++i) {
    const SgdTensors& s = states[i];
    const bool momentum = params[i].momentum != 0;
    one_dtype[i] = 1;
    for (const DynTensor* t : {&s.param, &grads[i], &s.momentum_buffer}) {
      if (t == &s.momentum_buffer && !momentum) break;
      detail::check_defined(*t, op, t == &s.momentum_buffer ? "momentum_buffer" : "input");
      detail::check_same_device(s.param, *t, op);
      EMBER_CHECK(t->shape() == s.param.shape() && is_floating(t->dtype()), "[", op,
                  "] every tensor must match the parameter's ", s.param.shape(), " ",
                  s.param.dtype(), ", got ", t->shape(), " ", t->dtype());
      one_dtype[i] = one_dtype[i] && t->dtype() == s.param.dtype();
    }
  }
  // The multi-tensor kernel takes contiguous tensors of one dtype on the first such parameter's
  // device and dtype; the others (and all of them where the backend has no kernel) run the ops.
  std::vector<Backend::SgdStepItem> batch;
  std::vector<size_t> in_batch;
  std::vector<DynTensor> keep;  // contiguous gradients, alive until the batch is queued
  for (size_t i = 0; i < states.size(); ++i) {
    const SgdTensors& s = states[i];
    const bool momentum = params[i].momentum != 0;
    const bool fits = one_dtype[i] && s.param.is_contiguous() &&
                      (!momentum || s.momentum_buffer.is_contiguous()) &&
                      (batch.empty() || (batch.front().param.device() == s.param.device() &&
                                         batch.front().param.dtype == s.param.dtype()));
    if (!fits) continue;
    const DynTensor g = contiguous(detach(grads[i]));
    keep.push_back(g);
    batch.push_back({detach(s.param).raw(), g.raw(),
                     momentum ? detach(s.momentum_buffer).raw() : RawTensor(), params[i]});
    in_batch.push_back(i);
  }
  std::vector<char> done(states.size(), 0);
  if (!batch.empty() && detail::backend_for(batch.front().param.device()).sgd_step_multi(batch)) {
    for (size_t i : in_batch) done[i] = 1;
  }
  for (size_t i = 0; i < states.size(); ++i) {
    if (done[i]) continue;
    const SgdTensors next = detail::sgd_step_composite(states[i], grads[i], params[i]);
    copy_into(detach(states[i].param), next.param);
    if (params[i].momentum != 0) {
      copy_into(detach(states[i].momentum_buffer), next.momentum_buffer);
    }
  }
}

}  // namespace ember
