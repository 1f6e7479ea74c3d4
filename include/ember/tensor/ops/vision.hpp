// Vision and distance ops on the rank-erased tensor, with PyTorch's names, arguments and
// defaults: normalize, cosine_similarity, pairwise_distance, cdist, pixel_shuffle, unfold / fold
// (im2col / col2im), and convolutions with padding='same' / 'valid'. Every one is a composite of
// existing ops, so it runs on every backend and its gradient comes from autodiff.
#pragma once

#include <cstdint>

#include "ember/tensor/ops/conv.hpp"

namespace ember {

/// torch.nn.functional.normalize: x / max(||x||_p over dim, eps).
DynTensor normalize(const DynTensor& x, double p = 2.0, int64_t dim = 1, double eps = 1e-12);

/// torch.nn.functional.cosine_similarity over `dim` of the broadcast shape (dim removed).
/// PyTorch 1.13's formula: sum(x1 / sqrt(s1) * x2 / sqrt(s2)), s = sum(x^2) clamped at eps^2,
/// the clamp invisible to the gradient (as its in-place clamp under no_grad is).
DynTensor cosine_similarity(const DynTensor& x1, const DynTensor& x2, int64_t dim = 1,
                            double eps = 1e-8);

/// torch.nn.functional.pairwise_distance: ||x1 - x2 + eps||_p over the last dim of the
/// broadcast shape.
DynTensor pairwise_distance(const DynTensor& x1, const DynTensor& x2, double p = 2.0,
                            double eps = 1e-6, bool keepdim = false);

/// torch.cdist: x1 [..., P, M], x2 [..., R, M] -> [..., P, R] (batch dims broadcast), the p-norm
/// distance of every pair of rows. p = 2 with P or R over 25 uses PyTorch's matmul expansion
/// (||a||^2 - 2 a.b + ||b||^2, clamped at 0: faster, less exact for near rows); the rest is
/// direct. As PyTorch, the p = 2 gradient at a zero distance is 0.
DynTensor cdist(const DynTensor& x1, const DynTensor& x2, double p = 2.0);

/// torch.nn.functional.pixel_shuffle: [*, C * r^2, H, W] -> [*, C, H * r, W * r].
DynTensor pixel_shuffle(const DynTensor& x, int64_t upscale_factor);
/// torch.nn.functional.pixel_unshuffle: [*, C, H * r, W * r] -> [*, C * r^2, H, W].
DynTensor pixel_unshuffle(const DynTensor& x, int64_t downscale_factor);

/// torch.nn.functional.unfold (im2col): [N, C, H, W] (or [C, H, W]) -> [N, C * kh * kw, L],
/// every sliding block of the zero-padded input as a column, L the number of blocks.
DynTensor unfold(const DynTensor& x, const SpatialArg& kernel_size,
                 const SpatialArg& dilation = {1}, const SpatialArg& padding = {0},
                 const SpatialArg& stride = {1});
/// torch.nn.functional.fold (col2im), unfold's adjoint: [N, C * kh * kw, L] (or unbatched)
/// -> [N, C, output_size...], overlapping blocks summed.
DynTensor fold(const DynTensor& x, const SpatialArg& output_size, const SpatialArg& kernel_size,
               const SpatialArg& dilation = {1}, const SpatialArg& padding = {0},
               const SpatialArg& stride = {1});

/// PyTorch's string padding of convolutions: Same (the output keeps the input's size; stride 1;
/// an odd total pads one more on the right/bottom, as PyTorch) or Valid (no padding). Explicit
/// stands for sizes given as numbers (the nn config's default).
enum class Padding : uint8_t { Explicit, Same, Valid };

/// conv1d/2d/3d with padding='same' or 'valid' (F.conv2d(x, w, padding="same")).
DynTensor conv1d(const DynTensor& x, const DynTensor& weight, const DynTensor& bias,
                 const SpatialArg& stride, Padding padding, const SpatialArg& dilation = {1},
                 int64_t groups = 1);
DynTensor conv2d(const DynTensor& x, const DynTensor& weight, const DynTensor& bias,
                 const SpatialArg& stride, Padding padding, const SpatialArg& dilation = {1},
                 int64_t groups = 1);
DynTensor conv3d(const DynTensor& x, const DynTensor& weight, const DynTensor& bias,
                 const SpatialArg& stride, Padding padding, const SpatialArg& dilation = {1},
                 int64_t groups = 1);

/// The (left, right) padding per spatial dim that padding='same' gives a kernel of `kernel`
/// sizes with `dilation` (total dilation * (k - 1), the odd one on the right), in pad()'s order
/// (last dim first).
std::vector<int64_t> same_padding(const std::vector<int64_t>& kernel, const SpatialArg& dilation,
                                  const char* op);

}  // namespace ember
