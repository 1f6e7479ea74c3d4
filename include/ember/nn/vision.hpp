// Vision layers without parameters (torch.nn.PixelShuffle, PixelUnshuffle, Unfold, Fold): options
// only, each a module of the usual kind (printing, to_json / from_json), forwarding to the ops of
// ember/tensor/ops/vision.hpp.
#pragma once

#include <string>

#include "ember/nn/module.hpp"
#include "ember/tensor/ops/vision.hpp"

namespace ember::nn {

/// [*, C * r^2, H, W] -> [*, C, H * r, W * r].
struct PixelShuffle {
  int64_t upscale_factor = 1;
  EMBER_MODULE(PixelShuffle)
  std::string to_json() const;
  static PixelShuffle from_json(const std::string& json);
  template <int D>
  Tensor<D> operator()(const Tensor<D>& x) const {
    return Tensor<D>(forward(x.dyn()));
  }
  DynTensor forward(const DynTensor& x) const { return pixel_shuffle(x, upscale_factor); }
};

/// [*, C, H * r, W * r] -> [*, C * r^2, H, W].
struct PixelUnshuffle {
  int64_t downscale_factor = 1;
  EMBER_MODULE(PixelUnshuffle)
  std::string to_json() const;
  static PixelUnshuffle from_json(const std::string& json);
  template <int D>
  Tensor<D> operator()(const Tensor<D>& x) const {
    return Tensor<D>(forward(x.dyn()));
  }
  DynTensor forward(const DynTensor& x) const { return pixel_unshuffle(x, downscale_factor); }
};

/// im2col: [N, C, H, W] -> [N, C * kh * kw, L] (unbatched: one rank less).
struct Unfold {
  SpatialArg kernel_size, dilation{1}, padding{0}, stride{1};
  EMBER_MODULE(Unfold)
  std::string to_json() const;
  static Unfold from_json(const std::string& json);
  template <int D>
  Tensor<D - 1> operator()(const Tensor<D>& x) const {
    return Tensor<D - 1>(forward(x.dyn()));
  }
  DynTensor forward(const DynTensor& x) const {
    return unfold(x, kernel_size, dilation, padding, stride);
  }
};

/// col2im: [N, C * kh * kw, L] -> [N, C, output_size...] (unbatched: one rank less).
struct Fold {
  SpatialArg output_size, kernel_size, dilation{1}, padding{0}, stride{1};
  EMBER_MODULE(Fold)
  std::string to_json() const;
  static Fold from_json(const std::string& json);
  template <int D>
  Tensor<D + 1> operator()(const Tensor<D>& x) const {
    return Tensor<D + 1>(forward(x.dyn()));
  }
  DynTensor forward(const DynTensor& x) const {
    return fold(x, output_size, kernel_size, dilation, padding, stride);
  }
};

}  // namespace ember::nn
