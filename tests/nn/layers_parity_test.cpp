// Every layer against PyTorch on the same inputs and weights (fixtures/make_layer_fixtures.py):
// the output and the gradients of sum(y * seed) with respect to the input and every parameter,
// in float64, to 1e-10 (relative) / 1e-12 (absolute).
#include <gtest/gtest.h>

#include <cmath>

#include <ember/ember.hpp>
#include <ember/nn/nn.hpp>
#include <functional>

#include "autodiff/fixture.hpp"

using namespace ember;

namespace {

double g_rtol = 1e-10;  // changed for one case below
constexpr double kAtol = 1e-12;

const test::Fixture& fixture() {
  static const test::Fixture f(EMBER_NN_FIXTURES "/layers.txt");
  return f;
}

DynTensor get(const std::string& name) { return fixture().get(name); }

// `got` against the fixture's tensor `name`.
void expect_close(const DynTensor& got, const std::string& name) {
  fixture().expect_close(got, name, g_rtol, kAtol);
}

// Runs `forward` on the case's input, compares y and the gradients of x and of `params`.
void check_case(const std::string& name, const std::function<DynTensor(const DynTensor&)>& forward,
                const std::vector<std::pair<std::string, const nn::TensorSlot*>>& params = {}) {
  SCOPED_TRACE(name);
  const DynTensor x = require_grad(get(name + ".x"));
  const DynTensor y = forward(x);
  expect_close(y, name + ".y");
  const Gradients g = backward(y, get(name + ".seed"));
  expect_close(g.get(x), name + ".grad_x");
  for (const auto& [p, slot] : params) {
    expect_close(g.get(slot->dyn()), name + ".grad_" + p);
  }
}

template <class P>
void load(P& param, const std::string& name) {
  param.set_dyn(get(name));
}

}  // namespace

TEST(LayerParity, Linear) {
  nn::Linear lin(nn::LinearConfig(5, 3).with_dtype(DType::f64));
  load(lin.weight, "linear.weight");
  load(*lin.bias, "linear.bias");
  check_case("linear", [&](const DynTensor& x) { return lin.forward(x); },
             {{"weight", &lin.weight}, {"bias", &*lin.bias}});
}

TEST(LayerParity, Norms) {
  nn::LayerNorm ln(nn::LayerNormConfig({6}));
  ln.to(DType::f64);
  load(*ln.weight, "layer_norm.weight");
  load(*ln.bias, "layer_norm.bias");
  check_case("layer_norm", [&](const DynTensor& x) { return ln.forward(x); },
             {{"weight", &*ln.weight}, {"bias", &*ln.bias}});

  nn::RMSNorm rms(6, std::nullopt, true, default_device(), DType::f64);
  load(*rms.weight, "rms_norm.weight");
  check_case("rms_norm", [&](const DynTensor& x) { return rms.forward(x); },
             {{"weight", &*rms.weight}});

  nn::GroupNorm gn(2, 4, 1e-5, true, default_device(), DType::f64);
  load(*gn.weight, "group_norm.weight");
  load(*gn.bias, "group_norm.bias");
  check_case("group_norm", [&](const DynTensor& x) { return gn.forward(x); },
             {{"weight", &*gn.weight}, {"bias", &*gn.bias}});

  nn::InstanceNorm2d in(3);
  check_case("instance_norm", [&](const DynTensor& x) { return in.forward(x); });
}

TEST(LayerParity, BatchNormTrainingUpdatesRunningStatistics) {
  nn::BatchNorm2d bn(nn::BatchNormConfig(3));
  bn.to(DType::f64);
  load(*bn.weight, "batch_norm_train.weight");
  load(*bn.bias, "batch_norm_train.bias");
  check_case("batch_norm_train", [&](const DynTensor& x) { return bn.forward(x); },
             {{"weight", &*bn.weight}, {"bias", &*bn.bias}});
  expect_close(bn.running_mean->dyn(), "batch_norm_train.running_mean");
  expect_close(bn.running_var->dyn(), "batch_norm_train.running_var");
  EXPECT_EQ(bn.num_batches_tracked->value().item<int64_t>(), 1);
  EXPECT_FALSE(bn.running_mean->dyn().requires_grad());
}

