// Initialisers: fans and gains against PyTorch's values (fixtures/make_init_reference.py printed
// them), bounds and moments on large draws, orthogonality, and determinism under a seed.
#include <gtest/gtest.h>

#include <cmath>

#include "ember/ember.hpp"

using namespace ember;
namespace init = ember::nn::init;

namespace {

struct Moments {
  double mean, std, min, max;
};
Moments moments(const DynTensor& t) {
  const std::vector<double> v = t.to_vector<double>();
  double s = 0.0, s2 = 0.0, lo = INFINITY, hi = -INFINITY;
  for (double x : v) {
    s += x;
    s2 += x * x;
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  const double n = static_cast<double>(v.size());
  return {s / n, std::sqrt(s2 / n - (s / n) * (s / n)), lo, hi};
}

}  // namespace

TEST(Init, FansMatchTorch) {
  struct Row {
    Shape shape;
    int64_t fan_in, fan_out;
  };
  const Row rows[] = {{{3, 5}, 5, 3},      {{16, 8, 3, 3}, 72, 144},
                      {{4, 2, 5}, 10, 20}, {{7, 3, 2, 2, 2}, 24, 56},
                      {{10, 1}, 1, 10},    {{256, 784}, 784, 256}};
  for (const Row& r : rows) {
    const init::Fans f = init::calculate_fan_in_and_fan_out(r.shape);
    EXPECT_EQ(f.fan_in, r.fan_in) << to_string(r.shape);
    EXPECT_EQ(f.fan_out, r.fan_out) << to_string(r.shape);
  }
  EXPECT_THROW(init::calculate_fan_in_and_fan_out({5}), Error);
}

TEST(Init, GainsMatchTorch) {
  using N = init::Nonlinearity;
  EXPECT_EQ(init::calculate_gain(N::Linear), 1.0);
  EXPECT_EQ(init::calculate_gain(N::Conv2d), 1.0);
  EXPECT_EQ(init::calculate_gain(N::Sigmoid), 1.0);
  EXPECT_DOUBLE_EQ(init::calculate_gain(N::Tanh), 1.6666666666666667);
  EXPECT_DOUBLE_EQ(init::calculate_gain(N::Relu), 1.4142135623730951);
  EXPECT_DOUBLE_EQ(init::calculate_gain(N::LeakyRelu), 1.4141428569978354);
  EXPECT_DOUBLE_EQ(init::calculate_gain(N::LeakyRelu, 0.2), 1.3867504905630728);
  EXPECT_DOUBLE_EQ(init::calculate_gain(N::LeakyRelu, std::sqrt(5.0)), 0.5773502691896257);
  EXPECT_EQ(init::calculate_gain(N::Selu), 0.75);
}

TEST(Init, ConstantsAndDtypes) {
  const DynTensor c = init::constant({2, 3}, 0.25, DType::f64);
  EXPECT_EQ(c.dtype(), DType::f64);
  for (double v : c.to_vector<double>()) EXPECT_EQ(v, 0.25);
  EXPECT_EQ(amax(init::zeros({4})).item<float>(), 0.0f);
  EXPECT_EQ(amin(init::ones({4})).item<float>(), 1.0f);
  EXPECT_EQ(init::kaiming_uniform({8, 4}, DType::bf16).dtype(), DType::bf16);
  EXPECT_THROW(init::normal({3}, DType::i64), Error);
  EXPECT_THROW(init::orthogonal({5}), Error);
  EXPECT_EQ(init::kaiming_normal({0, 4}).numel(), 0);  // PyTorch: a no-op on empty tensors
}

// Bounds exact, moments within a few standard errors on 2^18 draws.
TEST(Init, DistributionsHaveTorchsBoundsAndMoments) {
  Generator gen(7);
  const Shape shape{512, 512};
  const double n = static_cast<double>(shape.numel());
  auto check = [&](const char* name, const DynTensor& t, double mean, double sd, double bound) {
    const Moments m = moments(t);
    EXPECT_NEAR(m.mean, mean, 5 * sd / std::sqrt(n) + 1e-12) << name;
    EXPECT_NEAR(m.std, sd, 0.01 * sd) << name;
    if (bound > 0) {
      EXPECT_GE(m.min, mean - bound) << name;
      EXPECT_LE(m.max, mean + bound) << name;
      EXPECT_GT(m.max, mean + 0.99 * bound) << name;  // the range is used
    }
  };
  check("uniform", init::uniform(shape, DType::f32, default_device(), &gen, -2, 3), 0.5,
        5 / std::sqrt(12.0), 2.5);
  check("normal", init::normal(shape, DType::f64, default_device(), &gen, 1.5, 0.5), 1.5, 0.5, 0);
  // nn.Linear(784, 256)'s default weight init: bound 1 / sqrt(784) (PyTorch: 0.0357142857...).
  const Shape linear{256, 784};
  const double b = 0.03571428571428571;
  check("kaiming_uniform",
        init::kaiming_uniform(linear, DType::f32, default_device(), &gen, std::sqrt(5.0)), 0,
        b / std::sqrt(3.0), b);
  check("kaiming_normal fan_out relu",
        init::kaiming_normal(linear, DType::f32, default_device(), &gen, 0, init::FanMode::FanOut,
                             init::Nonlinearity::Relu),
        0, 0.08838834764831845, 0);
  const double xb = 0.15191090506255;  // xavier_uniform(gain = 2) of [256, 784]
  check("xavier_uniform", init::xavier_uniform(linear, DType::f32, default_device(), &gen, 2.0), 0,
        xb / std::sqrt(3.0), xb);
  check("xavier_normal", init::xavier_normal(linear, DType::f32, default_device(), &gen), 0,
        std::sqrt(2.0 / (256 + 784)), 0);
}

TEST(Init, OrthogonalRowsOrColumnsAreOrthonormal) {
  Generator gen(11);
  for (const Shape& shape : {Shape{6, 20}, Shape{20, 6}, Shape{8, 8}, Shape{4, 3, 2, 2}}) {
    const double gain = 1.7;
    const DynTensor w = init::orthogonal(shape, DType::f64, default_device(), &gen, gain);
    EXPECT_EQ(w.shape(), shape);
    const DynTensor m = div(reshape(w, {shape[0], -1}), gain);
    const bool wide = m.size(0) <= m.size(1);
    const DynTensor gram = wide ? matmul(m, transpose(m, 0, 1)) : matmul(transpose(m, 0, 1), m);
    const DynTensor id = eye(gram.size(0), -1, DType::f64);
    EXPECT_LT(amax(abs(sub(gram, id))).item<double>(), 1e-12) << to_string(shape);
  }
  // Q of a QR with R's diagonal made positive is unique, so it is not the identity by accident
  // and differs between draws.
  const DynTensor a = init::orthogonal({5, 5}, DType::f64, default_device(), &gen);
  const DynTensor b = init::orthogonal({5, 5}, DType::f64, default_device(), &gen);
  EXPECT_FALSE(allclose(a, b));
}

TEST(Init, SeededGeneratorsAreDeterministic) {
  for (auto draw : {+[](Generator* g) {
                      return init::kaiming_uniform({32, 16}, DType::f32, default_device(), g);
                    },
                    +[](Generator* g) {
                      return init::xavier_normal({32, 16}, DType::f32, default_device(), g);
                    },
                    +[](Generator* g) {
                      return init::orthogonal({16, 32}, DType::f32, default_device(), g);
                    }}) {
    Generator g1(42), g2(42), g3(43);
    const DynTensor a = draw(&g1), b = draw(&g2), c = draw(&g3);
    EXPECT_TRUE(equal(a, b));
    EXPECT_FALSE(equal(a, c));
    EXPECT_FALSE(equal(a, draw(&g1)));  // the generator advanced
  }
  manual_seed(5);
  const DynTensor a = init::kaiming_normal({8, 8});
  manual_seed(5);
  EXPECT_TRUE(equal(a, init::kaiming_normal({8, 8})));  // the global generator by default
}
