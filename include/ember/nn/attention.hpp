// Attention (torch.nn.functional.scaled_dot_product_attention, torch.nn.MultiheadAttention) and
// the Transformer encoder (torch.nn.TransformerEncoderLayer / TransformerEncoder), with
// PyTorch's parameter names, layouts and defaults.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ember/nn/dropout.hpp"
#include "ember/nn/linear.hpp"
#include "ember/nn/norm.hpp"

namespace ember::nn {

/// softmax(q k^T * scale + mask) v over the last two dims ([..., L, E] queries, [..., S, E]
/// keys, [..., S, Ev] values). attn_mask broadcasts to [..., L, S]: Bool (true = attend, as
/// PyTorch) or Float (added). is_causal masks j > i. scale defaults to 1 / sqrt(E).
DynTensor scaled_dot_product_attention(const DynTensor& q, const DynTensor& k, const DynTensor& v,
                                       const DynTensor& attn_mask = {}, double dropout_p = 0.0,
                                       bool is_causal = false,
                                       std::optional<double> scale = std::nullopt,
                                       Generator* gen = nullptr);

struct MultiheadAttentionConfig {
  int64_t embed_dim;
  int64_t num_heads;
  double dropout_p = 0.0;
  bool has_bias = true;
  bool batch_first = false;
  std::optional<int64_t> key_dim, value_dim;  // kdim, vdim: embed_dim when not given
  bool has_bias_kv = false, has_zero_attn = false;
  DType dtype = DType::f32;

  MultiheadAttentionConfig(int64_t embed, int64_t heads) : embed_dim(embed), num_heads(heads) {}
  /// Keys and values of other widths than embed_dim: separate q/k/v projection weights
  /// (q_proj_weight [E, E], k_proj_weight [E, kdim], v_proj_weight [E, vdim]), as PyTorch.
  MultiheadAttentionConfig& kdim(int64_t d) {
    key_dim = d;
    return *this;
  }
  MultiheadAttentionConfig& vdim(int64_t d) {
    value_dim = d;
    return *this;
  }
  /// Learned bias_k, bias_v [1, 1, E] appended to the projected keys and values.
  MultiheadAttentionConfig& add_bias_kv(bool on) {
    has_bias_kv = on;
    return *this;
  }
  /// A zero key and value appended per head, after the projections (and bias_kv).
  MultiheadAttentionConfig& add_zero_attn(bool on) {
    has_zero_attn = on;
    return *this;
  }
  MultiheadAttentionConfig& dropout(double p) {
    dropout_p = p;
    return *this;
  }
  MultiheadAttentionConfig& bias(bool on) {
    has_bias = on;
    return *this;
  }
  MultiheadAttentionConfig& batch_first_layout(bool on) {
    batch_first = on;
    return *this;
  }
  std::string to_json() const;
  static MultiheadAttentionConfig from_json(const std::string& json);
};

/// The attention output and, when asked for, the weights: averaged over heads [N, L, S], or
/// per head [N, H, L, S] (average_attn_weights = false). S counts bias_kv's and zero_attn's
/// extra positions.
struct AttentionOutput {
  DynTensor output;
  DynTensor weights;
};

class MultiheadAttention {
 public:
  // [3E, E]: query, key and value projections stacked, when kdim = vdim = E; otherwise the three
  // separate weights below (PyTorch's names and layouts either way).
  std::optional<Param<2>> in_proj_weight;
  std::optional<Param<2>> q_proj_weight, k_proj_weight, v_proj_weight;  // [E, E], [E, kdim], ...
  std::optional<Param<1>> in_proj_bias;                                 // [3E]
  std::optional<Param<3>> bias_k, bias_v;                               // [1, 1, E]
  Linear out_proj;
  ModeFlag mode;
  int64_t embed_dim = 0, num_heads = 1, kdim = 0, vdim = 0;
  double dropout_p = 0.0;
  bool batch_first = false, add_zero_attn = false;
  EMBER_MODULE(MultiheadAttention, in_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight,
               in_proj_bias, bias_k, bias_v, out_proj, mode)

