// PyTorch parity: a small MLP with softmax cross-entropy, its loss and every gradient against
// values PyTorch computed on the same inputs (fixtures/make_mlp_fixture.py writes them); and
// linalg.svd's values, norms and gradients (fixtures/make_svd_fixture.py).
#include <gtest/gtest.h>

#include <ember/ember.hpp>
#include <string>
#include <variant>

#include "autodiff/fixture.hpp"

using namespace ember;
using ember::test::load_fixture;

namespace {

// PyTorch's nn.functional.cross_entropy (mean over the batch), composed from primitives.
DynTensor cross_entropy(const DynTensor& logits, const DynTensor& target) {
  const DynTensor picked = gather(log_softmax(logits, 1), 1, unsqueeze(target, 1));
  return neg(mean(picked));
}

struct Mlp {
  DynTensor w1, b1, w2, b2;
  DynTensor forward(const DynTensor& x) const {
    const DynTensor h = relu(add(matmul(x, transpose(w1, 0, 1)), b1));
    return add(matmul(h, transpose(w2, 0, 1)), b2);
  }
};

void check_against_torch(DType dtype, double rtol, double atol) {
  auto f = load_fixture(EMBER_AUTODIFF_FIXTURES "/mlp_cross_entropy.txt");
  ASSERT_EQ(f.size(), 13u);
  auto leaf = [&](const char* name) { return require_grad(cast(f.at(name), dtype)); };
  const DynTensor x = leaf("x");
  const Mlp mlp{leaf("w1"), leaf("b1"), leaf("w2"), leaf("b2")};
  const DynTensor target = cast(f.at("target"), DType::i64);
  const DynTensor logits = mlp.forward(x);
  const DynTensor loss = cross_entropy(logits, target);
  EXPECT_TRUE(allclose(cast(softmax(logits, 1), DType::f64), f.at("probs"), rtol, atol));
  EXPECT_NEAR(loss.item<double>(), f.at("loss").item<double>(), atol + rtol);
  const Gradients grads = backward(loss);
  const std::pair<const char*, DynTensor> expect[] = {{"grad_x", x},
                                                      {"grad_w1", mlp.w1},
                                                      {"grad_b1", mlp.b1},
                                                      {"grad_w2", mlp.w2},
                                                      {"grad_b2", mlp.b2}};
  for (const auto& [name, t] : expect) {
    const DynTensor g = grads.get(t);
    EXPECT_EQ(g.dtype(), dtype) << name;
    EXPECT_TRUE(allclose(cast(g, DType::f64), f.at(name), rtol, atol))
        << name
        << ": max |diff| = " << amax(abs(sub(cast(g, DType::f64), f.at(name)))).item<double>();
  }
}

}  // namespace

// float64 agrees to rounding; float32 to its precision.
TEST(TorchParity, MlpCrossEntropyFloat64) { check_against_torch(DType::f64, 1e-10, 1e-12); }
TEST(TorchParity, MlpCrossEntropyFloat32) { check_against_torch(DType::f32, 1e-4, 1e-6); }

// Singular values, matrix norms 2 / -2 / nuc and their gradients, and the gradient of a loss of
// U, S and Vh that no column's sign changes, on tall, batched wide and square float64 matrices.
TEST(TorchParity, SvdValuesNormsAndGradients) {
  auto f = load_fixture(EMBER_AUTODIFF_FIXTURES "/svd_grads.txt");
  const double rtol = 1e-9, atol = 1e-11;
  auto close = [&](const DynTensor& got, const std::string& name) {
    EXPECT_TRUE(allclose(got, f.at(name), rtol, atol))
        << name << ": max |diff| = " << amax(abs(sub(got, f.at(name)))).item<double>();
  };
  for (const std::string m : {"tall", "wide", "square"}) {
    const DynTensor a = require_grad(f.at(m + "_a"));
    close(linalg::svdvals(a), m + "_s");
    const std::pair<const char*, std::variant<double, const char*>> orders[] = {
        {"nuc", "nuc"}, {"2", 2.0}, {"m2", -2.0}};
    for (const auto& [name, ord] : orders) {
      const DynTensor n = std::holds_alternative<double>(ord)
                              ? linalg::matrix_norm(a, std::get<double>(ord))
                              : linalg::matrix_norm(a, std::get<const char*>(ord));
      close(n, m + "_norm_" + name);
      close(backward(sum(n)).get(a), m + "_grad_" + name);
    }
    const linalg::SVD r = linalg::svd(a, false);
    const DynTensor low_rank = matmul(mul(r.U, unsqueeze(f.at(m + "_w"), -2)), r.Vh);
    const DynTensor loss =
        add(add(sum(mul(low_rank, low_rank)), sum(mul(mul(r.U, r.U), f.at(m + "_wu")))),
            sum(mul(mul(r.Vh, r.Vh), f.at(m + "_wv"))));
    close(loss, m + "_loss");
    close(backward(loss).get(a), m + "_grad_vectors");
  }
}
