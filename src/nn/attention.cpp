// Attention and the Transformer encoder, following PyTorch's math path step by step (so that
// results agree to rounding with its implementation on the same weights).
#include "ember/nn/attention.hpp"

#include <cmath>
#include <limits>
#include <memory>

#include "config_json.hpp"
#include "ember/autodiff/node.hpp"
#include "ember/core/error.hpp"
#include "ember/tensor/autocast.hpp"
#include "ember/tensor/ops/attention.hpp"

namespace ember::nn {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A Bool mask as an additive one: `blocked` positions get -inf.
DynTensor additive(const DynTensor& mask, bool true_blocks, DType dtype) {
  if (mask.dtype() != DType::boolean) return cast(mask, dtype);
  const DynTensor zero = zeros(Shape{}, dtype, mask.device());
  return true_blocks ? where(mask, -kInf, zero) : where(mask, zero, -kInf);
}

// The feed-forward block of both Transformer layers: linear2(dropout(act(linear1(x)))), then
// the block's own output dropout.
DynTensor feed_forward(const Linear& linear1, const Dropout& dropout, const Linear& linear2,
                       const Dropout& out_dropout, bool gelu_activation, const DynTensor& x) {
  const DynTensor hidden = linear1.forward(x);
  const DynTensor act = gelu_activation ? gelu(hidden, false) : relu(hidden);
  return out_dropout.forward(linear2.forward(dropout.forward(act)));
}

// One residual sub-block: x + f(norm(x)) when norm_first, else norm(x + f(x)) (PyTorch's two).
template <class F>
DynTensor residual(const LayerNorm& norm, bool norm_first, const DynTensor& x, F&& f) {
  return norm_first ? add(x, f(norm.forward(x))) : norm.forward(add(x, f(x)));
}

LayerNorm transformer_norm(const TransformerEncoderLayerConfig& c, Device device) {
  return LayerNorm(LayerNormConfig({c.d_model}).epsilon(c.layer_norm_eps), device);
}

DynTensor causal_mask(int64_t l, int64_t s, DType dtype, Device device) {
  const DynTensor i = reshape(arange(0, l, 1, DType::i64, device), Shape{l, 1});
  const DynTensor j = reshape(arange(0, s, 1, DType::i64, device), Shape{1, s});
  return additive(gt(j, i), true, dtype);
}

// attn_mask as the fused kernels take it: additive, in q's dtype, [B or 1, H or 1, L, S] with a
// unit last stride; undefined where it cannot be (more than 4 dims, a shape that does not
// broadcast so, or a mask that needs a gradient: the kernels give it none).
DynTensor fused_mask(const DynTensor& attn_mask, const DynTensor& q, const DynTensor& k) {
  if (attn_mask.requires_grad() || attn_mask.rank() > 4) return {};
  DynTensor m = additive(detach(attn_mask), false, q.dtype());
  while (m.rank() < 4) m = unsqueeze(m, 0);
  const Shape want{m.size(0), m.size(1), q.size(2), k.size(2)};
  for (int i = 0; i < 4; ++i) {
    const bool full = i < 2 ? m.size(i) == q.size(i) : m.size(i) == want[i];
    if (m.size(i) != 1 && !full) return {};
  }
  if (m.shape() != want) m = expand(m, want);  // the query and key dims in full
  bool direct = m.strides()[3] == 1;
  for (int i = 0; i < 4; ++i) direct = direct && (m.size(i) == 1 || m.strides()[i] != 0);
  return direct ? m : contiguous(m);
}

}  // namespace

