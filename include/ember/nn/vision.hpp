// Vision layers without parameters (torch.nn.PixelShuffle, PixelUnshuffle, Unfold, Fold,
// Upsample, AdaptiveMaxPool1d/2d/3d, CosineSimilarity, PairwiseDistance): options only, each a
// module of the usual kind (printing, to_json / from_json), forwarding to the ops of
// ember/tensor/ops/vision.hpp.
#pragma once

#include <string>
#include <vector>

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

/// torch.nn.Upsample: interpolate with a fixed `size` or `scale_factor` (exactly one is set).
struct Upsample {
  std::vector<int64_t> size{};
  std::vector<double> scale_factor{};
  InterpolateMode mode = InterpolateMode::Nearest;
  bool align_corners = false;
  EMBER_MODULE(Upsample)
  std::string to_json() const;
  static Upsample from_json(const std::string& json);
  template <int D>
  Tensor<D> operator()(const Tensor<D>& x) const {
    return Tensor<D>(forward(x.dyn()));
  }
  DynTensor forward(const DynTensor& x) const;
};

/// AdaptiveMaxPool1d/2d/3d; with_indices() is return_indices=True.
template <int N>
struct AdaptiveMaxPool {
  SpatialArg output_size;
  EMBER_MODULE_NAMED(AdaptiveMaxPool, N == 1   ? "AdaptiveMaxPool1d"
                                      : N == 2 ? "AdaptiveMaxPool2d"
                                               : "AdaptiveMaxPool3d")
  std::string to_json() const;
  static AdaptiveMaxPool from_json(const std::string& json);
  template <int D>
  Tensor<D> operator()(const Tensor<D>& x) const {
    return Tensor<D>(forward(x.dyn()));
  }
  DynTensor forward(const DynTensor& x) const { return with_indices(x).values; }
  ValuesIndices with_indices(const DynTensor& x) const {
    if constexpr (N == 1) return adaptive_max_pool1d_with_indices(x, output_size);
    if constexpr (N == 2) return adaptive_max_pool2d_with_indices(x, output_size);
    if constexpr (N == 3) return adaptive_max_pool3d_with_indices(x, output_size);
  }
};
using AdaptiveMaxPool1d = AdaptiveMaxPool<1>;
using AdaptiveMaxPool2d = AdaptiveMaxPool<2>;
using AdaptiveMaxPool3d = AdaptiveMaxPool<3>;
extern template struct AdaptiveMaxPool<1>;
extern template struct AdaptiveMaxPool<2>;
extern template struct AdaptiveMaxPool<3>;

/// torch.nn.CosineSimilarity: cosine_similarity(x1, x2, dim, eps), `dim` removed.
struct CosineSimilarity {
  int64_t dim = 1;
  double eps = 1e-8;
  EMBER_MODULE(CosineSimilarity)
  std::string to_json() const;
  static CosineSimilarity from_json(const std::string& json);
  template <int D>
  Tensor<D - 1> operator()(const Tensor<D>& x1, const Tensor<D>& x2) const {
    return Tensor<D - 1>(forward(x1.dyn(), x2.dyn()));
  }
  DynTensor forward(const DynTensor& x1, const DynTensor& x2) const {
    return cosine_similarity(x1, x2, dim, eps);
  }
};

/// torch.nn.PairwiseDistance: pairwise_distance(x1, x2, p, eps, keepdim) over the last dim.
/// The result's rank follows the runtime `keepdim`, so the typed call returns a DynTensor.
struct PairwiseDistance {
  double p = 2.0;
  double eps = 1e-6;
  bool keepdim = false;
  EMBER_MODULE(PairwiseDistance)
  std::string to_json() const;
  static PairwiseDistance from_json(const std::string& json);
  template <int D>
  DynTensor operator()(const Tensor<D>& x1, const Tensor<D>& x2) const {
    return forward(x1.dyn(), x2.dyn());
  }
  DynTensor forward(const DynTensor& x1, const DynTensor& x2) const {
    return pairwise_distance(x1, x2, p, eps, keepdim);
  }
};

}  // namespace ember::nn
