// Elementwise ops on the rank-erased tensor: NumPy broadcasting and PyTorch type promotion.
#pragma once

#include <optional>

#include "ember/core/ops.hpp"
#include "ember/tensor/dyn_tensor.hpp"

namespace ember {

/// The generic entry points every named op below forwards to.
DynTensor unary(UnaryOp op, const DynTensor& x, const UnaryParams& params = {});
DynTensor binary(BinaryOp op, const DynTensor& a, const DynTensor& b);
DynTensor binary(BinaryOp op, const DynTensor& a, const Scalar& b);
DynTensor binary(BinaryOp op, const Scalar& a, const DynTensor& b);

// One function per registry entry: neg(x), exp(x), add(a, b), eq(a, b), ...
#define EMBER_DECLARE_UNARY(Name, name, ...) DynTensor name(const DynTensor& x);
EMBER_UNARY_OPS(EMBER_DECLARE_UNARY)
#undef EMBER_DECLARE_UNARY
#define EMBER_DECLARE_BINARY(Name, name, ...)             \
  DynTensor name(const DynTensor& a, const DynTensor& b); \
  DynTensor name(const DynTensor& a, const Scalar& b);    \
  DynTensor name(const Scalar& a, const DynTensor& b);
EMBER_BINARY_OPS(EMBER_DECLARE_BINARY)
#undef EMBER_DECLARE_BINARY

// Operators, as Tensor<D, K> has them: arithmetic on Float and Int, comparisons giving Bool,
// & | ^ ~ logical on Bool and bitwise on Int, << >> shifts.
#define EMBER_DYN_OPERATOR(op, name)                                                          \
  inline DynTensor operator op(const DynTensor& a, const DynTensor& b) { return name(a, b); } \
  inline DynTensor operator op(const DynTensor& a, const Scalar& b) { return name(a, b); }    \
  inline DynTensor operator op(const Scalar& a, const DynTensor& b) { return name(a, b); }
EMBER_DYN_OPERATOR(+, add)
EMBER_DYN_OPERATOR(-, sub)
EMBER_DYN_OPERATOR(*, mul)
EMBER_DYN_OPERATOR(/, div)
EMBER_DYN_OPERATOR(%, remainder)
EMBER_DYN_OPERATOR(==, eq)
EMBER_DYN_OPERATOR(!=, ne)
EMBER_DYN_OPERATOR(<, lt)
EMBER_DYN_OPERATOR(<=, le)
EMBER_DYN_OPERATOR(>, gt)
EMBER_DYN_OPERATOR(>=, ge)
EMBER_DYN_OPERATOR(&, bitwise_and)
EMBER_DYN_OPERATOR(|, bitwise_or)
EMBER_DYN_OPERATOR(^, bitwise_xor)
EMBER_DYN_OPERATOR(<<, bitwise_left_shift)
EMBER_DYN_OPERATOR(>>, bitwise_right_shift)
#undef EMBER_DYN_OPERATOR
inline DynTensor operator-(const DynTensor& x) { return neg(x); }
inline DynTensor operator~(const DynTensor& x) { return bitwise_not(x); }

// Ops with parameters, and composites.
DynTensor clamp(const DynTensor& x, const Scalar& min, const Scalar& max);
DynTensor clamp_min(const DynTensor& x, const Scalar& min);
DynTensor clamp_max(const DynTensor& x, const Scalar& max);
DynTensor clamp(const DynTensor& x, const DynTensor& min, const DynTensor& max);
DynTensor pow(const DynTensor& x, double exponent);
/// GELU: exact (erf) by default, or the tanh approximation.
DynTensor gelu(const DynTensor& x, bool tanh_approximation);
DynTensor softplus(const DynTensor& x, double beta, double threshold = 20.0);
DynTensor where(const DynTensor& cond, const DynTensor& a, const DynTensor& b);
DynTensor where(const DynTensor& cond, const DynTensor& a, const Scalar& b);
DynTensor where(const DynTensor& cond, const Scalar& a, const DynTensor& b);
DynTensor lerp(const DynTensor& a, const DynTensor& b, const DynTensor& weight);
DynTensor lerp(const DynTensor& a, const DynTensor& b, const Scalar& weight);
/// The n-th derivative of digamma (n >= 0; polygamma(0, x) = digamma(x)).
DynTensor polygamma(int64_t n, const DynTensor& x);
/// Rounds half to even at `decimals` places (negative: left of the point), as torch.round.
DynTensor round(const DynTensor& x, int64_t decimals);
/// NaN, +inf and -inf replaced (defaults: 0 and the dtype's largest finite values).
DynTensor nan_to_num(const DynTensor& x, double nan = 0.0, std::optional<double> posinf = {},
                     std::optional<double> neginf = {});
/// log(x / (1 - x)), with x clamped to [eps, 1 - eps] first when eps is given.
DynTensor logit(const DynTensor& x, std::optional<double> eps = {});
/// input + value * t1 * t2 and input + value * t1 / t2 (torch.addcmul, torch.addcdiv).
DynTensor addcmul(const DynTensor& input, const DynTensor& t1, const DynTensor& t2,
                  const Scalar& value = 1);
DynTensor addcdiv(const DynTensor& input, const DynTensor& t1, const DynTensor& t2,
                  const Scalar& value = 1);

/// True when both have the same shape and equal elements (torch.equal).
bool equal(const DynTensor& a, const DynTensor& b);
/// |a - b| <= atol + rtol * |b| everywhere (torch.allclose).
bool allclose(const DynTensor& a, const DynTensor& b, double rtol = 1e-5, double atol = 1e-8);

/// The dtype an elementwise op computes in, for inputs of these dtypes (PyTorch's result_type).
DType result_type(const DynTensor& a, const DynTensor& b);
DType result_type(const DynTensor& a, const Scalar& b);

/// gy * f'(x) for f = gelu (either form) or silu in one pass, where x's backend has
/// OpFamily::ActivationGrad and nothing is being recorded (a backward without create_graph);
/// an undefined tensor otherwise, and the gradient rule composes it from ops.
DynTensor fused_activation_grad(UnaryOp op, const DynTensor& x, const DynTensor& gy);

}  // namespace ember