DynTensor scaled_dot_product_attention(const DynTensor& q, const DynTensor& k, const DynTensor& v,
                                       const DynTensor& attn_mask, double dropout_p, bool is_causal,
                                       std::optional<double> scale, Generator* gen) {
  EMBER_CHECK(q.rank() >= 2 && k.rank() >= 2 && v.rank() >= 2,
              "[scaled_dot_product_attention] q, k, v need at least 2 dims, got ", q.shape(), ", ",
              k.shape(), ", ", v.shape());
  EMBER_CHECK(q.size(-1) == k.size(-1) && k.size(-2) == v.size(-2),
              "[scaled_dot_product_attention] shapes do not agree: q ", q.shape(), ", k ",
              k.shape(), ", v ", v.shape());
  EMBER_CHECK(!(is_causal && attn_mask.defined()),
              "[scaled_dot_product_attention] give attn_mask or is_causal, not both");
  if (ember::detail::autocast_lowers(q, k, v)) {
    using ember::detail::autocast_lower;
    return scaled_dot_product_attention(autocast_lower(q), autocast_lower(k), autocast_lower(v),
                                        attn_mask, dropout_p, is_causal, scale, gen);
  }
  const double s = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  const bool fusable = dropout_p == 0.0 && q.rank() == 4 && fused_attention_supported(q, k, v);
  const DynTensor bias = fusable && attn_mask.defined() ? fused_mask(attn_mask, q, k) : DynTensor();
  if (fusable &&
      (!attn_mask.defined() || (bias.defined() && fused_attention_supported(q, k, v, bias)))) {
    // One fused kernel each way (cuDNN's flash attention on Cuda): no [L, S] score matrix; a
    // mask is added to the scores inside the kernels.
    AttentionParams p;
    p.scale = s;
    p.causal = is_causal;
    auto fwd =
        std::make_shared<FusedAttention>(fused_attention(detach(q), detach(k), detach(v), p, bias));
    DynTensor out = fwd->out;
    if (autodiff::should_record({&q, &k, &v})) {
      autodiff::record(
          "scaled_dot_product_attention", {&q, &k, &v}, out,
          [q = detach(q), k = detach(k), v = detach(v), fwd, p](autodiff::BackwardArgs& a) {
            EMBER_CHECK(!a.options.create_graph,
                        "[scaled_dot_product_attention] the fused kernels have no "
                        "second derivative (create_graph)");
            auto d = fused_attention_backward(q, k, v, *fwd, a.grad, p);
            for (size_t i = 0; i < 3; ++i) a.input_grads[i] = d[i];
          });
    }
    return out;
  }
  DynTensor scores = mul(matmul(q, transpose(k, -2, -1)), s);
  if (is_causal) {
    scores = add(scores, causal_mask(q.size(-2), k.size(-2), scores.dtype(), q.device()));
  }
  if (attn_mask.defined()) scores = add(scores, additive(attn_mask, false, scores.dtype()));
  DynTensor weights = softmax(scores, -1);
  if (dropout_p > 0.0) weights = dropout(weights, dropout_p, true, gen);
  return matmul(weights, v);
}

std::string MultiheadAttentionConfig::to_json() const {
  return detail::JsonWriter()
      .field("embed_dim", embed_dim)
      .field("num_heads", num_heads)
      .field("dropout", dropout_p)
      .field("bias", has_bias)
      .field("batch_first", batch_first)
      .field("kdim", key_dim.value_or(embed_dim))
      .field("vdim", value_dim.value_or(embed_dim))
      .field("add_bias_kv", has_bias_kv)
      .field("add_zero_attn", has_zero_attn)
      .field("dtype", dtype_name(dtype))
      .str();
}

MultiheadAttentionConfig MultiheadAttentionConfig::from_json(const std::string& json) {
  const detail::JsonReader r(json, "MultiheadAttentionConfig");
  MultiheadAttentionConfig c(r.integer("embed_dim"), r.integer("num_heads"));
  c.dropout_p = r.number("dropout", 0.0);
  c.has_bias = r.boolean("bias", true);
  c.batch_first = r.boolean("batch_first", false);
  c.key_dim = r.integer("kdim", c.embed_dim);
  c.value_dim = r.integer("vdim", c.embed_dim);
  c.has_bias_kv = r.boolean("add_bias_kv", false);
  c.has_zero_attn = r.boolean("add_zero_attn", false);
  c.dtype = r.dtype("dtype", DType::f32);
  return c;
}

