// The autodiff API as DESIGN.md's user sees it: leaves, backward, Gradients, seeds, no_grad,
// detach, accumulation, freed graphs and clear errors.
#include <gtest/gtest.h>

#include <cmath>

#include <ember/ember.hpp>

using namespace ember;

TEST(Autodiff, FirstProgramGradients) {
  Device dev = default_device();
  manual_seed(7);
  auto x = Tensor<2>::randn({64, 784}, dev);
  auto w = Tensor<2>::zeros({784, 10}, dev).require_grad();
  auto loss = relu(matmul(x, w) + 1.0f).mean();
  Gradients grads = loss.backward();
  Tensor<2> gw = w.grad(grads);
  // relu(0 + 1) is active everywhere: d loss / d w = x^T 1 / (64 * 10).
  const Tensor<2> expect = matmul(x.t(), Tensor<2>::ones({64, 10})) / 640.0f;
  EXPECT_TRUE(allclose(gw, expect, 1e-5, 1e-6));
  std::vector<float> flat = gw.to_vector<float>();
  EXPECT_EQ(flat.size(), 7840u);
}

TEST(Autodiff, ScalarChainAndAccumulation) {
  auto x = Tensor<1>::from_vector<double>({0.5, -1.25, 2.0}).require_grad();
  // y = x * x + exp(x): x feeds two ops, so its gradient is the sum of both paths.
  auto y = (x * x + exp(x)).sum();
  auto g = x.grad(y.backward()).to_vector<double>();
  const std::vector<double> xs = {0.5, -1.25, 2.0};
  for (size_t i = 0; i < xs.size(); ++i) EXPECT_NEAR(g[i], 2 * xs[i] + std::exp(xs[i]), 1e-12);
}

TEST(Autodiff, BroadcastingIsUndone) {
  auto a = Tensor<2>::randn({3, 4}, default_device(), nullptr, DType::f64).require_grad();
  auto b = Tensor<1>::randn({4}, default_device(), nullptr, DType::f64).require_grad();
  auto c = Tensor<2>::randn({3, 1}, default_device(), nullptr, DType::f64).require_grad();
  auto grads = ((a + b) * c).sum().backward();
  EXPECT_EQ(b.grad(grads).shape(), Shape({4}));
  EXPECT_EQ(c.grad(grads).shape(), Shape({3, 1}));
  EXPECT_TRUE(allclose(b.grad(grads), c.expand({3, 4}).sum(0)));
  EXPECT_TRUE(allclose(c.grad(grads), (a + b).sum(1, keepdim)));
  EXPECT_TRUE(allclose(a.grad(grads), c.expand({3, 4})));
}

TEST(Autodiff, SeedForNonScalarOutputs) {
  auto x = Tensor<2>::randn({2, 3}).require_grad();
  auto y = x * 3.0f;
  EXPECT_THROW(y.backward(), Error);  // non-scalar without a seed
  try {
    y.backward();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("seed"), std::string::npos) << e.what();
  }
  auto seed = Tensor<2>::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  auto g = x.grad(y.backward(seed));
  EXPECT_TRUE(allclose(g, seed * 3.0f));
  EXPECT_THROW(y.backward(Tensor<2>::ones({3, 2})), Error);  // wrong seed shape
}

TEST(Autodiff, NoGradRecordsNothing) {
  auto x = Tensor<1>::randn({4}).require_grad();
  {
    auto guard = no_grad();
    auto y = exp(x) * 2.0f;
    EXPECT_FALSE(y.requires_grad());
    EXPECT_FALSE(grad_enabled());
  }
  EXPECT_TRUE(grad_enabled());
  EXPECT_TRUE((x * 2.0f).requires_grad());
  EXPECT_FALSE(x.detach().requires_grad());
  EXPECT_FALSE((x.detach() * 2.0f).requires_grad());
}

TEST(Autodiff, NonDifferentiableResultsSaySo) {
  auto x = Tensor<1>::randn({4}).require_grad();
  auto mask = x > 0.0f;
  EXPECT_FALSE(mask.requires_grad());
  EXPECT_FALSE(x.argmax().requires_grad());
  EXPECT_THROW(mask.to<Float>().sum().backward(), Error);
  try {
    x.argmax().to<Float>().backward();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not require grad"), std::string::npos) << e.what();
  }
}

TEST(Autodiff, GraphIsFreedUnlessRetained) {
  auto x = Tensor<1>::randn({3}).require_grad();
  auto y = exp(x).sum();
  y.backward();
  EXPECT_THROW(y.backward(), Error);
  auto z = exp(x).sum();
  auto g1 = x.grad(z.backward({.retain_graph = true}));
  auto g2 = x.grad(z.backward());
  EXPECT_TRUE(equal(g1, g2));
}

TEST(Autodiff, GradientsContainer) {
  auto a = Tensor<1>::randn({3}).require_grad();
  auto b = Tensor<1>::randn({3}).require_grad();
  auto unused = Tensor<1>::randn({3}).require_grad();
  Gradients grads = (a * b).sum().backward();
  EXPECT_EQ(grads.size(), 2u);
  EXPECT_TRUE(grads.contains(a.dyn()));
  EXPECT_FALSE(grads.contains(unused.dyn()));
  EXPECT_THROW(unused.grad(grads), Error);
  Tensor<1> ga = grads.remove(a);
  EXPECT_TRUE(allclose(ga, b));
  EXPECT_FALSE(grads.contains(a.dyn()));
  EXPECT_THROW(a.grad(grads), Error);
  EXPECT_TRUE(allclose(b.grad(grads), a));
}

TEST(Autodiff, RetainGradKeepsNonLeafGradients) {
  auto x = Tensor<1>::randn({3}).require_grad();
  auto h = (x * 2.0f).retain_grad();
  auto grads = (h * h).sum().backward();
  EXPECT_TRUE(allclose(h.grad(grads), h * 2.0f));
  EXPECT_TRUE(allclose(x.grad(grads), h * 4.0f));
}

TEST(Autodiff, OnlyFloatTensorsRequireGrad) {
  EXPECT_THROW(require_grad(Tensor<1, Int>::arange(3).dyn()), Error);
}

TEST(Autodiff, SavedValuesSurviveBufferReuse) {
  // exp saves its output, tanh(x^T) saves a view's result; the forward handles are dropped and
  // the allocator hands their sizes out again, filled with other values, before backward runs.
  auto x = Tensor<2>::randn({16, 8}, default_device(), nullptr, DType::f64).require_grad();
  auto loss = (exp(x) * 0.5 + tanh(x.t()).t()).sum();
  std::vector<Tensor<2>> churn;
  for (int i = 0; i < 32; ++i)
    churn.push_back(Tensor<2>::full({16, 8}, 1e6, default_device(), DType::f64));
  auto g = x.grad(loss.backward());
  auto xd = x.detach();
  auto expect = exp(xd) * 0.5 + (1.0 - square(tanh(xd)));
  EXPECT_TRUE(allclose(g, expect, 1e-12, 1e-12));
}