TEST(LayerParity, BatchNormEvaluationUsesRunningStatistics) {
  nn::BatchNorm1d bn(nn::BatchNormConfig(4).with_momentum(0.1));
  bn.to(DType::f64);
  load(*bn.weight, "batch_norm_eval.weight");
  load(*bn.bias, "batch_norm_eval.bias");
  load(*bn.running_mean, "batch_norm_eval.running_mean");
  load(*bn.running_var, "batch_norm_eval.running_var");
  bn.eval();
  check_case("batch_norm_eval", [&](const DynTensor& x) { return bn.forward(x); },
             {{"weight", &*bn.weight}, {"bias", &*bn.bias}});
  EXPECT_EQ(bn.num_batches_tracked->value().item<int64_t>(), 0);
}

TEST(LayerParity, Activations) {
  nn::PReLU prelu(3, 0.25, default_device(), DType::f64);
  load(prelu.weight, "prelu.weight");
  check_case("prelu", [&](const DynTensor& x) { return prelu.forward(x); },
             {{"weight", &prelu.weight}});
  const std::pair<const char*, std::function<DynTensor(const DynTensor&)>> fns[] = {
      {"leaky_relu", [](const DynTensor& x) { return nn::LeakyReLU{0.2}.forward(x); }},
      {"elu", [](const DynTensor& x) { return nn::ELU{1.3}.forward(x); }},
      {"selu", [](const DynTensor& x) { return nn::SELU{}.forward(x); }},
      {"gelu", [](const DynTensor& x) { return nn::GELU{}.forward(x); }},
      {"gelu_tanh", [](const DynTensor& x) { return nn::GELU{true}.forward(x); }},
      {"silu", [](const DynTensor& x) { return nn::SiLU{}.forward(x); }},
      {"mish", [](const DynTensor& x) { return nn::Mish{}.forward(x); }},
      {"hardsigmoid", [](const DynTensor& x) { return nn::Hardsigmoid{}.forward(x); }},
      {"hardswish", [](const DynTensor& x) { return nn::Hardswish{}.forward(x); }},
      {"softplus",
       [](const DynTensor& x) {
         return nn::Softplus{2.0, 5.0}.forward(x);
       }},
      {"glu", [](const DynTensor& x) { return nn::GLU{}.forward(x); }},
      {"sigmoid", [](const DynTensor& x) { return nn::Sigmoid{}.forward(x); }},
      {"tanh", [](const DynTensor& x) { return nn::Tanh{}.forward(x); }},
      {"relu", [](const DynTensor& x) { return nn::ReLU{}.forward(x); }}};
  for (const auto& [name, fn] : fns) {
    // PyTorch's hardsigmoid backward multiplies by 1/6 rounded to float (1.6666667e-1) even in
    // float64: its gradient is 3e-8 off the exact one, which Ember computes.
    g_rtol = std::string(name) == "hardsigmoid" ? 1e-7 : 1e-10;
    check_case(name, fn);
  }
  g_rtol = 1e-10;
}