MultiheadAttention::MultiheadAttention(const MultiheadAttentionConfig& config, Device device,
                                       Generator* gen)
    : embed_dim(config.embed_dim),
      num_heads(config.num_heads),
      kdim(config.key_dim.value_or(config.embed_dim)),
      vdim(config.value_dim.value_or(config.embed_dim)),
      dropout_p(config.dropout_p),
      batch_first(config.batch_first),
      add_zero_attn(config.has_zero_attn) {
  const int64_t e = config.embed_dim;
  EMBER_CHECK(e > 0 && config.num_heads > 0 && e % config.num_heads == 0,
              "[MultiheadAttention] embed_dim ", e, " must be a positive multiple of num_heads ",
              config.num_heads);
  EMBER_CHECK(kdim > 0 && vdim > 0, "[MultiheadAttention] kdim and vdim must be positive, got ",
              kdim, " and ", vdim);
  // xavier_uniform_ on [rows, cols]: bound sqrt(6 / (fan_in + fan_out)).
  auto xavier = [&](int64_t rows, int64_t cols) {
    const double bound = std::sqrt(6.0 / static_cast<double>(rows + cols));
    return Param<2>(Tensor<2>(rand(Shape{rows, cols}, config.dtype, device, gen, -bound, bound)));
  };
  if (kdim == e && vdim == e) {
    in_proj_weight = xavier(3 * e, e);
  } else {
    q_proj_weight = xavier(e, e);
    k_proj_weight = xavier(e, kdim);
    v_proj_weight = xavier(e, vdim);
  }
  out_proj = Linear(LinearConfig(e, e).bias(config.has_bias).with_dtype(config.dtype), device, gen);
  if (config.has_bias) {
    in_proj_bias = Param<1>(Tensor<1>(zeros(Shape{3 * e}, config.dtype, device)));
    out_proj.bias->set_dyn(zeros(Shape{e}, config.dtype, device));
  }
  if (config.has_bias_kv) {
    // xavier_normal_ on [1, 1, E]: fan_in = fan_out = E, std sqrt(1 / E).
    const double std_kv = std::sqrt(1.0 / static_cast<double>(e));
    bias_k = Param<3>(Tensor<3>(mul(randn(Shape{1, 1, e}, config.dtype, device, gen), std_kv)));
    bias_v = Param<3>(Tensor<3>(mul(randn(Shape{1, 1, e}, config.dtype, device, gen), std_kv)));
  }
}

