// Optimizer updates as single ops: one pass over a parameter and its state where the backend
// has a fused kernel (OpFamily::Optim), the same arithmetic as tensor ops where it has not.
// Values only (nothing is recorded).
#pragma once

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

namespace detail {
/// adam_step as tensor ops: what adam_step runs on a backend without the fused kernel.
AdamTensors adam_step_composite(const AdamTensors& state, const DynTensor& grad,
                                const AdamParams& p);
}  // namespace detail

}  // namespace ember
