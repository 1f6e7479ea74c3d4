// The nn layer's functional ops in the gradient table: each against central finite differences
// in float64 (first and second order), on non-contiguous inputs where the op allows.
#include <gtest/gtest.h>

#include <ember/ember.hpp>
#include <ember/nn/nn.hpp>

#include "autodiff/gradcheck.hpp"

using namespace ember;
using namespace ember::test;

namespace {

GradInput input(Shape shape, uint32_t seed, Layout layout = Layout::Contiguous, double lo = -2,
                double hi = 2) {
  const int64_t n = shape.numel();
  return GradInput{shape, layout, random_values(n, lo, hi, false, seed)};
}

// First and second order of one row.
void check(const std::string& name, const GradFn& f, const std::vector<GradInput>& inputs) {
  EXPECT_TRUE(gradcheck(name, f, inputs)) << name;
  EXPECT_TRUE(gradgradcheck(name, f, inputs)) << name;
}

}  // namespace

TEST(NnGradcheck, Normalisation) {
  const auto x = input(Shape{3, 4, 5}, 1, Layout::Transposed);
  const auto w = input(Shape{5}, 2), b = input(Shape{5}, 3);
  check("layer_norm", [](auto& v) { return nn::layer_norm(v[0], {5}, v[1], v[2]); }, {x, w, b});
  check("layer_norm 2 dims", [](auto& v) { return nn::layer_norm(v[0], {4, 5}); }, {x});
  check("rms_norm", [](auto& v) { return nn::rms_norm(v[0], {5}, v[1], 1e-6); }, {x, w});
  const auto xc = input(Shape{2, 4, 3}, 4, Layout::Strided);
  const auto wc = input(Shape{4}, 5), bc = input(Shape{4}, 6);
  check("group_norm", [](auto& v) { return nn::group_norm(v[0], 2, v[1], v[2]); }, {xc, wc, bc});
  check("instance_norm", [](auto& v) { return nn::instance_norm(v[0], v[1], v[2]); }, {xc, wc, bc});
  check("batch_norm train",
        [](auto& v) { return nn::batch_norm(v[0], {}, {}, v[1], v[2], true).y; }, {xc, wc, bc});
  const auto rm = input(Shape{4}, 7), rv = input(Shape{4}, 8, Layout::Contiguous, 0.5, 2);
  // In evaluation the running statistics are plain inputs of the arithmetic (as in PyTorch).
  check("batch_norm eval",
        [](auto& v) { return nn::batch_norm(v[0], v[3], v[4], v[1], v[2], false).y; },
        {xc, wc, bc, rm, rv});
}

TEST(NnGradcheck, AttentionAndInterpolation) {
  const auto q = input(Shape{2, 3, 4}, 11, Layout::Transposed), k = input(Shape{2, 5, 4}, 12),
             v = input(Shape{2, 5, 3}, 13);
  check("sdpa", [](auto& t) { return nn::scaled_dot_product_attention(t[0], t[1], t[2]); },
        {q, k, v});
  const DynTensor mask =
      from_data(TensorData::from(std::vector<bool>{true, false, true, true, false, true, true, true,
                                                   false, true, true, false, true, false, true},
                                 Shape{3, 5}));
  check("sdpa bool mask",
        [mask](auto& t) { return nn::scaled_dot_product_attention(t[0], t[1], t[2], mask); },
        {q, k, v});
  const auto qc = input(Shape{2, 4, 4}, 14), kc = input(Shape{2, 4, 4}, 15),
             vc = input(Shape{2, 4, 3}, 16);
  check("sdpa causal",
        [](auto& t) { return nn::scaled_dot_product_attention(t[0], t[1], t[2], {}, 0.0, true); },
        {qc, kc, vc});
  const auto img = input(Shape{1, 2, 3, 4}, 17, Layout::Strided);
  check("interpolate bilinear",
        [](auto& t) {
          return nn::interpolate(t[0], std::vector<int64_t>{5, 3}, nn::InterpolateMode::Bilinear);
        },
        {img});
  check("interpolate bilinear corners",
        [](auto& t) {
          return nn::interpolate(t[0], std::vector<int64_t>{4, 7}, nn::InterpolateMode::Bilinear,
                                 true);
        },
        {img});
  check("interpolate nearest",
        [](auto& t) { return nn::interpolate(t[0], std::vector<double>{2.0}); }, {img});
}

TEST(NnGradcheck, EmbeddingLinearActivations) {
  const DynTensor idx =
      from_data(TensorData::from(std::vector<int64_t>{0, 3, 3, 1, 2, 0}, Shape{2, 3}));
  check("embedding", [idx](auto& t) { return nn::embedding(idx, t[0]); },
        {input(Shape{4, 5}, 21, Layout::Transposed)});
  // (padding_idx rows get no gradient by definition, so differences do not apply to them: the
  // module test checks that row.)
  const auto x = input(Shape{3, 6}, 23, Layout::Transposed);
  check("linear", [](auto& t) { return nn::linear(t[0], t[1], t[2]); },
        {x, input(Shape{4, 6}, 24), input(Shape{4}, 25)});
  check("glu", [](auto& t) { return nn::glu(t[0]); }, {x});
  check("swiglu", [](auto& t) { return nn::swiglu(t[0]); }, {x});
  check("elu", [](auto& t) { return nn::elu(t[0], 0.7); }, {x});
  check("mish", [](auto& t) { return nn::mish(t[0]); }, {x});
  nn::RotaryEncoding rope{6};
  check("rotary", [rope](auto& t) { return rope.forward(t[0], 3); }, {x});
}

