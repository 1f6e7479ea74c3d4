// Convolution and pooling layers (torch.nn.Conv1d/2d/3d, ConvTranspose1d/2d/3d, MaxPool, AvgPool,
// AdaptiveAvgPool, Flatten, torchvision's DeformConv2d) with PyTorch's parameter names, layouts
// and initialisation.
#pragma once

#include <string>

#include "ember/nn/module.hpp"
#include "ember/tensor/ops/conv.hpp"
#include "ember/tensor/ops/vision.hpp"

namespace ember::nn {

/// PyTorch's padding='same' (the output keeps the input's size; stride 1 only; an odd total
/// pads one more on the right) and padding='valid' (none), beside explicit sizes; the same enum
/// as the functional conv2d(x, w, b, stride, Padding::Same).
using ember::Padding;

/// Options of a convolution; per-dim options take one value for every dim or one per dim.
struct ConvConfig {
  int64_t in_channels;
  int64_t out_channels;
  SpatialArg kernel_size;
  SpatialArg stride_ = {1};
  SpatialArg padding_ = {0};
  Padding padding_mode_ = Padding::Explicit;  // Same/Valid: Conv only, padding_ unused
  PadMode pad_mode_ = PadMode::Constant;      // PyTorch's padding_mode ("zeros" is Constant)
  SpatialArg output_padding_ = {0};           // transposed convolutions only
  SpatialArg dilation_ = {1};
  int64_t groups_ = 1;
  bool has_bias = true;
  bool relu_ = false;  // Conv only: relu fused into the convolution
  DType dtype = DType::f32;

  ConvConfig(int64_t in, int64_t out, SpatialArg kernel)
      : in_channels(in), out_channels(out), kernel_size(std::move(kernel)) {}
  ConvConfig& stride(SpatialArg s) {
    stride_ = std::move(s);
    return *this;
  }
  ConvConfig& padding(SpatialArg p) {
    padding_ = std::move(p);
    padding_mode_ = Padding::Explicit;
    return *this;
  }
  ConvConfig& padding(Padding mode) {
    padding_mode_ = mode;
    return *this;
  }
  /// PyTorch's padding_mode: what the padding holds. Constant is "zeros"; Reflect, Replicate and
  /// Circular pad the input with pad() first, then convolve unpadded (Conv only, as PyTorch).
  ConvConfig& padding_mode(PadMode m) {
    pad_mode_ = m;
    return *this;
  }
  ConvConfig& output_padding(SpatialArg p) {
    output_padding_ = std::move(p);
    return *this;
  }
  ConvConfig& dilation(SpatialArg d) {
    dilation_ = std::move(d);
    return *this;
  }
  ConvConfig& groups(int64_t g) {
    groups_ = g;
    return *this;
  }
  ConvConfig& bias(bool on) {
    has_bias = on;
    return *this;
  }
  /// The layer outputs relu(conv(x)) in one fused pass (Keras's activation="relu"): the same
  /// values and gradients as a ReLU after it, one pass over the output less each way.
  ConvConfig& relu(bool on) {
    relu_ = on;
    return *this;
  }
  ConvConfig& with_dtype(DType t) {
    dtype = t;
    return *this;
  }
  std::string to_json() const;
  static ConvConfig from_json(const std::string& json);
};
using Conv1dConfig = ConvConfig;
using Conv2dConfig = ConvConfig;
using Conv3dConfig = ConvConfig;
using ConvTranspose1dConfig = ConvConfig;
using ConvTranspose2dConfig = ConvConfig;
using ConvTranspose3dConfig = ConvConfig;

/// Conv1d/2d/3d: weight [out, in / groups, k...], bias [out]; inputs [N, C, *] or [C, *].
template <int N>
class Conv {
 public:
  Param<N + 2> weight;
  std::optional<Param<1>> bias;
  SpatialArg stride{1}, padding{0}, dilation{1};
  Padding padding_mode = Padding::Explicit;  // explicit sizes, or 'same' / 'valid'
  PadMode pad_mode = PadMode::Constant;      // PyTorch's padding_mode (ConvConfig::padding_mode)
  int64_t groups = 1;
  bool relu = false;  // fused activation (ConvConfig::relu)
  EMBER_MODULE_NAMED(Conv, N == 1 ? "Conv1d" : (N == 2 ? "Conv2d" : "Conv3d"), weight, bias)

