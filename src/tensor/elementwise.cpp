// Elementwise front end: validation, PyTorch type promotion, broadcasting, then one backend call.
#include "ember/tensor/ops/elementwise.hpp"

#include <cmath>
#include <limits>

#include "ember/tensor/autocast.hpp"
#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "ember/tensor/ops/reduce.hpp"
#include "ember/tensor/sync.hpp"
#include "internal.hpp"
#include "layout.hpp"
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

std::string division_by_zero_message(const RangeError& e) {
  return detail::cat("[", e.check.op, "] integer division by zero");
}

// Integer remainder, fmod and floor_divide raise on a zero divisor, as PyTorch's do; checked
// where the divisor lives (no host read), raised at once on the Cpu, at the next sync elsewhere.
void check_divisor(BinaryOp op, const DynTensor& b, DType dtype) {
  if (is_floating(dtype) ||
      (op != BinaryOp::Remainder && op != BinaryOp::Fmod && op != BinaryOp::FloorDivide)) {
    return;
  }
  RangeCheck check;
  check.op = op_name(op).data();
  check.message = division_by_zero_message;
  check_range(eq(b, 0), check);  // the range [0, 0]: no divisor equal to 0
}

// Operands are only copied (cast, broadcast view) when they need to be: this path is the one
// small-tensor per-op overhead is made of.
DynTensor binary_as(BinaryOp op, const DynTensor& a_in, const DynTensor& b_in, DType dtype) {
  const char* name = op_name(op).data();
  DynTensor a_cast, b_cast;
  const DynTensor& a = a_in.dtype() == dtype ? a_in : (a_cast = cast(a_in, dtype));
  const DynTensor& b = b_in.dtype() == dtype ? b_in : (b_cast = cast(b_in, dtype));
  check_divisor(op, b, dtype);
  const bool same = a.shape() == b.shape();
  const Shape& shape = same ? a.shape() : broadcast_shapes(a.shape(), b.shape(), name);
  Backend& be = detail::backend_of(a);
  detail::check_supported(be, OpFamily::Binary, dtype, name);
  const DType out_dtype = returns_bool(op) ? DType::boolean : dtype;
  const auto order = detail::MemoryOrder::shared({&a.raw(), &b.raw()}, shape);
  DynTensor out = order.empty(shape, out_dtype, a.device(), name);
  if (same && order.identity()) {
    be.binary(op, a.raw(), b.raw(), out.raw());
  } else {
    const DynTensor ea = same ? a : detail::broadcast_view(a, shape);
    const DynTensor eb = same ? b : detail::broadcast_view(b, shape);
    be.binary(op, order.apply(ea.raw()), order.apply(eb.raw()), order.apply(out.raw()));
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

namespace {
// Autocast's float32 list among the unary ops (PyTorch's): those whose 16-bit results lose range
// or most of their digits.
bool widened_by_autocast(UnaryOp op) {
  switch (op) {
    case UnaryOp::Exp:
    case UnaryOp::Exp2:
    case UnaryOp::Expm1:
    case UnaryOp::Log:
    case UnaryOp::Log2:
    case UnaryOp::Log10:
    case UnaryOp::Log1p:
    case UnaryOp::Rsqrt:
    case UnaryOp::Reciprocal:
    case UnaryOp::Tan:
    case UnaryOp::Asin:
    case UnaryOp::Acos:
    case UnaryOp::Sinh:
    case UnaryOp::Cosh:
    case UnaryOp::Erfinv:
    case UnaryOp::PowScalar:
    case UnaryOp::Softplus:
      return true;
    default:
      return false;
  }
}
}  // namespace

DynTensor unary(UnaryOp op, const DynTensor& x_in, const UnaryParams& params) {
  const char* name = op_name(op).data();
  detail::check_defined(x_in, name);
  if (widened_by_autocast(op) && detail::autocast_widens(x_in)) {
    return unary(op, cast(x_in, DType::f32), params);
  }
  const DType dtype = compute_dtype(op_kinds(op), x_in.dtype(), name);
  const DynTensor x = cast(x_in, dtype);
  detail::check_supported(x, OpFamily::Unary, dtype, name);
  const auto order = detail::MemoryOrder::of(x.raw());
  DynTensor out =
      order.empty(x.shape(), returns_bool(op) ? DType::boolean : dtype, x.device(), name);
  if (order.identity()) {
    detail::backend_of(out).unary(op, params, x.raw(), out.raw());
  } else {
    detail::backend_of(out).unary(op, params, order.apply(x.raw()), order.apply(out.raw()));
  }
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
  EMBER_CHECK(op != BinaryOp::Pow || is_floating(dtype) || b.to_double() >= 0,
              "[pow] integers to negative integer powers are not allowed (as in PyTorch): ",
              a.dtype(), " tensor to the power ", b.to_double());
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
  // Selects rather than minimum(maximum(...)): at a tie the gradient goes to x, as PyTorch's
  // clamp does (maximum would split it); min > max gives max, as in PyTorch.
  const DynTensor low = where(lt(x, min), min, x);
  return where(gt(low, max), max, low);
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
  const DynTensor ca = cast(a, dtype), cb = cast(b, dtype);
  const auto order = detail::MemoryOrder::shared({&cond.raw(), &ca.raw(), &cb.raw()}, shape);
  DynTensor out = order.empty(shape, dtype, a.device(), "where");
  const DynTensor ec = detail::broadcast_view(cond, shape), ea = detail::broadcast_view(ca, shape),
                  eb = detail::broadcast_view(cb, shape);
  detail::backend_of(out).where(order.apply(ec.raw()), order.apply(ea.raw()), order.apply(eb.raw()),
                                order.apply(out.raw()));
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

DynTensor polygamma(int64_t n, const DynTensor& x) {
  EMBER_CHECK(n >= 0 && n <= 64, "[polygamma] n must be in [0, 64], got ", n);
  if (n == 0) return digamma(x);
  UnaryParams p;
  p.a = static_cast<double>(n);
  return unary(UnaryOp::Polygamma, x, p);
}

DynTensor round(const DynTensor& x, int64_t decimals) {
  detail::check_defined(x, "round");
  if (decimals == 0) return round(x);
  EMBER_CHECK(is_floating(x.dtype()), "[round] decimals needs a floating tensor, got ", x.dtype());
  // As PyTorch: scale by 10^|decimals|, round half to even, scale back.
  const double scale = std::pow(10.0, static_cast<double>(decimals < 0 ? -decimals : decimals));
  return decimals > 0 ? div(round(mul(x, scale)), scale) : mul(round(div(x, scale)), scale);
}

namespace {
double largest_finite(DType dtype) {
  switch (dtype) {
    case DType::f16:
      return 65504.0;
    case DType::bf16:
      return 3.3895313892515355e38;
    case DType::f32:
      return std::numeric_limits<float>::max();
    default:
      return std::numeric_limits<double>::max();
  }
}
}  // namespace

DynTensor nan_to_num(const DynTensor& x, double nan, std::optional<double> posinf,
                     std::optional<double> neginf) {
  detail::check_defined(x, "nan_to_num");
  if (!is_floating(x.dtype())) return clone(x);  // nothing to replace
  const double big = largest_finite(x.dtype()), inf = std::numeric_limits<double>::infinity();
  DynTensor y = where(isnan(x), nan, x);
  y = where(eq(x, inf), posinf.value_or(big), y);
  return where(eq(x, -inf), neginf.value_or(-big), y);
}

DynTensor logit(const DynTensor& x_in, std::optional<double> eps) {
  detail::check_defined(x_in, "logit");
  const DynTensor x = is_floating(x_in.dtype()) ? x_in : cast(x_in, default_dtype(KindId::Float));
  const DynTensor z = eps ? clamp(x, *eps, 1.0 - *eps) : x;
  return log(div(z, sub(1.0, z)));
}

DynTensor addcmul(const DynTensor& input, const DynTensor& t1, const DynTensor& t2,
                  const Scalar& value) {
  return add(input, mul(mul(t1, t2), value));
}

DynTensor addcdiv(const DynTensor& input, const DynTensor& t1, const DynTensor& t2,
                  const Scalar& value) {
  detail::check_defined(t1, "addcdiv");
  detail::check_defined(t2, "addcdiv");
  EMBER_CHECK(is_floating(t1.dtype()) || is_floating(t2.dtype()),
              "[addcdiv] integer division is not supported (as in PyTorch): t1 is ", t1.dtype(),
              ", t2 is ", t2.dtype());
  return add(input, mul(div(t1, t2), value));
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

DynTensor fused_activation_grad(UnaryOp op, const DynTensor& x, const DynTensor& gy) {
  if (grad_enabled() || !x.defined() || !gy.defined() || x.shape() != gy.shape() ||
      x.dtype() != gy.dtype() || x.device() != gy.device() ||
      !detail::backend_of(x).supports(OpFamily::ActivationGrad, x.dtype())) {
    return {};
  }
  // A dense layout x and gy share is kept (a channels-last activation's gradient).
  const auto order = detail::MemoryOrder::shared({&x.raw(), &gy.raw()}, x.shape());
  if (!order.identity()) {
    DynTensor gx = order.empty(x.shape(), x.dtype(), x.device(), op_name(op).data());
    detail::backend_of(x).activation_grad(op, order.apply(gy.raw()), order.apply(x.raw()),
                                          order.apply(gx.raw()));
    return gx;
  }
  const DynTensor xc = contiguous(x), gc = contiguous(gy);
  DynTensor gx = detail::make_empty(x.shape(), x.dtype(), x.device(), op_name(op).data());
  detail::backend_of(x).activation_grad(op, gc.raw(), xc.raw(), gx.raw());
  return gx;
}

}  // namespace ember