TEST(LayerParity, ConvolutionsAndPooling) {
  nn::Conv2d conv2(nn::Conv2dConfig(3, 4, {3}).stride({2}).padding({1}).with_dtype(DType::f64));
  load(conv2.weight, "conv2d.weight");
  load(*conv2.bias, "conv2d.bias");
  check_case("conv2d", [&](const DynTensor& x) { return conv2.forward(x); },
             {{"weight", &conv2.weight}, {"bias", &*conv2.bias}});

  nn::Conv1d conv1(
      nn::Conv1dConfig(4, 6, {3}).padding({2}).dilation({2}).groups(2).with_dtype(DType::f64));
  load(conv1.weight, "conv1d_groups.weight");
  load(*conv1.bias, "conv1d_groups.bias");
  check_case("conv1d_groups", [&](const DynTensor& x) { return conv1.forward(x); },
             {{"weight", &conv1.weight}, {"bias", &*conv1.bias}});

  nn::Conv3d conv3(nn::Conv3dConfig(2, 3, {2, 3, 2}).bias(false).with_dtype(DType::f64));
  load(conv3.weight, "conv3d.weight");
  check_case("conv3d", [&](const DynTensor& x) { return conv3.forward(x); },
             {{"weight", &conv3.weight}});

  nn::ConvTranspose2d convt(
      nn::ConvTranspose2dConfig(3, 2, {3}).stride({2}).padding({1}).output_padding({1}).with_dtype(
          DType::f64));
  load(convt.weight, "conv_transpose2d.weight");
  load(*convt.bias, "conv_transpose2d.bias");
  check_case("conv_transpose2d", [&](const DynTensor& x) { return convt.forward(x); },
             {{"weight", &convt.weight}, {"bias", &*convt.bias}});

  nn::ConvTranspose3d convt3(nn::ConvTranspose3dConfig(4, 6, {2, 3, 2})
                                 .stride({2, 1, 2})
                                 .padding({1, 0, 1})
                                 .output_padding({1, 0, 0})
                                 .groups(2)
                                 .dilation({1, 2, 1})
                                 .with_dtype(DType::f64));
  EXPECT_EQ(convt3.weight.shape(), (Shape{4, 3, 2, 3, 2}));
  load(convt3.weight, "conv_transpose3d.weight");
  load(*convt3.bias, "conv_transpose3d.bias");
  check_case("conv_transpose3d", [&](const DynTensor& x) { return convt3.forward(x); },
             {{"weight", &convt3.weight}, {"bias", &*convt3.bias}});
  EXPECT_STREQ(nn::ConvTranspose3d::ember_module_name(), "ConvTranspose3d");

  nn::Conv2d same(nn::Conv2dConfig(3, 4, {4, 3})
                      .padding(nn::Padding::Same)
                      .dilation({1, 2})
                      .with_dtype(DType::f64));
  load(same.weight, "conv2d_same.weight");
  load(*same.bias, "conv2d_same.bias");
  check_case("conv2d_same", [&](const DynTensor& x) { return same.forward(x); },
             {{"weight", &same.weight}, {"bias", &*same.bias}});
  nn::Conv1d valid(nn::Conv1dConfig(2, 3, {3}).padding(nn::Padding::Valid).with_dtype(DType::f64));
  load(valid.weight, "conv1d_valid.weight");
  load(*valid.bias, "conv1d_valid.bias");
  check_case("conv1d_valid", [&](const DynTensor& x) { return valid.forward(x); },
             {{"weight", &valid.weight}, {"bias", &*valid.bias}});
  EXPECT_THROW(nn::Conv2d(nn::Conv2dConfig(1, 1, {3}).stride({2}).padding(nn::Padding::Same)),
               Error);
  EXPECT_THROW(nn::ConvTranspose2d(nn::ConvTranspose2dConfig(1, 1, {3}).padding(nn::Padding::Same)),
               Error);
  const auto from_json =
      nn::ConvConfig::from_json(nn::Conv2dConfig(2, 3, {3}).padding(nn::Padding::Same).to_json());
  EXPECT_EQ(from_json.padding_mode_, nn::Padding::Same);
  EXPECT_EQ(nn::ConvConfig::from_json(R"({"in_channels": 1, "out_channels": 1, "kernel_size": 3,
                                          "padding": "valid"})")
                .padding_mode_,
            nn::Padding::Valid);
  EXPECT_THROW(nn::ConvConfig::from_json(R"({"in_channels": 1, "out_channels": 1,
                                             "kernel_size": 3, "padding": "full"})"),
               Error);

  const nn::MaxPool2d maxpool{{3}, {2}, {1}};
  check_case("max_pool2d", [&](const DynTensor& x) { return maxpool.forward(x); });
  const nn::AvgPool2d avgpool{{2}, {2}, {0}, true, false};
  check_case("avg_pool2d", [&](const DynTensor& x) { return avgpool.forward(x); });
  const nn::AdaptiveAvgPool2d adaptive{{3, 2}};
  check_case("adaptive_avg_pool2d", [&](const DynTensor& x) { return adaptive.forward(x); });
}

TEST(LayerParity, ConvModuleShapesNamesAndInit) {
  nn::Conv2d conv(nn::Conv2dConfig(1, 32, {3, 3}).padding({1}).bias(false));  // DESIGN.md's
  EXPECT_EQ(conv.weight.shape(), Shape({32, 1, 3, 3}));
  EXPECT_FALSE(conv.bias.has_value());
  EXPECT_LE(abs(conv.weight.value()).max().item<float>(), 1.0 / 3.0);  // 1/sqrt(1 * 9)
  EXPECT_NE(conv.summary().find("Conv2d"), std::string::npos) << conv.summary();
  auto y = conv(Tensor<4>::randn({2, 1, 28, 28}));
  EXPECT_EQ(y.shape(), Shape({2, 32, 28, 28}));
  const auto back = nn::ConvConfig::from_json(nn::Conv2dConfig(3, 8, {3, 5}).groups(1).to_json());
  EXPECT_EQ(back.kernel_size, (SpatialArg{3, 5}));
  EXPECT_THROW(nn::Conv2d(nn::Conv2dConfig(3, 8, {3}).groups(2)), Error);  // 3 % 2 != 0
  nn::Flatten<2> flat;
  EXPECT_EQ(flat(y).shape(), Shape({2, 32 * 28 * 28}));
}

