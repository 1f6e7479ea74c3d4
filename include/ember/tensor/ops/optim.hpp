// Fused optimizer updates: one pass over a parameter and its state instead of an op per term.
// Values only (nothing is recorded); src/optim uses them when the backend has them and keeps
// the composite of tensor ops as the fallback.
#pragma once

#include "ember/tensor/dyn_tensor.hpp"
#include "ember/core/ops.hpp"

namespace ember {

/// A parameter and its Adam state: exp_avg, exp_avg_sq, and max_exp_avg_sq with amsgrad.
struct AdamTensors {
  DynTensor param, exp_avg, exp_avg_sq, max_exp_avg_sq;
};

/// Whether the backend of `device` has the fused Adam step for `dtype` (Cpu: f32 and f64).
bool has_fused_adam(Device device, DType dtype);
/// One Adam/AdamW step of torch.optim (p's bias corrections are the step's): the new parameter
/// and state, as new tensors. Every tensor of one shape, dtype and device.
AdamTensors adam_step(const AdamTensors& state, const DynTensor& grad, const AdamParams& p);

}  // namespace ember