  Conv() = default;
  /// Weight and bias uniform on [-1/sqrt(fan_in), 1/sqrt(fan_in)], fan_in = in / groups * k
  /// (PyTorch's kaiming_uniform_(a = sqrt(5)) and bias bound).
  explicit Conv(const ConvConfig& config, Device device = default_device(),
                Generator* gen = nullptr);
  Conv(int64_t in, int64_t out, SpatialArg kernel, Device device = default_device())
      : Conv(ConvConfig(in, out, std::move(kernel)), device) {}

  template <int D>
  Tensor<D> operator()(const Tensor<D>& x) const {
    return Tensor<D>(forward(x.dyn()));
  }
  DynTensor forward(const DynTensor& x) const;
};
using Conv1d = Conv<1>;
using Conv2d = Conv<2>;
using Conv3d = Conv<3>;

/// ConvTranspose1d/2d/3d: weight [in, out / groups, k...], bias [out].
template <int N>
class ConvTranspose {
 public:
  Param<N + 2> weight;
  std::optional<Param<1>> bias;
  SpatialArg stride{1}, padding{0}, output_padding{0}, dilation{1};
  int64_t groups = 1;
  EMBER_MODULE_NAMED(ConvTranspose,
                     N == 1 ? "ConvTranspose1d" : (N == 2 ? "ConvTranspose2d" : "ConvTranspose3d"),
                     weight, bias)

  ConvTranspose() = default;
  explicit ConvTranspose(const ConvConfig& config, Device device = default_device(),
                         Generator* gen = nullptr);
  template <int D>
  Tensor<D> operator()(const Tensor<D>& x) const {
    return Tensor<D>(forward(x.dyn()));
  }
  DynTensor forward(const DynTensor& x) const;
};
using ConvTranspose1d = ConvTranspose<1>;
using ConvTranspose2d = ConvTranspose<2>;
using ConvTranspose3d = ConvTranspose<3>;

extern template class Conv<1>;
extern template class Conv<2>;
extern template class Conv<3>;
extern template class ConvTranspose<1>;
extern template class ConvTranspose<2>;
extern template class ConvTranspose<3>;

/// MaxPool1d/2d/3d (an empty stride means the kernel size, as PyTorch's default).
template <int N>
struct MaxPool {
  SpatialArg kernel_size, stride{}, padding{0}, dilation{1};
  bool ceil_mode = false;
  EMBER_MODULE_NAMED(MaxPool, N == 1 ? "MaxPool1d" : (N == 2 ? "MaxPool2d" : "MaxPool3d"))
  std::string to_json() const;
  static MaxPool from_json(const std::string& json);
  template <int D>
  Tensor<D> operator()(const Tensor<D>& x) const {
    return Tensor<D>(forward(x.dyn()));
  }
  DynTensor forward(const DynTensor& x) const {
    if constexpr (N == 1) return max_pool1d(x, kernel_size, stride, padding, dilation, ceil_mode);
    if constexpr (N == 2) return max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode);
    if constexpr (N == 3) return max_pool3d(x, kernel_size, stride, padding, dilation, ceil_mode);
  }
};
using MaxPool1d = MaxPool<1>;
using MaxPool2d = MaxPool<2>;
using MaxPool3d = MaxPool<3>;