TEST(LayerParity, Interpolate) {
  using nn::InterpolateMode;
  check_case("nearest_size", [](const DynTensor& x) {
    return nn::interpolate(x, std::vector<int64_t>{7, 4});
  });
  check_case("nearest_scale",
             [](const DynTensor& x) { return nn::interpolate(x, std::vector<double>{2.0}); });
  check_case("bilinear", [](const DynTensor& x) {
    return nn::interpolate(x, std::vector<int64_t>{8, 3}, InterpolateMode::Bilinear);
  });
  check_case("bilinear_corners", [](const DynTensor& x) {
    return nn::interpolate(x, std::vector<int64_t>{9, 11}, InterpolateMode::Bilinear, true);
  });
  check_case("bilinear_scale", [](const DynTensor& x) {
    return nn::interpolate(x, std::vector<double>{1.5, 0.5}, InterpolateMode::Bilinear);
  });
  check_case("interp_linear", [](const DynTensor& x) {
    return nn::interpolate(x, std::vector<int64_t>{9}, InterpolateMode::Linear);
  });
  EXPECT_THROW(nn::interpolate(Tensor<4>::ones({1, 1, 2, 2}).dyn(), std::vector<int64_t>{3},
                               InterpolateMode::Linear),
               Error);
}

TEST(Layers, PositionalAndRotaryEncodings) {
  nn::PositionalEncoding pos(6, 50, 0.0);
  // pe[p, 2i] = sin(p / 10000^(2i/6)), pe[p, 2i+1] = cos(...).
  const auto pe = pos.pe.value().to_vector<float>();
  EXPECT_NEAR(pe[3 * 6 + 2], std::sin(3.0 / std::pow(10000.0, 2.0 / 6.0)), 1e-6);
  EXPECT_NEAR(pe[3 * 6 + 3], std::cos(3.0 / std::pow(10000.0, 2.0 / 6.0)), 1e-6);
  auto x = Tensor<3>::zeros({4, 2, 6});
  auto y = pos(x);
  EXPECT_TRUE(equal(y.select(1, 1), pos.pe.value().slice(0, 0, 4)));
  EXPECT_EQ(nn::named_tensors(nn::module_tree(pos))[0].path, "pe");

  // RoPE: dot products of rotated queries and keys depend only on the position difference.
  nn::RotaryEncoding rope{8};
  auto q = Tensor<2>::randn({1, 8}, default_device(), nullptr, DType::f64);
  auto k = Tensor<2>::randn({1, 8}, default_device(), nullptr, DType::f64);
  auto score = [&](int64_t m, int64_t n) { return (rope(q, m) * rope(k, n)).sum().item<double>(); };
  EXPECT_NEAR(score(3, 1), score(10, 8), 1e-12);
  EXPECT_NEAR(score(0, 5), score(7, 12), 1e-12);
  EXPECT_TRUE(allclose(rope(q, 0), q));  // position 0 is the identity
  // Norms are kept (a rotation).
  EXPECT_NEAR(rope(q, 17).norm().item<double>(), q.norm().item<double>(), 1e-12);
}

