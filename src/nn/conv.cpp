#include "ember/nn/conv.hpp"

#include <cmath>

#include "config_json.hpp"
#include "ember/core/error.hpp"

namespace ember::nn {
namespace {

// PyTorch's padding_mode strings.
const char* pad_mode_name(PadMode m) {
  switch (m) {
    case PadMode::Constant:
      return "zeros";
    case PadMode::Reflect:
      return "reflect";
    case PadMode::Replicate:
      return "replicate";
    case PadMode::Circular:
      return "circular";
  }
  return "?";
}
PadMode pad_mode_of(const std::string& s) {
  for (PadMode m : {PadMode::Constant, PadMode::Reflect, PadMode::Replicate, PadMode::Circular}) {
    if (s == pad_mode_name(m)) return m;
  }
  EMBER_FAIL("[ConvConfig] padding_mode must be \"zeros\", \"reflect\", \"replicate\" or ",
             "\"circular\", got \"", s, "\"");
}

}  // namespace

std::string ConvConfig::to_json() const {
  detail::JsonWriter w;
  w.field("in_channels", in_channels)
      .field("out_channels", out_channels)
      .field("kernel_size", kernel_size)
      .field("stride", stride_);
  if (padding_mode_ == Padding::Explicit) {
    w.field("padding", padding_);
  } else {
    w.field("padding", padding_mode_ == Padding::Same ? "same" : "valid");
  }
  w.field("output_padding", output_padding_)
      .field("dilation", dilation_)
      .field("groups", groups_)
      .field("bias", has_bias);
  if (relu_) w.field("relu", true);  // written only when set: older configs read the same
  if (pad_mode_ != PadMode::Constant) w.field("padding_mode", pad_mode_name(pad_mode_));
  return w.field("dtype", dtype_name(dtype)).str();
}

ConvConfig ConvConfig::from_json(const std::string& json) {
  const detail::JsonReader r(json, "ConvConfig");
  ConvConfig c(r.integer("in_channels"), r.integer("out_channels"), r.integers("kernel_size", {}));
  c.stride_ = r.integers("stride", {1});
  if (r.is_string("padding")) {  // PyTorch's padding="same" / "valid"
    const std::string mode = r.string("padding", "");
    EMBER_CHECK(mode == "same" || mode == "valid", "[ConvConfig] padding must be \"same\", ",
                "\"valid\" or sizes, got \"", mode, "\"");
    c.padding_mode_ = mode == "same" ? Padding::Same : Padding::Valid;
  } else {
    c.padding_ = r.integers("padding", {0});
  }
  c.output_padding_ = r.integers("output_padding", {0});
  c.dilation_ = r.integers("dilation", {1});
  c.groups_ = r.integer("groups", 1);
  c.has_bias = r.boolean("bias", true);
  c.relu_ = r.boolean("relu", false);
  c.pad_mode_ = pad_mode_of(r.string("padding_mode", "zeros"));
  c.dtype = r.dtype("dtype", DType::f32);
  return c;
}

namespace {

// The kernel's N sizes (one value repeated, or one per dim).
Shape kernel_dims(const ConvConfig& c, int n, const char* op) {
  const size_t k = c.kernel_size.size();
  EMBER_CHECK(k == 1 || k == static_cast<size_t>(n), "[", op, "] kernel_size needs 1 or ", n,
              " values, got ", k);
  Shape out;
  for (int i = 0; i < n; ++i) {
    const int64_t v = c.kernel_size[k == 1 ? 0 : static_cast<size_t>(i)];
    EMBER_CHECK(v > 0, "[", op, "] kernel sizes must be positive, got ", v);
    out.push_back(v);
  }
  return out;
}

void check_channels(const ConvConfig& c, const char* op) {
  EMBER_CHECK(c.in_channels > 0 && c.out_channels > 0 && c.groups_ > 0 &&
                  c.in_channels % c.groups_ == 0 && c.out_channels % c.groups_ == 0,
              "[", op, "] in_channels ", c.in_channels, " and out_channels ", c.out_channels,
              " must be positive multiples of groups ", c.groups_);
}

}  // namespace

template <int N>
Conv<N>::Conv(const ConvConfig& c, Device device, Generator* gen)
    : stride(c.stride_),
      padding(c.padding_mode_ == Padding::Explicit ? c.padding_ : SpatialArg{0}),
      dilation(c.dilation_),
      padding_mode(c.padding_mode_),
      pad_mode(c.pad_mode_),
      groups(c.groups_),
      relu(c.relu_) {
  const char* op = N == 1 ? "Conv1d" : (N == 2 ? "Conv2d" : "Conv3d");
  check_channels(c, op);
  if (padding_mode == Padding::Same) {
    for (int64_t s : stride) {
      EMBER_CHECK(s == 1, "[", op, "] padding='same' needs stride 1 (as in PyTorch), got stride ",
                  s);
    }
  }
  Shape shape{c.out_channels, c.in_channels / c.groups_};
  const Shape k = kernel_dims(c, N, op);
  for (int64_t d : k) shape.push_back(d);
  const double bound = 1.0 / std::sqrt(static_cast<double>(c.in_channels / c.groups_ * k.numel()));
  weight = Param<N + 2>(Tensor<N + 2>(rand(shape, c.dtype, device, gen, -bound, bound)));
  if (c.has_bias) {
    bias = Param<1>(Tensor<1>(rand(Shape{c.out_channels}, c.dtype, device, gen, -bound, bound)));
  }
}

template <int N>
DynTensor Conv<N>::forward(const DynTensor& x) const {
  const DynTensor b = bias ? bias->dyn() : DynTensor();
  auto run = [&](const DynTensor& in, const SpatialArg& pad) {
    if constexpr (N == 1) return conv1d(in, weight.dyn(), b, stride, pad, dilation, groups, relu);
    if constexpr (N == 2) return conv2d(in, weight.dyn(), b, stride, pad, dilation, groups, relu);
    if constexpr (N == 3) return conv3d(in, weight.dyn(), b, stride, pad, dilation, groups, relu);
  };
  const char* op = N == 1 ? "Conv1d" : (N == 2 ? "Conv2d" : "Conv3d");
  if (padding_mode == Padding::Valid) return run(x, {0});
  std::vector<int64_t> pads;  // pad()'s order: last dim first, (left, right)
  if (padding_mode == Padding::Same) {
    std::vector<int64_t> kernel;
    for (int i = 0; i < N; ++i) kernel.push_back(weight.size(2 + i));
    pads = same_padding(kernel, dilation, op);
  } else {
    EMBER_CHECK(padding.size() == 1 || padding.size() == static_cast<size_t>(N), "[", op,
                "] padding needs 1 or ", N, " values, got ", padding.size());
    for (int i = N - 1; i >= 0; --i) {
      const int64_t p = padding[padding.size() == 1 ? 0 : static_cast<size_t>(i)];
      pads.push_back(p);
      pads.push_back(p);
    }
  }
  if (pad_mode != PadMode::Constant) {
    // PyTorch pads with the mode first, then convolves without padding.
    return run(as_op(op, [&] { return ember::pad(x, pads, pad_mode); }), {0});
  }
  // Zeros: the symmetric part goes to the convolution; an odd 'same' total pads the right first.
  SpatialArg sym(N, 0);
  std::vector<int64_t> extra(2 * N, 0);
  bool odd = false;
  for (int i = 0; i < N; ++i) {
    const size_t at = 2 * static_cast<size_t>(N - 1 - i);
    sym[static_cast<size_t>(i)] = pads[at];
    extra[at + 1] = pads[at + 1] - pads[at];
    odd = odd || extra[at + 1] != 0;
  }
  return run(odd ? ember::pad(x, extra) : x, sym);
}

template <int N>
ConvTranspose<N>::ConvTranspose(const ConvConfig& c, Device device, Generator* gen)
    : stride(c.stride_),
      padding(c.padding_),
      output_padding(c.output_padding_),
      dilation(c.dilation_),
      groups(c.groups_) {
  const char* op = N == 1 ? "ConvTranspose1d" : (N == 2 ? "ConvTranspose2d" : "ConvTranspose3d");
  check_channels(c, op);
  EMBER_CHECK(c.padding_mode_ == Padding::Explicit, "[", op,
              "] takes explicit padding sizes only (PyTorch has no 'same'/'valid' for it)");
  EMBER_CHECK(!c.relu_, "[", op, "] has no fused relu: apply relu() to its output");
  EMBER_CHECK(c.pad_mode_ == PadMode::Constant, "[", op,
              "] supports padding_mode zeros only (as PyTorch)");
  Shape shape{c.in_channels, c.out_channels / c.groups_};
  const Shape k = kernel_dims(c, N, op);
  for (int64_t d : k) shape.push_back(d);
  // PyTorch's fan_in of a transposed weight [in, out / groups, k...] is out / groups * k.
  const double bound = 1.0 / std::sqrt(static_cast<double>(c.out_channels / c.groups_ * k.numel()));
  weight = Param<N + 2>(Tensor<N + 2>(rand(shape, c.dtype, device, gen, -bound, bound)));
  if (c.has_bias) {
    bias = Param<1>(Tensor<1>(rand(Shape{c.out_channels}, c.dtype, device, gen, -bound, bound)));
  }
}

template <int N>
DynTensor ConvTranspose<N>::forward(const DynTensor& x) const {
  const DynTensor b = bias ? bias->dyn() : DynTensor();
  if constexpr (N == 1) {
    return conv_transpose1d(x, weight.dyn(), b, stride, padding, output_padding, groups, dilation);
  } else if constexpr (N == 2) {
    return conv_transpose2d(x, weight.dyn(), b, stride, padding, output_padding, groups, dilation);
  } else {
    return conv_transpose3d(x, weight.dyn(), b, stride, padding, output_padding, groups, dilation);
  }
}

template <int N>
std::string MaxPool<N>::to_json() const {
  return detail::JsonWriter()
      .field("kernel_size", kernel_size)
      .field("stride", stride)
      .field("padding", padding)
      .field("dilation", dilation)
      .field("ceil_mode", ceil_mode)
      .str();
}
template <int N>
MaxPool<N> MaxPool<N>::from_json(const std::string& json) {
  const detail::JsonReader r(json, "MaxPool");
  return MaxPool<N>{r.integers("kernel_size", {}), r.integers("stride", {}),
                    r.integers("padding", {0}), r.integers("dilation", {1}),
                    r.boolean("ceil_mode", false)};
}

template <int N>
std::string AvgPool<N>::to_json() const {
  return detail::JsonWriter()
      .field("kernel_size", kernel_size)
      .field("stride", stride)
      .field("padding", padding)
      .field("ceil_mode", ceil_mode)
      .field("count_include_pad", count_include_pad)
      .str();
}
template <int N>
AvgPool<N> AvgPool<N>::from_json(const std::string& json) {
  const detail::JsonReader r(json, "AvgPool");
  return AvgPool<N>{r.integers("kernel_size", {}), r.integers("stride", {}),
                    r.integers("padding", {0}), r.boolean("ceil_mode", false),
                    r.boolean("count_include_pad", true)};
}

template <int N>
std::string AdaptiveAvgPool<N>::to_json() const {
  return detail::JsonWriter().field("output_size", output_size).str();
}
template <int N>
AdaptiveAvgPool<N> AdaptiveAvgPool<N>::from_json(const std::string& json) {
  return AdaptiveAvgPool<N>{
      detail::JsonReader(json, "AdaptiveAvgPool").integers("output_size", {})};
}

template struct MaxPool<1>;
template struct MaxPool<2>;
template struct MaxPool<3>;
template struct AvgPool<1>;
template struct AvgPool<2>;
template struct AdaptiveAvgPool<1>;
template struct AdaptiveAvgPool<2>;
template class Conv<1>;
template class Conv<2>;
template class Conv<3>;
template class ConvTranspose<1>;
template class ConvTranspose<2>;
template class ConvTranspose<3>;

DeformConv2d::DeformConv2d(const ConvConfig& c, Device device, Generator* gen)
    : stride(c.stride_), padding(c.padding_), dilation(c.dilation_), groups(c.groups_) {
  const char* op = "DeformConv2d";
  check_channels(c, op);
  EMBER_CHECK(c.padding_mode_ == Padding::Explicit && c.pad_mode_ == PadMode::Constant && !c.relu_,
              "[DeformConv2d] takes explicit zero padding and no fused relu");
  Shape shape{c.out_channels, c.in_channels / c.groups_};
  const Shape k = kernel_dims(c, 2, op);
  for (int64_t d : k) shape.push_back(d);
  const double bound = 1.0 / std::sqrt(static_cast<double>(c.in_channels / c.groups_ * k.numel()));
  weight = Param<4>(Tensor<4>(rand(shape, c.dtype, device, gen, -bound, bound)));
  if (c.has_bias) {
    bias = Param<1>(Tensor<1>(rand(Shape{c.out_channels}, c.dtype, device, gen, -bound, bound)));
  }
}

DynTensor DeformConv2d::forward(const DynTensor& x, const DynTensor& offset,
                                const DynTensor& mask) const {
  EMBER_CHECK(x.rank() == 4 && x.size(1) == weight.size(1) * groups, "[DeformConv2d] expects an ",
              "input [N, ", weight.size(1) * groups, ", H, W], got ", x.shape());
  return deform_conv2d(x, offset, weight.dyn(), bias ? bias->dyn() : DynTensor(), stride, padding,
                       dilation, mask);
}

namespace detail {

std::string flatten_to_json(int64_t start_dim, int64_t end_dim) {
  return JsonWriter().field("start_dim", start_dim).field("end_dim", end_dim).str();
}

std::pair<int64_t, int64_t> flatten_from_json(const std::string& json) {
  const JsonReader r(json, "Flatten");
  return {r.integer("start_dim", 1), r.integer("end_dim", -1)};
}

}  // namespace detail
}  // namespace ember::nn
