// nn::layer_norm through the one-pass kernels (Cuda; the composite elsewhere) against the float64
// composite: y and the gradients of x, weight and bias for f32, bf16 and f16 inputs, with and
// without affine parameters and over one or two trailing dims; under autocast (f32 out of a bf16
// input); and a second derivative through create_graph. rms_norm the same way.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include <ember/ember.hpp>
#include <ember/nn/nn.hpp>

#include "tensor/test_util.hpp"

using namespace ember;
using namespace ember::test;

namespace {

struct Case {
  Shape shape;
  std::vector<int64_t> normalized;
  bool affine;
};

TEST(LayerNormFused, MatchesFloat64ValuesAndGradients) {
  for (const Case& c : {Case{Shape{4, 7, 768}, {768}, true}, Case{Shape{3, 5, 2, 6}, {2, 6}, true},
                        Case{Shape{9, 100}, {100}, false}, Case{Shape{2, 5000}, {5000}, true}}) {
    Shape ps(std::span<const int64_t>(c.normalized));
    // Rows far from zero with a small spread: a one-pass variance would lose digits here.
    const DynTensor x64 = make_input(c.shape, DType::f64, Layout::Contiguous, 20, 22, 71);
    const DynTensor w64 = make_input(ps, DType::f64, Layout::Contiguous, 0.5, 1.5, 72);
    const DynTensor b64 = make_input(ps, DType::f64, Layout::Contiguous, -1, 1, 73);
    const DynTensor g64 = make_input(c.shape, DType::f64, Layout::Contiguous, -1, 1, 74);
    for (DType dt : {DType::f32, DType::bf16, DType::f16}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " " + to_string(c.shape));
      const DynTensor x = require_grad(cast(x64, dt));
      const DynTensor w = require_grad(cast(w64, DType::f32)),
                      b = require_grad(cast(b64, DType::f32));
      const DynTensor y =
          c.affine ? nn::layer_norm(x, c.normalized, w, b) : nn::layer_norm(x, c.normalized);
      EXPECT_EQ(y.dtype(), c.affine ? DType::f32 : dt);  // promoted with the f32 weight
      const Gradients gr = backward(sum(mul(cast(y, DType::f32), cast(g64, DType::f32))));

      const DynTensor xr = require_grad(cast(detach(x), DType::f64));
      const DynTensor wr = require_grad(cast(detach(w), DType::f64)),
                      br = require_grad(cast(detach(b), DType::f64));
      const DynTensor yr =
          c.affine ? nn::layer_norm(xr, c.normalized, wr, br) : nn::layer_norm(xr, c.normalized);
      const Gradients rr = backward(sum(mul(yr, g64)));
      const double tol = dt == DType::f32 ? 2e-4 : (dt == DType::bf16 ? 5e-2 : 8e-3);
      EXPECT_LT(max_abs_diff(y, yr), tol);
      // dx is about rstd (~1.7 here) times O(1) terms, rounded to the input's type.
      EXPECT_LT(max_abs_diff(gr.get(x), rr.get(xr)), 8 * tol);
      if (c.affine) {
        const double rows = static_cast<double>(x64.numel() / ps.numel());
        EXPECT_LT(max_abs_diff(gr.get(w), rr.get(wr)), tol * std::sqrt(rows) * 4);
        EXPECT_LT(max_abs_diff(gr.get(b), rr.get(br)), 1e-4 * rows);
      }
    }
  }
}

TEST(LayerNormFused, UnderAutocastBf16InputGivesF32) {
  const DynTensor x =
      cast(make_input(Shape{6, 64}, DType::f64, Layout::Contiguous, -2, 2, 75), DType::bf16);
  auto amp = autocast(default_device(), DType::bf16);
  EXPECT_EQ(nn::layer_norm(x, {64}).dtype(), DType::f32);
}

TEST(LayerNormFused, SecondDerivativeThroughCreateGraph) {
  const DynTensor x64 = make_input(Shape{5, 32}, DType::f64, Layout::Contiguous, -2, 2, 76);
  const DynTensor w64 = make_input(Shape{32}, DType::f64, Layout::Contiguous, 0.5, 1.5, 77);
  auto second = [&](DType dt) {
    const DynTensor x = require_grad(cast(x64, dt)), w = require_grad(cast(w64, dt));
    const DynTensor y = nn::layer_norm(x, {32}, w, {});
    BackwardOptions o;
    o.create_graph = true;
    const DynTensor gx = backward(sum(mul(square(y), cast(w64, dt))), o).get(x);
    return backward(sum(square(gx))).get(x);  // d/dx of |dL/dx|^2
  };
  EXPECT_LT(max_abs_diff(second(DType::f32), second(DType::f64)), 2e-3);
}

