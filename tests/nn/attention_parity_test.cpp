// Attention against PyTorch (fixtures/make_attention_fixtures.py): scaled_dot_product_attention
// with a Bool mask and causally, MultiheadAttention with padding and float masks (output, head-
// averaged weights), TransformerEncoderLayer post- and pre-norm; outputs and every gradient in
// float64, to 1e-9 relative.
#include <gtest/gtest.h>

#include <ember/ember.hpp>
#include <ember/nn/nn.hpp>

#include "autodiff/fixture.hpp"

using namespace ember;

namespace {

const test::Fixture& fixture() {
  static const test::Fixture f(EMBER_NN_FIXTURES "/attention.txt");
  return f;
}
DynTensor get(const std::string& name) { return fixture().get(name); }
void expect_close(const DynTensor& got, const std::string& name) {
  fixture().expect_close(got, name, 1e-9, 1e-11);
}

// Loads every parameter of `m` from `<case>.p.<path>`.
template <class M>
void load_params(M& m, const std::string& c) {
  for (const auto& t : nn::named_params(nn::module_tree(m)))
    t.slot->set_dyn(get(c + ".p." + t.path));
}

template <class M>
void expect_param_grads(M& m, const Gradients& g, const std::string& c) {
  for (const auto& t : nn::named_params(nn::module_tree(m))) {
    expect_close(g.get(t.slot->dyn()), c + ".grad." + t.path);
  }
}

}  // namespace

TEST(AttentionParity, ScaledDotProductAttention) {
  for (const std::string c : {"sdpa_bool", "sdpa_causal"}) {
    SCOPED_TRACE(c);
    const DynTensor q = require_grad(get(c + ".in.q")), k = require_grad(get(c + ".in.k")),
                    v = require_grad(get(c + ".in.v"));
    const DynTensor mask = c == "sdpa_bool" ? cast(get(c + ".mask"), DType::boolean) : DynTensor();
    const DynTensor y =
        nn::scaled_dot_product_attention(q, k, v, mask, 0.0, /*is_causal=*/c == "sdpa_causal");
    expect_close(y, c + ".y");
    const Gradients g = backward(y, get(c + ".seed"));
    expect_close(g.get(q), c + ".grad.q");
    expect_close(g.get(k), c + ".grad.k");
    expect_close(g.get(v), c + ".grad.v");
  }
}

TEST(AttentionParity, MultiheadAttentionWithMasks) {
  nn::MultiheadAttention mha(nn::MultiheadAttentionConfig(8, 2));
  mha.to(DType::f64).eval();
  load_params(mha, "mha");
  const DynTensor query = require_grad(get("mha.in.query")), key = require_grad(get("mha.in.key")),
                  value = require_grad(get("mha.in.value"));
  const DynTensor kpm = cast(get("mha.kpm"), DType::boolean);
  const nn::AttentionOutput out = mha.forward(query, key, value, kpm, true, get("mha.attn_mask"));
  expect_close(out.output, "mha.y");
  expect_close(out.weights, "mha.weights");
  const Gradients g = backward(out.output, get("mha.seed"));
  expect_close(g.get(query), "mha.grad.query");
  expect_close(g.get(key), "mha.grad.key");
  expect_close(g.get(value), "mha.grad.value");
  expect_param_grads(mha, g, "mha");
}

TEST(AttentionParity, TransformerEncoderLayer) {
  for (const bool pre : {false, true}) {
    const std::string c = pre ? "encoder_pre" : "encoder_post";
    SCOPED_TRACE(c);
    nn::TransformerEncoderLayer layer(nn::TransformerEncoderLayerConfig(8, 2)
                                          .feedforward(16)
                                          .dropout(0.0)
                                          .batch_first_layout(true)
                                          .pre_norm(pre)
                                          .gelu(pre));
    layer.to(DType::f64);
    load_params(layer, c);
    const DynTensor src = require_grad(get(c + ".in.src"));
    const DynTensor y = layer.forward(src);
    expect_close(y, c + ".y");
    const Gradients g = backward(y, get(c + ".seed"));
    expect_close(g.get(src), c + ".grad.src");
    expect_param_grads(layer, g, c);
  }
}

