// Second order: backward(create_graph = true) records the backward pass, so gradients can be
// differentiated again. Checked against finite differences of the first gradient.
#include <gtest/gtest.h>

#include <cmath>
#include <ember/ember.hpp>

using namespace ember;

namespace {

DynTensor randn64(const Shape& shape, uint64_t seed) {
  Generator gen(seed);
  return randn(shape, DType::f64, default_device(), &gen);
}

// Elementwise |a - b| <= atol + rtol |b|, with the worst element in the failure message.
void expect_close(const DynTensor& a, const DynTensor& b, double rtol, double atol) {
  ASSERT_EQ(a.shape(), b.shape());
  const auto va = a.to_vector<double>(), vb = b.to_vector<double>();
  for (size_t i = 0; i < va.size(); ++i) {
    EXPECT_NEAR(va[i], vb[i], atol + rtol * std::abs(vb[i])) << "element " << i;
  }
}

}  // namespace

TEST(SecondOrder, TanhSecondDerivative) {
  const DynTensor x = require_grad(randn64({7}, 1));
  const DynTensor y = sum(tanh(x));
  const DynTensor g = grad(y, {x}, {}, {.create_graph = true})[0];
  ASSERT_TRUE(g.requires_grad());
  const DynTensor gg = grad(sum(g), {x})[0];
  // d2/dx2 tanh = -2 tanh (1 - tanh^2).
  const DynTensor t = tanh(detach(x));
  expect_close(gg, mul(mul(t, sub(1.0, square(t))), -2.0), 1e-12, 1e-12);

  // And against central differences of the first derivative.
  const double eps = 1e-6;
  auto first = [](const DynTensor& at) {
    const DynTensor leaf = require_grad(at);
    return grad(sum(tanh(leaf)), {leaf})[0];
  };
  const DynTensor fd = div(sub(first(add(detach(x), eps)), first(sub(detach(x), eps))), 2 * eps);
  expect_close(gg, fd, 1e-3, 1e-5);
}

TEST(SecondOrder, MixedPartials) {
  // f = sum(x^2 y + sin(x y)): d2f/dxdy = 2x + cos(xy) - xy sin(xy).
  const DynTensor x = require_grad(randn64({5}, 2));
  const DynTensor y = require_grad(randn64({5}, 3));
  const DynTensor xy = mul(x, y);
  const DynTensor f = sum(add(mul(square(x), y), sin(xy)));
  const DynTensor gx = grad(f, {x}, {}, {.create_graph = true})[0];
  const DynTensor gxy = grad(sum(gx), {y})[0];
  const DynTensor dx = detach(x), dxy = detach(xy);
  expect_close(gxy, sub(add(mul(dx, 2.0), cos(dxy)), mul(dxy, sin(dxy))), 1e-12, 1e-12);
}

namespace {

// A two-layer MLP's softmax cross-entropy loss; parameters packed in one vector so that
// Hessian-vector products are easy to form.
struct SmallMlp {
  DynTensor x = randn64({6, 4}, 10);
  DynTensor target = from_data(TensorData::from(std::vector<int64_t>{0, 2, 1, 2, 0, 1}, Shape{6}));

  DynTensor loss(const DynTensor& theta) const {
    const DynTensor w1 = reshape(narrow(theta, 0, 0, 20), Shape{4, 5});
    const DynTensor b1 = narrow(theta, 0, 20, 5);
    const DynTensor w2 = reshape(narrow(theta, 0, 25, 15), Shape{5, 3});
    const DynTensor h = tanh(add(matmul(x, w1), b1));
    const DynTensor logp = log_softmax(matmul(h, w2), 1);
    return neg(mean(gather(logp, 1, unsqueeze(target, 1))));
  }
  DynTensor gradient(const DynTensor& theta) const {
    const DynTensor leaf = require_grad(detach(theta));
    return grad(loss(leaf), {leaf})[0];
  }
};

}  // namespace

TEST(SecondOrder, MlpHessianVectorProduct) {
  const SmallMlp mlp;
  const DynTensor theta = require_grad(mul(randn64({40}, 11), 0.5));
  const DynTensor v = randn64({40}, 12);
  // Hv = d/dtheta (grad(theta) . v), by double backward.
  const DynTensor g = grad(mlp.loss(theta), {theta}, {}, {.create_graph = true})[0];
  const DynTensor hv = grad(sum(mul(g, v)), {theta})[0];
  // Central differences of the gradient along v.
  const double eps = 1e-6;
  const DynTensor fd = div(sub(mlp.gradient(add(detach(theta), mul(v, eps))),
                               mlp.gradient(sub(detach(theta), mul(v, eps)))),
                           2 * eps);
  expect_close(hv, fd, 1e-3, 1e-5);
  // The Hessian is symmetric: u . (H v) == v . (H u).
  const DynTensor u = randn64({40}, 13);
  const DynTensor g2 = grad(mlp.loss(theta), {theta}, {}, {.create_graph = true})[0];
  const DynTensor hu = grad(sum(mul(g2, u)), {theta})[0];
  EXPECT_NEAR(sum(mul(u, hv)).item<double>(), sum(mul(v, hu)).item<double>(), 1e-10);
}

TEST(SecondOrder, MlpSecondDerivativeAlongOneWeight) {
  // d2 loss / d theta_i^2 for a few i, by double backward and by second differences.
  const SmallMlp mlp;
  const DynTensor theta = require_grad(mul(randn64({40}, 21), 0.5));
  const DynTensor g = grad(mlp.loss(theta), {theta}, {}, {.create_graph = true})[0];
  for (int64_t i : {0, 7, 22, 39}) {
    const DynTensor hii = grad(select(g, 0, i), {theta}, {}, {.retain_graph = true})[0];
    const double eps = 1e-4;
    auto loss_at = [&](double delta) {
      const auto guard = no_grad();
      const DynTensor e = one_hot(full(Shape{}, i, DType::i64), 40);
      return mlp.loss(add(detach(theta), mul(cast(e, DType::f64), delta))).item<double>();
    };
    const double fd = (loss_at(eps) - 2 * loss_at(0) + loss_at(-eps)) / (eps * eps);
    EXPECT_NEAR(select(hii, 0, i).item<double>(), fd, 1e-5 + 1e-3 * std::abs(fd)) << "i = " << i;
  }
}

TEST(SecondOrder, GradientsOfGradientsThroughBackward) {
  // The Gradients container form: loss.backward({.create_graph = true}) gives tracked grads.
  auto x = Tensor<1>::from_vector<double>({0.3, -0.7, 1.1}).require_grad();
  auto grads = (x * x * x).sum().backward({.create_graph = true});
  auto gx = x.grad(grads);  // 3 x^2
  ASSERT_TRUE(gx.requires_grad());
  auto ggx = x.grad(gx.sum().backward());  // 6 x
  expect_close(ggx.dyn(), (x.detach() * 6.0).dyn(), 1e-12, 1e-12);
}