// Issue 14: the rest of PyTorch's activations (and Burn's three that PyTorch lacks, from their
// definitions), modules and functional forms.
TEST(LayerParity, MoreActivations) {
  using F = std::function<DynTensor(const DynTensor&)>;
  const std::pair<const char*, F> fns[] = {
      {"softsign", [](const DynTensor& x) { return nn::Softsign{}.forward(x); }},
      {"tanhshrink", [](const DynTensor& x) { return nn::Tanhshrink{}.forward(x); }},
      {"hardtanh",
       [](const DynTensor& x) {
         return nn::Hardtanh{-1.5, 2.0}.forward(x);
       }},
      {"relu6", [](const DynTensor& x) { return nn::ReLU6{}.forward(x); }},
      {"celu", [](const DynTensor& x) { return nn::CELU{0.7}.forward(x); }},
      {"threshold",
       [](const DynTensor& x) {
         return nn::Threshold{0.3, -2.0}.forward(x);
       }},
      {"logsigmoid", [](const DynTensor& x) { return nn::LogSigmoid{}.forward(x); }},
      {"softshrink", [](const DynTensor& x) { return nn::Softshrink{0.8}.forward(x); }},
      {"hardshrink", [](const DynTensor& x) { return nn::Hardshrink{0.6}.forward(x); }},
      {"rrelu_eval",
       [](const DynTensor& x) {
         nn::RReLU r{0.1, 0.3, {}};
         r.eval();
         return r.forward(x);
       }},
      {"softmin", [](const DynTensor& x) { return nn::Softmin{1}.forward(x); }},
      {"softmax", [](const DynTensor& x) { return nn::Softmax{0}.forward(x); }},
      {"log_softmax", [](const DynTensor& x) { return nn::LogSoftmax{1}.forward(x); }},
      {"thresholded_relu", [](const DynTensor& x) { return nn::ThresholdedReLU{}.forward(x); }},
      {"shrink",
       [](const DynTensor& x) {
         return nn::Shrink{0.5, 0.2}.forward(x);
       }},
      {"quiet_softmax", [](const DynTensor& x) { return nn::quiet_softmax(x, 1); }},
      {"softmax2d", [](const DynTensor& x) { return nn::Softmax2d{}.forward(x); }},
      {"glu_dim0", [](const DynTensor& x) { return nn::GLU{0}.forward(x); }}};
  for (const auto& [name, fn] : fns) {
    // PyTorch's celu backward takes 1 / alpha rounded to float (derivatives.yaml's
    // 1.0/alpha.toFloat()) even in float64: its gradient is up to ~1e-7 off the exact one, which
    // Ember computes.
    g_rtol = std::string(name) == "celu" ? 1e-6 : 1e-10;
    check_case(name, fn);
  }
  g_rtol = 1e-10;
  // The functional forms are the modules' bodies; a few spot checks of the free functions.
  const DynTensor x = get("softsign.x");
  EXPECT_TRUE(allclose(nn::relu6(x), nn::hardtanh(x, 0.0, 6.0)));
  EXPECT_TRUE(allclose(nn::softshrink(x, 0.8), nn::shrink(x, 0.8, 0.8)));
  EXPECT_TRUE(allclose(nn::thresholded_relu(x, 1.0), nn::threshold(x, 1.0, 0.0)));
}

namespace {

DynTensor indices(const std::string& name) { return cast(get(name), DType::i64); }

// A lookup-table case: y, the gradient of the weight (`weight` is the leaf the forward used,
// read after it: a max_norm module replaces its leaf) and of per_sample_weights when given.
void check_table(const std::string& name, const DynTensor& y, const DynTensor& weight,
                 const DynTensor& psw = {}) {
  SCOPED_TRACE(name);
  expect_close(y, name + ".y");
  const Gradients g = backward(y, get(name + ".seed"));
  expect_close(g.get(weight), name + ".grad_weight");
  if (psw.defined()) expect_close(g.get(psw), name + ".grad_psw");
}

}  // namespace

TEST(LayerParity, EmbeddingOptions) {
  {
    // Functional padding_idx=-1 is the last row, as the module's.
    const DynTensor w = require_grad(get("embedding_pad_last.weight"));
    check_table("embedding_pad_last",
                nn::embedding(indices("embedding_pad_last.idx"), w, int64_t{-1}), w);
  }
  {
    const DynTensor w = require_grad(get("embedding_freq.weight"));
    check_table("embedding_freq",
                nn::embedding(indices("embedding_freq.idx"), w, 2, std::nullopt, 2.0, true), w);
  }
  for (const char* name : {"embedding_max_norm", "embedding_max_norm_l1"}) {
    const bool l1 = std::string(name).ends_with("l1");
    nn::Embedding emb(nn::EmbeddingConfig(10, 4)
                          .max_norm(l1 ? 2.0 : 1.5)
                          .norm_type(l1 ? 1.0 : 2.0)
                          .scale_grad_by_freq(l1)
                          .with_dtype(DType::f64));
    const nn::ParamId id = emb.weight.id();
    load(emb.weight, std::string(name) + ".weight");
    const DynTensor y = emb.forward(indices(std::string(name) + ".idx"));
    // The renormalised rows were written back (a new leaf, the same id).
    expect_close(emb.weight.dyn(), std::string(name) + ".weight_after");
    EXPECT_EQ(emb.weight.id(), id);
    check_table(name, y, emb.weight.dyn());
    // The functional form looks up the same values and gives the same gradient, without
    // changing its weight.
    const DynTensor w = require_grad(get(std::string(name) + ".weight"));
    const DynTensor yf = nn::embedding(indices(std::string(name) + ".idx"), w, std::nullopt,
                                       l1 ? 2.0 : 1.5, l1 ? 1.0 : 2.0, l1);
    check_table(name, yf, w);
  }
}

