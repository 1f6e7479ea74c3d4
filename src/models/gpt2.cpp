#include "ember/models/gpt2.hpp"

#include <cmath>

#include "ember/core/error.hpp"
#include "ember/nn/attention.hpp"

namespace ember::models {

int64_t Gpt2Config::num_params() const {
  const int64_t c = n_embd;
  const int64_t block =
      2 * (2 * c) + (c * 3 * c + 3 * c) + (c * c + c) + (c * 4 * c + 4 * c) + (4 * c * c + c);
  return vocab_size * c + n_positions * c + n_layer * block + 2 * c;
}

Conv1D::Conv1D(int64_t in, int64_t out, Device device, Generator* gen)
    : weight(Tensor<2>(randn(Shape{in, out}, DType::f32, device, gen, 0.0, 0.02))),
      bias(Tensor<1>(zeros(Shape{out}, DType::f32, device))) {}

DynTensor Conv1D::forward(const DynTensor& x) const {
  // linear() with the [in, out] weight viewed as [out, in]: the same product, and under
  // autocast the bias is lowered with it (add(matmul, bias) would promote the result to f32).
  return nn::linear(x, transpose(weight.dyn(), 0, 1), bias.dyn());
}

DynTensor Gpt2Attention::forward(const DynTensor& x) const {
  const int64_t b = x.size(0), t = x.size(1), c = x.size(2), hd = c / n_head;
  const std::vector<DynTensor> qkv = split(c_attn.forward(x), c, 2);
  // [B, T, C] -> [B, H, T, hd]
  auto heads = [&](const DynTensor& y) {
    return transpose(reshape(y, Shape{b, t, n_head, hd}), 1, 2);
  };
  const double p = attn_dropout.mode.training ? attn_dropout.p : 0.0;
  const DynTensor a =
      nn::scaled_dot_product_attention(heads(qkv[0]), heads(qkv[1]), heads(qkv[2]), {}, p, true);
  const DynTensor merged = reshape(transpose(a, 1, 2), Shape{b, t, c});
  return resid_dropout.forward(c_proj.forward(merged));
}

DynTensor Gpt2Mlp::forward(const DynTensor& x) const {
  return dropout.forward(c_proj.forward(gelu(c_fc.forward(x), /*tanh_approximation=*/true)));
}

DynTensor Gpt2Block::forward(const DynTensor& x) const {
  const DynTensor h1 = add(x, attn.forward(ln_1.forward(x)));
  return add(h1, mlp.forward(ln_2.forward(h1)));
}

Gpt2::Gpt2(const Gpt2Config& config, Device device, Generator* gen)
    : wte(Tensor<2>(
          randn(Shape{config.vocab_size, config.n_embd}, DType::f32, device, gen, 0.0, 0.02))),
      wpe(Tensor<2>(
          randn(Shape{config.n_positions, config.n_embd}, DType::f32, device, gen, 0.0, 0.01))),
      drop(config.dropout),
      ln_f(nn::LayerNormConfig({config.n_embd}).epsilon(config.layer_norm_epsilon), device) {
  EMBER_CHECK(config.n_embd % config.n_head == 0, "[Gpt2] n_embd ", config.n_embd,
              " is not a multiple of n_head ", config.n_head);
  const int64_t c = config.n_embd;
  const double proj_std = 0.02 / std::sqrt(2.0 * static_cast<double>(config.n_layer));
  for (int64_t i = 0; i < config.n_layer; ++i) {
    Gpt2Block block{
        nn::LayerNorm(nn::LayerNormConfig({c}).epsilon(config.layer_norm_epsilon), device),
        Gpt2Attention{Conv1D(c, 3 * c, device, gen), Conv1D(c, c, device, gen),
                      nn::Dropout(config.dropout), nn::Dropout(config.dropout), config.n_head},
        nn::LayerNorm(nn::LayerNormConfig({c}).epsilon(config.layer_norm_epsilon), device),
        Gpt2Mlp{Conv1D(c, 4 * c, device, gen), Conv1D(4 * c, c, device, gen),
                nn::Dropout(config.dropout)}};
    for (Conv1D* proj : {&block.attn.c_proj, &block.mlp.c_proj}) {
      proj->weight.set_dyn(randn(proj->weight.shape(), DType::f32, device, gen, 0.0, proj_std));
    }
    h.push_back(std::move(block));
  }
}

Tensor<3> Gpt2::hidden_states(const Tensor<2, Int>& input_ids) const {
  const int64_t t = input_ids.size(1);
  EMBER_CHECK(t <= wpe.shape()[0], "[Gpt2] sequence of ", t, " tokens exceeds n_positions ",
              wpe.shape()[0]);
  const DynTensor tokens = nn::embedding(input_ids.dyn(), wte.dyn());
  const DynTensor positions = narrow(wpe.dyn(), 0, 0, t);  // [T, C], broadcast over the batch
  DynTensor x = drop.forward(add(tokens, positions));
  for (const Gpt2Block& block : h) x = block.forward(x);
  return Tensor<3>(ln_f.forward(x));
}

Tensor<3> Gpt2::forward(const Tensor<2, Int>& input_ids) const {
  return Tensor<3>(matmul(hidden_states(input_ids).dyn(), transpose(wte.dyn(), 0, 1)));
}

nn::KeyMap gpt2_hf_key_map() {
  return {{R"(^transformer\.)", ""},
          {R"(^(wte|wpe)\.weight$)", "$1"},
          {R"(^h\.\d+\.attn\.(bias|masked_bias)$)", ""},
          {R"(^lm_head\.weight$)", ""}};
}

}  // namespace ember::models
