// Dropout (torch.nn.Dropout); Embedding, which lived here, is in embedding.hpp.
#pragma once

#include "ember/nn/embedding.hpp"
#include "ember/nn/module.hpp"

namespace ember::nn {

/// Zeroes each element with probability p and scales the rest by 1 / (1 - p) when training;
/// the identity otherwise. Draws from `gen` (default: the global generator).
DynTensor dropout(const DynTensor& x, double p, bool training, Generator* gen = nullptr);

class Dropout {
 public:
  double p = 0.5;
  ModeFlag mode;
  EMBER_MODULE(Dropout, mode)

  explicit Dropout(double p = 0.5);
  std::string to_json() const;
  static Dropout from_json(const std::string& json);
  template <int D>
  Tensor<D> operator()(const Tensor<D>& x) const {
    return Tensor<D>(forward(x.dyn()));
  }
  DynTensor forward(const DynTensor& x) const { return dropout(x, p, mode.training); }
};

/// x + N(0, std^2) noise when training, x otherwise (Burn's GaussianNoise; PyTorch has none).
DynTensor gaussian_noise(const DynTensor& x, double std, bool training, Generator* gen = nullptr);

class GaussianNoise {
 public:
  double std = 0.0;
  ModeFlag mode;
  EMBER_MODULE(GaussianNoise, mode)

  explicit GaussianNoise(double std = 0.0);
  std::string to_json() const;
  static GaussianNoise from_json(const std::string& json);
  template <int D>
  Tensor<D> operator()(const Tensor<D>& x) const {
    return Tensor<D>(forward(x.dyn()));
  }
  DynTensor forward(const DynTensor& x) const { return gaussian_noise(x, std, mode.training); }
};

}  // namespace ember::nn