AttentionOutput MultiheadAttention::forward(const DynTensor& query_in, const DynTensor& key_in,
                                            const DynTensor& value_in,
                                            const DynTensor& key_padding_mask, bool need_weights,
                                            const DynTensor& attn_mask, bool is_causal,
                                            bool average_attn_weights) const {
  const char* op = "MultiheadAttention";
  EMBER_CHECK(query_in.rank() == 3 && key_in.rank() == 3 && value_in.rank() == 3, "[", op,
              "] expects 3-D query, key, value, got ", query_in.shape(), ", ", key_in.shape(), ", ",
              value_in.shape());
  // Sequence first inside, as PyTorch's implementation: [L, N, E].
  const DynTensor query = batch_first ? transpose(query_in, 0, 1) : query_in;
  const DynTensor key = batch_first ? transpose(key_in, 0, 1) : key_in;
  const DynTensor value = batch_first ? transpose(value_in, 0, 1) : value_in;
  const int64_t l = query.size(0), n = query.size(1), e = embed_dim, s = key.size(0);
  const int64_t h = num_heads, hd = e / h;
  EMBER_CHECK(query.size(2) == e && key.size(2) == kdim && value.size(2) == vdim, "[", op,
              "] embed_dim, kdim, vdim are ", e, ", ", kdim, ", ", vdim,
              " but query, key, value are ", query_in.shape(), ", ", key_in.shape(), ", ",
              value_in.shape());
  EMBER_CHECK(key.size(1) == n && value.size(1) == n && value.size(0) == s, "[", op,
              "] batch or source length differ: query ", query_in.shape(), ", key ", key_in.shape(),
              ", value ", value_in.shape());

  std::vector<DynTensor> w(3);
  if (in_proj_weight) {
    w = chunk(in_proj_weight->dyn(), 3, 0);
  } else {
    w = {q_proj_weight->dyn(), k_proj_weight->dyn(), v_proj_weight->dyn()};
  }
  std::vector<DynTensor> b(3);
  if (in_proj_bias) b = chunk(in_proj_bias->dyn(), 3, 0);
  const DynTensor q = linear(query, w[0], b[0]);
  DynTensor k = linear(key, w[1], b[1]), v = linear(value, w[2], b[2]);
  int64_t extra = 0;  // key positions appended after the source's: bias_kv, then zero_attn
  if (bias_k) {
    k = cat({k, expand(bias_k->dyn(), Shape{1, n, e})}, 0);
    v = cat({v, expand(bias_v->dyn(), Shape{1, n, e})}, 0);
    ++extra;
  }
  // [len, N, E] -> [N * H, len, hd]
  auto heads = [&](const DynTensor& t, int64_t len) {
    return transpose(reshape(t, Shape{len, n * h, hd}), 0, 1);
  };
  const DynTensor qh = heads(q, l);
  DynTensor kh = heads(k, s + extra), vh = heads(v, s + extra);
  if (add_zero_attn) {
    const DynTensor zero = zeros(Shape{n * h, 1, hd}, kh.dtype(), kh.device());
    kh = cat({kh, zero}, 1);
    vh = cat({vh, zero}, 1);
    ++extra;
  }
  // The masks cover the source's S positions; the appended ones are always attended.
  auto widen = [&](const DynTensor& m) {
    if (extra == 0) return m;
    Shape z = m.shape();
    z[z.rank() - 1] = extra;
    return cat({m, zeros(z, m.dtype(), m.device())}, -1);
  };

  DynTensor mask;  // additive, broadcasting to [N * H, L, S + extra]
  if (attn_mask.defined()) {
    EMBER_CHECK((attn_mask.rank() == 2 && attn_mask.size(0) == l && attn_mask.size(1) == s) ||
                    (attn_mask.rank() == 3 && attn_mask.size(0) == n * h &&
                     attn_mask.size(1) == l && attn_mask.size(2) == s),
                "[", op, "] attn_mask must be [", l, ", ", s, "] or [", n * h, ", ", l, ", ", s,
                "], got ", attn_mask.shape());
    mask = widen(additive(attn_mask, true, q.dtype()));
  } else if (is_causal) {
    mask = widen(causal_mask(l, s, q.dtype(), q.device()));
  }
  if (key_padding_mask.defined()) {
    EMBER_CHECK(key_padding_mask.rank() == 2 && key_padding_mask.size(0) == n &&
                    key_padding_mask.size(1) == s,
                "[", op, "] key_padding_mask must be [", n, ", ", s, "], got ",
                key_padding_mask.shape());
    const int64_t st = s + extra;
    const DynTensor kpm = reshape(
        expand(reshape(widen(additive(key_padding_mask, true, q.dtype())), Shape{n, 1, 1, st}),
               Shape{n, h, 1, st}),
        Shape{n * h, 1, st});
    mask = mask.defined() ? add(mask, kpm) : kpm;
  }

  const DynTensor scaled_q = mul(qh, std::sqrt(1.0 / static_cast<double>(hd)));
  DynTensor scores = matmul(scaled_q, transpose(kh, -2, -1));
  if (mask.defined()) scores = add(scores, mask);
  DynTensor weights = softmax(scores, -1);
  if (mode.training && dropout_p > 0.0) weights = dropout(weights, dropout_p, true);
  const DynTensor attended = matmul(weights, vh);  // [N * H, L, hd]
  const DynTensor merged = reshape(transpose(attended, 0, 1), Shape{l * n, e});
  DynTensor out = reshape(out_proj.forward(merged), Shape{l, n, e});
  if (batch_first) out = transpose(out, 0, 1);
  AttentionOutput result{out, {}};
  if (need_weights) {
    result.weights = reshape(weights, Shape{n, h, l, s + extra});
    if (average_attn_weights) result.weights = mean(result.weights, {1});
  }
  return result;
}

