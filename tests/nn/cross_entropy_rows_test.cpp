// cross_entropy on [N, C] logits through the row building blocks (the Cuda backend's fused
// kernels, the composites elsewhere) against nll_loss(log_softmax) in float64: losses and input
// gradients for f32, bf16 and f16 logits, every reduction, class weights and ignored targets; and
// logsumexp_rows on rows far from zero and of -inf; softmax and log_softmax over the last dim on
// the same kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

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

// softmax and log_softmax over the last dim (the fused row kernels on Cuda, the composite
// elsewhere) against float64: values and input gradients for f32, bf16 and f16, short rows and
// rows longer than a block, ranks 1 to 3; another dim takes the composite.
TEST(SoftmaxRows, SoftmaxAndLogSoftmaxMatchFloat64) {
  for (const Shape& s : {Shape{37}, Shape{4, 9, 50}, Shape{3, 5000}}) {
    const DynTensor x64 = make_input(s, DType::f64, Layout::Contiguous, -6, 6, 91);
    const DynTensor g64 = make_input(s, DType::f64, Layout::Contiguous, -1, 1, 92);
    for (bool log : {false, true}) {
      for (DType dt : {DType::f32, DType::bf16, DType::f16}) {
        SCOPED_TRACE(std::string(log ? "log_softmax " : "softmax ") + std::string(dtype_name(dt)) +
                     " " + to_string(s));
        auto run = [&](const DynTensor& x, int64_t dim) {
          return log ? log_softmax(x, dim) : softmax(x, dim);
        };
        const DynTensor x = require_grad(cast(x64, dt));
        const DynTensor y = run(x, -1);
        EXPECT_EQ(y.dtype(), dt);
        const Gradients gr = backward(sum(mul(y, cast(g64, dt))));
        const DynTensor xr = require_grad(cast(detach(x), DType::f64));
        const DynTensor yr = run(xr, s.rank() - 1);
        const Gradients rr = backward(sum(mul(yr, cast(cast(g64, dt), DType::f64))));
        const double tol = dt == DType::f32 ? 1e-5 : (dt == DType::bf16 ? 4e-2 : 5e-3);
        // log_softmax's values are O(10): relative rounding of the 16-bit output.
        EXPECT_LT(max_abs_diff(y, yr), log ? 10 * tol : tol);
        EXPECT_LT(max_abs_diff(gr.get(x), rr.get(xr)), log ? 40 * tol : tol);
        if (s.rank() > 1) {  // another dim: the composite, the same values
          const DynTensor y0 = run(cast(x64, DType::f32), 0), y0r = run(x64, 0);
          EXPECT_LT(max_abs_diff(y0, y0r), 1e-5);
        }
      }
    }
  }
}

// Under autocast a 16-bit input gives an f32 output (read as it is where the kernels take it)
// and its gradient keeps the input's type.
TEST(SoftmaxRows, UnderAutocastTheOutputIsFloat32AndTheGradientKeepsTheInputType) {
  const DynTensor x = require_grad(
      cast(make_input(Shape{6, 300}, DType::f64, Layout::Contiguous, -4, 4, 93), DType::bf16));
  DynTensor y;
  {
    auto amp = autocast(default_device(), DType::bf16);
    y = softmax(x, -1);
  }
  EXPECT_EQ(y.dtype(), DType::f32);
  EXPECT_LT(max_abs_diff(y, softmax(cast(detach(x), DType::f64), 1)), 1e-6);
  const DynTensor gx = backward(sum(square(y))).get(x);
  EXPECT_EQ(gx.dtype(), DType::bf16);
}

// A second derivative through create_graph runs the formula in tensor ops.
TEST(SoftmaxRows, SecondDerivativeThroughCreateGraph) {
  const DynTensor x64 = make_input(Shape{5, 32}, DType::f64, Layout::Contiguous, -2, 2, 94);
  const DynTensor w64 = make_input(Shape{5, 32}, DType::f64, Layout::Contiguous, -1, 1, 95);
  for (bool log : {false, true}) {
    auto second = [&](DType dt) {
      const DynTensor x = require_grad(cast(x64, dt));
      const DynTensor y = log ? log_softmax(x, 1) : softmax(x, 1);
      BackwardOptions o;
      o.create_graph = true;
      const DynTensor gx = backward(sum(mul(square(y), cast(w64, dt))), o).get(x);
      return backward(sum(square(gx))).get(x);
    };
    EXPECT_LT(max_abs_diff(second(DType::f32), second(DType::f64)), 1e-4) << log;
  }
}

// A NaN anywhere in a row makes the whole row NaN, and so does +inf (inf - inf), as the
// composite's max-shifted sums give and PyTorch's softmax does; other rows are untouched. Rows
// longer than a block, so one thread sees the NaN among other values.
TEST(SoftmaxRows, NonFiniteValuesSpoilOnlyTheirRow) {
  std::vector<double> v(3 * 700);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(static_cast<double>(i)) * 3;
  v[600] = NAN;           // row 0
  v[700 + 5] = INFINITY;  // row 1
  const DynTensor x = cast(from_data(TensorData::from(v, Shape{3, 700})), DType::f32);
  const DynTensor xd = to_device(x, default_device());
  for (bool log : {false, true}) {
    const std::vector<double> y =
        to_device(log ? log_softmax(xd, -1) : softmax(xd, -1), Device::cpu()).to_vector<double>();
    double row2 = 0;
    for (size_t k = 0; k < 700; ++k) {
      EXPECT_TRUE(std::isnan(y[k])) << log << " row 0, " << k;
      EXPECT_TRUE(std::isnan(y[700 + k])) << log << " row 1, " << k;
      row2 += log ? std::exp(y[1400 + k]) : y[1400 + k];
    }
    EXPECT_NEAR(row2, 1.0, 1e-5) << log;
  }
  const std::vector<double> lse = to_device(logsumexp_rows(xd), Device::cpu()).to_vector<double>();
  EXPECT_TRUE(std::isnan(lse[0]));
  EXPECT_EQ(lse[1], INFINITY);  // as logsumexp gives: only softmax's inf - inf is NaN
  EXPECT_TRUE(std::isfinite(lse[2]));
}

}  // namespace
