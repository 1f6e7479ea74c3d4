// nn::linear through the fused GEMM (Cuda: cuBLASLt with the bias and its gradient in the
// epilogues; the composite elsewhere) against the float64 composite: y and the gradients of x,
// weight and bias in f32, bf16 and f16, for 2-D and 3-D inputs, a transposed input, no bias, a
// single row and a larger product; inputs that do not require grad; second derivatives through
// create_graph against finite differences; and the shape errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include <ember/autodiff/node.hpp>
#include <ember/ember.hpp>
#include <ember/nn/nn.hpp>
#include <ember/tensor/ops/linear_fused.hpp>

#include "tensor/test_util.hpp"

using namespace ember;
using namespace ember::test;

namespace {

// The spacing of the dtype's numbers at 1.
double epsilon(DType dt) {
  return dt == DType::bf16 ? 0x1p-7 : dt == DType::f16 ? 0x1p-10 : 0x1p-23;
}

double max_abs(const DynTensor& t) {
  double m = 0;
  for (double v : cast(t, DType::f64).to_vector<double>()) m = std::max(m, std::abs(v));
  return m;
}

// |got - want| within a few roundings of the dtype at the scale of the result: 16-bit results
// are rounded once or twice (the composite rounds x w^T, then the sum with the bias); f32 adds
// up K products in another order.
void expect_close_to(const DynTensor& got, const DynTensor& want, DType dt, const char* what) {
  ASSERT_TRUE(got.defined()) << what;
  EXPECT_EQ(to_string(got.shape()), to_string(want.shape())) << what;
  const double ulps = dt == DType::f32 ? 64 : 4;
  EXPECT_LE(max_abs_diff(got, want), ulps * epsilon(dt) * std::max(max_abs(want), 1e-3)) << what;
}

struct Case {
  Shape x;
  int64_t out;
  bool bias;
  Layout layout;
  bool padded = false;     // rows further apart than their length (a slice of wider rows)
  bool w_columns = false;  // the weight a transposed [in, out] leaf (Conv1D's w.t()): column-major
};

// x in `dt` and the case's layout.
DynTensor make_x(const Case& c, DType dt) {
  if (!c.padded) return make_input(c.x, dt, c.layout, -1, 1, 81);
  Shape wide = c.x;
  const int64_t k = wide[wide.rank() - 1];
  wide[wide.rank() - 1] = k + 8;
  return slice(make_input(wide, dt, c.layout, -1, 1, 81), -1, 0, k);
}

TEST(LinearFused, MatchesFloat64ValuesAndGradients) {
  const bool fused_device = default_device().type == DeviceType::Cuda;
  for (const Case& c : {Case{Shape{1, 7}, 5, true, Layout::Contiguous},
                        Case{Shape{33, 64}, 48, true, Layout::Contiguous},
                        Case{Shape{2, 17, 96}, 80, true, Layout::Contiguous},
                        Case{Shape{40, 24}, 16, true, Layout::Transposed},
                        Case{Shape{3, 9, 32}, 24, true, Layout::Strided},
                        Case{Shape{20, 48}, 32, true, Layout::Contiguous, true},
                        Case{Shape{33, 64}, 48, false, Layout::Contiguous},
                        Case{Shape{33, 64}, 48, true, Layout::Contiguous, false, true},
                        Case{Shape{2, 17, 96}, 80, false, Layout::Contiguous, false, true},
                        Case{Shape{1, 40}, 1, true, Layout::Contiguous, false, true},
                        Case{Shape{1024, 256}, 384, true, Layout::Contiguous}}) {
    const int64_t in = c.x[c.x.rank() - 1];
    Shape y_shape = c.x;
    y_shape[y_shape.rank() - 1] = c.out;
    const DynTensor g64 = make_input(y_shape, DType::f64, Layout::Contiguous, -1, 1, 84);
    for (DType dt : {DType::f32, DType::bf16, DType::f16}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " x " + to_string(c.x) + " " +
                   layout_name(c.layout) + " out " + std::to_string(c.out) +
                   (c.bias ? "" : " no bias") + (c.w_columns ? " w.t()" : ""));
      const DynTensor x = require_grad(make_x(c, dt));
      const DynTensor w_leaf =
          require_grad(make_input(c.w_columns ? Shape{in, c.out} : Shape{c.out, in}, dt,
                                  Layout::Contiguous, -0.5, 0.5, 82));
      const DynTensor w = c.w_columns ? transpose(w_leaf, 0, 1) : w_leaf;
      EXPECT_EQ(fused_linear_column_major(w), c.w_columns && c.out > 1);
      const DynTensor b =
          c.bias ? require_grad(make_input(Shape{c.out}, dt, Layout::Contiguous, -1, 1, 83))
                 : DynTensor();
      const DynTensor g = cast(g64, dt);
      const bool fused = fused_linear_supported(x, w, b);
      if (fused_device) {
        EXPECT_TRUE(fused);  // Cuda takes every case here
      }
      const DynTensor y = nn::linear(x, w, b);
      EXPECT_EQ(y.dtype(), dt);
      EXPECT_STREQ(y.node()->name(), fused ? "linear" : (c.bias ? "add" : "matmul"));
      const Gradients grads = backward(sum(mul(y, g)));  // y's gradient is g, exactly

      const DynTensor xr = require_grad(cast(detach(x), DType::f64));
      const DynTensor wr = require_grad(cast(detach(w), DType::f64));
      const DynTensor br = c.bias ? require_grad(cast(detach(b), DType::f64)) : DynTensor();
      const DynTensor yr = nn::linear(xr, wr, br);
      const Gradients ref = backward(sum(mul(yr, cast(g, DType::f64))));
      expect_close_to(y, yr, dt, "y");
      expect_close_to(grads.get(x), ref.get(xr), dt, "dx");
      const DynTensor dw = grads.get(w_leaf);
      expect_close_to(c.w_columns ? transpose(dw, 0, 1) : dw, ref.get(wr), dt, "dw");
      if (c.bias) expect_close_to(grads.get(b), ref.get(br), dt, "db");
    }
  }
}

