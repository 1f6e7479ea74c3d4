// Dropout and Embedding (torch.nn.Dropout, torch.nn.Embedding).
#pragma once

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

/// Rows of `weight` picked by Int indices: [..., dim] for indices [...]. Rows at padding_idx
/// get no gradient (torch.nn.functional.embedding).
DynTensor embedding(const DynTensor& indices, const DynTensor& weight, int64_t padding_idx = -1);

struct EmbeddingConfig {
  int64_t num_embeddings;
  int64_t embedding_dim;
  std::optional<int64_t> padding;
  DType dtype = DType::f32;

  EmbeddingConfig(int64_t num, int64_t dim) : num_embeddings(num), embedding_dim(dim) {}
  EmbeddingConfig& padding_idx(int64_t idx) {
    padding = idx;
    return *this;
  }
  std::string to_json() const;
  static EmbeddingConfig from_json(const std::string& json);
};

class Embedding {
 public:
  Param<2> weight;
  int64_t padding_idx = -1;
  EMBER_MODULE(Embedding, weight)

  Embedding() = default;
  /// Weight N(0, 1), the padding row zero (PyTorch's initialisation).
  explicit Embedding(const EmbeddingConfig& config, Device device = default_device(),
                     Generator* gen = nullptr);
  Embedding(int64_t num_embeddings, int64_t embedding_dim, Device device = default_device())
      : Embedding(EmbeddingConfig(num_embeddings, embedding_dim), device) {}

  template <int D>
  Tensor<D + 1> operator()(const Tensor<D, Int>& indices) const {
    return Tensor<D + 1>(forward(indices.dyn()));
  }
  DynTensor forward(const DynTensor& indices) const {
    return embedding(indices, weight.dyn(), padding_idx);
  }
};

}  // namespace ember::nn
