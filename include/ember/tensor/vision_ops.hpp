// Vision and distance ops on Tensor<D>: thin forwards to ember/tensor/ops/vision.hpp.
#pragma once

#include "ember/tensor/ops/vision.hpp"
#include "ember/tensor/tensor.hpp"

namespace ember {

template <int D>
Tensor<D> normalize(const Tensor<D>& x, double p = 2.0, int64_t dim = 1, double eps = 1e-12) {
  return Tensor<D>(normalize(x.dyn(), p, dim, eps));
}
/// The result drops `dim`: rank D - 1 (both inputs of rank D).
template <int D>
requires(D >= 1) Tensor<D - 1> cosine_similarity(const Tensor<D>& x1, const Tensor<D>& x2,
                                                 int64_t dim = 1, double eps = 1e-8) {
  return Tensor<D - 1>(cosine_similarity(x1.dyn(), x2.dyn(), dim, eps));
}
/// keepdim is not a template argument here: the result has rank D - 1 (PyTorch's default).
template <int D>
requires(D >= 1) Tensor<D - 1> pairwise_distance(const Tensor<D>& x1, const Tensor<D>& x2,
                                                 double p = 2.0, double eps = 1e-6) {
  return Tensor<D - 1>(pairwise_distance(x1.dyn(), x2.dyn(), p, eps, false));
}
template <int D>
requires(D >= 2) Tensor<D> cdist(const Tensor<D>& x1, const Tensor<D>& x2, double p = 2.0) {
  return Tensor<D>(cdist(x1.dyn(), x2.dyn(), p));
}

template <int D>
requires(D >= 3) Tensor<D> pixel_shuffle(const Tensor<D>& x, int64_t upscale_factor) {
  return Tensor<D>(pixel_shuffle(x.dyn(), upscale_factor));
}
template <int D>
requires(D >= 3) Tensor<D> pixel_unshuffle(const Tensor<D>& x, int64_t downscale_factor) {
  return Tensor<D>(pixel_unshuffle(x.dyn(), downscale_factor));
}

/// [N, C, H, W] -> [N, C * kh * kw, L]; unbatched [C, H, W] -> [C * kh * kw, L].
template <int D>
requires(D == 3 || D == 4) Tensor<D - 1> unfold(const Tensor<D>& x, const SpatialArg& kernel_size,
                                                const SpatialArg& dilation = {1},
                                                const SpatialArg& padding = {0},
                                                const SpatialArg& stride = {1}) {
  return Tensor<D - 1>(unfold(x.dyn(), kernel_size, dilation, padding, stride));
}
/// [N, C * kh * kw, L] -> [N, C, H, W]; unbatched [C * kh * kw, L] -> [C, H, W].
template <int D>
requires(D == 2 || D == 3) Tensor<D + 1> fold(const Tensor<D>& x, const SpatialArg& output_size,
                                              const SpatialArg& kernel_size,
                                              const SpatialArg& dilation = {1},
                                              const SpatialArg& padding = {0},
                                              const SpatialArg& stride = {1}) {
  return Tensor<D + 1>(fold(x.dyn(), output_size, kernel_size, dilation, padding, stride));
}

template <int D>
requires(D == 2 || D == 3) Tensor<D> conv1d(const Tensor<D>& x, const Tensor<3>& weight,
                                            const Tensor<1>& bias, const SpatialArg& stride,
                                            Padding padding, const SpatialArg& dilation = {1},
                                            int64_t groups = 1) {
  return Tensor<D>(conv1d(x.dyn(), weight.dyn(), bias.dyn(), stride, padding, dilation, groups));
}
template <int D>
requires(D == 3 || D == 4) Tensor<D> conv2d(const Tensor<D>& x, const Tensor<4>& weight,
                                            const Tensor<1>& bias, const SpatialArg& stride,
                                            Padding padding, const SpatialArg& dilation = {1},
                                            int64_t groups = 1) {
  return Tensor<D>(conv2d(x.dyn(), weight.dyn(), bias.dyn(), stride, padding, dilation, groups));
}
template <int D>
requires(D == 4 || D == 5) Tensor<D> conv3d(const Tensor<D>& x, const Tensor<5>& weight,
                                            const Tensor<1>& bias, const SpatialArg& stride,
                                            Padding padding, const SpatialArg& dilation = {1},
                                            int64_t groups = 1) {
  return Tensor<D>(conv3d(x.dyn(), weight.dyn(), bias.dyn(), stride, padding, dilation, groups));
}

template <int D>
requires(D == 4 || D == 5) Tensor<D> max_pool3d(const Tensor<D>& x, const SpatialArg& kernel_size,
                                                const SpatialArg& stride = {},
                                                const SpatialArg& padding = {0},
                                                const SpatialArg& dilation = {1},
                                                bool ceil_mode = false) {
  return Tensor<D>(max_pool3d(x.dyn(), kernel_size, stride, padding, dilation, ceil_mode));
}
template <int D>
requires(D == 4 || D == 5) TypedValuesIndices<D, Float> max_pool3d_with_indices(
    const Tensor<D>& x, const SpatialArg& kernel_size, const SpatialArg& stride = {},
    const SpatialArg& padding = {0}, const SpatialArg& dilation = {1}, bool ceil_mode = false) {
  ValuesIndices r =
      max_pool3d_with_indices(x.dyn(), kernel_size, stride, padding, dilation, ceil_mode);
  return {Tensor<D>(std::move(r.values)), Tensor<D, Int>(std::move(r.indices))};
}
template <int D>
requires(D == 2 || D == 3) Tensor<D> adaptive_max_pool1d(const Tensor<D>& x,
                                                         const SpatialArg& output_size) {
  return Tensor<D>(adaptive_max_pool1d(x.dyn(), output_size));
}
template <int D>
requires(D == 3 || D == 4) Tensor<D> adaptive_max_pool2d(const Tensor<D>& x,
                                                         const SpatialArg& output_size) {
  return Tensor<D>(adaptive_max_pool2d(x.dyn(), output_size));
}
template <int D>
requires(D == 4 || D == 5) Tensor<D> adaptive_max_pool3d(const Tensor<D>& x,
                                                         const SpatialArg& output_size) {
  return Tensor<D>(adaptive_max_pool3d(x.dyn(), output_size));
}
template <int D>
requires(D == 2 || D == 3) TypedValuesIndices<D, Float> adaptive_max_pool1d_with_indices(
    const Tensor<D>& x, const SpatialArg& output_size) {
  ValuesIndices r = adaptive_max_pool1d_with_indices(x.dyn(), output_size);
  return {Tensor<D>(std::move(r.values)), Tensor<D, Int>(std::move(r.indices))};
}
template <int D>
requires(D == 3 || D == 4) TypedValuesIndices<D, Float> adaptive_max_pool2d_with_indices(
    const Tensor<D>& x, const SpatialArg& output_size) {
  ValuesIndices r = adaptive_max_pool2d_with_indices(x.dyn(), output_size);
  return {Tensor<D>(std::move(r.values)), Tensor<D, Int>(std::move(r.indices))};
}
template <int D>
requires(D == 4 || D == 5) TypedValuesIndices<D, Float> adaptive_max_pool3d_with_indices(
    const Tensor<D>& x, const SpatialArg& output_size) {
  ValuesIndices r = adaptive_max_pool3d_with_indices(x.dyn(), output_size);
  return {Tensor<D>(std::move(r.values)), Tensor<D, Int>(std::move(r.indices))};
}

template <int D>
requires(D >= 3 && D <= 5) Tensor<D> interpolate(const Tensor<D>& x,
                                                 const std::vector<int64_t>& size,
                                                 InterpolateMode mode = InterpolateMode::Nearest,
                                                 bool align_corners = false) {
  return Tensor<D>(interpolate(x.dyn(), size, mode, align_corners));
}
template <int D>
requires(D >= 3 && D <= 5) Tensor<D> interpolate(const Tensor<D>& x,
                                                 const std::vector<double>& scale_factor,
                                                 InterpolateMode mode = InterpolateMode::Nearest,
                                                 bool align_corners = false) {
  return Tensor<D>(interpolate(x.dyn(), scale_factor, mode, align_corners));
}

template <int D>
requires(D == 4 || D == 5) Tensor<D> grid_sample(const Tensor<D>& x, const Tensor<D>& grid,
                                                 GridMode mode = GridMode::Bilinear,
                                                 GridPadding padding = GridPadding::Zeros,
                                                 bool align_corners = false) {
  return Tensor<D>(grid_sample(x.dyn(), grid.dyn(), mode, padding, align_corners));
}
/// theta [N, 2, 3] gives a 4-D grid, [N, 3, 4] a 5-D one: D is the grid's rank, given.
template <int D>
requires(D == 4 || D == 5) Tensor<D> affine_grid(const Tensor<3>& theta, const Shape& size,
                                                 bool align_corners = false) {
  return Tensor<D>(affine_grid(theta.dyn(), size, align_corners));
}

}  // namespace ember