TEST(LinearFused, OnlyTheInputsThatRequireGradGetGradients) {
  const DynTensor x64 = make_input(Shape{2, 6, 40}, DType::f64, Layout::Contiguous, -1, 1, 85);
  const DynTensor w64 = make_input(Shape{24, 40}, DType::f64, Layout::Contiguous, -1, 1, 86);
  const DynTensor b64 = make_input(Shape{24}, DType::f64, Layout::Contiguous, -1, 1, 87);
  const DynTensor g64 = make_input(Shape{2, 6, 24}, DType::f64, Layout::Contiguous, -1, 1, 88);
  const DynTensor xr = require_grad(x64), wr = require_grad(w64), br = require_grad(b64);
  const Gradients ref = backward(sum(mul(nn::linear(xr, wr, br), g64)));
  for (DType dt : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(dtype_name(dt));
    const DynTensor g = cast(g64, dt);
    {  // a first layer: the input is data
      const DynTensor x = cast(x64, dt), w = require_grad(cast(w64, dt)),
                      b = require_grad(cast(b64, dt));
      const Gradients grads = backward(sum(mul(nn::linear(x, w, b), g)));
      expect_close_to(grads.get(w), ref.get(wr), dt, "dw");
      expect_close_to(grads.get(b), ref.get(br), dt, "db");
    }
    {  // a frozen layer: only the input's gradient
      const DynTensor x = require_grad(cast(x64, dt)), w = cast(w64, dt), b = cast(b64, dt);
      expect_close_to(backward(sum(mul(nn::linear(x, w, b), g))).get(x), ref.get(xr), dt, "dx");
    }
    {  // a frozen weight with a trained bias
      const DynTensor x = cast(x64, dt), w = cast(w64, dt), b = require_grad(cast(b64, dt));
      expect_close_to(backward(sum(mul(nn::linear(x, w, b), g))).get(b), ref.get(br), dt, "db");
    }
  }
}

// F(w, b) = sum(dL/dx ^ 2) for L = sum(linear(x, w, b) ^ 2): dL/dx = 2 (x w^T + b) w depends on
// all three, so F's gradient goes through every formula of the create_graph backward.
DynTensor grad_x_energy(const DynTensor& x, const DynTensor& w, const DynTensor& b,
                        bool create_graph) {
  const DynTensor xt = require_grad(x);
  BackwardOptions o;
  o.create_graph = create_graph;
  const DynTensor gx = backward(sum(square(nn::linear(xt, w, b))), o).get(xt);
  return sum(square(gx));
}