std::string TransformerEncoderLayerConfig::to_json() const {
  return detail::JsonWriter()
      .field("d_model", d_model)
      .field("nhead", nhead)
      .field("dim_feedforward", dim_feedforward)
      .field("dropout", dropout_p)
      .field("activation", gelu_activation ? "gelu" : "relu")
      .field("layer_norm_eps", layer_norm_eps)
      .field("batch_first", batch_first)
      .field("norm_first", norm_first)
      .field("dtype", dtype_name(dtype))
      .str();
}

TransformerEncoderLayerConfig TransformerEncoderLayerConfig::from_json(const std::string& json) {
  const detail::JsonReader r(json, "TransformerEncoderLayerConfig");
  TransformerEncoderLayerConfig c(r.integer("d_model"), r.integer("nhead"));
  c.dim_feedforward = r.integer("dim_feedforward", 2048);
  c.dropout_p = r.number("dropout", 0.1);
  const std::string act = r.string("activation", "relu");
  EMBER_CHECK(act == "relu" || act == "gelu",
              "[TransformerEncoderLayerConfig] activation must be relu or gelu, got ", act);
  c.gelu_activation = act == "gelu";
  c.layer_norm_eps = r.number("layer_norm_eps", 1e-5);
  c.batch_first = r.boolean("batch_first", false);
  c.norm_first = r.boolean("norm_first", false);
  c.dtype = r.dtype("dtype", DType::f32);
  return c;
}

TransformerEncoderLayer::TransformerEncoderLayer(const TransformerEncoderLayerConfig& c,
                                                 Device device, Generator* gen)
    : self_attn(MultiheadAttentionConfig(c.d_model, c.nhead)
                    .dropout(c.dropout_p)
                    .batch_first_layout(c.batch_first),
                device, gen),
      linear1(LinearConfig(c.d_model, c.dim_feedforward).with_dtype(c.dtype), device, gen),
      dropout(c.dropout_p),
      linear2(LinearConfig(c.dim_feedforward, c.d_model).with_dtype(c.dtype), device, gen),
      norm1(transformer_norm(c, device)),
      norm2(transformer_norm(c, device)),
      dropout1(c.dropout_p),
      dropout2(c.dropout_p),
      norm_first(c.norm_first),
      gelu_activation(c.gelu_activation) {
  if (c.dtype != DType::f32) {
    self_attn.to(c.dtype);
    norm1.to(c.dtype);
    norm2.to(c.dtype);
  }
}

DynTensor TransformerEncoderLayer::forward(const DynTensor& src, const DynTensor& src_mask,
                                           const DynTensor& src_key_padding_mask,
                                           bool is_causal) const {
  auto sa_block = [&](const DynTensor& x) {
    return dropout1.forward(
        self_attn.forward(x, x, x, src_key_padding_mask, false, src_mask, is_causal).output);
  };
  auto ff_block = [&](const DynTensor& x) {
    return feed_forward(linear1, dropout, linear2, dropout2, gelu_activation, x);
  };
  const DynTensor x = residual(norm1, norm_first, src, sa_block);
  return residual(norm2, norm_first, x, ff_block);
}

TransformerEncoder::TransformerEncoder(const TransformerEncoderLayer& layer, int64_t num_layers,
                                       std::optional<LayerNorm> final_norm)
    : norm(std::move(final_norm)) {
  EMBER_CHECK(num_layers > 0, "[TransformerEncoder] num_layers must be positive, got ", num_layers);
  // Copies with their own parameters, as PyTorch's deepcopy of the layer.
  for (int64_t i = 0; i < num_layers; ++i) layers.push_back(layer.deep_copy());
}

DynTensor TransformerEncoder::forward(const DynTensor& src, const DynTensor& mask,
                                      const DynTensor& src_key_padding_mask, bool is_causal) const {
  DynTensor x = src;
  for (const TransformerEncoderLayer& layer : layers) {
    x = layer.forward(x, mask, src_key_padding_mask, is_causal);
  }
  return norm ? norm->forward(x) : x;
}

