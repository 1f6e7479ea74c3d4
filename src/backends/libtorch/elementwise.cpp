// Unary, binary and where through ATen. Each op is the ATen function of the same name where one
// exists; where ATen's CPU kernels differ from Ember's conventions (integer rounding ops, shifts
// past the width, softplus's defaults) the difference is handled here, so results match the Cpu
// backend's.
#include "aten.hpp"

namespace ember::libtorch {
namespace {

at::Tensor unary_float(UnaryOp op, const UnaryParams& p, const at::Tensor& x) {
  switch (op) {
    case UnaryOp::Neg:
      return x.neg();
    case UnaryOp::Abs:
      return x.abs();
    case UnaryOp::Sign:
      return x.sign();  // sign(NaN) = 0, as the other backends
    case UnaryOp::Square:
      return x * x;
    case UnaryOp::Relu:
      return x.relu();  // relu(NaN) = NaN, as the Cpu kernel
    case UnaryOp::Exp:
      return x.exp();
    case UnaryOp::Exp2:
      return x.exp2();
    case UnaryOp::Log:
      return x.log();
    case UnaryOp::Log2:
      return x.log2();
    case UnaryOp::Log10:
      return x.log10();
    case UnaryOp::Log1p:
      return x.log1p();
    case UnaryOp::Expm1:
      return x.expm1();
    case UnaryOp::Sqrt:
      return x.sqrt();
    case UnaryOp::Rsqrt:
      return x.rsqrt();
    case UnaryOp::Reciprocal:
      return x.reciprocal();
    case UnaryOp::Sin:
      return x.sin();
    case UnaryOp::Cos:
      return x.cos();
    case UnaryOp::Tan:
      return x.tan();
    case UnaryOp::Asin:
      return x.asin();
    case UnaryOp::Acos:
      return x.acos();
    case UnaryOp::Atan:
      return x.atan();
    case UnaryOp::Sinh:
      return x.sinh();
    case UnaryOp::Cosh:
      return x.cosh();
    case UnaryOp::Tanh:
      return x.tanh();
    case UnaryOp::Erf:
      return x.erf();
    case UnaryOp::Erfinv:
      return x.erfinv();
    case UnaryOp::Lgamma:
      return x.lgamma();
    case UnaryOp::Digamma:
      return x.digamma();
    case UnaryOp::Polygamma:
      // ATen's trigamma is good to 1e-9 only (and finite at the poles); its Hurwitz zeta is
      // exact: polygamma(1, x) = zeta(2, x).
      if (p.a == 1.0) return at::special_zeta(at::Scalar(2.0), x);
      return at::polygamma(static_cast<int64_t>(p.a), x);
    case UnaryOp::Sigmoid:
      return x.sigmoid();
    case UnaryOp::Gelu:
      return at::gelu(x);
    case UnaryOp::GeluTanh:
      return at::gelu(x, "tanh");
    case UnaryOp::Silu:
      return at::silu(x);
    case UnaryOp::Softplus:
      return at::softplus(x, p.has_a ? p.a : 1.0, p.has_b ? p.b : 20.0);
    case UnaryOp::Floor:
      return x.floor();
    case UnaryOp::Ceil:
      return x.ceil();
    case UnaryOp::Round:
      return x.round();
    case UnaryOp::Trunc:
      return x.trunc();
    case UnaryOp::Clamp:
      return at::clamp(x, p.has_a ? c10::optional<at::Scalar>(p.a) : c10::nullopt,
                       p.has_b ? c10::optional<at::Scalar>(p.b) : c10::nullopt);
    case UnaryOp::PowScalar:
      return x.pow(p.a);
    case UnaryOp::IsNan:
      return x.isnan();
    case UnaryOp::IsInf:
      return x.isinf();
    case UnaryOp::LogicalNot:
      return x.logical_not();
    case UnaryOp::BitwiseNot:
      break;
  }
  EMBER_FAIL("[", op_name(op), "] has no kernel on libtorch for floating types");
}

at::Tensor unary_int(UnaryOp op, const UnaryParams& p, const at::Tensor& x) {
  const bool is_bool = x.scalar_type() == at::kBool;
  switch (op) {
    case UnaryOp::Neg:
    case UnaryOp::Abs:
    case UnaryOp::Square:
    case UnaryOp::LogicalNot:
      return unary_float(op, p, x);  // the same ATen call for every dtype
    case UnaryOp::Sign:
      return x.sign();
    case UnaryOp::Relu:
      return x.clamp_min(0);
    case UnaryOp::Floor:
    case UnaryOp::Ceil:
    case UnaryOp::Round:
    case UnaryOp::Trunc:
      return x;  // integers are their own floor (ATen 1.13 has no integer kernels)
    case UnaryOp::Clamp: {
      // Bounds converted to the integer type first, as the Cpu kernel does.
      const auto bound = [&](double v) {
        return saturate_to(at::scalar_tensor(v, at::kDouble), x.scalar_type());
      };
      at::Tensor r = x;
      if (p.has_a) r = at::maximum(r, bound(p.a));
      if (p.has_b) r = at::minimum(r, bound(p.b));
      return r;  // assign() copies it into out
    }
    case UnaryOp::IsNan:
    case UnaryOp::IsInf:
      return at::zeros(x.sizes(), x.options().dtype(at::kBool));
    case UnaryOp::BitwiseNot:
      return is_bool ? x.logical_not() : x.bitwise_not();
    default:
      break;
  }
  EMBER_FAIL("[", op_name(op), "] has no kernel on libtorch for integer types");
}

// Shifts by a negative amount or by the width or more: 0 for <<, the sign for >> (the Cpu
// kernel's rule; C++ leaves them undefined and ATen's results depend on the CPU).
at::Tensor shift(BinaryOp op, const at::Tensor& a, const at::Tensor& b) {
  const int64_t width = static_cast<int64_t>(c10::elementSize(a.scalar_type())) * 8;
  const at::Tensor out_of_range = (b < 0).logical_or(b >= width);
  const at::Tensor safe = at::where(out_of_range, at::zeros({}, b.options()), b);
  if (op == BinaryOp::BitwiseShl) {
    return at::where(out_of_range, at::zeros({}, a.options()), a.bitwise_left_shift(safe));
  }
  const at::Tensor fill =
      at::where(a < 0, at::full({}, -1, a.options()), at::zeros({}, a.options()));
  return at::where(out_of_range, fill, a.bitwise_right_shift(safe));
}

// Integer powers with negative exponents: ATen refuses them; the Cpu kernel (and C's integer
// division of 1 by a power) gives 1 for base 1, +-1 for base -1, and 0 otherwise.
at::Tensor int_pow(const at::Tensor& a, const at::Tensor& b) {
  if (a.scalar_type() == at::kByte) return a.pow(b);  // unsigned: no negative exponents
  const at::Tensor neg = b < 0;
  const at::Tensor r = a.pow(at::where(neg, at::zeros({}, b.options()), b));
  const at::Tensor one = at::ones({}, a.options());
  const at::Tensor odd = b.remainder(2).ne(0);
  const at::Tensor minus = at::where(odd, a, one);  // (-1)^b
  const at::Tensor special =
      at::where(a.eq(1), one, at::where(a.eq(-1), minus, at::zeros({}, a.options())));
  return at::where(neg, special, r);
}

// Integer remainder, fmod and floor_divide: ATen raises on a zero divisor and may trap on
// min / -1; the Cpu kernel's results (0, and wrap-around) are made here from safe divisors.
at::Tensor int_division(BinaryOp op, const at::Tensor& a, const at::Tensor& b) {
  const bool is_signed = a.scalar_type() != at::kByte;
  const at::Tensor zero = b.eq(0);
  const at::Tensor minus_one = is_signed ? b.eq(-1) : at::zeros_like(zero);
  const at::Tensor safe = at::where(zero.logical_or(minus_one), at::ones({}, b.options()), b);
  const at::Tensor z = at::zeros({}, a.options());
  if (op == BinaryOp::FloorDivide) {
    const at::Tensor q = a.div(safe, "floor");
    return at::where(zero, z, at::where(minus_one, z - a, q));
  }
  const at::Tensor r = op == BinaryOp::Fmod ? a.fmod(safe) : a.remainder(safe);
  return at::where(zero.logical_or(minus_one), z, r);
}

at::Tensor binary_op(BinaryOp op, const at::Tensor& a, const at::Tensor& b) {
  switch (op) {
    case BinaryOp::Add:
      return a + b;
    case BinaryOp::Sub:
      return a - b;
    case BinaryOp::Mul:
      return a * b;
    case BinaryOp::Div:
      return a / b;
    case BinaryOp::Pow:
      return at::isFloatingType(a.scalar_type()) ? a.pow(b) : int_pow(a, b);
    case BinaryOp::Atan2:
      return a.atan2(b);
    case BinaryOp::Hypot:
      return a.hypot(b);
    case BinaryOp::Copysign:
      return a.copysign(b);
    case BinaryOp::Remainder:
      return at::isFloatingType(a.scalar_type()) ? a.remainder(b) : int_division(op, a, b);
    case BinaryOp::Fmod:
      return at::isFloatingType(a.scalar_type()) ? a.fmod(b) : int_division(op, a, b);
    case BinaryOp::FloorDivide:
      return at::isFloatingType(a.scalar_type()) ? a.div(b, "floor") : int_division(op, a, b);
    case BinaryOp::Minimum:
      return at::minimum(a, b);
    case BinaryOp::Maximum:
      return at::maximum(a, b);
    case BinaryOp::ReluBackward:
      return at::threshold_backward(a, b, 0);
    case BinaryOp::Eq:
      return a.eq(b);
    case BinaryOp::Ne:
      return a.ne(b);
    case BinaryOp::Lt:
      return a.lt(b);
    case BinaryOp::Le:
      return a.le(b);
    case BinaryOp::Gt:
      return a.gt(b);
    case BinaryOp::Ge:
      return a.ge(b);
    case BinaryOp::LogicalAnd:
      return a.logical_and(b);
    case BinaryOp::LogicalOr:
      return a.logical_or(b);
    case BinaryOp::LogicalXor:
      return a.logical_xor(b);
    case BinaryOp::BitwiseAnd:
      return a.bitwise_and(b);
    case BinaryOp::BitwiseOr:
      return a.bitwise_or(b);
    case BinaryOp::BitwiseXor:
      return a.bitwise_xor(b);
    case BinaryOp::BitwiseShl:
    case BinaryOp::BitwiseShr:
      return shift(op, a, b);
  }
  EMBER_FAIL("[", op_name(op), "] has no kernel on libtorch");
}

// The ops of training written straight into `o` (ATen's out= forms: no temporary and copy) when
// x and o have one dtype, f32 or f64, where ATen computes them as Ember does. False otherwise.
bool unary_direct(UnaryOp op, const at::Tensor& x, at::Tensor& o) {
  switch (op) {
    case UnaryOp::Neg:
      return at::neg_out(o, x), true;
    case UnaryOp::Abs:
      return at::abs_out(o, x), true;
    case UnaryOp::Square:
      return at::mul_out(o, x, x), true;
    case UnaryOp::Relu:
      return at::clamp_min_out(o, x, 0), true;  // ATen's relu is clamp_min(0): NaN stays NaN
    case UnaryOp::Exp:
      return at::exp_out(o, x), true;
    case UnaryOp::Log:
      return at::log_out(o, x), true;
    case UnaryOp::Log1p:
      return at::log1p_out(o, x), true;
    case UnaryOp::Expm1:
      return at::expm1_out(o, x), true;
    case UnaryOp::Sqrt:
      return at::sqrt_out(o, x), true;
    case UnaryOp::Rsqrt:
      return at::rsqrt_out(o, x), true;
    case UnaryOp::Reciprocal:
      return at::reciprocal_out(o, x), true;
    case UnaryOp::Tanh:
      return at::tanh_out(o, x), true;
    case UnaryOp::Sigmoid:
      return at::sigmoid_out(o, x), true;
    default:
      return false;
  }
}

// Binary ops likewise, for f32/f64 operands of one dtype: arithmetic into an output of that
// dtype, comparisons into a bool output.
bool binary_direct(BinaryOp op, const at::Tensor& a, const at::Tensor& b, at::Tensor& o) {
  const bool same = o.scalar_type() == a.scalar_type();
  const bool to_bool = o.scalar_type() == at::kBool;
  switch (op) {
    case BinaryOp::Add:
      return same && (at::add_out(o, a, b), true);
    case BinaryOp::Sub:
      return same && (at::sub_out(o, a, b), true);
    case BinaryOp::Mul:
      return same && (at::mul_out(o, a, b), true);
    case BinaryOp::Div:
      return same && (at::div_out(o, a, b), true);
    case BinaryOp::Pow:
      return same && (at::pow_out(o, a, b), true);
    case BinaryOp::Minimum:
      return same && (at::minimum_out(o, a, b), true);
    case BinaryOp::Maximum:
      return same && (at::maximum_out(o, a, b), true);
    case BinaryOp::ReluBackward:
      return same && (at::threshold_backward_out(o, a, b, 0), true);
    case BinaryOp::Eq:
      return to_bool && (at::eq_out(o, a, b), true);
    case BinaryOp::Ne:
      return to_bool && (at::ne_out(o, a, b), true);
    case BinaryOp::Lt:
      return to_bool && (at::lt_out(o, a, b), true);
    case BinaryOp::Le:
      return to_bool && (at::le_out(o, a, b), true);
    case BinaryOp::Gt:
      return to_bool && (at::gt_out(o, a, b), true);
    case BinaryOp::Ge:
      return to_bool && (at::ge_out(o, a, b), true);
    default:
      return false;
  }
}

bool f32_or_f64(DType dtype) { return dtype == DType::f32 || dtype == DType::f64; }

}  // namespace

void LibTorchBackend::unary(UnaryOp op, const UnaryParams& params, const RawTensor& x,
                            const RawTensor& out) {
  run(op_name(op), [&] {
    if (f32_or_f64(x.dtype) && out.dtype == x.dtype) {
      at::Tensor o = view_of(out);
      if (unary_direct(op, view_of(x), o)) return;
    }
    const at::Tensor v = compute_view(x);
    assign(out, is_floating(x.dtype) ? unary_float(op, params, v) : unary_int(op, params, v));
  });
}

void LibTorchBackend::binary(BinaryOp op, const RawTensor& a, const RawTensor& b,
                             const RawTensor& out) {
  run(op_name(op), [&] {
    if (f32_or_f64(a.dtype) && b.dtype == a.dtype &&
        (out.dtype == a.dtype || out.dtype == DType::boolean)) {
      at::Tensor o = view_of(out);
      if (binary_direct(op, view_of(a), view_of(b), o)) return;
    }
    assign(out, binary_op(op, compute_view(a), compute_view(b)));
  });
}

void LibTorchBackend::where(const RawTensor& cond, const RawTensor& a, const RawTensor& b,
                            const RawTensor& out) {
  run("where", [&] {
    if (f32_or_f64(out.dtype) && a.dtype == out.dtype && b.dtype == out.dtype &&
        cond.dtype == DType::boolean) {
      at::Tensor o = view_of(out);
      at::where_out(o, view_of(cond), view_of(a), view_of(b));
      return;
    }
    assign(out, at::where(view_of(cond), compute_view(a), compute_view(b)));
  });
}

}  // namespace ember::libtorch
