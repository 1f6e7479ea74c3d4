// The elementwise op rows, one per registry entry (and a few parameter variants): the op, its
// float64 reference, input range and dtype group for the op table
// (tests/tensor/elementwise_table_test.cpp), and the domain its gradient is checked on by the
// gradient-check table (tests/autodiff/gradcheck_table_test.cpp). A new elementwise op adds its
// row here once; both tables run it on every device.
#pragma once

#include <cmath>
#include <functional>
#include <vector>

#include "test_util.hpp"

namespace ember::test {

enum class Group { Float, Numeric, IntOnly, All };

inline std::vector<DType> dtypes_of(Group g) {
  switch (g) {
    case Group::Float:
      return kFloatTypes;
    case Group::Numeric: {
      std::vector<DType> v = kFloatTypes;
      v.insert(v.end(), kIntTypes.begin(), kIntTypes.end());
      return v;
    }
    case Group::IntOnly: {
      std::vector<DType> v = kIntTypes;
      v.push_back(DType::boolean);
      return v;
    }
    case Group::All:
      return kAllTypes;
  }
  return {};
}

// Where an input's random values lie for a gradient check: [lo, hi) with |x| >= gap, away from
// kinks, poles and branch cuts.
struct Range {
  double lo = -2.0, hi = 2.0, gap = 0.0;
};

enum class Check {
  kFd,    // first and second derivatives against finite differences
  kZero,  // piecewise constant: the gradient must be exactly zero (differences are undefined
          // at the jumps)
};

struct Grad {
  Range range = {};
  Check check = Check::kFd;
};

struct BinaryGrad {
  Range a = {}, b = {};
  double scalar_b = 1.5, scalar_a = -0.5;  // b in op(a, scalar), a in op(scalar, b)
};

struct UnaryRow {
  const char* name;
  std::function<DynTensor(const DynTensor&)> fn;
  std::function<double(double)> ref;
  double lo, hi;
  Group group;
  Grad grad = {};  // the gradient check's domain (tests/autodiff/gradcheck_table_test.cpp)
  bool bool_out = false;
};

inline double gelu_ref(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
inline double gelu_tanh_ref(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}
inline double sigmoid_ref(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Special functions in float64, written independently of the kernels' (src/core/special_math.hpp):
// a longer recurrence before the asymptotic series, and erfinv by bisection on erf.
inline double digamma_ref(double x) {
  if (x < 0.5) return digamma_ref(1.0 - x) - M_PI / std::tan(M_PI * x);
  double r = 0;
  for (; x < 40; x += 1) r -= 1 / x;
  const double y = 1 / (x * x);
  return r + std::log(x) - 0.5 / x - y / 12 + y * y / 120 - y * y * y / 252;
}
/// polygamma(n, x) for n >= 1 and x > 0: the recurrence up to x >= 40, then
/// (-1)^(n+1) [(n-1)!/x^n + n!/(2 x^(n+1)) + sum_k B_2k (2k+n-1)! / ((2k)! x^(2k+n))].
inline double polygamma_ref(int n, double x) {
  auto fact = [](int k) {
    double f = 1;
    for (int i = 2; i <= k; ++i) f *= i;
    return f;
  };
  const double sign = n % 2 ? 1.0 : -1.0;
  double r = 0;
  for (; x < 40; x += 1) r += sign * fact(n) / std::pow(x, n + 1);
  const double bernoulli[] = {1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30};
  double tail = fact(n - 1) / std::pow(x, n) + fact(n) / (2 * std::pow(x, n + 1));
  for (int k = 1; k <= 4; ++k) {
    tail += bernoulli[k - 1] * fact(2 * k + n - 1) / (fact(2 * k) * std::pow(x, 2 * k + n));
  }
  return r + sign * tail;
}
inline double erfinv_ref(double y) {
  double lo = -7, hi = 7;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    (std::erf(mid) < y ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}
/// Python's % and //: the remainder takes the divisor's sign.
inline double remainder_ref(double a, double b) { return a - std::floor(a / b) * b; }

inline const std::vector<UnaryRow>& unary_rows() {
  // clang-format off: one row per op reads best as one line
  static const std::vector<UnaryRow> rows = {
      {"neg", [](auto& x) { return neg(x); }, [](double x) { return -x; }, -10, 10, Group::Numeric},
      {"abs",
       [](auto& x) { return abs(x); },
       [](double x) { return std::fabs(x); },
       -10,
       10,
       Group::Numeric,
       {{-2, 2, 0.1}}},
      {"sign",
       [](auto& x) { return sign(x); },
       [](double x) { return double((x > 0) - (x < 0)); },
       -10,
       10,
       Group::Numeric,
       {{}, Check::kZero}},
      {"square", [](auto& x) { return square(x); }, [](double x) { return x * x; }, -10, 10,
       Group::Numeric},
      {"relu",
       [](auto& x) { return relu(x); },
       [](double x) { return x > 0 ? x : 0.0; },
       -10,
       10,
       Group::Numeric,
       {{-2, 2, 0.1}}},
      {"exp", [](auto& x) { return exp(x); }, [](double x) { return std::exp(x); }, -8, 8,
       Group::Float},
      {"exp2", [](auto& x) { return exp2(x); }, [](double x) { return std::exp2(x); }, -8, 8,
       Group::Float},
      {"log",
       [](auto& x) { return log(x); },
       [](double x) { return std::log(x); },
       0.05,
       20,
       Group::Float,
       {{0.2, 3}}},
      {"log2",
       [](auto& x) { return log2(x); },
       [](double x) { return std::log2(x); },
       0.05,
       20,
       Group::Float,
       {{0.2, 3}}},
      {"log1p",
       [](auto& x) { return log1p(x); },
       [](double x) { return std::log1p(x); },
       -0.9,
       10,
       Group::Float,
       {{-0.5, 2}}},
      {"expm1", [](auto& x) { return expm1(x); }, [](double x) { return std::expm1(x); }, -3, 3,
       Group::Float},
      {"sqrt",
       [](auto& x) { return sqrt(x); },
       [](double x) { return std::sqrt(x); },
       0.01,
       20,
       Group::Float,
       {{0.2, 3}}},
      {"rsqrt",
       [](auto& x) { return rsqrt(x); },
       [](double x) { return 1.0 / std::sqrt(x); },
       0.05,
       20,
       Group::Float,
       {{0.2, 3}}},
      {"reciprocal",
       [](auto& x) { return reciprocal(x); },
       [](double x) { return 1.0 / x; },
       0.25,
       8,
       Group::Float,
       {{-2, 2, 0.3}}},
      {"sin",
       [](auto& x) { return sin(x); },
       [](double x) { return std::sin(x); },
       -4,
       4,
       Group::Float,
       {{-3, 3}}},
      {"cos",
       [](auto& x) { return cos(x); },
       [](double x) { return std::cos(x); },
       -4,
       4,
       Group::Float,
       {{-3, 3}}},
      {"tan",
       [](auto& x) { return tan(x); },
       [](double x) { return std::tan(x); },
       -1.2,
       1.2,
       Group::Float,
       {{-1.2, 1.2}}},
      {"asin",
       [](auto& x) { return asin(x); },
       [](double x) { return std::asin(x); },
       -0.95,
       0.95,
       Group::Float,
       {{-0.9, 0.9}}},
      {"acos",
       [](auto& x) { return acos(x); },
       [](double x) { return std::acos(x); },
       -0.95,
       0.95,
       Group::Float,
       {{-0.9, 0.9}}},
      {"atan",
       [](auto& x) { return atan(x); },
       [](double x) { return std::atan(x); },
       -6,
       6,
       Group::Float,
       {{-3, 3}}},
      {"sinh", [](auto& x) { return sinh(x); }, [](double x) { return std::sinh(x); }, -3, 3,
       Group::Float},
      {"cosh", [](auto& x) { return cosh(x); }, [](double x) { return std::cosh(x); }, -3, 3,
       Group::Float},
      {"tanh", [](auto& x) { return tanh(x); }, [](double x) { return std::tanh(x); }, -4, 4,
       Group::Float},
      {"erf", [](auto& x) { return erf(x); }, [](double x) { return std::erf(x); }, -3, 3,
       Group::Float},
      {"sigmoid",
       [](auto& x) { return sigmoid(x); },
       sigmoid_ref,
       -10,
       10,
       Group::Float,
       {{-4, 4}}},
      {"gelu", [](auto& x) { return gelu(x); }, gelu_ref, -5, 5, Group::Float, {{-3, 3}}},
      {"gelu_tanh",
       [](auto& x) { return gelu(x, true); },
       gelu_tanh_ref,
       -5,
       5,
       Group::Float,
       {{-3, 3}}},
      {"silu",
       [](auto& x) { return silu(x); },
       [](double x) { return x * sigmoid_ref(x); },
       -8,
       8,
       Group::Float,
       {{-3, 3}}},
      {"softplus",
       [](auto& x) { return softplus(x); },
       [](double x) { return x > 20 ? x : std::log1p(std::exp(x)); },
       -15,
       30,
       Group::Float,
       {{-3, 3}}},
      {"softplus_beta",
       [](auto& x) { return softplus(x, 2.0, 5.0); },
       [](double x) { return 2 * x > 5 ? x : std::log1p(std::exp(2 * x)) / 2; },
       -6,
       6,
       Group::Float,
       {{-3, 3}}},
      {"floor",
       [](auto& x) { return floor(x); },
       [](double x) { return std::floor(x); },
       -10,
       10,
       Group::Numeric,
       {{-3, 3}, Check::kZero}},
      {"ceil",
       [](auto& x) { return ceil(x); },
       [](double x) { return std::ceil(x); },
       -10,
       10,
       Group::Numeric,
       {{-3, 3}, Check::kZero}},
      {"round",
       [](auto& x) { return round(x); },
       [](double x) { return std::nearbyint(x); },
       -10,
       10,
       Group::Numeric,
       {{-3, 3}, Check::kZero}},
      {"trunc",
       [](auto& x) { return trunc(x); },
       [](double x) { return std::trunc(x); },
       -10,
       10,
       Group::Numeric,
       {{-3, 3}, Check::kZero}},
      {"clamp",
       [](auto& x) { return clamp(x, -2, 3); },
       [](double x) { return std::min(std::max(x, -2.0), 3.0); },
       -10,
       10,
       Group::Numeric,
       {{-3.5, 4.5}}},
      {"clamp_min",
       [](auto& x) { return clamp_min(x, 1); },
       [](double x) { return std::max(x, 1.0); },
       -10,
       10,
       Group::Numeric,
       {{-3, 3}}},
      {"clamp_max",
       [](auto& x) { return clamp_max(x, 1); },
       [](double x) { return std::min(x, 1.0); },
       -10,
       10,
       Group::Numeric,
       {{-3, 3}}},
      {"pow_scalar",
       [](auto& x) { return pow(x, 1.7); },
       [](double x) { return std::pow(x, 1.7); },
       0.1,
       5,
       Group::Float,
       {{0.2, 2}}},
      {"pow_square", [](auto& x) { return pow(x, 2.0); }, [](double x) { return x * x; }, -5, 5,
       Group::Numeric},
      {"isnan",
       [](auto& x) { return isnan(x); },
       [](double x) { return double(std::isnan(x)); },
       -5,
       5,
       Group::All,
       {},
       true},
      {"isinf",
       [](auto& x) { return isinf(x); },
       [](double x) { return double(std::isinf(x)); },
       -5,
       5,
       Group::All,
       {},
       true},
      {"logical_not",
       [](auto& x) { return logical_not(x); },
       [](double x) { return double(x == 0); },
       -2,
       3,
       Group::All,
       {},
       true},
      {"log10",
       [](auto& x) { return log10(x); },
       [](double x) { return std::log10(x); },
       0.05,
       20,
       Group::Float,
       {{0.2, 3}}},
      {"erfinv",
       [](auto& x) { return erfinv(x); },
       erfinv_ref,
       -0.99,
       0.99,
       Group::Float,
       {{-0.9, 0.9}}},
      {"lgamma",
       [](auto& x) { return lgamma(x); },
       [](double x) { return std::lgamma(x); },
       0.05,
       10,
       Group::Float,
       {{0.3, 5}}},
      {"digamma",
       [](auto& x) { return digamma(x); },
       digamma_ref,
       0.05,
       10,
       Group::Float,
       {{0.3, 5}}},
      {"polygamma",
       [](auto& x) { return polygamma(1, x); },
       [](double x) { return polygamma_ref(1, x); },
       0.2,
       8,
       Group::Float,
       {{0.5, 5}}},
      {"polygamma(2, x)",
       [](auto& x) { return polygamma(2, x); },
       [](double x) { return polygamma_ref(2, x); },
       0.2,
       8,
       Group::Float,
       {{0.5, 5}}},
      {"logit",
       [](auto& x) { return logit(x); },
       [](double x) { return std::log(x / (1 - x)); },
       0.02,
       0.98,
       Group::Float,
       {{0.1, 0.9}}},
      {"logit(x, eps 0.2)",
       [](auto& x) { return logit(x, 0.2); },
       [](double x) {
         const double z = std::min(std::max(x, 0.2), 0.8);
         return std::log(z / (1 - z));
       },
       0.02,
       0.98,
       Group::Float,
       {{0.25, 0.75}}},
      {"nan_to_num", [](auto& x) { return nan_to_num(x, 1.0); }, [](double x) { return x; }, -5, 5,
       Group::Numeric},
      {"bitwise_not", [](auto& x) { return bitwise_not(x); }, [](double x) { return -x - 1; }, -50,
       50, Group::IntOnly},
  };
  // clang-format on
  return rows;
}

struct BinaryRow {
  const char* name;
  std::function<DynTensor(const DynTensor&, const DynTensor&)> fn;
  std::function<double(double, double)> ref;
  double lo_a, hi_a, lo_b, hi_b;
  Group group;
  BinaryGrad grad = {};  // the gradient check's domains and scalar operands
  bool bool_out = false;
  bool float_out = false;  // int inputs give the default float dtype (true division)
  bool no_grad = false;    // a numeric result the registry gives no gradient (floor_divide)
};

inline double shr_ref(double a, double b) { return std::floor(a / std::exp2(b)); }

inline const std::vector<BinaryRow>& binary_rows() {
  // clang-format off: one row per op reads best as one line
  static const std::vector<BinaryRow> rows = {
      {"add", [](auto& a, auto& b) { return add(a, b); }, [](double a, double b) { return a + b; },
       -50, 50, -50, 50, Group::Numeric},
      {"sub", [](auto& a, auto& b) { return sub(a, b); }, [](double a, double b) { return a - b; },
       -50, 50, -50, 50, Group::Numeric},
      {"mul", [](auto& a, auto& b) { return mul(a, b); }, [](double a, double b) { return a * b; },
       -10, 10, -10, 10, Group::Numeric},
      {"div",
       [](auto& a, auto& b) { return div(a, b); },
       [](double a, double b) { return a / b; },
       -10,
       10,
       1,
       5,
       Group::Numeric,
       {{}, {-2, 2, 0.3}},
       false,
       true},
      {"pow",
       [](auto& a, auto& b) { return pow(a, b); },
       [](double a, double b) { return std::pow(a, b); },
       0,
       4,
       0,
       4,
       Group::Numeric,
       {{0.3, 2}, {}, 2.5, 1.7}},
      {"atan2",
       [](auto& a, auto& b) { return atan2(a, b); },
       [](double a, double b) { return std::atan2(a, b); },
       -5,
       5,
       -5,
       5,
       Group::Float,
       {{-2, 2, 0.2}, {}, -0.7, 0.8}},
      {"minimum",
       [](auto& a, auto& b) { return minimum(a, b); },
       [](double a, double b) { return std::min(a, b); },
       -50,
       50,
       -50,
       50,
       Group::Numeric,
       {{}, {}, 0.3, -0.3}},
      {"maximum",
       [](auto& a, auto& b) { return maximum(a, b); },
       [](double a, double b) { return std::max(a, b); },
       -50,
       50,
       -50,
       50,
       Group::Numeric,
       {{}, {}, 0.3, -0.3}},
      {"relu_backward",
       [](auto& a, auto& b) { return relu_backward(a, b); },
       [](double g, double y) { return y <= 0 ? 0.0 : g; },
       -5,
       5,
       -2,
       2,
       Group::Float,
       {{}, {-2, 2, 0.2}, 0.5, -0.7}},
      {"eq",
       [](auto& a, auto& b) { return eq(a, b); },
       [](double a, double b) { return double(a == b); },
       -3,
       3,
       -3,
       3,
       Group::All,
       {},
       true},
      {"ne",
       [](auto& a, auto& b) { return ne(a, b); },
       [](double a, double b) { return double(a != b); },
       -3,
       3,
       -3,
       3,
       Group::All,
       {},
       true},
      {"lt",
       [](auto& a, auto& b) { return lt(a, b); },
       [](double a, double b) { return double(a < b); },
       -3,
       3,
       -3,
       3,
       Group::All,
       {},
       true},
      {"le",
       [](auto& a, auto& b) { return le(a, b); },
       [](double a, double b) { return double(a <= b); },
       -3,
       3,
       -3,
       3,
       Group::All,
       {},
       true},
      {"gt",
       [](auto& a, auto& b) { return gt(a, b); },
       [](double a, double b) { return double(a > b); },
       -3,
       3,
       -3,
       3,
       Group::All,
       {},
       true},
      {"ge",
       [](auto& a, auto& b) { return ge(a, b); },
       [](double a, double b) { return double(a >= b); },
       -3,
       3,
       -3,
       3,
       Group::All,
       {},
       true},
      {"logical_and",
       [](auto& a, auto& b) { return logical_and(a, b); },
       [](double a, double b) { return double(a != 0 && b != 0); },
       -2,
       2,
       -2,
       2,
       Group::All,
       {},
       true},
      {"logical_or",
       [](auto& a, auto& b) { return logical_or(a, b); },
       [](double a, double b) { return double(a != 0 || b != 0); },
       -2,
       2,
       -2,
       2,
       Group::All,
       {},
       true},
      {"logical_xor",
       [](auto& a, auto& b) { return logical_xor(a, b); },
       [](double a, double b) { return double((a != 0) != (b != 0)); },
       -2,
       2,
       -2,
       2,
       Group::All,
       {},
       true},
      {"hypot",
       [](auto& a, auto& b) { return hypot(a, b); },
       [](double a, double b) { return std::hypot(a, b); },
       -10,
       10,
       -10,
       10,
       Group::Float,
       {{-2, 2, 0.2}, {-2, 2, 0.2}, 0.7, -1.2}},
      {"copysign",
       [](auto& a, auto& b) { return copysign(a, b); },
       [](double a, double b) { return std::copysign(a, b); },
       -10,
       10,
       -10,
       10,
       Group::Float,
       {{-2, 2, 0.1}, {-2, 2, 0.1}, -1.5, -0.5}},
      {"remainder",
       [](auto& a, auto& b) { return remainder(a, b); },
       remainder_ref,
       -10,
       10,
       1,
       5,
       Group::Numeric,
       {{}, {0.5, 3}, 1.5, -2.5}},
      {"fmod",
       [](auto& a, auto& b) { return fmod(a, b); },
       [](double a, double b) { return std::fmod(a, b); },
       -10,
       10,
       1,
       5,
       Group::Numeric,
       {{}, {0.5, 3}, 1.5, -2.5}},
      {"floor_divide",
       [](auto& a, auto& b) { return floor_divide(a, b); },
       [](double a, double b) { return std::floor(a / b); },
       -10,
       10,
       1,
       5,
       Group::Numeric,
       {},
       false,
       false,
       true},
      {"bitwise_and", [](auto& a, auto& b) { return bitwise_and(a, b); },
       [](double a, double b) { return double(int64_t(a) & int64_t(b)); }, -100, 100, -100, 100,
       Group::IntOnly},
      {"bitwise_or", [](auto& a, auto& b) { return bitwise_or(a, b); },
       [](double a, double b) { return double(int64_t(a) | int64_t(b)); }, -100, 100, -100, 100,
       Group::IntOnly},
      {"bitwise_xor", [](auto& a, auto& b) { return bitwise_xor(a, b); },
       [](double a, double b) { return double(int64_t(a) ^ int64_t(b)); }, -100, 100, -100, 100,
       Group::IntOnly},
      {"bitwise_left_shift", [](auto& a, auto& b) { return bitwise_left_shift(a, b); },
       [](double a, double b) { return a * std::exp2(b); }, -20, 20, 0, 4, Group::IntOnly},
      {"bitwise_right_shift", [](auto& a, auto& b) { return bitwise_right_shift(a, b); }, shr_ref,
       -100, 100, 0, 6, Group::IntOnly},
  };
  // clang-format on
  return rows;
}

/// Rows whose gradient the gradient-check table checks: floating results of Float or Numeric ops.
inline bool differentiable(Group group, bool bool_out) {
  return !bool_out && (group == Group::Float || group == Group::Numeric);
}
inline bool differentiable(const UnaryRow& r) { return differentiable(r.group, r.bool_out); }
inline bool differentiable(const BinaryRow& r) {
  return !r.no_grad && differentiable(r.group, r.bool_out);
}

}  // namespace ember::test
