// cross_entropy on [N, C] logits through the row building blocks (the Cuda backend's fused
// kernels, the composites elsewhere) against nll_loss(log_softmax) in float64: losses and input
// gradients for f32, bf16 and f16 logits, every reduction, class weights and ignored targets; and
// logsumexp_rows on rows far from zero and of -inf.
#include <gtest/gtest.h>

#include <cmath>

#include <ember/ember.hpp>
#include <ember/nn/nn.hpp>
#include <ember/tensor/ops/softmax_rows.hpp>

#include "tensor/test_util.hpp"

using namespace ember;
using namespace ember::test;
using ember::nn::Reduction;

namespace {

TEST(CrossEntropyRows, MatchesFloat64ForEveryFloatTypeReductionAndWeighting) {
  const int64_t n = 37, c = 1000;
  // Logits spread over [-6, 6]: softmax far from uniform; every 7th target ignored.
  const DynTensor x64 = make_input(Shape{n, c}, DType::f64, Layout::Contiguous, -6, 6, 51);
  std::vector<int64_t> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) t[static_cast<size_t>(i)] = i % 7 == 3 ? -100 : (i * 389) % c;
  const DynTensor target = Tensor<1, Int>::from_vector<int64_t>(t, {n}).dyn();
  const DynTensor w64 = make_input(Shape{c}, DType::f64, Layout::Contiguous, 0.5, 2, 52);
  for (DType dt : {DType::f32, DType::bf16, DType::f16}) {
    // The reference sees the same rounded logits the low-precision run sees.
    const DynTensor xr = cast(cast(x64, dt), DType::f64);
    for (Reduction r : {Reduction::Mean, Reduction::Sum, Reduction::None}) {
      for (bool weighted : {false, true}) {
        SCOPED_TRACE(std::string(dtype_name(dt)) + (weighted ? " weighted" : "") + " reduction " +
                     std::to_string(static_cast<int>(r)));
        nn::CrossEntropyOptions o;
        o.reduction = r;
        if (weighted) o.weight = cast(w64, dt);
        const DynTensor x = require_grad(cast(x64, dt));
        const DynTensor loss = nn::cross_entropy(x, target, o);
        EXPECT_EQ(loss.dtype(), dt);
        const DynTensor gx = backward(sum(cast(loss, DType::f32))).get(x);
        EXPECT_EQ(gx.dtype(), dt);

        nn::NllLossOptions ro;
        ro.reduction = r;
        if (weighted) ro.weight = cast(cast(w64, dt), DType::f64);
        const DynTensor xr_leaf = require_grad(xr);
        const DynTensor ref = nn::nll_loss(log_softmax(xr_leaf, 1), target, ro);
        const DynTensor gref = backward(sum(ref)).get(xr_leaf);
        const double tol = dt == DType::f32 ? 1e-5 : (dt == DType::bf16 ? 3e-2 : 4e-3);
        const double scale = r == Reduction::Sum ? static_cast<double>(n) : 1.0;
        EXPECT_LT(max_abs_diff(loss, ref), tol * scale * 4);
        EXPECT_LT(max_abs_diff(gx, gref), tol);
      }
    }
  }
}

TEST(CrossEntropyRows, UnderAutocastTheLossIsFloat32AndTheGradientKeepsTheLogitsType) {
  const DynTensor x = require_grad(
      cast(make_input(Shape{8, 50}, DType::f64, Layout::Contiguous, -3, 3, 53), DType::bf16));
  const DynTensor target =
      Tensor<1, Int>::from_vector<int64_t>({1, 2, 3, 4, 5, 6, 7, 8}, {8}).dyn();
  DynTensor loss;
  {
    auto amp = autocast(default_device(), DType::bf16);
    loss = nn::cross_entropy(x, target);
  }
  EXPECT_EQ(loss.dtype(), DType::f32);
  EXPECT_EQ(backward(loss).get(x).dtype(), DType::bf16);
}

TEST(CrossEntropyRows, LogsumexpRowsIsStableFarFromZeroAndOnEmptyOrInfiniteRows) {
  const DynTensor x64 =
      make_input(Shape{5, 3000}, DType::f64, Layout::Contiguous, 1e4, 1e4 + 8, 54);
  for (DType dt : {DType::f32, DType::bf16}) {
    const DynTensor got = logsumexp_rows(cast(x64, dt));
    EXPECT_EQ(got.dtype(), DType::f32);
    const DynTensor want = logsumexp(cast(cast(x64, dt), DType::f64), {1}, false);
    EXPECT_LT(max_abs_diff(got, want), 1e-6 * 1e4 * 4) << dtype_name(dt);
  }
  const DynTensor inf_row = full(Shape{2, 4}, -INFINITY, DType::f32, default_device());
  for (double v : logsumexp_rows(inf_row).to_vector<double>()) EXPECT_EQ(v, -INFINITY);
  EXPECT_EQ(logsumexp_rows(zeros(Shape{3, 0}, DType::f32, default_device())).to_vector<double>(),
            std::vector<double>(3, -INFINITY));
}

}  // namespace
