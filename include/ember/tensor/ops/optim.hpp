// Optimizer updates as single ops: one pass over a parameter and its state where the backend
// has a fused kernel (OpFamily::Optim), the same arithmetic as tensor ops where it has not.
// Values only (nothing is recorded).
#pragma once

#include <vector>

#include "ember/core/ops.hpp"
#include "ember/tensor/dyn_tensor.hpp"

namespace ember {

/// A parameter and its Adam state: exp_avg, exp_avg_sq, and max_exp_avg_sq with amsgrad.
struct AdamTensors {
  DynTensor param, exp_avg, exp_avg_sq, max_exp_avg_sq;
};

/// One Adam/AdamW step of torch.optim (p's bias corrections are the step's): the new parameter
/// and state, as new tensors. Every tensor of the parameter's shape and device; tensors of
/// several float dtypes promote, as in PyTorch (the fused kernel wants one dtype).
AdamTensors adam_step(const AdamTensors& state, const DynTensor& grad, const AdamParams& p);

/// adam_step for many parameters at once, in place: each state's tensors get their new values in
/// their own storage (the parameters keep their addresses, as a replayed DeviceGraph needs). One
/// multi-tensor kernel per batch of contiguous same-dtype parameters where the backend has one.
void adam_step_in_place(const std::vector<AdamTensors>& states, const std::vector<DynTensor>& grads,
                        const std::vector<AdamParams>& params);

/// A parameter and its SGD momentum buffer (undefined without momentum).
struct SgdTensors {
  DynTensor param, momentum_buffer;
};

/// torch.optim's SGD step for many parameters at once, in place: each parameter (and its
/// momentum buffer, which must exist when p.momentum != 0, its values ignored when p.first) gets
/// its new value in its own storage. One multi-tensor kernel per batch of contiguous same-dtype
/// parameters where the backend has one (Cuda: f32, f64), else the tensor ops per parameter.
void sgd_step_in_place(const std::vector<SgdTensors>& states, const std::vector<DynTensor>& grads,
                       const std::vector<SgdParams>& params);

namespace detail {
/// adam_step as tensor ops: what adam_step runs on a backend without the fused kernel.
AdamTensors adam_step_composite(const AdamTensors& state, const DynTensor& grad,
                                const AdamParams& p);
/// One SGD step as tensor ops, op for op torch.optim's single-tensor SGD: the new parameter and
/// momentum buffer as new tensors.
SgdTensors sgd_step_composite(const SgdTensors& state, const DynTensor& grad, const SgdParams& p);
}  // namespace detail

}  // namespace ember
