// The module machinery: DESIGN.md's Mlp, parameter paths, train/eval, freezing, valid(),
// deep copies, device/dtype moves, summaries, configs; and the first layers.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include <ember/ember.hpp>
#include <ember/nn/nn.hpp>

#include "autodiff/gradcheck.hpp"

using namespace ember;

namespace {

struct Mlp {
  nn::Linear fc1, fc2;
  nn::Dropout drop;
  EMBER_MODULE(Mlp, fc1, fc2, drop)
  Tensor<2> forward(const Tensor<2>& x) const { return fc2(drop(relu(fc1(x)))); }
};

std::vector<std::string> paths(const nn::ModuleTree& tree) {
  std::vector<std::string> out;
  for (const auto& t : nn::named_tensors(tree)) out.push_back(t.path);
  return out;
}

}  // namespace

TEST(Module, DesignMlpAsWritten) {
  Device dev = default_device();
  Mlp model{nn::Linear(784, 256, dev), nn::Linear(256, 10, dev), nn::Dropout(0.1)};
  EXPECT_EQ(model.num_params(), 203530);
  EXPECT_EQ(paths(nn::module_tree(model)),
            (std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}));
  EXPECT_EQ(model.fc1.weight.shape(), Shape({256, 784}));  // PyTorch's [out, in]
  auto x = Tensor<2>::randn({8, 784}, dev);
  auto loss = model.forward(x).sum();
  Gradients grads = loss.backward();
  EXPECT_EQ(model.fc1.weight.value().grad(grads).shape(), Shape({256, 784}));
  EXPECT_EQ(grads.size(), 4u);
}

namespace {

struct Block {
  nn::Linear proj;
  nn::Dropout drop;
  EMBER_MODULE(Block, proj, drop)
};

struct Net {
  nn::Embedding embed;
  std::vector<Block> layers;
  std::array<nn::Linear, 2> heads;
  std::optional<nn::Linear> extra;
  nn::Sequential<nn::Linear, nn::ReLU, nn::Linear> mlp;
  int64_t width = 4;  // not part of the module tree
  EMBER_MODULE(Net, embed, layers, heads, extra, mlp)
};

Net make_net() {
  return Net{nn::Embedding(10, 4),
             {Block{nn::Linear(4, 4), nn::Dropout(0.2)}, Block{nn::Linear(4, 4), nn::Dropout(0.2)}},
             {nn::Linear(4, 2), nn::Linear(4, 3, default_device())},
             std::nullopt,
             nn::Sequential<nn::Linear, nn::ReLU, nn::Linear>(nn::Linear(4, 8), nn::ReLU{},
                                                              nn::Linear(8, 4))};
}

}  // namespace

TEST(Module, AParameterReadsAsTheTensorItHolds) {
  nn::Linear fc(3, 2);
  nn::BatchNorm1d bn(2);
  // As a torch.nn.Parameter: data, metadata and printing without .value() or .dyn().
  EXPECT_EQ(fc.weight.to_vector<float>(), fc.weight.value().to_vector<float>());
  EXPECT_EQ(fc.weight.dims(), (std::array<int64_t, 2>{2, 3}));
  EXPECT_EQ(fc.weight.numel(), 6);
  EXPECT_EQ(fc.weight.rank(), 2);
  EXPECT_EQ(fc.weight.dtype(), DType::f32);
  EXPECT_EQ(fc.weight.device(), default_device());
  EXPECT_EQ(bn.num_batches_tracked->item<int64_t>(), 0);
  EXPECT_EQ(bn.running_var->to_vector<float>(), (std::vector<float>{1, 1}));
  std::ostringstream param, tensor;
  param << fc.weight;
  tensor << fc.weight.value();
  EXPECT_EQ(param.str(), tensor.str());
  EXPECT_EQ(param.str().rfind("tensor([[", 0), 0u) << param.str();
}

TEST(Module, NestedPathsFollowPyTorch) {
  Net net = make_net();
  EXPECT_EQ(
      paths(nn::module_tree(net)),
      (std::vector<std::string>{"embed.weight", "layers.0.proj.weight", "layers.0.proj.bias",
                                "layers.1.proj.weight", "layers.1.proj.bias", "heads.0.weight",
                                "heads.0.bias", "heads.1.weight", "heads.1.bias", "mlp.0.weight",
                                "mlp.0.bias", "mlp.2.weight", "mlp.2.bias"}));
  net.extra = nn::Linear(4, 1);
  EXPECT_EQ(paths(nn::module_tree(net)).back(), "mlp.2.bias");
  EXPECT_EQ(paths(nn::module_tree(net))[9], "extra.weight");
  EXPECT_EQ(net.num_params(), 40 + 2 * 20 + 10 + 15 + 5 + 40 + 36);
  auto y = net.mlp(Tensor<2>::randn({3, 4}));
  EXPECT_EQ(y.shape(), Shape({3, 4}));
}

