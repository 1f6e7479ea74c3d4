// A BERT encoder (Devlin et al. 2019) with Hugging Face's BertModel parameter names
// (embeddings.word_embeddings, encoder.layer.0.attention.self.query, ..., pooler.dense), so
// checkpoints such as sentence-transformers' all-MiniLM-L6-v2 load by name.
#pragma once

#include <vector>

#include "ember/nn/dropout.hpp"
#include "ember/nn/linear.hpp"
#include "ember/nn/norm.hpp"
#include "ember/nn/serialize.hpp"

namespace ember::models {

struct BertConfig {
  int64_t vocab_size = 30522;
  int64_t hidden_size = 768;
  int64_t num_hidden_layers = 12;
  int64_t num_attention_heads = 12;
  int64_t intermediate_size = 3072;
  int64_t max_position_embeddings = 512;
  int64_t type_vocab_size = 2;
  double hidden_dropout_prob = 0.1;
  double attention_probs_dropout_prob = 0.1;
  double layer_norm_eps = 1e-12;

  static BertConfig base() { return {}; }
  /// sentence-transformers/all-MiniLM-L6-v2's shape.
  static BertConfig minilm_l6() { return {30522, 384, 6, 12, 1536, 512, 2, 0.1, 0.1, 1e-12}; }
  /// Parameters of the model this config builds (pooler included), without building it.
  int64_t num_params() const;
};

// Hugging Face's field names, LayerNorm capitalised included.
struct BertEmbeddings {
  nn::Embedding word_embeddings, position_embeddings, token_type_embeddings;
  nn::LayerNorm LayerNorm;
  nn::Dropout dropout;
  EMBER_MODULE(BertEmbeddings, word_embeddings, position_embeddings, token_type_embeddings,
               LayerNorm, dropout)
};

struct BertSelfAttention {
  nn::Linear query, key, value;
  nn::Dropout dropout;
  EMBER_MODULE(BertSelfAttention, query, key, value, dropout)
};

struct BertDenseOutput {  // BertSelfOutput and BertOutput: dense, dropout, residual LayerNorm
  nn::Linear dense;
  nn::LayerNorm LayerNorm;
  nn::Dropout dropout;
  EMBER_MODULE(BertDenseOutput, dense, LayerNorm, dropout)
};

struct BertAttention {
  BertSelfAttention self;
  BertDenseOutput output;
  EMBER_MODULE(BertAttention, self, output)
};

struct BertIntermediate {
  nn::Linear dense;
  EMBER_MODULE(BertIntermediate, dense)
};

struct BertLayer {
  BertAttention attention;
  BertIntermediate intermediate;
  BertDenseOutput output;
  EMBER_MODULE(BertLayer, attention, intermediate, output)
};

struct BertEncoder {
  std::vector<BertLayer> layer;
  EMBER_MODULE(BertEncoder, layer)
};

struct BertPooler {
  nn::Linear dense;
  EMBER_MODULE(BertPooler, dense)
};

struct BertOutputs {
  Tensor<3> last_hidden_state;  // [B, T, hidden]
  Tensor<2> pooler_output;      // [B, hidden]: tanh(dense(first token))
};

struct Bert {
  BertEmbeddings embeddings;
  BertEncoder encoder;
  BertPooler pooler;
  int64_t num_heads = 12;
  EMBER_MODULE(Bert, embeddings, encoder, pooler)

  /// Linear and embedding weights N(0, 0.02), biases 0, LayerNorms 1 and 0 (BERT's init).
  explicit Bert(const BertConfig& config, Device device = default_device(),
                Generator* gen = nullptr);
  /// input_ids [B, T]; attention_mask [B, T] (1 = token, 0 = padding) and token_type_ids may be
  /// empty (all tokens, all type 0).
  BertOutputs forward(const Tensor<2, Int>& input_ids, const Tensor<2, Int>& attention_mask = {},
                      const Tensor<2, Int>& token_type_ids = {}) const;
};

/// Renames for checkpoints of Hugging Face's BERT family (pytorch_model.bin, model.safetensors):
/// BertModel's names are Ember's already; this drops the position_ids buffer, the "bert." prefix
/// of BertFor* models and their task heads ("cls.", "classifier."), and renames the
/// LayerNorm.gamma/beta of old TensorFlow-converted files. Use as LoadOptions::rename.
nn::KeyMap bert_hf_key_map();

/// Mean of the last hidden states over the real tokens: the sentence embedding of
/// sentence-transformers models (all-MiniLM-L6-v2 then L2-normalises it).
Tensor<2> mean_pooling(const Tensor<3>& last_hidden_state, const Tensor<2, Int>& attention_mask);

}  // namespace ember::models
