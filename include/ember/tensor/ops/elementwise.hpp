// Elementwise ops on the rank-erased tensor: NumPy broadcasting and PyTorch type promotion.
#pragma once

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

/// True when both have the same shape and equal elements (torch.equal).
bool equal(const DynTensor& a, const DynTensor& b);
/// |a - b| <= atol + rtol * |b| everywhere (torch.allclose).
bool allclose(const DynTensor& a, const DynTensor& b, double rtol = 1e-5, double atol = 1e-8);

/// The dtype an elementwise op computes in, for inputs of these dtypes (PyTorch's result_type).
DType result_type(const DynTensor& a, const DynTensor& b);
DType result_type(const DynTensor& a, const Scalar& b);

}  // namespace ember