TEST(Module, TrainEvalReachesEveryDropout) {
  Net net = make_net();
  net.eval();
  for (const Block& b : net.layers) EXPECT_FALSE(b.drop.mode.training);
  auto x = Tensor<2>::randn({4, 4});
  EXPECT_TRUE(equal(net.layers[0].drop(x), x));  // identity in eval mode
  net.train();
  for (const Block& b : net.layers) EXPECT_TRUE(b.drop.mode.training);
  auto dropped = net.layers[0].drop(Tensor<2>::ones({64, 64}));
  const double kept = (dropped != 0.0f).to<Float>().mean().item<float>();
  EXPECT_NEAR(kept, 0.8, 0.05);
  EXPECT_NEAR(dropped.max().item<float>(), 1.0 / 0.8, 1e-6);  // survivors scaled by 1/(1-p)
}

TEST(Module, FreezeByPathPrefixAndRegex) {
  Net net = make_net();
  net.freeze("embed");  // a module prefix
  EXPECT_FALSE(net.embed.weight.trainable());
  EXPECT_TRUE(net.heads[0].weight.trainable());
  net.freeze(R"(layers\.\d+\.proj\.bias)");  // a regex
  EXPECT_FALSE(net.layers[1].proj.bias->trainable());
  EXPECT_TRUE(net.layers[1].proj.weight.trainable());
  net.freeze("heads.1.weight");  // an exact path
  EXPECT_FALSE(net.heads[1].weight.trainable());
  EXPECT_THROW(net.freeze("nothing.here"), Error);

  // Frozen parameters get no gradient; the others do.
  auto x = Tensor<2>::randn({2, 4});
  Gradients g = net.heads[1](net.layers[1].proj(x)).sum().backward();
  EXPECT_FALSE(g.contains(net.heads[1].weight.dyn()));
  EXPECT_FALSE(g.contains(net.layers[1].proj.bias->dyn()));
  EXPECT_TRUE(g.contains(net.layers[1].proj.weight.dyn()));
  net.unfreeze();
  EXPECT_TRUE(net.embed.weight.trainable());
}

TEST(Module, ValidIsAFrozenEvalCopySharingStorage) {
  Mlp model{nn::Linear(6, 5), nn::Linear(5, 2), nn::Dropout(0.5)};
  const Mlp inference = model.valid();
  EXPECT_FALSE(inference.drop.mode.training);
  EXPECT_TRUE(model.drop.mode.training);
  EXPECT_FALSE(inference.fc1.weight.trainable());
  EXPECT_TRUE(model.fc1.weight.trainable());
  EXPECT_EQ(inference.fc1.weight.id(), model.fc1.weight.id());
  auto y = inference.forward(Tensor<2>::randn({3, 6}));
  EXPECT_FALSE(y.requires_grad());  // records nothing
  EXPECT_EQ(inference.fc1.weight.dyn().raw().data(), model.fc1.weight.dyn().raw().data());
}

TEST(Module, CopiesShareIdsDeepCopiesDoNot) {
  Mlp model{nn::Linear(6, 5), nn::Linear(5, 2), nn::Dropout(0.5)};
  const Mlp shallow = model;
  EXPECT_EQ(shallow.fc2.weight.id(), model.fc2.weight.id());
  const Mlp deep = model.deep_copy();
  EXPECT_NE(deep.fc2.weight.id(), model.fc2.weight.id());
  EXPECT_NE(deep.fc2.weight.dyn().raw().data(), model.fc2.weight.dyn().raw().data());
  EXPECT_TRUE(equal(deep.fc2.weight.value(), model.fc2.weight.value()));
  EXPECT_TRUE(deep.fc2.weight.trainable());
}

TEST(Module, ParamIdSurvivesUpdates) {
  nn::Linear lin(3, 2);
  const nn::ParamId id = lin.weight.id();
  auto w = lin.weight.value();
  lin.weight.set(w - w.detach() * 0.5f);
  EXPECT_EQ(lin.weight.id(), id);
  EXPECT_TRUE(lin.weight.value().requires_grad());
  // The new value is a fresh leaf, not the update's graph.
  auto g = lin.weight.value().grad(lin.weight.value().sum().backward());
  EXPECT_TRUE(equal(g, Tensor<2>::ones({2, 3})));
}

// Param::set refuses a value of another shape at once (it used to be accepted, failing only in a
// later forward); the parameter keeps its value and the module still runs.
TEST(Module, ParamSetChecksTheShape) {
  nn::Linear lin(3, 4);
  const auto before = lin.weight.value().detach();
  try {
    lin.weight.set(Tensor<2>::zeros({3, 4}));
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "[Param::set] the new value has shape [3, 4] but the parameter has shape [4, 3]");
  }
  EXPECT_TRUE(equal(lin.weight.value(), before));
  EXPECT_EQ(lin(Tensor<2>::ones({2, 3})).shape(), Shape({2, 4}));
  EXPECT_THROW(lin.bias->set(Tensor<1>::zeros({3})), Error);
  lin.weight.set(Tensor<2>::ones({4, 3}));  // the same shape is fine
  EXPECT_TRUE(equal(lin.weight.value(), Tensor<2>::ones({4, 3})));
}

