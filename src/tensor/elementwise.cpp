// Elementwise front end: validation, PyTorch type promotion, broadcasting, then one backend call.
#include "ember/tensor/ops/elementwise.hpp"

#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "ember/tensor/ops/reduce.hpp"
#include "internal.hpp"
#include "record.hpp"

namespace ember {
namespace {

int category(DType t) { return is_floating(t) ? 2 : (t == DType::boolean ? 0 : 1); }
int category(KindId k) { return k == KindId::Float ? 2 : (k == KindId::Bool ? 0 : 1); }

// The dtype an op of `kinds` computes in, given the promoted input dtype.
DType compute_dtype(OpKinds kinds, DType t, std::string_view op, bool true_division = false) {
  if (true_division && !is_floating(t) && t != DType::boolean) return default_dtype(KindId::Float);
  switch (kinds) {
    case OpKinds::F:
      return is_floating(t) ? t : default_dtype(KindId::Float);
    case OpKinds::N:
      EMBER_CHECK(t != DType::boolean, "[", op, "] expects Float or Int tensors, got bool");
      return t;
    case OpKinds::A:
      return t;
    case OpKinds::I:
      EMBER_CHECK(!is_floating(t), "[", op, "] expects Int or Bool tensors, got ", t);
      return t;
  }
  return t;
}

// A 0-d tensor holding `s` as `dtype`, for scalar operands.
DynTensor scalar_tensor(const Scalar& s, DType dtype, Device device) {
  return full(Shape{}, s, dtype, device);
}

// Operands are only copied (cast, broadcast view) when they need to be: this path is the one
// small-tensor per-op overhead is made of.
DynTensor binary_as(BinaryOp op, const DynTensor& a_in, const DynTensor& b_in, DType dtype) {
  const char* name = op_name(op).data();
  DynTensor a_cast, b_cast;
  const DynTensor& a = a_in.dtype() == dtype ? a_in : (a_cast = cast(a_in, dtype));
  const DynTensor& b = b_in.dtype() == dtype ? b_in : (b_cast = cast(b_in, dtype));
  const bool same = a.shape() == b.shape();
  const Shape& shape = same ? a.shape() : broadcast_shapes(a.shape(), b.shape(), name);
  Backend& be = detail::backend_of(a);
  detail::check_supported(be, OpFamily::Binary, dtype, name);
  DynTensor out =
      detail::make_empty(shape, returns_bool(op) ? DType::boolean : dtype, a.device(), name);
  if (same) {
    be.binary(op, a.raw(), b.raw(), out.raw());
  } else {
    const DynTensor ea = detail::broadcast_view(a, shape), eb = detail::broadcast_view(b, shape);
    be.binary(op, ea.raw(), eb.raw(), out.raw());
  }
  detail::record(op_def(op), {&a, &b}, out);
  return out;
}

}  // namespace

DType result_type(const DynTensor& a, const DynTensor& b) {
  const bool da = a.rank() > 0, db = b.rank() > 0;
  if (da == db) return promote_types(a.dtype(), b.dtype());
  // A dimensioned tensor decides the dtype unless a 0-d operand is of a higher category.
  const DynTensor& hi = da ? a : b;
  const DynTensor& lo = da ? b : a;
  return category(lo.dtype()) > category(hi.dtype()) ? lo.dtype() : hi.dtype();
}

DType result_type(const DynTensor& a, const Scalar& b) {
  if (category(b.kind()) <= category(a.dtype())) return a.dtype();
  return default_dtype(b.kind());
}

DynTensor unary(UnaryOp op, const DynTensor& x_in, const UnaryParams& params) {
  const char* name = op_name(op).data();
  detail::check_defined(x_in, name);
  const DType dtype = compute_dtype(op_kinds(op), x_in.dtype(), name);
  const DynTensor x = cast(x_in, dtype);
  detail::check_supported(x, OpFamily::Unary, dtype, name);
  DynTensor out =
      detail::make_empty(x.shape(), returns_bool(op) ? DType::boolean : dtype, x.device(), name);
  detail::backend_of(out).unary(op, params, x.raw(), out.raw());
  detail::record(op_def(op), {&x}, out, params);
  return out;
}

DynTensor binary(BinaryOp op, const DynTensor& a, const DynTensor& b) {
  detail::check_same_device(a, b, op_name(op).data());
  return binary_as(
      op, a, b, compute_dtype(op_kinds(op), result_type(a, b), op_name(op), op == BinaryOp::Div));
}

DynTensor binary(BinaryOp op, const DynTensor& a, const Scalar& b) {
  detail::check_defined(a, op_name(op).data());
  const DType dtype =
      compute_dtype(op_kinds(op), result_type(a, b), op_name(op), op == BinaryOp::Div);
  return binary_as(op, a, scalar_tensor(b, dtype, a.device()), dtype);
}

DynTensor binary(BinaryOp op, const Scalar& a, const DynTensor& b) {
  detail::check_defined(b, op_name(op).data());
  const DType dtype =
      compute_dtype(op_kinds(op), result_type(b, a), op_name(op), op == BinaryOp::Div);
  return binary_as(op, scalar_tensor(a, dtype, b.device()), b, dtype);
}

#define EMBER_DEFINE_UNARY(Name, name, ...) \
  DynTensor name(const DynTensor& x) { return unary(UnaryOp::Name, x); }
EMBER_UNARY_OPS(EMBER_DEFINE_UNARY)
#undef EMBER_DEFINE_UNARY

#define EMBER_DEFINE_BINARY(Name, name, ...)                                                      \
  DynTensor name(const DynTensor& a, const DynTensor& b) { return binary(BinaryOp::Name, a, b); } \
  DynTensor name(const DynTensor& a, const Scalar& b) { return binary(BinaryOp::Name, a, b); }    \
  DynTensor name(const Scalar& a, const DynTensor& b) { return binary(BinaryOp::Name, a, b); }
EMBER_BINARY_OPS(EMBER_DEFINE_BINARY)
#undef EMBER_DEFINE_BINARY

namespace {
DynTensor clamp_impl(const DynTensor& x, const Scalar* lo, const Scalar* hi) {
  detail::check_defined(x, "clamp");
  EMBER_CHECK(lo || hi, "[clamp] at least one of min and max must be given");
  UnaryParams p;
  DType dtype = x.dtype();
  for (const Scalar* s : {lo, hi}) {
    if (s && category(s->kind()) > category(dtype)) dtype = default_dtype(s->kind());
  }
  if (lo) {
    p.a = lo->to_double();
    p.has_a = true;
  }
  if (hi) {
    p.b = hi->to_double();
    p.has_b = true;
  }
  return unary(UnaryOp::Clamp, cast(x, dtype), p);
}
}  // namespace

DynTensor clamp(const DynTensor& x, const Scalar& min, const Scalar& max) {
  return clamp_impl(x, &min, &max);
}
DynTensor clamp_min(const DynTensor& x, const Scalar& min) { return clamp_impl(x, &min, nullptr); }
DynTensor clamp_max(const DynTensor& x, const Scalar& max) { return clamp_impl(x, nullptr, &max); }
DynTensor clamp(const DynTensor& x, const DynTensor& min, const DynTensor& max) {
  return minimum(maximum(x, min), max);
}

DynTensor pow(const DynTensor& x, double exponent) {
  detail::check_defined(x, "pow");
  if (!is_floating(x.dtype()) && exponent == static_cast<double>(static_cast<int64_t>(exponent))) {
    return binary(BinaryOp::Pow, x, Scalar(static_cast<int64_t>(exponent)));
  }
  UnaryParams p;
  p.a = exponent;
  return unary(UnaryOp::PowScalar, x, p);
}

DynTensor gelu(const DynTensor& x, bool tanh_approximation) {
  return unary(tanh_approximation ? UnaryOp::GeluTanh : UnaryOp::Gelu, x);
}

DynTensor softplus(const DynTensor& x, double beta, double threshold) {
  EMBER_CHECK(beta != 0.0, "[softplus] beta must be nonzero");
  UnaryParams p;
  p.a = beta;
  p.b = threshold;
  p.has_a = p.has_b = true;
  return unary(UnaryOp::Softplus, x, p);
}

DynTensor where(const DynTensor& cond, const DynTensor& a, const DynTensor& b) {
  detail::check_same_device(cond, a, "where");
  detail::check_same_device(a, b, "where");
  EMBER_CHECK(cond.dtype() == DType::boolean, "[where] condition must be bool, got ", cond.dtype());
  const DType dtype = result_type(a, b);
  detail::check_supported(a, OpFamily::Where, dtype, "where");
  const Shape shape =
      broadcast_shapes(broadcast_shapes(cond.shape(), a.shape(), "where"), b.shape(), "where");
  DynTensor out = detail::make_empty(shape, dtype, a.device(), "where");
  const DynTensor ca = cast(a, dtype), cb = cast(b, dtype);
  const DynTensor ec = detail::broadcast_view(cond, shape), ea = detail::broadcast_view(ca, shape),
                  eb = detail::broadcast_view(cb, shape);
  detail::backend_of(out).where(ec.raw(), ea.raw(), eb.raw(), out.raw());
  detail::record(ops::where, {&cond, &ca, &cb}, out);
  return out;
}

DynTensor where(const DynTensor& cond, const DynTensor& a, const Scalar& b) {
  detail::check_defined(a, "where");
  return where(cond, a, scalar_tensor(b, result_type(a, b), a.device()));
}

DynTensor where(const DynTensor& cond, const Scalar& a, const DynTensor& b) {
  detail::check_defined(b, "where");
  return where(cond, scalar_tensor(a, result_type(b, a), b.device()), b);
}

DynTensor lerp(const DynTensor& a, const DynTensor& b, const DynTensor& weight) {
  return add(a, mul(weight, sub(b, a)));
}

DynTensor lerp(const DynTensor& a, const DynTensor& b, const Scalar& weight) {
  return add(a, mul(sub(b, a), weight));
}

bool equal(const DynTensor& a, const DynTensor& b) {
  detail::check_same_device(a, b, "equal");
  if (!(a.shape() == b.shape())) return false;
  if (a.numel() == 0) return true;
  return all(eq(a, b)).item<bool>();
}

bool allclose(const DynTensor& a, const DynTensor& b, double rtol, double atol) {
  detail::check_same_device(a, b, "allclose");
  broadcast_shapes(a.shape(), b.shape(), "allclose");
  if (a.numel() == 0 || b.numel() == 0) return true;
  const DType dtype = is_floating(result_type(a, b)) ? result_type(a, b) : DType::f64;
  const DynTensor fa = cast(a, dtype), fb = cast(b, dtype);
  const DynTensor close = le(abs(sub(fa, fb)), add(mul(abs(fb), rtol), atol));
  // Equal infinities are close; NaNs never are (torch.allclose with equal_nan=false).
  return all(logical_or(close, eq(fa, fb))).item<bool>();
}

}  // namespace ember
