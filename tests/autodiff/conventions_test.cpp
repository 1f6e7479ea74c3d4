// PyTorch's conventions at the edges, value and gradient, each checked against what torch 1.13
// returns for the same inputs (the numbers below were printed by it): division signs, poles of
// the special functions, kinks and exact zeros where a naive chain rule gives NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <ember/ember.hpp>

using namespace ember;

namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor<1> f64(const std::vector<double>& v) {
  return Tensor<1>::from_vector<double>(v, {static_cast<int64_t>(v.size())}, default_device());
}

// Equal values, NaN matching NaN and infinities by sign.
void expect_values(const std::vector<double>& got, const std::vector<double>& want,
                   const std::string& what, double tol = 1e-12) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " [" << i << "]: " << got[i];
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << what << " [" << i << "]";
    } else {
      EXPECT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << what << " [" << i << "]";
    }
  }
}

std::vector<double> values(const DynTensor& t) { return t.to_vector<double>(); }

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
    synchronize(default_device());
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(PyTorchConventions, DivisionSigns) {
  const std::vector<double> a = {5, -5, 5, -5, 0, 3}, b = {3, 3, -3, -3, 2, 0};
  for (DType dtype : {DType::f64, DType::f32, DType::f16, DType::bf16}) {
    const DynTensor ta = cast(f64(a).dyn(), dtype), tb = cast(f64(b).dyn(), dtype);
    const std::string dt(dtype_name(dtype));
    expect_values(values(remainder(ta, tb)), {2, 1, -1, -2, 0, kNan}, "remainder " + dt);
    expect_values(values(fmod(ta, tb)), {2, -2, 2, -2, 0, kNan}, "fmod " + dt);
    expect_values(values(floor_divide(ta, tb)), {1, -2, -2, 1, 0, kInf}, "floor_divide " + dt);
    expect_values(values(ta % tb), {2, 1, -1, -2, 0, kNan}, "% " + dt);
  }
  const std::vector<double> ia = {5, -5, 5, -5, -128, 7}, ib = {3, 3, -3, -3, -1, 1};
  for (DType dtype : {DType::i64, DType::i32, DType::i8}) {
    const DynTensor ta = cast(f64(ia).dyn(), dtype), tb = cast(f64(ib).dyn(), dtype);
    const std::string dt(dtype_name(dtype));
    EXPECT_EQ(remainder(ta, tb).dtype(), dtype);
    expect_values(values(remainder(ta, tb)), {2, 1, -1, -2, 0, 0}, "remainder " + dt);
    expect_values(values(fmod(ta, tb)), {2, -2, 2, -2, 0, 0}, "fmod " + dt);
    // -128 // -1 wraps in int8 (two's complement), as PyTorch's integer division does.
    const double wrapped = dtype == DType::i8 ? -128 : 128;
    expect_values(values(floor_divide(ta, tb)), {1, -2, -2, 1, wrapped, 7}, "floor_divide " + dt);
  }
  // A zero integer divisor is an error naming the op, as PyTorch's ZeroDivisionError.
  const DynTensor i = cast(f64({4, 5}).dyn(), DType::i64), z = cast(f64({2, 0}).dyn(), DType::i64);
  for (auto op : {BinaryOp::Remainder, BinaryOp::Fmod, BinaryOp::FloorDivide}) {
    const std::string e = error_of([&] { binary(op, i, z); });
    EXPECT_NE(e.find(std::string("[") + std::string(op_name(op)) + "] integer division by zero"),
              std::string::npos)
        << e;
  }
  EXPECT_NE(error_of([&] { remainder(i, 0); }).find("integer division by zero"), std::string::npos);
}

TEST(PyTorchConventions, SpecialFunctionsAtPoles) {
  expect_values(values(digamma(f64({0.0, -0.0, -1.0, -1.5, 1.0, -0.5}).dyn())),
                {-kInf, kInf, kNan, 0.7031566406452432, -0.5772156649015329, 0.03648997397857652},
                "digamma");
  expect_values(values(lgamma(f64({0.0, -1.0, -1.5, 0.5}).dyn())),
                {kInf, kInf, 0.8600470153764810, 0.5723649429247001}, "lgamma");
  expect_values(values(erfinv(f64({1.0, -1.0, 1.5, 0.0, 0.5}).dyn())),
                {kInf, -kInf, kNan, 0.0, 0.4769362762044699}, "erfinv");
  // trigamma(1) = pi^2 / 6, polygamma(2, 1) = -2 zeta(3), polygamma(3, 0.5) = pi^4.
  const double tol = 1e-12;
  expect_values(values(polygamma(1, f64({1.0, 0.5}).dyn())), {M_PI * M_PI / 6, M_PI * M_PI / 2},
                "polygamma(1)", tol);
  expect_values(values(polygamma(2, f64({1.0}).dyn())), {-2.4041138063191885}, "polygamma(2)", tol);
  expect_values(values(polygamma(3, f64({0.5}).dyn())), {std::pow(M_PI, 4)}, "polygamma(3)", tol);
  expect_values(values(polygamma(1, f64({-0.5, -2.0}).dyn())), {8.934802200544703, kInf},
                "polygamma(1) of negatives", tol);
  EXPECT_NE(error_of([] { polygamma(-1, f64({1.0}).dyn()); }).find("[polygamma] n must be"),
            std::string::npos);
}

