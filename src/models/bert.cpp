#include "ember/models/bert.hpp"

#include "ember/core/error.hpp"
#include "ember/nn/attention.hpp"

namespace ember::models {

int64_t BertConfig::num_params() const {
  const int64_t h = hidden_size, i = intermediate_size;
  const int64_t embeddings = (vocab_size + max_position_embeddings + type_vocab_size) * h + 2 * h;
  const int64_t layer = 4 * (h * h + h) + 2 * (2 * h) + (h * i + i) + (i * h + h);
  return embeddings + num_hidden_layers * layer + (h * h + h);
}

namespace {

nn::Linear dense(int64_t in, int64_t out, Device device, Generator* gen) {
  nn::Linear l(nn::LinearConfig(in, out), device, gen);
  l.weight.set_dyn(randn(Shape{out, in}, DType::f32, device, gen, 0.0, 0.02));
  l.bias->set_dyn(zeros(Shape{out}, DType::f32, device));
  return l;
}

nn::Embedding table(int64_t n, int64_t d, Device device, Generator* gen) {
  nn::Embedding e(nn::EmbeddingConfig(n, d), device, gen);
  e.weight.set_dyn(randn(Shape{n, d}, DType::f32, device, gen, 0.0, 0.02));
  return e;
}

nn::LayerNorm norm(const BertConfig& c, Device device) {
  return nn::LayerNorm(nn::LayerNormConfig({c.hidden_size}).epsilon(c.layer_norm_eps), device);
}

BertDenseOutput dense_output(int64_t in, const BertConfig& c, Device device, Generator* gen) {
  return {dense(in, c.hidden_size, device, gen), norm(c, device),
          nn::Dropout(c.hidden_dropout_prob)};
}

DynTensor apply(const BertDenseOutput& o, const DynTensor& x, const DynTensor& residual) {
  return o.LayerNorm.forward(add(o.dropout.forward(o.dense.forward(x)), residual));
}

}  // namespace

Bert::Bert(const BertConfig& c, Device device, Generator* gen)
    : embeddings{table(c.vocab_size, c.hidden_size, device, gen),
                 table(c.max_position_embeddings, c.hidden_size, device, gen),
                 table(c.type_vocab_size, c.hidden_size, device, gen), norm(c, device),
                 nn::Dropout(c.hidden_dropout_prob)},
      pooler{dense(c.hidden_size, c.hidden_size, device, gen)},
      num_heads(c.num_attention_heads) {
  EMBER_CHECK(c.hidden_size % c.num_attention_heads == 0, "[Bert] hidden_size ", c.hidden_size,
              " is not a multiple of num_attention_heads ", c.num_attention_heads);
  const int64_t h = c.hidden_size;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    encoder.layer.push_back(BertLayer{
        BertAttention{BertSelfAttention{dense(h, h, device, gen), dense(h, h, device, gen),
                                        dense(h, h, device, gen),
                                        nn::Dropout(c.attention_probs_dropout_prob)},
                      dense_output(h, c, device, gen)},
        BertIntermediate{dense(h, c.intermediate_size, device, gen)},
        dense_output(c.intermediate_size, c, device, gen)});
  }
}

BertOutputs Bert::forward(const Tensor<2, Int>& input_ids, const Tensor<2, Int>& attention_mask,
                          const Tensor<2, Int>& token_type_ids) const {
  const int64_t b = input_ids.size(0), t = input_ids.size(1);
  const int64_t h = embeddings.word_embeddings.weight.shape()[1], hd = h / num_heads;
  EMBER_CHECK(t <= embeddings.position_embeddings.weight.shape()[0], "[Bert] sequence of ", t,
              " tokens exceeds max_position_embeddings ",
              embeddings.position_embeddings.weight.shape()[0]);
  const DynTensor types = token_type_ids.defined()
                              ? token_type_ids.dyn()
                              : zeros(Shape{b, t}, DType::i64, input_ids.device());
  DynTensor x = add(add(embeddings.word_embeddings.forward(input_ids.dyn()),
                        narrow(embeddings.position_embeddings.weight.dyn(), 0, 0, t)),
                    embeddings.token_type_embeddings.forward(types));
  x = embeddings.dropout.forward(embeddings.LayerNorm.forward(x));

  // [B, T] padding mask -> Bool [B, 1, 1, T], true where attending is allowed.
  DynTensor allowed;
  if (attention_mask.defined()) {
    allowed = reshape(ne(attention_mask.dyn(), 0), Shape{b, 1, 1, t});
  }
  auto heads = [&](const DynTensor& y) {
    return transpose(reshape(y, Shape{b, t, num_heads, hd}), 1, 2);
  };
  for (const BertLayer& layer : encoder.layer) {
    const BertSelfAttention& sa = layer.attention.self;
    const double p = sa.dropout.mode.training ? sa.dropout.p : 0.0;
    const DynTensor ctx =
        nn::scaled_dot_product_attention(heads(sa.query.forward(x)), heads(sa.key.forward(x)),
                                         heads(sa.value.forward(x)), allowed, p);
    const DynTensor attended =
        apply(layer.attention.output, reshape(transpose(ctx, 1, 2), Shape{b, t, h}), x);
    const DynTensor inner = gelu(layer.intermediate.dense.forward(attended), false);
    x = apply(layer.output, inner, attended);
  }
  const DynTensor first = select(x, 1, 0);
  return {Tensor<3>(x), Tensor<2>(tanh(pooler.dense.forward(first)))};
}

Tensor<2> mean_pooling(const Tensor<3>& last_hidden_state, const Tensor<2, Int>& attention_mask) {
  const Tensor<3> mask = attention_mask.to<Float>(last_hidden_state.dtype()).unsqueeze(2);
  return (last_hidden_state * mask).sum(1) / clamp_min(mask.sum(1), 1e-9);
}

nn::KeyMap bert_hf_key_map() {
  return {{R"(^bert\.)", ""},
          {R"(^embeddings\.position_ids$)", ""},
          {R"(^(cls|classifier|qa_outputs)\..*)", ""},
          {R"(LayerNorm\.gamma$)", "LayerNorm.weight"},
          {R"(LayerNorm\.beta$)", "LayerNorm.bias"}};
}

}  // namespace ember::models