TEST(Attention, EncoderStackHasIndependentLayersAndPyTorchPaths) {
  nn::TransformerEncoderLayer layer(nn::TransformerEncoderLayerConfig(8, 2).feedforward(16));
  nn::TransformerEncoder enc(layer, 3, nn::LayerNorm(8));
  EXPECT_EQ(enc.layers.size(), 3u);
  EXPECT_NE(enc.layers[0].linear1.weight.id(), enc.layers[1].linear1.weight.id());
  const auto named = nn::named_params(nn::module_tree(enc));
  EXPECT_EQ(named.front().path, "layers.0.self_attn.in_proj_weight");
  EXPECT_EQ(named.back().path, "norm.bias");
  auto x = Tensor<3>::randn({5, 2, 8});
  EXPECT_EQ(enc.eval()(x).shape(), Shape({5, 2, 8}));
  EXPECT_THROW(nn::MultiheadAttention(nn::MultiheadAttentionConfig(10, 3)), Error);
  nn::MultiheadAttention mha(nn::MultiheadAttentionConfig(8, 2));
  EXPECT_THROW(
      mha(Tensor<3>::randn({4, 2, 8}), Tensor<3>::randn({5, 3, 8}), Tensor<3>::randn({5, 3, 8})),
      Error);
}

TEST(AttentionParity, TransformerDecoderLayer) {
  for (const bool pre : {false, true}) {
    const std::string c = pre ? "decoder_pre" : "decoder_post";
    SCOPED_TRACE(c);
    nn::TransformerDecoderLayer layer(nn::TransformerEncoderLayerConfig(8, 2)
                                          .feedforward(16)
                                          .dropout(0.0)
                                          .batch_first_layout(true)
                                          .pre_norm(pre)
                                          .gelu(pre));
    layer.to(DType::f64);
    load_params(layer, c);
    const DynTensor tgt = require_grad(get(c + ".in.tgt"));
    const DynTensor memory = require_grad(get(c + ".in.memory"));
    const DynTensor y = layer.forward(tgt, memory, {}, {}, {}, {}, /*tgt_is_causal=*/true);
    expect_close(y, c + ".y");
    const Gradients g = backward(y, get(c + ".seed"));
    expect_close(g.get(tgt), c + ".grad.tgt");
    expect_close(g.get(memory), c + ".grad.memory");
    expect_param_grads(layer, g, c);
  }
  nn::TransformerDecoder dec(nn::TransformerDecoderLayer(nn::TransformerEncoderLayerConfig(8, 2)),
                             2);
  EXPECT_EQ(nn::named_params(nn::module_tree(dec))[4].path,
            "layers.0.multihead_attn.in_proj_weight");
  EXPECT_EQ(dec.eval()(Tensor<3>::randn({4, 2, 8}), Tensor<3>::randn({6, 2, 8})).shape(),
            Shape({4, 2, 8}));
}