TEST(PyTorchConventions, RoundNanToNumLogit) {
  expect_values(values(round(f64({1.2345, -2.5, 1234.5}).dyn(), 2)), {1.23, -2.5, 1234.5},
                "round(x, 2)");
  expect_values(values(round(f64({1234.5, 1250.0, -1350.0}).dyn(), -2)), {1200, 1200, -1400},
                "round(x, -2)");
  // On random data, in float64: the formula of torch.round(x, decimals), half to even. (Floats
  // round x * 10^d in their own precision, as PyTorch's kernels do, so only float64 is compared
  // with a float64 reference here.)
  std::vector<double> r(500), want2, want_m1;
  for (size_t i = 0; i < r.size(); ++i)
    r[i] = std::ldexp(static_cast<double>(i * 7919 % 4001), -6) - 31;
  for (double v : r) {
    want2.push_back(std::nearbyint(v * 100) / 100);
    want_m1.push_back(std::nearbyint(v / 10) * 10);
  }
  expect_values(values(round(f64(r).dyn(), 2)), want2, "round(x, 2) random");
  expect_values(values(round(f64(r).dyn(), -1)), want_m1, "round(x, -1) random");
  const DynTensor special = f64({kNan, kInf, -kInf, 1.5}).dyn();
  expect_values(values(nan_to_num(cast(special, DType::f16))), {0, 65504, -65504, 1.5},
                "nan_to_num f16");
  expect_values(values(nan_to_num(cast(special, DType::f32))),
                {0, std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(), 1.5},
                "nan_to_num f32");
  expect_values(values(nan_to_num(special, 1.0, 2.0, -3.0)), {1, 2, -3, 1.5}, "nan_to_num given");
  expect_values(values(logit(f64({0.0, 0.5, 1.0}).dyn())), {-kInf, 0, kInf}, "logit");
  expect_values(values(logit(f64({0.0, 0.5, 1.0}).dyn(), 0.1)),
                {std::log(0.1 / 0.9), 0, std::log(0.9 / 0.1)}, "logit eps");
}

TEST(PyTorchConventions, SignOfNanAndZeros) {
  // torch.sign gives 0 for NaN and +0 for -0 (1.13 and 2.11, CPU and CUDA).
  for (DType dtype : {DType::f64, DType::f32, DType::f16, DType::bf16}) {
    const std::vector<double> got =
        values(sign(cast(f64({kNan, -0.0, 0.0, -2.5, 3.0}).dyn(), dtype)));
    expect_values(got, {0, 0, 0, -1, 1}, std::string("sign ") + std::string(dtype_name(dtype)));
    EXPECT_FALSE(std::signbit(got[1])) << dtype_name(dtype);
  }
}

TEST(PyTorchConventions, GradientsAtKinksAndZeros) {
  // logit with eps: 0 outside [eps, 1 - eps].
  auto x = f64({0.0, 0.5, 1.0}).require_grad();
  expect_values(values(x.grad(logit(x, 0.1).sum().backward()).dyn()), {0, 4, 0}, "logit eps");
  // nan_to_num: the gradient passes only where x is finite.
  auto n = f64({kNan, kInf, 1.0}).require_grad();
  expect_values(values(n.grad(nan_to_num(n).sum().backward()).dyn()), {0, 0, 1}, "nan_to_num");
  // copysign: 0 at a == 0, none to the sign operand; hypot at (0, 0) is 0/0 as in PyTorch.
  auto ca = f64({0.0, 1.0}).require_grad(), cb = f64({-1.0, 1.0}).require_grad();
  Gradients g = copysign(ca, cb).sum().backward();
  expect_values(values(ca.grad(g).dyn()), {0, 1}, "copysign a");
  expect_values(values(cb.grad(g).dyn()), {0, 0}, "copysign b");
  // norm of a zero vector, std and var of a constant: 0, never NaN.
  auto z = f64({0.0, 0.0}).require_grad();
  expect_values(values(z.grad(z.norm().backward()).dyn()), {0, 0}, "norm at 0");
  expect_values(values(z.grad(z.norm(3.0).backward()).dyn()), {0, 0}, "3-norm at 0");
  auto c = f64({2.0, 2.0, 2.0}).require_grad();
  expect_values(values(c.grad(c.std().backward()).dyn()), {0, 0, 0}, "std of a constant");
  expect_values(values(c.grad(c.var().backward()).dyn()), {0, 0, 0}, "var of a constant");
  // clamp with tensor bounds: at a tie the gradient goes to the input, none to the bounds.
  auto v = f64({1.0, 2.0, 3.0}).require_grad();
  auto lo = f64({1.0, 0.0, 0.0}).require_grad(), hi = f64({5.0, 5.0, 3.0}).require_grad();
  Gradients gc = clamp(v, lo, hi).sum().backward();
  expect_values(values(v.grad(gc).dyn()), {1, 1, 1}, "clamp x");
  expect_values(values(lo.grad(gc).dyn()), {0, 0, 0}, "clamp min");
  expect_values(values(hi.grad(gc).dyn()), {0, 0, 0}, "clamp max");
  // clamp with min > max gives max, as PyTorch.
  expect_values(values(clamp(f64({0.0, 5.0}).dyn(), f64({3.0, 3.0}).dyn(), f64({1.0, 1.0}).dyn())),
                {1, 1}, "clamp min > max");
}

TEST(PyTorchConventions, IntegerPowersOfNegativeScalarsRaise) {
  const DynTensor i = cast(f64({2, 3}).dyn(), DType::i64);
  for (const std::string& e :
       {error_of([&] { pow(i, -1.0); }), error_of([&] { pow(i, Scalar(int64_t{-2})); })}) {
    EXPECT_NE(e.find("[pow] integers to negative integer powers are not allowed"),
              std::string::npos)
        << e;
  }
  // Tensor exponents keep the elementwise rule (0 except for bases 1 and -1), as PyTorch.
  expect_values(values(pow(cast(f64({2, 1, -1}).dyn(), DType::i64),
                           cast(f64({-1, -1, -1}).dyn(), DType::i64))),
                {0, 1, -1}, "pow int tensors");
}

}  // namespace