TEST(LinearFused, SecondDerivativeMatchesFiniteDifferences) {
  const DynTensor x = make_input(Shape{5, 4}, DType::f64, Layout::Contiguous, -1, 1, 89);
  const DynTensor w64 = make_input(Shape{3, 4}, DType::f64, Layout::Contiguous, -1, 1, 90);
  const DynTensor b64 = make_input(Shape{3}, DType::f64, Layout::Contiguous, -1, 1, 91);
  const DynTensor w = require_grad(w64), b = require_grad(b64);
  const Gradients second = backward(grad_x_energy(x, w, b, true));
  const std::vector<double> dw = second.get(w).to_vector<double>();
  const std::vector<double> db = second.get(b).to_vector<double>();

  const double h = 1e-6;
  auto energy = [&](const std::vector<double>& wv, const std::vector<double>& bv) {
    return grad_x_energy(x, from_host({w64.shape(), wv}, DType::f64, Layout::Contiguous),
                         from_host({b64.shape(), bv}, DType::f64, Layout::Contiguous), false)
        .item<double>();
  };
  const std::vector<double> wv = w64.to_vector<double>(), bv = b64.to_vector<double>();
  for (size_t i = 0; i < wv.size(); ++i) {
    std::vector<double> up = wv, down = wv;
    up[i] += h;
    down[i] -= h;
    const double fd = (energy(up, bv) - energy(down, bv)) / (2 * h);
    EXPECT_NEAR(dw[i], fd, 1e-5 * std::max(1.0, std::abs(fd))) << "dw[" << i << "]";
  }
  for (size_t i = 0; i < bv.size(); ++i) {
    std::vector<double> up = bv, down = bv;
    up[i] += h;
    down[i] -= h;
    const double fd = (energy(wv, up) - energy(wv, down)) / (2 * h);
    EXPECT_NEAR(db[i], fd, 1e-5 * std::max(1.0, std::abs(fd))) << "db[" << i << "]";
  }

  // The fused dtypes record the composite's backward under create_graph: the same values.
  for (DType dt : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(dtype_name(dt));
    const DynTensor wt = require_grad(cast(w64, dt)), bt = require_grad(cast(b64, dt));
    Gradients g;
    ASSERT_NO_THROW(g = backward(grad_x_energy(cast(x, dt), wt, bt, true)));
    const double tol = dt == DType::f32 ? 1e-4 : 0.1;
    EXPECT_LT(max_abs_diff(g.get(wt), second.get(w)), tol * std::max(1.0, max_abs(second.get(w))));
    EXPECT_LT(max_abs_diff(g.get(bt), second.get(b)), tol * std::max(1.0, max_abs(second.get(b))));
  }
}

TEST(LinearFused, BadShapesGiveTheLinearErrors) {
  for (DType dt : {DType::f32, DType::bf16}) {
    const DynTensor x =
        cast(make_input(Shape{2, 5}, DType::f64, Layout::Contiguous, -1, 1, 92), dt);
    const DynTensor w =
        cast(make_input(Shape{3, 4}, DType::f64, Layout::Contiguous, -1, 1, 93), dt);
    const DynTensor w5 =
        cast(make_input(Shape{3, 5}, DType::f64, Layout::Contiguous, -1, 1, 94), dt);
    expect_error_prefix("[linear] input [2, 5] does not end in the weight's in_features 4",
                        [&] { (void)nn::linear(x, w); });
    expect_error_prefix("[linear] bias [4] does not match out_features 3", [&] {
      (void)nn::linear(x, w5,
                       cast(make_input(Shape{4}, DType::f64, Layout::Contiguous, -1, 1, 95), dt));
    });
    expect_error_prefix("[linear] weight must be [out, in], got [15]",
                        [&] { (void)nn::linear(x, reshape(w5, Shape{15})); });
    EXPECT_FALSE(fused_linear_supported(x, w, {}));
  }
}

TEST(LinearFused, EmptyBatchGivesAnEmptyResult) {
  const DynTensor x = zeros(Shape{0, 7}, DType::bf16, default_device());
  const DynTensor w =
      cast(make_input(Shape{5, 7}, DType::f64, Layout::Contiguous, -1, 1, 96), DType::bf16);
  EXPECT_FALSE(fused_linear_supported(x, w, {}));  // the composite takes empty products
  EXPECT_EQ(to_string(nn::linear(x, w).shape()), "[0, 5]");
}

}  // namespace