TransformerDecoderLayer::TransformerDecoderLayer(const TransformerEncoderLayerConfig& c,
                                                 Device device, Generator* gen)
    : self_attn(MultiheadAttentionConfig(c.d_model, c.nhead)
                    .dropout(c.dropout_p)
                    .batch_first_layout(c.batch_first),
                device, gen),
      multihead_attn(MultiheadAttentionConfig(c.d_model, c.nhead)
                         .dropout(c.dropout_p)
                         .batch_first_layout(c.batch_first),
                     device, gen),
      linear1(LinearConfig(c.d_model, c.dim_feedforward).with_dtype(c.dtype), device, gen),
      dropout(c.dropout_p),
      linear2(LinearConfig(c.dim_feedforward, c.d_model).with_dtype(c.dtype), device, gen),
      norm1(transformer_norm(c, device)),
      norm2(transformer_norm(c, device)),
      norm3(transformer_norm(c, device)),
      dropout1(c.dropout_p),
      dropout2(c.dropout_p),
      dropout3(c.dropout_p),
      norm_first(c.norm_first),
      gelu_activation(c.gelu_activation) {
  if (c.dtype != DType::f32) {
    self_attn.to(c.dtype);
    multihead_attn.to(c.dtype);
    norm1.to(c.dtype);
    norm2.to(c.dtype);
    norm3.to(c.dtype);
  }
}

DynTensor TransformerDecoderLayer::forward(const DynTensor& tgt, const DynTensor& memory,
                                           const DynTensor& tgt_mask, const DynTensor& memory_mask,
                                           const DynTensor& tgt_key_padding_mask,
                                           const DynTensor& memory_key_padding_mask,
                                           bool tgt_is_causal) const {
  auto sa_block = [&](const DynTensor& x) {
    return dropout1.forward(
        self_attn.forward(x, x, x, tgt_key_padding_mask, false, tgt_mask, tgt_is_causal).output);
  };
  auto mha_block = [&](const DynTensor& x) {
    return dropout2.forward(
        multihead_attn.forward(x, memory, memory, memory_key_padding_mask, false, memory_mask)
            .output);
  };
  auto ff_block = [&](const DynTensor& x) {
    return feed_forward(linear1, dropout, linear2, dropout3, gelu_activation, x);
  };
  DynTensor x = residual(norm1, norm_first, tgt, sa_block);
  x = residual(norm2, norm_first, x, mha_block);
  return residual(norm3, norm_first, x, ff_block);
}

TransformerDecoder::TransformerDecoder(const TransformerDecoderLayer& layer, int64_t num_layers,
                                       std::optional<LayerNorm> final_norm)
    : norm(std::move(final_norm)) {
  EMBER_CHECK(num_layers > 0, "[TransformerDecoder] num_layers must be positive, got ", num_layers);
  for (int64_t i = 0; i < num_layers; ++i) layers.push_back(layer.deep_copy());
}

DynTensor TransformerDecoder::forward(const DynTensor& tgt, const DynTensor& memory,
                                      const DynTensor& tgt_mask, const DynTensor& memory_mask,
                                      const DynTensor& tgt_key_padding_mask,
                                      const DynTensor& memory_key_padding_mask,
                                      bool tgt_is_causal) const {
  DynTensor x = tgt;
  for (const TransformerDecoderLayer& layer : layers) {
    x = layer.forward(x, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                      memory_key_padding_mask, tgt_is_causal);
  }
  return norm ? norm->forward(x) : x;
}

PositionWiseFeedForward::PositionWiseFeedForward(int64_t d_model, int64_t d_ff, double dropout_p,
                                                 Device device, Generator* gen)
    : linear_inner(LinearConfig(d_model, d_ff), device, gen),
      linear_outer(LinearConfig(d_ff, d_model), device, gen),
      dropout(dropout_p) {}

DynTensor PositionWiseFeedForward::forward(const DynTensor& x) const {
  return linear_outer.forward(dropout.forward(gelu(linear_inner.forward(x), false)));
}

}  // namespace ember::nn
