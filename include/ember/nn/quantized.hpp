// Int8 layers for inference (torch.ao.nn.quantized.dynamic's idea): weights quantized per output
// channel, symmetric (w ~ weight_scale[o] * q, q an int8 in [-127, 127]); inputs quantized when
// the layer runs, one scale per example (a Linear's row, a Conv2d's image: so an answer never
// depends on what else is in its batch); int8 products summed in int32 by
// matmul_int8; then y = sums * x_scale * weight_scale[o] + bias, in float32. Weights take a
// quarter of float32's memory (flash on a microcontroller). docs/DEPLOY.md has the arithmetic.
#pragma once

#include <optional>
#include <utility>

#include "ember/nn/conv.hpp"
#include "ember/nn/linear.hpp"
#include "ember/nn/module.hpp"

namespace ember::nn {

/// w [O, ...] (float) per output channel: {q [O, ...] int8, scale [O] f32} with
/// scale[o] = max |w[o]| / 127 (1 for an all-zero channel) and q = round(w / scale), so that
/// |w - scale * q| <= scale / 2.
std::pair<DynTensor, DynTensor> quantize_per_channel(const DynTensor& w);

/// x (float) with one scale: {q int8, scale (0-D f32)}, scale = max |x| / 127 and
/// q = round(x * (127 / max |x|)) (0 where x is all zeros).
std::pair<DynTensor, DynTensor> quantize_per_tensor(const DynTensor& x);

/// quantize_per_tensor for each x[i] apart: {q, scale [x.size(0)]}.
std::pair<DynTensor, DynTensor> quantize_per_row(const DynTensor& x);

/// Linear with int8 weights: weight [out, in] (i8), weight_scale [out] and bias [out] (f32).
class Int8Linear {
 public:
  Buffer<2, Int> weight;
  Buffer<1> weight_scale;
  std::optional<Buffer<1>> bias;
  EMBER_MODULE(Int8Linear, weight, weight_scale, bias)

  Int8Linear() = default;
  /// Zero weights of the shape, to load a quantized file into.
  Int8Linear(int64_t in_features, int64_t out_features, bool has_bias = true,
             Device device = default_device());
  /// Quantizes a float Linear.
  explicit Int8Linear(const Linear& linear);

  template <int D>
  Tensor<D> operator()(const Tensor<D>& x) const {
    return Tensor<D>(forward(x.dyn()));
  }
  /// x [..., in] (float) -> [..., out] f32.
  DynTensor forward(const DynTensor& x) const;
};

/// Conv2d with int8 weights (weight [out, in, kh, kw] i8, weight_scale and bias [out] f32):
/// one group, zero padding given as sizes; the fused ReLU of ConvConfig::relu carries over.
class Int8Conv2d {
 public:
  Buffer<4, Int> weight;
  Buffer<1> weight_scale;
  std::optional<Buffer<1>> bias;
  SpatialArg stride{1}, padding{0}, dilation{1};
  bool relu = false;
  EMBER_MODULE(Int8Conv2d, weight, weight_scale, bias)

  Int8Conv2d() = default;
  /// Zero weights of config's shape, to load a quantized file into.
  explicit Int8Conv2d(const ConvConfig& config, Device device = default_device());
  /// Quantizes a float Conv2d (one group, zero padding given as sizes).
  explicit Int8Conv2d(const Conv2d& conv);

  template <int D>
  Tensor<D> operator()(const Tensor<D>& x) const {
    return Tensor<D>(forward(x.dyn()));
  }
  /// x [N, C, H, W] (float) -> [N, out, H', W'] f32.
  DynTensor forward(const DynTensor& x) const;
};

}  // namespace ember::nn