  MultiheadAttention() = default;
  /// Xavier-uniform projections, zero biases (PyTorch's _reset_parameters).
  explicit MultiheadAttention(const MultiheadAttentionConfig& config,
                              Device device = default_device(), Generator* gen = nullptr);

  /// query [L, N, E] ([N, L, E] when batch_first), key [S, N, kdim] and value [S, N, vdim].
  /// key_padding_mask [N, S]: Bool (true = ignore, as PyTorch) or Float (added). attn_mask
  /// [L, S] or [N * heads, L, S]: Bool (true = not allowed, as PyTorch's MultiheadAttention) or
  /// Float. average_attn_weights comes last (PyTorch has it before is_causal), so that calls
  /// written before it keep their meaning.
  AttentionOutput forward(const DynTensor& query, const DynTensor& key, const DynTensor& value,
                          const DynTensor& key_padding_mask = {}, bool need_weights = true,
                          const DynTensor& attn_mask = {}, bool is_causal = false,
                          bool average_attn_weights = true) const;
  Tensor<3> operator()(const Tensor<3>& query, const Tensor<3>& key, const Tensor<3>& value) const {
    return Tensor<3>(forward(query.dyn(), key.dyn(), value.dyn(), {}, false).output);
  }
};

struct TransformerEncoderLayerConfig {
  int64_t d_model;
  int64_t nhead;
  int64_t dim_feedforward = 2048;
  double dropout_p = 0.1;
  bool gelu_activation = false;  // relu (PyTorch's default) or gelu
  double layer_norm_eps = 1e-5;
  bool batch_first = false;
  bool norm_first = false;
  DType dtype = DType::f32;

  TransformerEncoderLayerConfig(int64_t d, int64_t heads) : d_model(d), nhead(heads) {}
  TransformerEncoderLayerConfig& feedforward(int64_t dim) {
    dim_feedforward = dim;
    return *this;
  }
  TransformerEncoderLayerConfig& dropout(double p) {
    dropout_p = p;
    return *this;
  }
  TransformerEncoderLayerConfig& gelu(bool on = true) {
    gelu_activation = on;
    return *this;
  }
  TransformerEncoderLayerConfig& batch_first_layout(bool on) {
    batch_first = on;
    return *this;
  }
  TransformerEncoderLayerConfig& pre_norm(bool on) {
    norm_first = on;
    return *this;
  }
  std::string to_json() const;
  static TransformerEncoderLayerConfig from_json(const std::string& json);
};

class TransformerEncoderLayer {
 public:
  MultiheadAttention self_attn;
  Linear linear1;
  Dropout dropout;
  Linear linear2;
  LayerNorm norm1, norm2;
  Dropout dropout1, dropout2;
  bool norm_first = false, gelu_activation = false;
  EMBER_MODULE(TransformerEncoderLayer, self_attn, linear1, dropout, linear2, norm1, norm2,
               dropout1, dropout2)

  TransformerEncoderLayer() = default;
  explicit TransformerEncoderLayer(const TransformerEncoderLayerConfig& config,
                                   Device device = default_device(), Generator* gen = nullptr);
  /// src [S, N, E] ([N, S, E] when batch_first); masks as MultiheadAttention's.
  DynTensor forward(const DynTensor& src, const DynTensor& src_mask = {},
                    const DynTensor& src_key_padding_mask = {}, bool is_causal = false) const;
  Tensor<3> operator()(const Tensor<3>& src) const { return Tensor<3>(forward(src.dyn())); }
};

/// num_layers copies of a layer (independent parameters), then an optional final LayerNorm.
class TransformerEncoder {
 public:
  std::vector<TransformerEncoderLayer> layers;
  std::optional<LayerNorm> norm;
  EMBER_MODULE(TransformerEncoder, layers, norm)

