// Vision and distance ops on the rank-erased tensor, with PyTorch's names, arguments and
// defaults: normalize, cosine_similarity, pairwise_distance, cdist, pixel_shuffle, unfold / fold
// (im2col / col2im), interpolate, grid_sample / affine_grid, 3-D and adaptive max pooling, and
// convolutions with padding='same' / 'valid', deform_conv2d. Every one is a
// composite of existing ops, so it runs on every backend and its gradient comes from autodiff.
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

/// torch.nn.functional.interpolate's modes ("nearest", "linear", "bilinear", "nearest-exact",
/// "bicubic", "trilinear", "area").
enum class InterpolateMode : uint8_t {
  Nearest,
  Linear,
  Bilinear,
  NearestExact,
  Bicubic,
  Trilinear,
  Area
};

/// Resizes the spatial dims of x ([N, C, L], [N, C, H, W] or [N, C, D, H, W]) to `size`, or by
/// `scale_factor` (output = floor(input * scale), the factor itself used for source indices as
/// PyTorch's recompute_scale_factor=None), one value for all dims or one per dim. Linear needs a
/// 3-D input, Bilinear and Bicubic 4-D, Trilinear 5-D; align_corners applies to those four.
/// Nearest is PyTorch's legacy "nearest" (floor(i * in / out)); Bicubic uses A = -0.75 and reads
/// clamped neighbours; Area is adaptive average pooling.
DynTensor interpolate(const DynTensor& x, const std::vector<int64_t>& size,
                      InterpolateMode mode = InterpolateMode::Nearest, bool align_corners = false);
DynTensor interpolate(const DynTensor& x, const std::vector<double>& scale_factor,
                      InterpolateMode mode = InterpolateMode::Nearest, bool align_corners = false);

/// torch.nn.functional.max_pool3d ([N, C, D, H, W] or unbatched); an empty `stride` means the
/// kernel size. The max_pool primitive of conv.hpp over three dims.
DynTensor max_pool3d(const DynTensor& x, const SpatialArg& kernel_size,
                     const SpatialArg& stride = {}, const SpatialArg& padding = {0},
                     const SpatialArg& dilation = {1}, bool ceil_mode = false);
ValuesIndices max_pool3d_with_indices(const DynTensor& x, const SpatialArg& kernel_size,
                                      const SpatialArg& stride = {},
                                      const SpatialArg& padding = {0},
                                      const SpatialArg& dilation = {1}, bool ceil_mode = false);
/// torch.nn.functional.adaptive_max_pool1d/2d/3d: PyTorch's windows [floor(i * in / out),
/// ceil((i + 1) * in / out)); the _with_indices forms are return_indices=True (flat indices
/// within each input plane, i64).
DynTensor adaptive_max_pool1d(const DynTensor& x, const SpatialArg& output_size);
DynTensor adaptive_max_pool2d(const DynTensor& x, const SpatialArg& output_size);
DynTensor adaptive_max_pool3d(const DynTensor& x, const SpatialArg& output_size);
ValuesIndices adaptive_max_pool1d_with_indices(const DynTensor& x, const SpatialArg& output_size);
ValuesIndices adaptive_max_pool2d_with_indices(const DynTensor& x, const SpatialArg& output_size);
ValuesIndices adaptive_max_pool3d_with_indices(const DynTensor& x, const SpatialArg& output_size);

/// grid_sample's interpolation and padding modes (PyTorch's "bilinear" / "nearest" and
/// "zeros" / "border" / "reflection").
enum class GridMode : uint8_t { Bilinear, Nearest };
enum class GridPadding : uint8_t { Zeros, Border, Reflection };

/// torch.nn.functional.grid_sample: samples x [N, C, H, W] (or [N, C, D, H, W]) at the
/// normalized coordinates of grid [N, H_out, W_out, 2] (or [N, D_out, H_out, W_out, 3]), whose
/// last dim lists x (width) first; -1 and 1 are the outer pixels' centres with align_corners,
/// their outer edges without. Differentiable in x and (bilinear) in the grid; nearest rounds
/// half to even and gives the grid no gradient, as PyTorch.
DynTensor grid_sample(const DynTensor& x, const DynTensor& grid, GridMode mode = GridMode::Bilinear,
                      GridPadding padding = GridPadding::Zeros, bool align_corners = false);
/// torch.nn.functional.affine_grid: the grid [N, H, W, 2] (or [N, D, H, W, 3]) of theta
/// [N, 2, 3] (or [N, 3, 4]) applied to the normalized output coordinates of `size`.
DynTensor affine_grid(const DynTensor& theta, const Shape& size, bool align_corners = false);

/// The (left, right) padding per spatial dim that padding='same' gives a kernel of `kernel`
/// sizes with `dilation` (total dilation * (k - 1), the odd one on the right), in pad()'s order
/// (last dim first).
std::vector<int64_t> same_padding(const std::vector<int64_t>& kernel, const SpatialArg& dilation,
                                  const char* op);

/// torchvision.ops.deform_conv2d: a 2-D convolution whose kernel taps are moved per output
/// position by `offset` [N, 2 * offset_groups * kh * kw, H_out, W_out] ((dy, dx) per tap) and read
/// by bilinear interpolation (points outside the plane read 0); `mask` [N, offset_groups * kh *
/// kw, H_out, W_out], when defined, scales each tap (DCNv2). weight [out, in / groups, kh, kw];
/// groups = in / weight.size(1) and offset_groups from offset's channels, as torchvision.
/// `bias` ([out]) and `mask` may be undefined tensors.
DynTensor deform_conv2d(const DynTensor& x, const DynTensor& offset, const DynTensor& weight,
                        const DynTensor& bias = {}, const SpatialArg& stride = {1},
                        const SpatialArg& padding = {0}, const SpatialArg& dilation = {1},
                        const DynTensor& mask = {});

}  // namespace ember
