// Fused building blocks of the normalisation layers, per channel of [N, C, *] tensors (every dim
// but 1 reduced). They compute values only (nothing is recorded): nn::batch_norm builds its
// forward from them and records one node whose backward uses them too.
#pragma once

#include "ember/tensor/dyn_tensor.hpp"

namespace ember {

/// Whether the backend of `device` has these kernels for `dtype` (on the Cpu: f32 and f64).
bool has_channel_kernels(Device device, DType dtype);

/// [2, C]: each channel's mean and biased variance (accumulated in double, two passes).
DynTensor channel_moments(const DynTensor& x);
/// [2, C]: each channel's sum(a) and sum(a * (b - center[c])); a and b of one shape.
DynTensor channel_dot(const DynTensor& a, const DynTensor& b, const DynTensor& center);
/// a * ka[c] + b * kb[c] + k0[c] in one pass; b and kb may be undefined (a * ka[c] + k0[c]).
DynTensor channel_fma(const DynTensor& a, const DynTensor& ka, const DynTensor& b,
                      const DynTensor& kb, const DynTensor& k0);

}  // namespace ember
