// Building blocks of the normalisation layers, per channel of [N, C, *] tensors (every dim but 1
// reduced). They compute values only (nothing is recorded): nn::batch_norm builds its forward
// from them and records one node whose backward uses them too. Each runs the backend's fused
// kernel (OpFamily::Norm) where it has one, and the composite below where it has not.
#pragma once

#include <array>

#include "ember/tensor/dyn_tensor.hpp"

namespace ember {

/// x as the channel ops below read it without a copy: itself when contiguous, or channels-last
/// where the backend's Norm kernels read that layout (Backend::channels_last); else a contiguous
/// copy. Untracked: for operands kept to be read again (batch norm's saved input).
DynTensor channel_operand(const DynTensor& x);
/// [2, C]: each channel's mean and biased variance (accumulated in double, two passes), f64 for
/// f64 input and f32 otherwise (16-bit inputs' statistics stay f32, as batch norm needs them).
DynTensor channel_moments(const DynTensor& x);
/// [2, C]: each channel's sum(a) and sum(a * (b - center[c])); a and b of one shape. Result
/// dtype as channel_moments'.
DynTensor channel_dot(const DynTensor& a, const DynTensor& b, const DynTensor& center);
/// a * ka[c] + b * kb[c] + k0[c] in one pass, in a's dtype (computed in f32 for 16-bit); b and
/// kb may be undefined (a * ka[c] + k0[c]).
DynTensor channel_fma(const DynTensor& a, const DynTensor& ka, const DynTensor& b,
                      const DynTensor& kb, const DynTensor& k0);

/// Batch norm's per-channel coefficients from moments [2, C] (mean, biased variance, as
/// channel_moments gives them): [3, C] = invstd = 1 / sqrt(var + eps), scale = weight * invstd
/// and shift = bias - mean * scale (weight and bias [C] or undefined: 1 and 0), in moments'
/// dtype. One small kernel where the backend has OpFamily::BatchNormCoefficients (Cuda), the
/// composite's six ops elsewhere.
DynTensor batch_norm_coefficients(const DynTensor& moments, const DynTensor& weight,
                                  const DynTensor& bias, double eps);
/// Its backward's, from d [2, C] = channel_dot(g, x, mean) (sum g, sum g (x - mean)), the
/// forward's coefficients [3, C] and moments, over `count` values a channel: [4, C] = k2 =
/// -scale * invstd^2 * d[1] / count, k3 = -scale * d[0] / count - k2 * mean (so that
/// dx = channel_fma(g, scale, x, k2, k3)), dweight = d[1] * invstd and dbias = d[0].
DynTensor batch_norm_backward_coefficients(const DynTensor& d, const DynTensor& coefficients,
                                           const DynTensor& moments, double count);

/// layer_norm over the last dim in one pass each way, where x's backend has OpFamily::LayerNorm
/// for x's dtype (Cuda: f32, f16, bf16); weight and bias f32 [D] or undefined. Values only.
bool fused_layer_norm_supported(const DynTensor& x);
struct LayerNormRows {
  DynTensor y;           // x's shape, in the dtype asked for (f32 or x's)
  DynTensor mean, rstd;  // [N] f32 over the N = numel / D rows (mean undefined for rms_norm)
};
LayerNormRows layer_norm_rows(const DynTensor& x, int64_t d, const DynTensor& weight,
                              const DynTensor& bias, double eps, DType out_dtype);
/// rms_norm on the same kernels (same condition): y = x * rstd * weight, no centring.
LayerNormRows rms_norm_rows(const DynTensor& x, int64_t d, const DynTensor& weight, double eps,
                            DType out_dtype);
/// {dx (x's dtype and shape), dweight, dbias ([D] f32; undefined unless asked for)}, of
/// layer_norm_rows or (fwd.mean undefined, no dbias) rms_norm_rows.
std::array<DynTensor, 3> layer_norm_rows_backward(const DynTensor& dy, const DynTensor& x,
                                                  const LayerNormRows& fwd, const DynTensor& weight,
                                                  bool want_dweight, bool want_dbias);

namespace detail {
/// The same values from tensor ops, in the operands' dtype, unchecked: what the ops above run on
/// a backend without the Norm kernels.
DynTensor channel_moments_composite(const DynTensor& x);
DynTensor channel_dot_composite(const DynTensor& a, const DynTensor& b, const DynTensor& center);
DynTensor channel_fma_composite(const DynTensor& a, const DynTensor& ka, const DynTensor& b,
                                const DynTensor& kb, const DynTensor& k0);
DynTensor batch_norm_coefficients_composite(const DynTensor& moments, const DynTensor& weight,
                                            const DynTensor& bias, double eps);
DynTensor batch_norm_backward_coefficients_composite(const DynTensor& d,
                                                     const DynTensor& coefficients,
                                                     const DynTensor& moments, double count);
}  // namespace detail

}  // namespace ember