template <int N>
struct AvgPool {
  SpatialArg kernel_size, stride{}, padding{0};
  bool ceil_mode = false, count_include_pad = true;
  EMBER_MODULE_NAMED(AvgPool, N == 1 ? "AvgPool1d" : "AvgPool2d")
  std::string to_json() const;
  static AvgPool from_json(const std::string& json);
  template <int D>
  Tensor<D> operator()(const Tensor<D>& x) const {
    return Tensor<D>(forward(x.dyn()));
  }
  DynTensor forward(const DynTensor& x) const {
    return N == 1 ? avg_pool1d(x, kernel_size, stride, padding, ceil_mode, count_include_pad)
                  : avg_pool2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad);
  }
};
using AvgPool1d = AvgPool<1>;
using AvgPool2d = AvgPool<2>;

template <int N>
struct AdaptiveAvgPool {
  SpatialArg output_size;
  EMBER_MODULE_NAMED(AdaptiveAvgPool, N == 1 ? "AdaptiveAvgPool1d" : "AdaptiveAvgPool2d")
  std::string to_json() const;
  static AdaptiveAvgPool from_json(const std::string& json);
  template <int D>
  Tensor<D> operator()(const Tensor<D>& x) const {
    return Tensor<D>(forward(x.dyn()));
  }
  DynTensor forward(const DynTensor& x) const {
    return N == 1 ? adaptive_avg_pool1d(x, output_size) : adaptive_avg_pool2d(x, output_size);
  }
};
using AdaptiveAvgPool1d = AdaptiveAvgPool<1>;
using AdaptiveAvgPool2d = AdaptiveAvgPool<2>;

extern template struct MaxPool<1>;
extern template struct MaxPool<2>;
extern template struct MaxPool<3>;
extern template struct AvgPool<1>;
extern template struct AvgPool<2>;
extern template struct AdaptiveAvgPool<1>;
extern template struct AdaptiveAvgPool<2>;

namespace detail {
std::string flatten_to_json(int64_t start_dim, int64_t end_dim);
std::pair<int64_t, int64_t> flatten_from_json(const std::string& json);
}  // namespace detail

/// Flattens dims start_dim..end_dim (torch.nn.Flatten: from dim 1 by default). Out is the
/// result's rank, given because a module's output type is fixed at compile time.
template <int Out = 2>
struct Flatten {
  int64_t start_dim = 1, end_dim = -1;
  EMBER_MODULE(Flatten)
  std::string to_json() const { return detail::flatten_to_json(start_dim, end_dim); }  // own config
  static Flatten from_json(const std::string& json) {
    const auto [start, end] = detail::flatten_from_json(json);
    return Flatten{start, end};
  }
  template <int D>
  Tensor<Out> operator()(const Tensor<D>& x) const {
    return Tensor<Out>(flatten(x.dyn(), start_dim, end_dim));
  }
};

/// torchvision.ops.DeformConv2d: weight [out, in / groups, kh, kw] and bias [out] initialised as
/// Conv2d; forward(x, offset, mask) runs deform_conv2d (offset_groups follow the offset's
/// channels; a mask, when given, modulates each tap as DCNv2). Padding takes explicit sizes only.
class DeformConv2d {
 public:
  Param<4> weight;
  std::optional<Param<1>> bias;
  SpatialArg stride{1}, padding{0}, dilation{1};
  int64_t groups = 1;
  EMBER_MODULE(DeformConv2d, weight, bias)

  DeformConv2d() = default;
  explicit DeformConv2d(const ConvConfig& config, Device device = default_device(),
                        Generator* gen = nullptr);
  Tensor<4> operator()(const Tensor<4>& x, const Tensor<4>& offset) const {
    return Tensor<4>(forward(x.dyn(), offset.dyn()));
  }
  Tensor<4> operator()(const Tensor<4>& x, const Tensor<4>& offset, const Tensor<4>& mask) const {
    return Tensor<4>(forward(x.dyn(), offset.dyn(), mask.dyn()));
  }
  /// `mask` may be undefined (no modulation).
  DynTensor forward(const DynTensor& x, const DynTensor& offset, const DynTensor& mask = {}) const;
};

}  // namespace ember::nn