  TransformerEncoder() = default;
  TransformerEncoder(const TransformerEncoderLayer& layer, int64_t num_layers,
                     std::optional<LayerNorm> final_norm = std::nullopt);
  DynTensor forward(const DynTensor& src, const DynTensor& mask = {},
                    const DynTensor& src_key_padding_mask = {}, bool is_causal = false) const;
  Tensor<3> operator()(const Tensor<3>& src) const { return Tensor<3>(forward(src.dyn())); }
};

/// torch.nn.TransformerDecoderLayer: self-attention, attention over the encoder's output
/// ("memory"), feed-forward; post-norm by default, pre-norm with norm_first. Configured as the
/// encoder layer (d_model, nhead, dim_feedforward, dropout, activation, batch_first, norm_first).
class TransformerDecoderLayer {
 public:
  MultiheadAttention self_attn, multihead_attn;
  Linear linear1;
  Dropout dropout;
  Linear linear2;
  LayerNorm norm1, norm2, norm3;
  Dropout dropout1, dropout2, dropout3;
  bool norm_first = false, gelu_activation = false;
  EMBER_MODULE(TransformerDecoderLayer, self_attn, multihead_attn, linear1, dropout, linear2, norm1,
               norm2, norm3, dropout1, dropout2, dropout3)

  TransformerDecoderLayer() = default;
  explicit TransformerDecoderLayer(const TransformerEncoderLayerConfig& config,
                                   Device device = default_device(), Generator* gen = nullptr);
  /// tgt [T, N, E], memory [S, N, E] (batch first when configured so); masks as
  /// MultiheadAttention's; tgt_is_causal masks future target positions.
  DynTensor forward(const DynTensor& tgt, const DynTensor& memory, const DynTensor& tgt_mask = {},
                    const DynTensor& memory_mask = {}, const DynTensor& tgt_key_padding_mask = {},
                    const DynTensor& memory_key_padding_mask = {},
                    bool tgt_is_causal = false) const;
  Tensor<3> operator()(const Tensor<3>& tgt, const Tensor<3>& memory) const {
    return Tensor<3>(forward(tgt.dyn(), memory.dyn()));
  }
};

class TransformerDecoder {
 public:
  std::vector<TransformerDecoderLayer> layers;
  std::optional<LayerNorm> norm;
  EMBER_MODULE(TransformerDecoder, layers, norm)

  TransformerDecoder() = default;
  TransformerDecoder(const TransformerDecoderLayer& layer, int64_t num_layers,
                     std::optional<LayerNorm> final_norm = std::nullopt);
  DynTensor forward(const DynTensor& tgt, const DynTensor& memory, const DynTensor& tgt_mask = {},
                    const DynTensor& memory_mask = {}, const DynTensor& tgt_key_padding_mask = {},
                    const DynTensor& memory_key_padding_mask = {},
                    bool tgt_is_causal = false) const;
  Tensor<3> operator()(const Tensor<3>& tgt, const Tensor<3>& memory) const {
    return Tensor<3>(forward(tgt.dyn(), memory.dyn()));
  }
};

/// Burn's PositionWiseFeedForward: linear_outer(dropout(gelu(linear_inner(x)))), [.., d_model]
/// -> [.., d_ff] -> [.., d_model] (the Transformer layers above hold the same block inline).
class PositionWiseFeedForward {
 public:
  Linear linear_inner, linear_outer;
  Dropout dropout;
  EMBER_MODULE(PositionWiseFeedForward, linear_inner, linear_outer, dropout)

  PositionWiseFeedForward() = default;
  PositionWiseFeedForward(int64_t d_model, int64_t d_ff, double dropout_p = 0.1,
                          Device device = default_device(), Generator* gen = nullptr);
  template <int D>
  Tensor<D> operator()(const Tensor<D>& x) const {
    return Tensor<D>(forward(x.dyn()));
  }
  DynTensor forward(const DynTensor& x) const;
};

}  // namespace ember::nn
