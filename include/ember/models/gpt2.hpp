// GPT-2 (Radford et al. 2019) with Hugging Face's GPT2Model parameter names and layouts
// (wte, wpe, h.0.ln_1, h.0.attn.c_attn, ...; its Conv1D layers keep weights as [in, out]), so a
// GPT-2 checkpoint's safetensors loads by name. The language-model head is tied to wte.
#pragma once

#include <vector>

#include "ember/nn/dropout.hpp"
#include "ember/nn/norm.hpp"
#include "ember/nn/serialize.hpp"

namespace ember::models {

struct Gpt2Config {
  int64_t vocab_size = 50257;
  int64_t n_positions = 1024;
  int64_t n_embd = 768;
  int64_t n_layer = 12;
  int64_t n_head = 12;
  double dropout = 0.1;  // embeddings, attention and residual dropout
  double layer_norm_epsilon = 1e-5;

  static Gpt2Config small() { return {}; }
  /// Parameters of the model this config builds, without building it.
  int64_t num_params() const;
};

/// Hugging Face's Conv1D: y = x W + b with W [in, out] (a Linear with the transposed layout).
struct Conv1D {
  nn::Param<2> weight;
  nn::Param<1> bias;
  EMBER_MODULE(Conv1D, weight, bias)
  Conv1D(int64_t in, int64_t out, Device device, Generator* gen);
  DynTensor forward(const DynTensor& x) const;
};

struct Gpt2Attention {
  Conv1D c_attn, c_proj;
  nn::Dropout attn_dropout, resid_dropout;
  int64_t n_head = 12;
  EMBER_MODULE(Gpt2Attention, c_attn, c_proj, attn_dropout, resid_dropout)
  DynTensor forward(const DynTensor& x) const;  // causal self-attention over [B, T, C]
};

struct Gpt2Mlp {
  Conv1D c_fc, c_proj;
  nn::Dropout dropout;
  EMBER_MODULE(Gpt2Mlp, c_fc, c_proj, dropout)
  DynTensor forward(const DynTensor& x) const;
};

struct Gpt2Block {
  nn::LayerNorm ln_1;
  Gpt2Attention attn;
  nn::LayerNorm ln_2;
  Gpt2Mlp mlp;
  EMBER_MODULE(Gpt2Block, ln_1, attn, ln_2, mlp)
  DynTensor forward(const DynTensor& x) const;
};

struct Gpt2 {
  nn::Param<2> wte, wpe;
  nn::Dropout drop;
  std::vector<Gpt2Block> h;
  nn::LayerNorm ln_f;
  EMBER_MODULE(Gpt2, wte, wpe, drop, h, ln_f)

  /// Weights N(0, 0.02), biases 0, LayerNorms 1 and 0 (GPT-2's initialisation; c_proj layers
  /// scaled by 1/sqrt(2 n_layer) as in the paper).
  explicit Gpt2(const Gpt2Config& config, Device device = default_device(),
                Generator* gen = nullptr);
  /// Token ids [B, T] -> the last hidden states [B, T, n_embd].
  Tensor<3> hidden_states(const Tensor<2, Int>& input_ids) const;
  /// Token ids [B, T] -> next-token logits [B, T, vocab_size] (the head is wte, transposed).
  Tensor<3> forward(const Tensor<2, Int>& input_ids) const;
  Tensor<3> operator()(const Tensor<2, Int>& input_ids) const { return forward(input_ids); }
};

/// Renames for checkpoints of Hugging Face's GPT2Model and GPT2LMHeadModel: strips the
/// "transformer." prefix, reads wte.weight and wpe.weight as the wte and wpe parameters, and drops
/// lm_head.weight (tied to wte) and the attention-mask buffers (attn.bias, attn.masked_bias)
/// older versions saved. Use as LoadOptions::rename.
nn::KeyMap gpt2_hf_key_map();

}  // namespace ember::models