TEST(LayerParity, EmbeddingBag) {
  using nn::EmbeddingBagMode;
  {
    const DynTensor w = require_grad(get("bag_sum_psw.weight"));
    const DynTensor psw = require_grad(get("bag_sum_psw.psw"));
    check_table("bag_sum_psw",
                nn::embedding_bag(indices("bag_sum_psw.idx"), w, indices("bag_sum_psw.offsets"),
                                  EmbeddingBagMode::Sum, psw),
                w, psw);
  }
  {
    const DynTensor w = require_grad(get("bag_mean_pad.weight"));
    check_table("bag_mean_pad",
                nn::embedding_bag(indices("bag_mean_pad.idx"), w, indices("bag_mean_pad.offsets"),
                                  EmbeddingBagMode::Mean, {}, 7),
                w);
  }
  {
    const DynTensor w = require_grad(get("bag_max_last.weight"));
    check_table(
        "bag_max_last",
        nn::embedding_bag(indices("bag_max_last.idx"), w, indices("bag_max_last.offsets"),
                          EmbeddingBagMode::Max, {}, std::nullopt, std::nullopt, 2.0, false, true),
        w);
  }
  {
    const DynTensor w = require_grad(get("bag_max_2d_pad.weight"));
    check_table(
        "bag_max_2d_pad",
        nn::embedding_bag(indices("bag_max_2d_pad.idx"), w, {}, EmbeddingBagMode::Max, {}, 4), w);
  }
  {
    nn::EmbeddingBag bag(
        nn::EmbeddingBagConfig(12, 5).max_norm(1.2).scale_grad_by_freq(true).with_dtype(
            DType::f64));
    load(bag.weight, "bag_module_max_norm.weight");
    const DynTensor y = bag.forward(indices("bag_module_max_norm.idx"));
    expect_close(bag.weight.dyn(), "bag_module_max_norm.weight_after");
    check_table("bag_module_max_norm", y, bag.weight.dyn());
  }
}

TEST(LayerParity, BatchNormCumulativeAverageWithoutMomentum) {
  nn::BatchNorm1d bn(nn::BatchNormConfig(3).with_momentum(std::nullopt));
  bn.to(DType::f64);
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    bn.forward(get("batch_norm_cma.x" + std::to_string(i)));
    expect_close(bn.running_mean->dyn(), "batch_norm_cma.running_mean" + std::to_string(i));
    expect_close(bn.running_var->dyn(), "batch_norm_cma.running_var" + std::to_string(i));
    EXPECT_EQ(bn.num_batches_tracked->value().item<int64_t>(), i + 1);
  }
  // Evaluation leaves the statistics and the count alone.
  bn.eval();
  bn.forward(get("batch_norm_cma.x0"));
  expect_close(bn.running_mean->dyn(), "batch_norm_cma.running_mean2");
  EXPECT_EQ(bn.num_batches_tracked->value().item<int64_t>(), 3);
}

TEST(LayerParity, LocalResponseNorm) {
  const nn::LocalResponseNorm lrn{3, 0.3, 0.7, 1.5};
  check_case("local_response_norm", [&](const DynTensor& x) { return lrn.forward(x); });
  check_case("local_response_norm_1d",
             [](const DynTensor& x) { return nn::local_response_norm(x, 4, 0.5, 0.6, 2.0); });
  EXPECT_EQ(nn::LocalResponseNorm::from_json(lrn.to_json()).size, 3);
  EXPECT_DOUBLE_EQ(nn::LocalResponseNorm::from_json(lrn.to_json()).k, 1.5);
  EXPECT_THROW(nn::local_response_norm(Tensor<2>::ones({2, 3}).dyn(), 3), Error);
}