// Composite ops name themselves in their errors, not the inner op that found the problem.
TEST(Module, CompositeErrorsNameTheCompositeOp) {
  const auto x = Tensor<2>::ones({2, 3});
  auto message = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(message([&] { softmax(x.dyn(), 5); }),
            "[softmax] dimension 5 out of range for a tensor of rank 2 (expected -2 to 1)");
  EXPECT_EQ(message([&] { log_softmax(x.dyn(), -3); }),
            "[log_softmax] dimension -3 out of range for a tensor of rank 2 (expected -2 to 1)");
  EXPECT_EQ(message([&] { logsumexp(x.dyn(), {2}); }),
            "[logsumexp] dimension 2 out of range for a tensor of rank 2 (expected -2 to 1)");
  EXPECT_EQ(message([&] { norm(x.dyn(), 2.0, {7}); }),
            "[norm] dimension 7 out of range for a tensor of rank 2 (expected -2 to 1)");
  EXPECT_EQ(message([&] { ember::std(x.dyn(), {4}); }),
            "[std] dimension 4 out of range for a tensor of rank 2 (expected -2 to 1) (in var)");
  // A weight that does not broadcast: the inner mul found it, layer_norm is named.
  EXPECT_EQ(
      message([&] { nn::layer_norm(x.dyn(), {3}, Tensor<1>::ones({2}).dyn(), DynTensor(), 1e-5); }),
      "[layer_norm] shapes cannot be broadcast: [2, 3] and [2] (dimension 1: 3 vs 2) (in mul)");
}

TEST(Module, ToDtypeKeepsIds) {
  Mlp model{nn::Linear(6, 5), nn::Linear(5, 2), nn::Dropout(0.5)};
  const nn::ParamId id = model.fc1.bias->id();
  model.to(DType::f64);
  EXPECT_EQ(model.fc1.weight.dyn().dtype(), DType::f64);
  EXPECT_EQ(model.fc1.bias->id(), id);
  EXPECT_TRUE(model.fc1.weight.trainable());
  EXPECT_EQ(model.forward(Tensor<2>::randn({2, 6}, default_device(), nullptr, DType::f64)).dtype(),
            DType::f64);
  model.to(Device::cpu());
  EXPECT_THROW(model.to(DType::i64), Error);
}

TEST(Module, SummaryTable) {
  Mlp model{nn::Linear(784, 256), nn::Linear(256, 10), nn::Dropout(0.1)};
  model.freeze("fc2");
  const std::string s = model.summary();
  EXPECT_NE(s.find("(root)"), std::string::npos) << s;
  EXPECT_NE(s.find("Mlp"), std::string::npos) << s;
  EXPECT_NE(s.find("fc1.weight"), std::string::npos) << s;
  EXPECT_NE(s.find("[256, 784]"), std::string::npos) << s;
  EXPECT_NE(s.find("200,960"), std::string::npos) << s;  // fc1's count
  EXPECT_NE(s.find("Param (frozen)"), std::string::npos) << s;
  EXPECT_NE(s.find("total parameters: 203,530 (trainable 200,960, frozen 2,570)"),
            std::string::npos)
      << s;
}

TEST(Layers, LinearMatchesItsDefinitionAndInit) {
  Generator gen(3);
  nn::Linear lin(nn::LinearConfig(50, 7), default_device(), &gen);
  const double bound = 1.0 / std::sqrt(50.0);
  EXPECT_LE(abs(lin.weight.value()).max().item<float>(), bound);
  EXPECT_GT(abs(lin.weight.value()).max().item<float>(), 0.9 * bound);
  auto x = Tensor<3>::randn({2, 3, 50});
  auto y = lin(x);
  EXPECT_EQ(y.shape(), Shape({2, 3, 7}));
  EXPECT_TRUE(allclose(y, matmul(x, lin.weight.t()) + lin.bias->value(), 1e-5, 1e-6));
  nn::Linear no_bias(nn::LinearConfig(4, 2).bias(false));
  EXPECT_FALSE(no_bias.bias.has_value());
  EXPECT_EQ(no_bias.num_params(), 8);
  EXPECT_THROW(lin(Tensor<2>::randn({2, 49})), Error);
}

TEST(Layers, ConfigsRoundTripThroughJson) {
  const auto c = nn::LinearConfig(3, 4).bias(false).with_dtype(DType::f64);
  const auto back = nn::LinearConfig::from_json(c.to_json());
  EXPECT_EQ(back.in_features, 3);
  EXPECT_EQ(back.out_features, 4);
  EXPECT_FALSE(back.has_bias);
  EXPECT_EQ(back.dtype, DType::f64);
  EXPECT_EQ(c.to_json(),
            R"({"in_features": 3, "out_features": 4, "bias": false, "dtype": "float64"})");
  const auto e =
      nn::EmbeddingConfig::from_json(nn::EmbeddingConfig(10, 3).padding_idx(0).to_json());
  EXPECT_EQ(e.padding, 0);
  EXPECT_THROW(nn::LinearConfig::from_json(R"({"in_features": "3"})"), Error);
  EXPECT_THROW(nn::LinearConfig::from_json("not json"), Error);
}