// Issue 14: kdim/vdim (separate q/k/v projection weights), add_bias_kv, add_zero_attn, and the
// per-head weights, with Bool masks, against PyTorch.
TEST(AttentionParity, MultiheadAttentionOptions) {
  struct Case {
    const char* name;
    nn::MultiheadAttentionConfig config;
  };
  const Case cases[] = {
      {"mha_kvdim",
       nn::MultiheadAttentionConfig(8, 2).kdim(5).vdim(3).add_bias_kv(true).add_zero_attn(true)},
      {"mha_bias_kv",
       nn::MultiheadAttentionConfig(8, 2).add_bias_kv(true).bias(false).batch_first_layout(true)},
      {"mha_zero_attn", nn::MultiheadAttentionConfig(8, 2).add_zero_attn(true).kdim(6)}};
  for (const auto& [name, config] : cases) {
    const std::string c = name;
    SCOPED_TRACE(c);
    nn::MultiheadAttention mha(config);
    mha.to(DType::f64).eval();
    EXPECT_EQ(mha.in_proj_weight.has_value(), c == "mha_bias_kv");
    load_params(mha, c);
    const DynTensor query = require_grad(get(c + ".in.query")),
                    key = require_grad(get(c + ".in.key")),
                    value = require_grad(get(c + ".in.value"));
    const nn::AttentionOutput out =
        mha.forward(query, key, value, cast(get(c + ".kpm"), DType::boolean), true,
                    cast(get(c + ".attn_mask"), DType::boolean), false,
                    /*average_attn_weights=*/false);
    expect_close(out.output, c + ".y");
    expect_close(out.weights, c + ".weights");
    const Gradients g = backward(out.output, get(c + ".seed"));
    expect_close(g.get(query), c + ".grad.query");
    expect_close(g.get(key), c + ".grad.key");
    expect_close(g.get(value), c + ".grad.value");
    expect_param_grads(mha, g, c);
  }
}

TEST(Attention, MultiheadAttentionOptionNamesShapesAndErrors) {
  nn::MultiheadAttention mha(
      nn::MultiheadAttentionConfig(8, 2).kdim(5).vdim(3).add_bias_kv(true).add_zero_attn(true));
  std::vector<std::string> paths;
  for (const auto& t : nn::named_params(nn::module_tree(mha))) paths.push_back(t.path);
  // PyTorch's state-dict names, in its order.
  EXPECT_EQ(paths, (std::vector<std::string>{"q_proj_weight", "k_proj_weight", "v_proj_weight",
                                             "in_proj_bias", "bias_k", "bias_v", "out_proj.weight",
                                             "out_proj.bias"}));
  EXPECT_EQ(mha.k_proj_weight->shape(), Shape({8, 5}));
  EXPECT_EQ(mha.bias_k->shape(), Shape({1, 1, 8}));
  const auto q = Tensor<3>::randn({4, 2, 8}), k = Tensor<3>::randn({6, 2, 5}),
             v = Tensor<3>::randn({6, 2, 3});
  const auto out = mha.forward(q.dyn(), k.dyn(), v.dyn(), {}, true, {}, false, false);
  EXPECT_EQ(out.output.shape(), Shape({4, 2, 8}));
  EXPECT_EQ(out.weights.shape(), Shape({2, 2, 4, 8}));  // S + bias_kv + zero_attn
  EXPECT_EQ(mha.forward(q.dyn(), k.dyn(), v.dyn()).weights.shape(), Shape({2, 4, 8}));
  // Keys of the wrong width name all three widths.
  try {
    mha.forward(q.dyn(), v.dyn(), v.dyn());
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("embed_dim, kdim, vdim are 8, 5, 3"), std::string::npos)
        << e.what();
  }
  const auto back = nn::MultiheadAttentionConfig::from_json(
      nn::MultiheadAttentionConfig(8, 2).kdim(5).vdim(3).add_bias_kv(true).to_json());
  EXPECT_EQ(back.key_dim, 5);
  EXPECT_EQ(back.value_dim, 3);
  EXPECT_TRUE(back.has_bias_kv);
  EXPECT_FALSE(back.has_zero_attn);
}

TEST(Attention, PositionWiseFeedForwardIsLinearGeluLinear) {
  nn::PositionWiseFeedForward ff(8, 32, 0.0);
  EXPECT_EQ(ff.num_params(), 8 * 32 + 32 + 32 * 8 + 8);
  const auto x = Tensor<3>::randn({2, 5, 8});
  const auto want = ff.linear_outer(gelu(ff.linear_inner(x), false));
  EXPECT_TRUE(allclose(ff(x), want));
  std::vector<std::string> paths;
  for (const auto& t : nn::named_params(nn::module_tree(ff))) paths.push_back(t.path);
  EXPECT_EQ(paths.front(), "linear_inner.weight");
}