// Issue 14's activations: composites, so their gradients come from autodiff; checked here against
// finite differences (first and second order) away from their kinks.
TEST(NnGradcheck, MoreActivations) {
  const auto x = input(Shape{3, 5}, 31, Layout::Transposed, -3, 3);
  check("softsign", [](auto& t) { return nn::softsign(t[0]); }, {x});
  check("tanhshrink", [](auto& t) { return nn::tanhshrink(t[0]); }, {x});
  check("hardtanh", [](auto& t) { return nn::hardtanh(t[0], -1.1, 1.7); }, {x});
  check("relu6", [](auto& t) { return nn::relu6(mul(t[0], 3.0)); }, {x});
  check("celu", [](auto& t) { return nn::celu(t[0], 0.6); }, {x});
  check("threshold", [](auto& t) { return nn::threshold(t[0], 0.4, -1.5); }, {x});
  check("logsigmoid", [](auto& t) { return nn::logsigmoid(t[0]); }, {x});
  check("softshrink", [](auto& t) { return nn::softshrink(t[0], 0.7); }, {x});
  check("hardshrink", [](auto& t) { return nn::hardshrink(t[0], 0.7); }, {x});
  check("hardsigmoid", [](auto& t) { return nn::hardsigmoid(t[0]); }, {x});
  check("hardsigmoid burn", [](auto& t) { return nn::hardsigmoid(t[0], 0.2, 0.4); }, {x});
  check("rrelu eval", [](auto& t) { return nn::rrelu(t[0], 0.1, 0.4); }, {x});
  check("softmin", [](auto& t) { return nn::softmin(t[0], 1); }, {x});
  check("thresholded_relu", [](auto& t) { return nn::thresholded_relu(t[0], 0.5); }, {x});
  check("shrink", [](auto& t) { return nn::shrink(t[0], 0.5, 0.3); }, {x});
  check("quiet_softmax", [](auto& t) { return nn::quiet_softmax(t[0], 0); }, {x});
  check("softmax2d", [](auto& t) { return nn::Softmax2d{}.forward(t[0]); },
        {input(Shape{2, 3, 2, 2}, 32, Layout::Strided)});
}

TEST(NnGradcheck, EmbeddingBag) {
  const DynTensor idx =
      from_data(TensorData::from(std::vector<int64_t>{0, 3, 3, 1, 2, 0, 4}, Shape{7}));
  const DynTensor offsets = from_data(TensorData::from(std::vector<int64_t>{0, 2, 2, 5}, Shape{4}));
  const auto w = input(Shape{5, 3}, 41, Layout::Transposed);
  using nn::EmbeddingBagMode;
  check("embedding_bag sum psw",
        [=](auto& t) { return nn::embedding_bag(idx, t[0], offsets, EmbeddingBagMode::Sum, t[1]); },
        {w, input(Shape{7}, 42)});
  check(
      "embedding_bag mean pad",
      [=](auto& t) { return nn::embedding_bag(idx, t[0], offsets, EmbeddingBagMode::Mean, {}, 3); },
      {w});
  check("embedding_bag max",
        [=](auto& t) { return nn::embedding_bag(idx, t[0], offsets, EmbeddingBagMode::Max); }, {w});
  // (scale_grad_by_freq's gradient is by definition not the derivative: the parity test checks it.)
}

TEST(NnGradcheck, LocalResponseNorm) {
  check("local_response_norm",
        [](auto& t) { return nn::local_response_norm(t[0], 3, 0.4, 0.75, 1.2); },
        {input(Shape{2, 4, 3}, 51, Layout::Transposed)});
}

TEST(NnGradcheck, MultiheadAttentionOptions) {
  Generator gen(5);
  nn::MultiheadAttention mha(
      nn::MultiheadAttentionConfig(4, 2).kdim(3).vdim(5).add_bias_kv(true).add_zero_attn(true),
      default_device(), &gen);
  mha.to(DType::f64).freeze("");
  const DynTensor kpm = from_data(
      TensorData::from(std::vector<bool>{false, true, false, false, false, true}, Shape{2, 3}));
  check("mha kdim vdim bias_kv zero_attn",
        [&](auto& t) { return mha.forward(t[0], t[1], t[2], kpm, true, {}, false, false).weights; },
        {input(Shape{2, 2, 4}, 61), input(Shape{3, 2, 3}, 62), input(Shape{3, 2, 5}, 63)});
  check("mha output", [&](auto& t) { return mha.forward(t[0], t[1], t[2], kpm, false).output; },
        {input(Shape{2, 2, 4}, 64), input(Shape{3, 2, 3}, 65), input(Shape{3, 2, 5}, 66)});
}
