// Convolution and pooling on Tensor<D>: thin forwards to ember/tensor/ops/conv.hpp. Each takes
// the batched rank ([N, C, *spatial]) or the unbatched one ([C, *spatial]) and returns the same.
#pragma once

#include "ember/tensor/ops/conv.hpp"
#include "ember/tensor/tensor.hpp"

namespace ember {

template <int D>
requires(D == 2 ||
         D == 3) Tensor<D> conv1d(const Tensor<D>& x, const Tensor<3>& weight,
                                  const Tensor<1>& bias = {}, const SpatialArg& stride = {1},
                                  const SpatialArg& padding = {0}, const SpatialArg& dilation = {1},
                                  int64_t groups = 1, bool relu = false) {
  return Tensor<D>(
      conv1d(x.dyn(), weight.dyn(), bias.dyn(), stride, padding, dilation, groups, relu));
}
template <int D>
requires(D == 3 ||
         D == 4) Tensor<D> conv2d(const Tensor<D>& x, const Tensor<4>& weight,
                                  const Tensor<1>& bias = {}, const SpatialArg& stride = {1},
                                  const SpatialArg& padding = {0}, const SpatialArg& dilation = {1},
                                  int64_t groups = 1, bool relu = false) {
  return Tensor<D>(
      conv2d(x.dyn(), weight.dyn(), bias.dyn(), stride, padding, dilation, groups, relu));
}
template <int D>
requires(D == 4 ||
         D == 5) Tensor<D> conv3d(const Tensor<D>& x, const Tensor<5>& weight,
                                  const Tensor<1>& bias = {}, const SpatialArg& stride = {1},
                                  const SpatialArg& padding = {0}, const SpatialArg& dilation = {1},
                                  int64_t groups = 1, bool relu = false) {
  return Tensor<D>(
      conv3d(x.dyn(), weight.dyn(), bias.dyn(), stride, padding, dilation, groups, relu));
}

template <int D>
requires(D == 2 || D == 3) Tensor<D> conv_transpose1d(
    const Tensor<D>& x, const Tensor<3>& weight, const Tensor<1>& bias = {},
    const SpatialArg& stride = {1}, const SpatialArg& padding = {0},
    const SpatialArg& output_padding = {0}, int64_t groups = 1, const SpatialArg& dilation = {1}) {
  return Tensor<D>(conv_transpose1d(x.dyn(), weight.dyn(), bias.dyn(), stride, padding,
                                    output_padding, groups, dilation));
}
template <int D>
requires(D == 3 || D == 4) Tensor<D> conv_transpose2d(
    const Tensor<D>& x, const Tensor<4>& weight, const Tensor<1>& bias = {},
    const SpatialArg& stride = {1}, const SpatialArg& padding = {0},
    const SpatialArg& output_padding = {0}, int64_t groups = 1, const SpatialArg& dilation = {1}) {
  return Tensor<D>(conv_transpose2d(x.dyn(), weight.dyn(), bias.dyn(), stride, padding,
                                    output_padding, groups, dilation));
}
template <int D>
requires(D == 4 || D == 5) Tensor<D> conv_transpose3d(
    const Tensor<D>& x, const Tensor<5>& weight, const Tensor<1>& bias = {},
    const SpatialArg& stride = {1}, const SpatialArg& padding = {0},
    const SpatialArg& output_padding = {0}, int64_t groups = 1, const SpatialArg& dilation = {1}) {
  return Tensor<D>(conv_transpose3d(x.dyn(), weight.dyn(), bias.dyn(), stride, padding,
                                    output_padding, groups, dilation));
}

template <int D>
requires(D == 2 || D == 3) Tensor<D> max_pool1d(const Tensor<D>& x, const SpatialArg& kernel_size,
                                                const SpatialArg& stride = {},
                                                const SpatialArg& padding = {0},
                                                const SpatialArg& dilation = {1},
                                                bool ceil_mode = false) {
  return Tensor<D>(max_pool1d(x.dyn(), kernel_size, stride, padding, dilation, ceil_mode));
}
template <int D>
requires(D == 3 || D == 4) Tensor<D> max_pool2d(const Tensor<D>& x, const SpatialArg& kernel_size,
                                                const SpatialArg& stride = {},
                                                const SpatialArg& padding = {0},
                                                const SpatialArg& dilation = {1},
                                                bool ceil_mode = false) {
  return Tensor<D>(max_pool2d(x.dyn(), kernel_size, stride, padding, dilation, ceil_mode));
}
template <int D>
requires(D == 2 || D == 3) TypedValuesIndices<D, Float> max_pool1d_with_indices(
    const Tensor<D>& x, const SpatialArg& kernel_size, const SpatialArg& stride = {},
    const SpatialArg& padding = {0}, const SpatialArg& dilation = {1}, bool ceil_mode = false) {
  ValuesIndices r =
      max_pool1d_with_indices(x.dyn(), kernel_size, stride, padding, dilation, ceil_mode);
  return {Tensor<D>(std::move(r.values)), Tensor<D, Int>(std::move(r.indices))};
}
template <int D>
requires(D == 3 || D == 4) TypedValuesIndices<D, Float> max_pool2d_with_indices(
    const Tensor<D>& x, const SpatialArg& kernel_size, const SpatialArg& stride = {},
    const SpatialArg& padding = {0}, const SpatialArg& dilation = {1}, bool ceil_mode = false) {
  ValuesIndices r =
      max_pool2d_with_indices(x.dyn(), kernel_size, stride, padding, dilation, ceil_mode);
  return {Tensor<D>(std::move(r.values)), Tensor<D, Int>(std::move(r.indices))};
}

template <int D>
requires(D == 2 || D == 3) Tensor<D> avg_pool1d(const Tensor<D>& x, const SpatialArg& kernel_size,
                                                const SpatialArg& stride = {},
                                                const SpatialArg& padding = {0},
                                                bool ceil_mode = false,
                                                bool count_include_pad = true) {
  return Tensor<D>(avg_pool1d(x.dyn(), kernel_size, stride, padding, ceil_mode, count_include_pad));
}
template <int D>
requires(D == 3 || D == 4) Tensor<D> avg_pool2d(const Tensor<D>& x, const SpatialArg& kernel_size,
                                                const SpatialArg& stride = {},
                                                const SpatialArg& padding = {0},
                                                bool ceil_mode = false,
                                                bool count_include_pad = true) {
  return Tensor<D>(avg_pool2d(x.dyn(), kernel_size, stride, padding, ceil_mode, count_include_pad));
}

template <int D>
requires(D == 2 || D == 3) Tensor<D> adaptive_avg_pool1d(const Tensor<D>& x,
                                                         const SpatialArg& output_size) {
  return Tensor<D>(adaptive_avg_pool1d(x.dyn(), output_size));
}
template <int D>
requires(D == 3 || D == 4) Tensor<D> adaptive_avg_pool2d(const Tensor<D>& x,
                                                         const SpatialArg& output_size) {
  return Tensor<D>(adaptive_avg_pool2d(x.dyn(), output_size));
}

}  // namespace ember
