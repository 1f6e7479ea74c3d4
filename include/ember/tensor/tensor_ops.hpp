// Free functions and operators on Tensor<D, K>: elementwise math, comparisons, matmul, cat/stack.
// Binary ops between tensors of different rank broadcast (NumPy rules); the result has the
// larger rank. Both operands must have the same kind: cast explicitly with .to<Float>().
#pragma once

#include "ember/tensor/tensor.hpp"

namespace ember {
namespace detail {

template <class K, UnaryOp op>
using UnaryOut = std::conditional_t<returns_bool(op), Bool, K>;
template <class K, BinaryOp op>
using BinaryOut =
    std::conditional_t<returns_bool(op), Bool, std::conditional_t<op == BinaryOp::Div, Float, K>>;

constexpr int max_rank(int a, int b) { return a > b ? a : b; }

/// torch.matmul's result rank.
constexpr int matmul_rank(int a, int b) {
  if (a == 1 && b == 1) return 0;
  if (a == 1) return b - 1;
  if (b == 1) return a - 1;
  return max_rank(a, b);
}

}  // namespace detail

// exp(x), relu(x), isnan(x), ...: one template per registry entry.
#define EMBER_TENSOR_UNARY(Name, name, kinds, ...)                       \
  template <int D, class K>                                              \
  requires(detail::kind_accepts<K, OpKinds::kinds>())                    \
      Tensor<D, detail::UnaryOut<K, UnaryOp::Name>>                      \
      name(const Tensor<D, K>& x) {                                      \
    return Tensor<D, detail::UnaryOut<K, UnaryOp::Name>>(name(x.dyn())); \
  }
EMBER_UNARY_OPS(EMBER_TENSOR_UNARY)
#undef EMBER_TENSOR_UNARY

// add(a, b), eq(a, 2), atan2(y, x), ...: tensor-tensor, tensor-scalar, scalar-tensor.
#define EMBER_TENSOR_BINARY(Name, name, kinds, ...)                                \
  template <int D1, int D2, class K>                                               \
  requires(detail::kind_accepts<K, OpKinds::kinds>())                              \
      Tensor<detail::max_rank(D1, D2), detail::BinaryOut<K, BinaryOp::Name>>       \
      name(const Tensor<D1, K>& a, const Tensor<D2, K>& b) {                       \
    return Tensor<detail::max_rank(D1, D2), detail::BinaryOut<K, BinaryOp::Name>>( \
        name(a.dyn(), b.dyn()));                                                   \
  }                                                                                \
  template <int D, class K>                                                        \
  requires(detail::kind_accepts<K, OpKinds::kinds>())                              \
      Tensor<D, detail::BinaryOut<K, BinaryOp::Name>>                              \
      name(const Tensor<D, K>& a, const Scalar& b) {                               \
    return Tensor<D, detail::BinaryOut<K, BinaryOp::Name>>(name(a.dyn(), b));      \
  }                                                                                \
  template <int D, class K>                                                        \
  requires(detail::kind_accepts<K, OpKinds::kinds>())                              \
      Tensor<D, detail::BinaryOut<K, BinaryOp::Name>>                              \
      name(const Scalar& a, const Tensor<D, K>& b) {                               \
    return Tensor<D, detail::BinaryOut<K, BinaryOp::Name>>(name(a, b.dyn()));      \
  }
EMBER_BINARY_OPS(EMBER_TENSOR_BINARY)
#undef EMBER_TENSOR_BINARY

// Operators. Arithmetic on Float and Int; & | ^ ~ are logical on Bool and bitwise on Int.
#define EMBER_TENSOR_OPERATOR(op, name)                                                    \
  template <int D1, int D2, class K>                                                       \
  auto operator op(const Tensor<D1, K>& a, const Tensor<D2, K>& b)->decltype(name(a, b)) { \
    return name(a, b);                                                                     \
  }                                                                                        \
  template <int D, class K>                                                                \
  auto operator op(const Tensor<D, K>& a, const Scalar& b)->decltype(name(a, b)) {         \
    return name(a, b);                                                                     \
  }                                                                                        \
  template <int D, class K>                                                                \
  auto operator op(const Scalar& a, const Tensor<D, K>& b)->decltype(name(a, b)) {         \
    return name(a, b);                                                                     \
  }
EMBER_TENSOR_OPERATOR(+, add)
EMBER_TENSOR_OPERATOR(-, sub)
EMBER_TENSOR_OPERATOR(*, mul)
EMBER_TENSOR_OPERATOR(/, div)
EMBER_TENSOR_OPERATOR(%, remainder)  // Python's %: the result takes the divisor's sign
EMBER_TENSOR_OPERATOR(==, eq)
EMBER_TENSOR_OPERATOR(!=, ne)
EMBER_TENSOR_OPERATOR(<, lt)
EMBER_TENSOR_OPERATOR(<=, le)
EMBER_TENSOR_OPERATOR(>, gt)
EMBER_TENSOR_OPERATOR(>=, ge)
EMBER_TENSOR_OPERATOR(&, bitwise_and)
EMBER_TENSOR_OPERATOR(|, bitwise_or)
EMBER_TENSOR_OPERATOR(^, bitwise_xor)
EMBER_TENSOR_OPERATOR(<<, bitwise_left_shift)
EMBER_TENSOR_OPERATOR(>>, bitwise_right_shift)
#undef EMBER_TENSOR_OPERATOR

template <int D, class K>
requires(!std::is_same_v<K, Bool>) Tensor<D, K>
operator-(const Tensor<D, K>& x) { return neg(x); }
template <int D, class K>
requires(!std::is_same_v<K, Float>) Tensor<D, K>
operator~(const Tensor<D, K>& x) { return bitwise_not(x); }

template <int D, class K>
Tensor<D, K> clamp(const Tensor<D, K>& x, const Scalar& lo, const Scalar& hi) {
  return Tensor<D, K>(clamp(x.dyn(), lo, hi));
}
template <int D, class K>
Tensor<D, K> clamp_min(const Tensor<D, K>& x, const Scalar& lo) {
  return Tensor<D, K>(clamp_min(x.dyn(), lo));
}
template <int D, class K>
Tensor<D, K> clamp_max(const Tensor<D, K>& x, const Scalar& hi) {
  return Tensor<D, K>(clamp_max(x.dyn(), hi));
}
template <int D, int DL, int DH, class K>
Tensor<D, K> clamp(const Tensor<D, K>& x, const Tensor<DL, K>& min, const Tensor<DH, K>& max) {
  return Tensor<D, K>(clamp(x.dyn(), min.dyn(), max.dyn()));
}
template <int D>
Tensor<D> pow(const Tensor<D>& x, double exponent) {
  return Tensor<D>(pow(x.dyn(), exponent));
}
template <int D>
Tensor<D> gelu(const Tensor<D>& x, bool tanh_approximation) {
  return Tensor<D>(gelu(x.dyn(), tanh_approximation));
}
template <int D>
Tensor<D> softplus(const Tensor<D>& x, double beta, double threshold = 20.0) {
  return Tensor<D>(softplus(x.dyn(), beta, threshold));
}
template <int D, int DC, class K>
Tensor<D, K> where(const Tensor<DC, Bool>& cond, const Tensor<D, K>& a, const Tensor<D, K>& b) {
  return Tensor<D, K>(where(cond.dyn(), a.dyn(), b.dyn()));
}
template <int D, int DC, class K>
Tensor<D, K> where(const Tensor<DC, Bool>& cond, const Tensor<D, K>& a, const Scalar& b) {
  return Tensor<D, K>(where(cond.dyn(), a.dyn(), b));
}
template <int D, int DC, class K>
Tensor<D, K> where(const Tensor<DC, Bool>& cond, const Scalar& a, const Tensor<D, K>& b) {
  return Tensor<D, K>(where(cond.dyn(), a, b.dyn()));
}
template <int D>
Tensor<D> lerp(const Tensor<D>& a, const Tensor<D>& b, const Scalar& weight) {
  return Tensor<D>(lerp(a.dyn(), b.dyn(), weight));
}
template <int D>
Tensor<D> lerp(const Tensor<D>& a, const Tensor<D>& b, const Tensor<D>& weight) {
  return Tensor<D>(lerp(a.dyn(), b.dyn(), weight.dyn()));
}
template <int D>
Tensor<D> polygamma(int64_t n, const Tensor<D>& x) {
  return Tensor<D>(polygamma(n, x.dyn()));
}
template <int D, class K>
requires(!std::is_same_v<K, Bool>) Tensor<D, K> round(const Tensor<D, K>& x, int64_t decimals) {
  return Tensor<D, K>(round(x.dyn(), decimals));
}
template <int D, class K>
requires(!std::is_same_v<K, Bool>) Tensor<D, K> nan_to_num(const Tensor<D, K>& x, double nan = 0.0,
                                                           std::optional<double> posinf = {},
                                                           std::optional<double> neginf = {}) {
  return Tensor<D, K>(nan_to_num(x.dyn(), nan, posinf, neginf));
}
template <int D>
Tensor<D> logit(const Tensor<D>& x, std::optional<double> eps = {}) {
  return Tensor<D>(logit(x.dyn(), eps));
}
template <int D, class K>
requires(!std::is_same_v<K, Bool>) Tensor<D, K> addcmul(const Tensor<D, K>& input,
                                                        const Tensor<D, K>& t1,
                                                        const Tensor<D, K>& t2,
                                                        const Scalar& value = 1) {
  return Tensor<D, K>(addcmul(input.dyn(), t1.dyn(), t2.dyn(), value));
}
template <int D>
Tensor<D> addcdiv(const Tensor<D>& input, const Tensor<D>& t1, const Tensor<D>& t2,
                  const Scalar& value = 1) {
  return Tensor<D>(addcdiv(input.dyn(), t1.dyn(), t2.dyn(), value));
}
template <int D, class K>
bool equal(const Tensor<D, K>& a, const Tensor<D, K>& b) {
  return equal(a.dyn(), b.dyn());
}
template <int D>
bool allclose(const Tensor<D>& a, const Tensor<D>& b, double rtol = 1e-5, double atol = 1e-8) {
  return allclose(a.dyn(), b.dyn(), rtol, atol);
}

template <int DA, int DB, class K>
requires(!std::is_same_v<K, Bool>) Tensor<detail::matmul_rank(DA, DB), K> matmul(
    const Tensor<DA, K>& a, const Tensor<DB, K>& b) {
  return Tensor<detail::matmul_rank(DA, DB), K>(matmul(a.dyn(), b.dyn()));
}
/// int8 x int8 summed in int32 (the DynTensor overload says how); the result has the larger rank.
template <int DA, int DB>
requires(DA >= 2 && DA <= 3 && DB >= 2 &&
         DB <= 3) Tensor<(DA > DB ? DA : DB), Int> matmul_int8(const Tensor<DA, Int>& a,
                                                               const Tensor<DB, Int>& b) {
  return Tensor<(DA > DB ? DA : DB), Int>(matmul_int8(a.dyn(), b.dyn()));
}
template <class K>
Tensor<0, K> dot(const Tensor<1, K>& a, const Tensor<1, K>& b) {
  return Tensor<0, K>(dot(a.dyn(), b.dyn()));
}
template <class K>
Tensor<2, K> outer(const Tensor<1, K>& a, const Tensor<1, K>& b) {
  return Tensor<2, K>(outer(a.dyn(), b.dyn()));
}
template <int D>
Tensor<D> softmax(const Tensor<D>& x, int64_t dim) {
  return x.softmax(dim);
}
template <int D>
Tensor<D> log_softmax(const Tensor<D>& x, int64_t dim) {
  return x.log_softmax(dim);
}

template <int D, class K>
Tensor<D, K> cat(const std::vector<Tensor<D, K>>& xs, int64_t dim = 0) {
  std::vector<DynTensor> parts;
  parts.reserve(xs.size());
  for (const auto& x : xs) parts.push_back(x.dyn());
  return Tensor<D, K>(cat(parts, dim));
}
template <int D, class K>
Tensor<D + 1, K> stack(const std::vector<Tensor<D, K>>& xs, int64_t dim = 0) {
  std::vector<DynTensor> parts;
  parts.reserve(xs.size());
  for (const auto& x : xs) parts.push_back(x.dyn());
  return Tensor<D + 1, K>(stack(parts, dim));
}

}  // namespace ember
