// Int8 layers: dynamic per-tensor quantisation of the input, matmul_int8, and the float32
// rescale. Written with tensor ops only, so they run on every backend; matmul_int8 is the one
// kernel that matters (on the Cpu it reads the int8 weights in place, from flash on a board).
#include "ember/nn/quantized.hpp"

#include "ember/core/error.hpp"

namespace ember::nn {
namespace {

// Below this, max |x| counts as zero: the scale stays finite and every q is 0.
constexpr double kTiny = 1e-30;

DynTensor to_int8(const DynTensor& x_times_inverse_scale) {
  return cast(clamp(round(x_times_inverse_scale), -127, 127), DType::i8);
}

// sums [N, O, L] or [M, O] (i32) -> f32 * (x_scale * weight_scale[o]) + bias[o], o at `dim`;
// x_scale ([N, 1, 1] or [M, 1]) has one value per example or row.
DynTensor rescale(const DynTensor& sums, const DynTensor& x_scale, const DynTensor& weight_scale,
                  const std::optional<Buffer<1>>& bias, int64_t dim) {
  Shape per_channel(std::vector<int64_t>(static_cast<size_t>(sums.rank()), 1));
  per_channel[static_cast<int>(dim)] = weight_scale.size(0);
  DynTensor y = cast(sums, DType::f32) * (x_scale * reshape(weight_scale, per_channel));
  if (bias) y = y + reshape(bias->dyn(), per_channel);
  return y;
}

}  // namespace

std::pair<DynTensor, DynTensor> quantize_per_channel(const DynTensor& w) {
  EMBER_CHECK(is_floating(w.dtype()) && w.rank() >= 2,
              "[quantize_per_channel] takes a float weight of rank 2 or more, got ", w.dtype(), " ",
              w.shape());
  Dims rest;
  for (int d = 1; d < w.rank(); ++d) rest.push_back(d);
  const DynTensor w32 = cast(w, DType::f32);
  const DynTensor max_abs = amax(abs(w32), rest);  // [O]
  const DynTensor scale = where(max_abs > kTiny, max_abs / 127.0, full_like(max_abs, 1.0));
  Shape per_channel(std::vector<int64_t>(static_cast<size_t>(w.rank()), 1));
  per_channel[0] = w.size(0);
  return {to_int8(w32 / reshape(scale, per_channel)), scale};
}

std::pair<DynTensor, DynTensor> quantize_per_tensor(const DynTensor& x) {
  EMBER_CHECK(is_floating(x.dtype()), "[quantize_per_tensor] takes a float tensor, got ",
              x.dtype());
  auto [q, scale] = quantize_per_row(reshape(x, Shape{1, -1}));  // the whole tensor as one row
  return {reshape(q, x.shape()), reshape(scale, Shape{})};
}

std::pair<DynTensor, DynTensor> quantize_per_row(const DynTensor& x) {
  EMBER_CHECK(is_floating(x.dtype()) && x.rank() >= 1,
              "[quantize_per_row] takes a float tensor of rank 1 or more, got ", x.dtype(), " ",
              x.shape());
  Dims rest;
  for (int d = 1; d < x.rank(); ++d) rest.push_back(d);
  const DynTensor max_abs = maximum(amax(abs(cast(x, DType::f32)), rest, true), kTiny);
  return {to_int8(x * (127.0 / max_abs)), reshape(max_abs / 127.0, Shape{x.size(0)})};
}

Int8Linear::Int8Linear(int64_t in_features, int64_t out_features, bool has_bias, Device device)
    : weight(Tensor<2, Int>(zeros(Shape{out_features, in_features}, DType::i8, device))),
      weight_scale(Tensor<1>(ones(Shape{out_features}, DType::f32, device))) {
  if (has_bias) bias = Buffer<1>(Tensor<1>(zeros(Shape{out_features}, DType::f32, device)));
}

Int8Linear::Int8Linear(const Linear& linear) {
  auto [q, scale] = quantize_per_channel(linear.weight.dyn());
  weight = Buffer<2, Int>(Tensor<2, Int>(q));
  weight_scale = Buffer<1>(Tensor<1>(scale));
  if (linear.bias) bias = Buffer<1>(Tensor<1>(cast(detach(linear.bias->dyn()), DType::f32)));
}

DynTensor Int8Linear::forward(const DynTensor& x) const {
  const int64_t in = weight.size(1);
  EMBER_CHECK(x.rank() >= 1 && x.size(-1) == in, "[Int8Linear] expects [..., ", in, "], got ",
              x.shape());
  const auto [xq, x_scale] = quantize_per_row(reshape(x, Shape{-1, in}));  // scale [M]
  const DynTensor sums = matmul_int8(xq, transpose(weight.dyn(), 0, 1));   // [M, out]
  Shape out_shape = x.shape();
  out_shape[out_shape.rank() - 1] = weight.size(0);
  return reshape(rescale(sums, reshape(x_scale, Shape{-1, 1}), weight_scale.dyn(), bias, 1),
                 out_shape);
}

Int8Conv2d::Int8Conv2d(const ConvConfig& c, Device device)
    : stride(c.stride_), padding(c.padding_), dilation(c.dilation_), relu(c.relu_) {
  EMBER_CHECK(
      c.groups_ == 1 && c.padding_mode_ == Padding::Explicit && c.pad_mode_ == PadMode::Constant,
      "[Int8Conv2d] takes one group and zero padding given as sizes");
  Shape shape{c.out_channels, c.in_channels};
  for (size_t i = 0; i < 2; ++i) {
    shape.push_back(c.kernel_size[c.kernel_size.size() == 1 ? 0 : i]);
  }
  weight = Buffer<4, Int>(Tensor<4, Int>(zeros(shape, DType::i8, device)));
  weight_scale = Buffer<1>(Tensor<1>(ones(Shape{c.out_channels}, DType::f32, device)));
  if (c.has_bias) bias = Buffer<1>(Tensor<1>(zeros(Shape{c.out_channels}, DType::f32, device)));
}

Int8Conv2d::Int8Conv2d(const Conv2d& conv)
    : stride(conv.stride), padding(conv.padding), dilation(conv.dilation), relu(conv.relu) {
  EMBER_CHECK(conv.groups == 1 && conv.padding_mode == Padding::Explicit &&
                  conv.pad_mode == PadMode::Constant,
              "[Int8Conv2d] quantizes convolutions of one group with zero padding given as sizes");
  auto [q, scale] = quantize_per_channel(conv.weight.dyn());
  weight = Buffer<4, Int>(Tensor<4, Int>(q));
  weight_scale = Buffer<1>(Tensor<1>(scale));
  if (conv.bias) bias = Buffer<1>(Tensor<1>(cast(detach(conv.bias->dyn()), DType::f32)));
}

DynTensor Int8Conv2d::forward(const DynTensor& x) const {
  const int64_t out = weight.size(0), in = weight.size(1), kh = weight.size(2), kw = weight.size(3);
  EMBER_CHECK(x.rank() == 4 && x.size(1) == in, "[Int8Conv2d] expects [N, ", in, ", H, W], got ",
              x.shape());
  // Zero padding commutes with symmetric quantisation (0 stays 0): quantize, then unfold int8.
  const auto [xq, x_scale] = quantize_per_row(x);  // a scale per example: [N]
  const DynTensor cols = unfold(xq, {kh, kw}, dilation, padding, stride);  // [N, in*kh*kw, L]
  const DynTensor sums = matmul_int8(reshape(weight.dyn(), Shape{out, in * kh * kw}), cols);
  DynTensor y = rescale(sums, reshape(x_scale, Shape{-1, 1, 1}), weight_scale.dyn(), bias, 1);
  if (relu) y = ember::relu(y);
  // L = H' * W', the output's sizes from conv's formula.
  auto size = [&](int d) {
    auto at = [&](const SpatialArg& a) { return a[a.size() == 1 ? 0 : static_cast<size_t>(d)]; };
    const int64_t k = d == 0 ? kh : kw;
    return (x.size(2 + d) + 2 * at(padding) - at(dilation) * (k - 1) - 1) / at(stride) + 1;
  };
  return reshape(y, Shape{x.size(0), out, size(0), size(1)});
}

}  // namespace ember::nn