// A config read from a file anyone can edit: integers past int64 are refused (nlohmann keeps
// them unsigned and get<int64_t>() wrapped 2^64-1 to -1), and messages stay short and escaped.
TEST(Layers, HostileConfigJsonIsAClearShortError) {
  const auto error_of = [](const std::string& json) -> std::string {
    try {
      nn::ConvConfig::from_json(json);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  std::string what =
      error_of(R"({"in_channels": 18446744073709551615, "out_channels": 1, "kernel_size": 3})");
  EXPECT_NE(what.find("[ConvConfig] key \"in_channels\" must be an integer of 64 bits, got "
                      "18446744073709551615"),
            std::string::npos)
      << what;
  what =
      error_of(R"({"in_channels": 1, "out_channels": 1, "kernel_size": [3, 9223372036854775808]})");
  EXPECT_NE(what.find("\"kernel_size\" must be a list of integers of 64 bits"), std::string::npos)
      << what;
  std::string many = R"({"out_channels": 1, "kernel_size": 3, "in_channels": [1)";
  for (int i = 0; i < 50000; ++i) many += ",1";
  what = error_of(many + "]}");
  EXPECT_NE(what.find("must be an integer of 64 bits, got an array of 50001 values"),
            std::string::npos)
      << what;
  what = error_of(R"({"out_channels": 1, "kernel_size": 3, "in_channels": ")" +
                  std::string(R"(\u001b]0;x)") + std::string(100000, 'x') + "\"}");
  EXPECT_LT(what.size(), 300u) << what.size();
  EXPECT_EQ(what.find('\x1b'), std::string::npos);
  what = error_of("\x1b[2J" + std::string(100000, '{'));
  EXPECT_NE(what.find("expected a JSON object, got: '\\x1b[2J{{{"), std::string::npos) << what;
  EXPECT_LT(what.size(), 300u);
}

TEST(Layers, EmbeddingPaddingRowGetsNoGradient) {
  nn::Embedding emb(nn::EmbeddingConfig(5, 3).padding_idx(1));
  EXPECT_TRUE(equal(emb.weight.value().select(0, 1), Tensor<1>::zeros({3})));
  auto idx = Tensor<2, Int>::from_vector<int64_t>({0, 1, 1, 4, 0, 2}, {2, 3});
  auto out = emb(idx);
  EXPECT_EQ(out.shape(), Shape({2, 3, 3}));
  auto g = emb.weight.value().grad(out.sum().backward());
  auto gv = g.to_vector<float>();
  const std::vector<float> counts = {2, 0, 1, 0, 1};  // row 1 is padding
  for (int r = 0; r < 5; ++r) {
    for (int c = 0; c < 3; ++c) EXPECT_EQ(gv[static_cast<size_t>(r * 3 + c)], counts[r]) << r;
  }
  EXPECT_THROW(synchronize(emb(Tensor<1, Int>::from_vector<int64_t>({7})).device()), Error);
}

TEST(Layers, ActivationsMatchTheirFormulas) {
  auto x = Tensor<1>::from_vector<double>({-2.5, -0.5, 0.25, 1.5, 4.0});
  auto xd = x.to_vector<double>();
  auto check = [&](const DynTensor& y, auto f, const char* name) {
    auto v = y.to_vector<double>();
    for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(v[i], f(xd[i]), 1e-12) << name << " " << i;
  };
  check(
      nn::leaky_relu(x.dyn(), 0.1), [](double v) { return v > 0 ? v : 0.1 * v; }, "leaky_relu");
  check(
      nn::elu(x.dyn(), 1.5), [](double v) { return v > 0 ? v : 1.5 * std::expm1(v); }, "elu");
  check(
      nn::hardsigmoid(x.dyn()), [](double v) { return std::clamp(v + 3, 0.0, 6.0) / 6; },
      "hardsigmoid");
  check(
      nn::hardswish(x.dyn()), [](double v) { return v * std::clamp(v + 3, 0.0, 6.0) / 6; },
      "hardswish");
  check(
      nn::mish(x.dyn()), [](double v) { return v * std::tanh(std::log1p(std::exp(v))); }, "mish");
  check(
      nn::selu(x.dyn()),
      [](double v) {
        return 1.0507009873554804934 * (v > 0 ? v : 1.6732632423543772848 * std::expm1(v));
      },
      "selu");
  auto g = nn::glu(Tensor<2>::from_vector<double>({1, 2, 3, 4}, {1, 4}).dyn()).to_vector<double>();
  EXPECT_NEAR(g[0], 1 / (1 + std::exp(-3.0)), 1e-12);
  EXPECT_NEAR(g[1], 2 / (1 + std::exp(-4.0)), 1e-12);
  EXPECT_THROW(nn::glu(Tensor<1>::ones({3}).dyn()), Error);  // odd size
}

TEST(Layers, ActivationGradients) {
  using namespace ember::test;
  const GradInput in{Shape{3, 4},
                     Layout::Transposed,
                     {-2.1, -1.3, -0.6, -0.2, 0.3, 0.7, 1.1, 1.9, 2.4, -2.7, 0.45, -0.35}};
  const GradInput ch{Shape{4}, Layout::Contiguous, {0.2, 0.3, -0.1, 0.5}};
  EXPECT_TRUE(gradcheck("leaky_relu", [](auto& v) { return nn::leaky_relu(v[0], 0.2); }, {in}));
  EXPECT_TRUE(gradcheck("elu", [](auto& v) { return nn::elu(v[0], 1.3); }, {in}));
  EXPECT_TRUE(gradcheck("selu", [](auto& v) { return nn::selu(v[0]); }, {in}));
  EXPECT_TRUE(gradcheck("mish", [](auto& v) { return nn::mish(v[0]); }, {in}));
  EXPECT_TRUE(gradcheck("hardswish", [](auto& v) { return nn::hardswish(v[0]); }, {in}));
  EXPECT_TRUE(gradcheck("glu", [](auto& v) { return nn::glu(v[0], 1); }, {in}));
  EXPECT_TRUE(gradcheck("swiglu", [](auto& v) { return nn::swiglu(v[0], 1); }, {in}));
  EXPECT_TRUE(
      gradcheck("prelu", [](auto& v) { return nn::prelu(v[0], v[1]); },
                {GradInput{Shape{2, 4, 3},
                           Layout::Contiguous,
                           {-2.1, -1.3, -0.6, -0.2, 0.3, 0.7,  1.1, 1.9,  2.4, -2.7, 0.45, -0.35,
                            1.2,  -1.7, 0.8,  -0.9, 2.2, -0.4, 0.6, -1.1, 1.4, -2.3, 0.9,  0.15}},
                 ch}));
  EXPECT_TRUE(gradcheck(
      "linear", [](auto& v) { return nn::linear(v[0], v[1], v[2]); },
      {in, GradInput{Shape{2, 4}, Layout::Transposed, {0.3, -0.2, 0.5, 0.1, -0.4, 0.6, 0.2, -0.1}},
       GradInput{Shape{2}, Layout::Contiguous, {0.05, -0.15}}}));
}

TEST(Layers, NormConfigsRoundTripThroughJson) {
  const auto g = nn::GroupNormConfig::from_json(nn::GroupNormConfig(4, 8).epsilon(1e-3).to_json());
  EXPECT_EQ(g.num_groups, 4);
  EXPECT_EQ(g.num_channels, 8);
  EXPECT_DOUBLE_EQ(g.eps, 1e-3);
  nn::GroupNorm gn(g);
  EXPECT_EQ(gn.num_params(), 16);
  const auto r = nn::RMSNormConfig::from_json(nn::RMSNormConfig({6}).epsilon(1e-6).to_json());
  EXPECT_EQ(r.eps, 1e-6);
  EXPECT_FALSE(nn::RMSNormConfig::from_json(nn::RMSNormConfig({6}).to_json()).eps.has_value());
  nn::RMSNorm rms(r);
  EXPECT_EQ(rms.num_params(), 6);
  const auto in =
      nn::InstanceNormConfig::from_json(nn::InstanceNormConfig(3).affine(true).to_json());
  EXPECT_TRUE(in.has_affine);
  EXPECT_EQ(nn::InstanceNorm(in).num_params(), 6);
  const auto b =
      nn::BatchNormConfig::from_json(nn::BatchNormConfig(5).with_momentum(0.3).to_json());
  EXPECT_EQ(b.momentum, 0.3);
  EXPECT_FALSE(
      nn::BatchNormConfig::from_json(nn::BatchNormConfig(5).with_momentum(std::nullopt).to_json())
          .momentum);
  const auto l = nn::LayerNormConfig::from_json(nn::LayerNormConfig({7}).bias(false).to_json());
  EXPECT_FALSE(l.has_bias);
  const auto m = nn::MultiheadAttentionConfig::from_json(
      nn::MultiheadAttentionConfig(8, 2).batch_first_layout(true).to_json());
  EXPECT_TRUE(m.batch_first);
  const auto t = nn::TransformerEncoderLayerConfig::from_json(
      nn::TransformerEncoderLayerConfig(8, 2).gelu().pre_norm(true).to_json());
  EXPECT_TRUE(t.gelu_activation && t.norm_first);
}

TEST(Layers, ParameterFreeModulesAreTheirOwnConfigs) {
  EXPECT_DOUBLE_EQ(nn::LeakyReLU::from_json(nn::LeakyReLU{0.2}.to_json()).negative_slope, 0.2);
  EXPECT_DOUBLE_EQ(nn::ELU::from_json(nn::ELU{1.5}.to_json()).alpha, 1.5);
  EXPECT_TRUE(nn::GELU::from_json(nn::GELU{true}.to_json()).tanh_approximation);
  EXPECT_EQ(nn::GELU{true}.to_json(), R"({"approximate": "tanh"})");
  EXPECT_DOUBLE_EQ(nn::Softplus::from_json(nn::Softplus{2.0, 5.0}.to_json()).threshold, 5.0);
  EXPECT_EQ(nn::GLU::from_json(nn::GLU{1}.to_json()).dim, 1);
  EXPECT_EQ(nn::SwiGLU::from_json(nn::SwiGLU{2}.to_json()).dim, 2);
  EXPECT_DOUBLE_EQ(nn::Dropout::from_json(nn::Dropout(0.3).to_json()).p, 0.3);
  EXPECT_THROW(nn::GELU::from_json(R"({"approximate": "erf"})"), Error);
  EXPECT_THROW(nn::Dropout::from_json(R"({"p": 2})"), Error);
  const auto pool = nn::MaxPool2d::from_json(nn::MaxPool2d{{3}, {2}, {1}}.to_json());
  EXPECT_EQ(pool.kernel_size, (SpatialArg{3}));
  EXPECT_EQ(pool.padding, (SpatialArg{1}));
  EXPECT_TRUE(nn::AvgPool1d::from_json(nn::AvgPool1d{{2}, {}, {0}, true}.to_json()).ceil_mode);
  EXPECT_EQ(nn::AdaptiveAvgPool2d::from_json(nn::AdaptiveAvgPool2d{{3, 2}}.to_json()).output_size,
            (SpatialArg{3, 2}));
  const auto flat = nn::Flatten<3>::from_json(nn::Flatten<3>{2, 3}.to_json());
  EXPECT_EQ(flat.start_dim, 2);
  EXPECT_EQ(flat.end_dim, 3);
  EXPECT_EQ(nn::Flatten<>::from_json("{}").start_dim, 1);
  const auto rope = nn::RotaryEncoding::from_json(nn::RotaryEncoding{8, 500.0}.to_json());
  EXPECT_EQ(rope.dim, 8);
  EXPECT_DOUBLE_EQ(rope.theta, 500.0);
  EXPECT_THROW(nn::RotaryEncoding::from_json(R"({"theta": 2})"), Error);  // dim is required
  const auto pe_config = nn::PositionalEncodingConfig::from_json(
      nn::PositionalEncodingConfig(16).max_length(40).dropout(0).batch_first(true).to_json());
  EXPECT_EQ(pe_config.d_model, 16);
  EXPECT_EQ(pe_config.max_len, 40);
  EXPECT_DOUBLE_EQ(pe_config.dropout_p, 0.0);
  EXPECT_TRUE(pe_config.is_batch_first);
  const nn::PositionalEncoding pe(pe_config);
  EXPECT_EQ(pe.pe.dyn().shape(), (Shape{40, 16}));
  EXPECT_TRUE(pe.batch_first);
}

// Issue 14: PyTorch's gradients at the kinks, NaN kept, the options' errors, RReLU's draws.
TEST(Layers, ActivationKinksAndEdgesAsPyTorch) {
  const auto x = require_grad(from_data(
      TensorData::from(std::vector<double>{-3.0, 3.0, -3.5, 0.0, 3.5, -1.0, 1.0, 6.0}, Shape{8})));
  auto grad_of = [&](const DynTensor& y) { return backward(sum(y)).get(x).to_vector<double>(); };
  // hardsigmoid: 0 at exactly -3 and 3 (PyTorch's hardsigmoid_backward), 1/6 inside.
  EXPECT_EQ(grad_of(nn::hardsigmoid(x)),
            (std::vector<double>{0, 0, 0, 1.0 / 6.0, 0, 1.0 / 6.0, 1.0 / 6.0, 0}));
  // hardswish: -0.5 at -3 and 1.5 at 3 (PyTorch's hardswish_backward).
  const auto hs = grad_of(nn::hardswish(x));
  EXPECT_DOUBLE_EQ(hs[0], -0.5);
  EXPECT_DOUBLE_EQ(hs[1], 1.5);
  // hardtanh and relu6: no gradient on the bounds.
  EXPECT_EQ(grad_of(nn::hardtanh(x)), (std::vector<double>{0, 0, 0, 1, 0, 0, 0, 0}));
  EXPECT_EQ(grad_of(nn::relu6(x)), (std::vector<double>{0, 1, 0, 0, 1, 0, 1, 0}));
  // softshrink and hardshrink: no gradient on +-lambd; threshold none at the threshold.
  EXPECT_EQ(grad_of(nn::softshrink(x, 1.0)), (std::vector<double>{1, 1, 1, 0, 1, 0, 0, 1}));
  EXPECT_EQ(grad_of(nn::hardshrink(x, 1.0)), (std::vector<double>{1, 1, 1, 0, 1, 0, 0, 1}));
  EXPECT_EQ(grad_of(nn::threshold(x, 1.0, 5.0)), (std::vector<double>{0, 1, 0, 0, 1, 0, 0, 1}));
  // logsigmoid at 0: 1/2, and finite far out.
  EXPECT_DOUBLE_EQ(grad_of(nn::logsigmoid(x))[3], 0.5);
  const auto far = from_data(TensorData::from(std::vector<double>{-800.0, 800.0}, Shape{2}));
  EXPECT_EQ(nn::logsigmoid(far).to_vector<double>(), (std::vector<double>{-800.0, 0.0}));

  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto n = from_data(TensorData::from(std::vector<double>{nan}, Shape{1}));
  for (const DynTensor& y :
       {nn::hardtanh(n), nn::relu6(n), nn::threshold(n, 0.0, 1.0), nn::softshrink(n),
        nn::hardshrink(n), nn::hardsigmoid(n), nn::softsign(n), nn::celu(n), nn::logsigmoid(n)}) {
    EXPECT_TRUE(std::isnan(y.to_vector<double>()[0]));
  }

  EXPECT_THROW(nn::celu(x, 0.0), Error);
  EXPECT_THROW(nn::softshrink(x, -0.5), Error);
  EXPECT_THROW(nn::hardtanh(x, 1.0, -1.0), Error);
  EXPECT_THROW(nn::rrelu(x, 0.5, 0.1, true), Error);
  EXPECT_THROW(nn::Softmax2d{}.forward(Tensor<2>::ones({2, 3}).dyn()), Error);
  try {
    nn::celu(x, 0.0);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[celu] alpha must not be 0"), std::string::npos);
  }
}

TEST(Layers, RReLUDrawsSlopesWhenTrainingAndUsesTheirMeanOtherwise) {
  const auto x = Tensor<2>::full({64, 64}, -2.0, default_device(), DType::f64);
  nn::RReLU r{0.1, 0.3, {}};
  Generator g1(7), g2(7);
  const auto a = nn::rrelu(x.dyn(), 0.1, 0.3, true, &g1);
  const auto b = nn::rrelu(x.dyn(), 0.1, 0.3, true, &g2);
  EXPECT_TRUE(equal(a, b));  // the same generator state draws the same slopes
  const auto slopes = div(a, -2.0);
  EXPECT_GE(amin(slopes).item<double>(), 0.1);
  EXPECT_LE(amax(slopes).item<double>(), 0.3);
  EXPECT_NEAR(mean(slopes).item<double>(), 0.2, 0.01);
  // Positive inputs pass; gradients are the drawn slopes.
  const auto xp = require_grad(from_data(TensorData::from(std::vector<double>{-1, 2}, Shape{2})));
  Generator g3(3);
  const auto y = nn::rrelu(xp, 0.1, 0.3, true, &g3);
  const auto gx = backward(sum(y)).get(xp).to_vector<double>();
  EXPECT_DOUBLE_EQ(gx[0], -y.to_vector<double>()[0]);
  EXPECT_DOUBLE_EQ(gx[1], 1.0);
  r.eval();
  EXPECT_TRUE(allclose(r(x), x * 0.2));
  EXPECT_DOUBLE_EQ(nn::RReLU::from_json(r.to_json()).upper, 0.3);
}

TEST(Layers, MoreActivationModulesAreTheirOwnConfigs) {
  const auto h = nn::Hardtanh::from_json(nn::Hardtanh{-2.0, 3.0}.to_json());
  EXPECT_DOUBLE_EQ(h.min_val, -2.0);
  EXPECT_DOUBLE_EQ(h.max_val, 3.0);
  EXPECT_DOUBLE_EQ(nn::CELU::from_json(nn::CELU{0.5}.to_json()).alpha, 0.5);
  // Burn's HardSigmoid slopes: clamp(alpha x + beta, 0, 1); PyTorch's by default.
  const auto hs = nn::Hardsigmoid::from_json(nn::Hardsigmoid{0.2, 0.5}.to_json());
  EXPECT_DOUBLE_EQ(hs.alpha, 0.2);
  const auto xs = Tensor<1>::from_vector<double>({-4.0, -1.0, 0.5, 2.0, 3.0});
  EXPECT_EQ(hs(xs).to_vector<double>(), (std::vector<double>{0.0, 0.3, 0.6, 0.9, 1.0}));
  EXPECT_TRUE(equal(nn::Hardsigmoid{}(xs), Tensor<1>(nn::hardsigmoid(xs.dyn()))));
  EXPECT_DOUBLE_EQ(nn::Threshold::from_json(nn::Threshold{0.1, 2.0}.to_json()).value, 2.0);
  EXPECT_DOUBLE_EQ(nn::Softshrink::from_json(nn::Softshrink{0.3}.to_json()).lambd, 0.3);
  EXPECT_DOUBLE_EQ(nn::Hardshrink::from_json(nn::Hardshrink{0.4}.to_json()).lambd, 0.4);
  EXPECT_DOUBLE_EQ(nn::Shrink::from_json(nn::Shrink{0.4, 0.1}.to_json()).bias, 0.1);
  EXPECT_DOUBLE_EQ(nn::ThresholdedReLU::from_json(nn::ThresholdedReLU{2.0}.to_json()).alpha, 2.0);
  EXPECT_EQ(nn::Softmax::from_json(nn::Softmax{0}.to_json()).dim, 0);
  EXPECT_EQ(nn::LogSoftmax::from_json(nn::LogSoftmax{1}.to_json()).dim, 1);
  EXPECT_EQ(nn::Softmin::from_json(nn::Softmin{2}.to_json()).dim, 2);
  // Parameter-free modules in a model: Identity passes its input through.
  auto t = Tensor<2>::randn({2, 3});
  EXPECT_TRUE(equal(nn::Identity{}(t), t));
  EXPECT_EQ(nn::Softsign{}.num_params(), 0);
}

TEST(Layers, EmbeddingOptionsAndBagsCheckTheirInput) {
  const auto w = Tensor<2>::randn({6, 3}).dyn();
  const auto idx = Tensor<1, Int>::from_vector<int64_t>({0, 5, 2, 5}).dyn();
  const auto offsets = Tensor<1, Int>::from_vector<int64_t>({0, 1}).dyn();
  using nn::EmbeddingBagMode;
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([&] { nn::embedding(idx, w, 6); }).find("[embedding] padding_idx 6"),
            std::string::npos);
  EXPECT_THROW(nn::embedding(idx, w, -7), Error);
  // padding_idx -1 is row 5: its rows get no gradient.
  const auto wl = require_grad(w);
  const auto g = backward(sum(nn::embedding(idx, wl, -1))).get(wl).to_vector<float>();
  EXPECT_EQ(g[5 * 3], 0.0f);
  EXPECT_EQ(g[0], 1.0f);
  EXPECT_NE(message([&] {
              nn::embedding_bag(idx, w, offsets, EmbeddingBagMode::Mean, ones_like(w));
            }).find("[embedding_bag] per_sample_weights are only supported with mode sum"),
            std::string::npos);
  EXPECT_THROW(nn::embedding_bag(idx, w, offsets, EmbeddingBagMode::Sum, ones(Shape{3}, w.dtype())),
               Error);
  EXPECT_THROW(nn::embedding_bag(idx, w, {}, EmbeddingBagMode::Sum), Error);  // 1-D, no offsets
  EXPECT_THROW(nn::embedding_bag(reshape(idx, Shape{2, 2}), w, offsets), Error);
  EXPECT_THROW(nn::embedding_bag(idx, w, offsets, EmbeddingBagMode::Max, {}, std::nullopt,
                                 std::nullopt, 2.0, true),
               Error);
  // offsets[0] must be 0 (PyTorch's rule): the entries before it belong to no bag. Sum and mean
  // do not wait for the device to check it, so the error comes at the next synchronisation.
  const auto late = Tensor<1, Int>::from_vector<int64_t>({1, 2}).dyn();
  EXPECT_THROW(nn::embedding_bag(idx, w, late, EmbeddingBagMode::Sum).to_vector<float>(), Error);
  EXPECT_THROW(nn::embedding_bag(idx, w, late, EmbeddingBagMode::Max), Error);
  EXPECT_THROW(nn::embedding_bag(idx, w, Tensor<1, Int>::from_vector<int64_t>({0, 9}).dyn(),
                                 EmbeddingBagMode::Sum)
                   .to_vector<float>(),
               Error);
  // include_last_offset: entries past the last offset belong to no bag, in every mode.
  for (auto mode : {EmbeddingBagMode::Sum, EmbeddingBagMode::Mean, EmbeddingBagMode::Max}) {
    const auto head = nn::embedding_bag(idx, w, offsets, mode, {}, std::nullopt, std::nullopt, 2.0,
                                        false, true);  // one bag: idx[0:1]
    EXPECT_EQ(head.shape(), Shape({1, 3}));
    EXPECT_TRUE(allclose(head, slice(w, {Slice{0, 1}})));
  }
  // A bag of only padding entries and an empty bag give zeros, in every mode.
  const auto pad_only = Tensor<1, Int>::from_vector<int64_t>({5, 5, 1}).dyn();
  const auto offs = Tensor<1, Int>::from_vector<int64_t>({0, 2, 2}).dyn();
  for (auto mode : {EmbeddingBagMode::Sum, EmbeddingBagMode::Mean, EmbeddingBagMode::Max}) {
    const auto y = nn::embedding_bag(pad_only, w, offs, mode, {}, 5);
    EXPECT_EQ(y.shape(), Shape({3, 3}));
    EXPECT_EQ(sum(abs(slice(y, {Slice{0, 2}}))).item<float>(), 0.0f);
    EXPECT_TRUE(allclose(slice(y, {Slice{2, 3}}), slice(w, {Slice{1, 2}})));
  }

  const auto c = nn::EmbeddingConfig::from_json(
      nn::EmbeddingConfig(10, 3).max_norm(1.5).norm_type(1.0).scale_grad_by_freq(true).to_json());
  EXPECT_EQ(c.max_norm_value, 1.5);
  EXPECT_EQ(c.norm_type_value, 1.0);
  EXPECT_TRUE(c.scale_grad_by_frequency);
  EXPECT_FALSE(nn::EmbeddingConfig::from_json(nn::EmbeddingConfig(10, 3).to_json()).max_norm_value);
  const auto b = nn::EmbeddingBagConfig::from_json(nn::EmbeddingBagConfig(7, 2)
                                                       .mode(EmbeddingBagMode::Max)
                                                       .include_last_offset(true)
                                                       .padding_idx(-1)
                                                       .to_json());
  EXPECT_EQ(b.bag_mode, EmbeddingBagMode::Max);
  EXPECT_TRUE(b.include_last);
  EXPECT_EQ(b.table.num_embeddings, 7);
  EXPECT_THROW(nn::EmbeddingBagConfig::from_json(R"({"num_embeddings": 2, "embedding_dim": 2,
                                                    "mode": "median"})"),
               Error);
  nn::EmbeddingBag bag(nn::EmbeddingBagConfig(7, 2).padding_idx(-1));
  EXPECT_EQ(bag.padding_idx, 6);
  EXPECT_EQ(abs(bag.weight.value().select(0, 6)).sum().item<float>(), 0.0f);
  EXPECT_EQ(bag(Tensor<2, Int>::from_vector<int64_t>({1, 2, 3, 4}, {2, 2})).shape(), Shape({2, 2}));
  EXPECT_EQ(bag.num_params(), 14);
}

TEST(Layers, GaussianNoiseOnlyWhenTraining) {
  nn::GaussianNoise noise(0.5);
  const auto x = Tensor<2>::full({200, 100}, 3.0, default_device(), DType::f64);
  const auto y = noise(x);
  const auto d = (y - x).dyn();
  EXPECT_NEAR(mean(d).item<double>(), 0.0, 0.02);
  EXPECT_NEAR(std::sqrt(mean(square(d)).item<double>()), 0.5, 0.02);
  // The noise is added, so the gradient is the identity.
  const auto xl = require_grad(x.dyn());
  EXPECT_TRUE(allclose(backward(sum(noise.forward(xl))).get(xl), ones_like(xl)));
  noise.eval();
  EXPECT_TRUE(equal(noise(x), x));
  EXPECT_THROW(nn::GaussianNoise(-1.0), Error);
  EXPECT_DOUBLE_EQ(nn::GaussianNoise::from_json(noise.to_json()).std, 0.5);
}