// rms_norm on the same kernels (no centring): values and gradients of x and the weight against
// float64, with and without a weight, over one or two trailing dims, warp rows and block rows.
TEST(RmsNormFused, MatchesFloat64ValuesAndGradients) {
  for (const Case& c : {Case{Shape{4, 7, 768}, {768}, true}, Case{Shape{3, 5, 2, 6}, {2, 6}, true},
                        Case{Shape{9, 100}, {100}, false}, Case{Shape{2, 5000}, {5000}, true}}) {
    Shape ps(std::span<const int64_t>(c.normalized));
    const DynTensor x64 = make_input(c.shape, DType::f64, Layout::Contiguous, -3, 2, 81);
    const DynTensor w64 = make_input(ps, DType::f64, Layout::Contiguous, 0.5, 1.5, 82);
    const DynTensor g64 = make_input(c.shape, DType::f64, Layout::Contiguous, -1, 1, 84);
    for (DType dt : {DType::f32, DType::bf16, DType::f16}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " " + to_string(c.shape));
      const DynTensor x = require_grad(cast(x64, dt));
      const DynTensor w = require_grad(cast(w64, DType::f32));
      const DynTensor y = nn::rms_norm(x, c.normalized, c.affine ? w : DynTensor(), 1e-6);
      EXPECT_EQ(y.dtype(), c.affine ? DType::f32 : dt);  // promoted with the f32 weight
      const Gradients gr = backward(sum(mul(cast(y, DType::f32), cast(g64, DType::f32))));

      const DynTensor xr = require_grad(cast(detach(x), DType::f64));
      const DynTensor wr = require_grad(cast(detach(w), DType::f64));
      const DynTensor yr = nn::rms_norm(xr, c.normalized, c.affine ? wr : DynTensor(), 1e-6);
      const Gradients rr = backward(sum(mul(yr, g64)));
      const double tol = dt == DType::f32 ? 2e-5 : (dt == DType::bf16 ? 5e-2 : 8e-3);
      EXPECT_LT(max_abs_diff(y, yr), tol);
      EXPECT_LT(max_abs_diff(gr.get(x), rr.get(xr)), 8 * tol);
      if (c.affine) {
        const double rows = static_cast<double>(x64.numel() / ps.numel());
        EXPECT_LT(max_abs_diff(gr.get(w), rr.get(wr)), tol * std::sqrt(rows) * 4);
      }
    }
  }
}

TEST(RmsNormFused, UnderAutocastBf16InputGivesF32) {
  const DynTensor x =
      cast(make_input(Shape{6, 64}, DType::f64, Layout::Contiguous, -2, 2, 85), DType::bf16);
  const DynTensor x32 = cast(x, DType::f32);
  auto amp = autocast(default_device(), DType::bf16);
  const DynTensor y = nn::rms_norm(x, {64});
  EXPECT_EQ(y.dtype(), DType::f32);
  // The default epsilon is float32's, the type autocast computes in, as PyTorch's.
  EXPECT_LT(max_abs_diff(y, nn::rms_norm(x32, {64}, {}, 1.1920928955078125e-07)), 1e-5);
}

TEST(RmsNormFused, SecondDerivativeThroughCreateGraph) {
  const DynTensor x64 = make_input(Shape{5, 32}, DType::f64, Layout::Contiguous, -2, 2, 86);
  const DynTensor w64 = make_input(Shape{32}, DType::f64, Layout::Contiguous, 0.5, 1.5, 87);
  auto second = [&](DType dt) {
    const DynTensor x = require_grad(cast(x64, dt)), w = require_grad(cast(w64, dt));
    const DynTensor y = nn::rms_norm(x, {32}, w, 1e-6);
    BackwardOptions o;
    o.create_graph = true;
    const DynTensor gx = backward(sum(mul(square(y), cast(w64, dt))), o).get(x);
    return backward(sum(square(gx))).get(x);  // d/dx of |dL/dx|^2
  };
  EXPECT_LT(max_abs_diff(second(DType::f32), second(DType::f64)), 2e-3);
}

}  // namespace
