// Lookup tables: Embedding and EmbeddingBag (torch.nn.Embedding, torch.nn.EmbeddingBag) and their
// functional forms, with PyTorch's options (padding_idx, max_norm, scale_grad_by_freq).
#pragma once

#include <optional>
#include <string>

#include "ember/nn/module.hpp"

namespace ember::nn {

/// The looked-up rows renormalised as torch.embedding_renorm_ does in place: each row of `weight`
/// that `indices` names and whose norm_type-norm exceeds max_norm is scaled by
/// max_norm / (norm + 1e-7). A new tensor (values only, nothing recorded).
DynTensor embedding_renorm(const DynTensor& weight, const DynTensor& indices, double max_norm,
                           double norm_type = 2.0);

/// Rows of `weight` picked by Int indices: [..., dim] for indices [...]
/// (torch.nn.functional.embedding). padding_idx (negative counts from the end, as PyTorch) gets
/// no gradient. max_norm: the looked-up rows have the values of embedding_renorm's, and the
/// gradient reaches `weight` as PyTorch's does (the renormalisation is not differentiated); the
/// caller's tensor is not modified (Ember has no in-place ops: nn::Embedding writes the
/// renormalised rows back into its weight). scale_grad_by_freq divides each row's gradient by
/// how often its index occurs in `indices`.
DynTensor embedding(const DynTensor& indices, const DynTensor& weight,
                    std::optional<int64_t> padding_idx = std::nullopt,
                    std::optional<double> max_norm = std::nullopt, double norm_type = 2.0,
                    bool scale_grad_by_freq = false);

struct EmbeddingConfig {
  int64_t num_embeddings;
  int64_t embedding_dim;
  std::optional<int64_t> padding;
  std::optional<double> max_norm_value;
  double norm_type_value = 2.0;
  bool scale_grad_by_frequency = false;
  DType dtype = DType::f32;

  EmbeddingConfig(int64_t num, int64_t dim) : num_embeddings(num), embedding_dim(dim) {}
  EmbeddingConfig& padding_idx(int64_t idx) {
    padding = idx;
    return *this;
  }
  EmbeddingConfig& max_norm(double m) {
    max_norm_value = m;
    return *this;
  }
  EmbeddingConfig& norm_type(double p) {
    norm_type_value = p;
    return *this;
  }
  EmbeddingConfig& scale_grad_by_freq(bool on) {
    scale_grad_by_frequency = on;
    return *this;
  }
  EmbeddingConfig& with_dtype(DType d) {
    dtype = d;
    return *this;
  }
  std::string to_json() const;
  static EmbeddingConfig from_json(const std::string& json);
};

/// With max_norm, forward() first writes the renormalised rows back into `weight` (PyTorch's
/// in-place embedding_renorm_ under no_grad). In Ember that gives the Param a new leaf (same
/// ParamId, so optimizer state is kept): read its gradient after the forward. A model that calls
/// one such Embedding twice before backward gets the first call's gradient on the replaced leaf.
class Embedding {
 public:
  mutable Param<2> weight;   // mutable: forward() renormalises it when max_norm is set
  int64_t padding_idx = -1;  // -1: none (a configured negative index is wrapped)
  std::optional<double> max_norm;
  double norm_type = 2.0;
  bool scale_grad_by_freq = false;
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
  DynTensor forward(const DynTensor& indices) const;
};

enum class EmbeddingBagMode : uint8_t { Sum, Mean, Max };

/// Sums, means or maxima of bags of rows (torch.nn.functional.embedding_bag), [B, dim]:
/// - `input` 2-D [B, N]: each row is a bag (offsets must be undefined);
/// - `input` 1-D with `offsets` [B] (the start of each bag; the first must be 0), or [B + 1]
///   with include_last_offset (the last is the end of the last bag).
/// per_sample_weights (input's shape, Sum only) weigh the rows. Entries equal to padding_idx are
/// left out (and not counted by Mean); an empty bag gives zeros. max_norm and
/// scale_grad_by_freq as embedding's (scale_grad_by_freq not with Max, as PyTorch). Max with
/// 1-D input reads the offsets on the host (one synchronisation) to size the bags.
DynTensor embedding_bag(const DynTensor& input, const DynTensor& weight,
                        const DynTensor& offsets = {},
                        EmbeddingBagMode mode = EmbeddingBagMode::Mean,
                        const DynTensor& per_sample_weights = {},
                        std::optional<int64_t> padding_idx = std::nullopt,
                        std::optional<double> max_norm = std::nullopt, double norm_type = 2.0,
                        bool scale_grad_by_freq = false, bool include_last_offset = false);

struct EmbeddingBagConfig {
  EmbeddingConfig table;
  EmbeddingBagMode bag_mode = EmbeddingBagMode::Mean;  // PyTorch's default
  bool include_last = false;

  EmbeddingBagConfig(int64_t num, int64_t dim) : table(num, dim) {}
  EmbeddingBagConfig& mode(EmbeddingBagMode m) {
    bag_mode = m;
    return *this;
  }
  EmbeddingBagConfig& include_last_offset(bool on) {
    include_last = on;
    return *this;
  }
  EmbeddingBagConfig& padding_idx(int64_t idx) {
    table.padding_idx(idx);
    return *this;
  }
  EmbeddingBagConfig& max_norm(double m) {
    table.max_norm(m);
    return *this;
  }
  EmbeddingBagConfig& norm_type(double p) {
    table.norm_type(p);
    return *this;
  }
  EmbeddingBagConfig& scale_grad_by_freq(bool on) {
    table.scale_grad_by_freq(on);
    return *this;
  }
  EmbeddingBagConfig& with_dtype(DType d) {
    table.with_dtype(d);
    return *this;
  }
  std::string to_json() const;
  static EmbeddingBagConfig from_json(const std::string& json);
};

/// torch.nn.EmbeddingBag: the table of Embedding (same initialisation, same max_norm
/// write-back) reduced per bag.
class EmbeddingBag {
 public:
  mutable Param<2> weight;
  int64_t padding_idx = -1;
  std::optional<double> max_norm;
  double norm_type = 2.0;
  bool scale_grad_by_freq = false;
  EmbeddingBagMode mode = EmbeddingBagMode::Mean;
  bool include_last_offset = false;
  EMBER_MODULE(EmbeddingBag, weight)

  EmbeddingBag() = default;
  explicit EmbeddingBag(const EmbeddingBagConfig& config, Device device = default_device(),
                        Generator* gen = nullptr);
  DynTensor forward(const DynTensor& input, const DynTensor& offsets = {},
                    const DynTensor& per_sample_weights = {}) const;
  template <int D>
  Tensor<2> operator()(const Tensor<D, Int>& input, const Tensor<1, Int>& offsets = {}) const {
    return Tensor<2>(forward(input.dyn(), offsets.dyn()));
  }
};

}  // namespace ember::nn
