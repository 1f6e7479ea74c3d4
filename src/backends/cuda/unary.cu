// Unary elementwise kernels: one map per (op, dtype), the formulas of the Cpu's unary.cpp in the
// compute type (float for the 16-bit floats).
#include <cmath>

#include "../../core/special_math.hpp"
#include "cuda_backend.hpp"
#include "elementwise.cuh"
#include "ember/backends/cuda/cuda.hpp"

namespace ember::cuda {
namespace {

template <class T>
void unary_float(UnaryOp op, const UnaryParams& prm, const RawTensor& x, const RawTensor& out) {
  using C = Compute<T>;
  const char* name = op_name(op).data();
  const C pa = static_cast<C>(prm.a), pb = static_cast<C>(prm.b);
  switch (op) {
    case UnaryOp::Neg:
      return map<T, T>(
          name, out, [] __device__(C v) { return -v; }, x);
    case UnaryOp::Abs:
      return map<T, T>(
          name, out, [] __device__(C v) { return std::fabs(v); }, x);
    case UnaryOp::Sign:
      return map<T, T>(
          name, out, [] __device__(C v) { return v > 0 ? C(1) : (v < 0 ? C(-1) : C(0)); }, x);
    case UnaryOp::Square:
      return map<T, T>(
          name, out, [] __device__(C v) { return v * v; }, x);
    case UnaryOp::Relu:
      return map<T, T>(
          name, out, [] __device__(C v) { return v < 0 ? C(0) : v; }, x);
    case UnaryOp::Exp:
      return map<T, T>(
          name, out, [] __device__(C v) { return std::exp(v); }, x);
    case UnaryOp::Exp2:
      return map<T, T>(
          name, out, [] __device__(C v) { return std::exp2(v); }, x);
    case UnaryOp::Log:
      return map<T, T>(
          name, out, [] __device__(C v) { return std::log(v); }, x);
    case UnaryOp::Log2:
      return map<T, T>(
          name, out, [] __device__(C v) { return std::log2(v); }, x);
    case UnaryOp::Log10:
      return map<T, T>(
          name, out, [] __device__(C v) { return std::log10(v); }, x);
    case UnaryOp::Log1p:
      return map<T, T>(
          name, out, [] __device__(C v) { return std::log1p(v); }, x);
    case UnaryOp::Expm1:
      return map<T, T>(
          name, out, [] __device__(C v) { return std::expm1(v); }, x);
    case UnaryOp::Sqrt:
      return map<T, T>(
          name, out, [] __device__(C v) { return std::sqrt(v); }, x);
    case UnaryOp::Rsqrt:
      return map<T, T>(
          name, out, [] __device__(C v) { return C(1) / std::sqrt(v); }, x);
    case UnaryOp::Reciprocal:
      return map<T, T>(
          name, out, [] __device__(C v) { return C(1) / v; }, x);
    case UnaryOp::Sin:
      return map<T, T>(
          name, out, [] __device__(C v) { return std::sin(v); }, x);
    case UnaryOp::Cos:
      return map<T, T>(
          name, out, [] __device__(C v) { return std::cos(v); }, x);
    case UnaryOp::Tan:
      return map<T, T>(
          name, out, [] __device__(C v) { return std::tan(v); }, x);
    case UnaryOp::Asin:
      return map<T, T>(
          name, out, [] __device__(C v) { return std::asin(v); }, x);
    case UnaryOp::Acos:
      return map<T, T>(
          name, out, [] __device__(C v) { return std::acos(v); }, x);
    case UnaryOp::Atan:
      return map<T, T>(
          name, out, [] __device__(C v) { return std::atan(v); }, x);
    case UnaryOp::Sinh:
      return map<T, T>(
          name, out, [] __device__(C v) { return std::sinh(v); }, x);
    case UnaryOp::Cosh:
      return map<T, T>(
          name, out, [] __device__(C v) { return std::cosh(v); }, x);
    case UnaryOp::Tanh:
      return map<T, T>(
          name, out, [] __device__(C v) { return std::tanh(v); }, x);
    case UnaryOp::Erf:
      return map<T, T>(
          name, out, [] __device__(C v) { return std::erf(v); }, x);
    case UnaryOp::Erfinv:
      return map<T, T>(
          name, out, [] __device__(C v) { return C(::erfinv(double(v))); }, x);
    case UnaryOp::Lgamma:
      return map<T, T>(
          name, out, [] __device__(C v) { return std::lgamma(v); }, x);
    case UnaryOp::Digamma:
      return map<T, T>(
          name, out, [] __device__(C v) { return C(special::digamma(v)); }, x);
    case UnaryOp::Polygamma: {
      const int n = static_cast<int>(prm.a);
      return map<T, T>(
          name, out, [n] __device__(C v) { return C(special::polygamma(n, v)); }, x);
    }
    case UnaryOp::Sigmoid:
      return map<T, T>(
          name, out, [] __device__(C v) { return C(1) / (C(1) + std::exp(-v)); }, x);
    case UnaryOp::Gelu:
      return map<T, T>(
          name, out,
          [] __device__(C v) {
            return C(0.5) * v * (C(1) + std::erf(v * C(0.70710678118654752440)));
          },
          x);
    case UnaryOp::GeluTanh:
      return map<T, T>(
          name, out,
          [] __device__(C v) {
            const C inner = C(0.79788456080286535588) * (v + C(0.044715) * v * v * v);
            return C(0.5) * v * (C(1) + std::tanh(inner));
          },
          x);
    case UnaryOp::Silu:
      return map<T, T>(
          name, out, [] __device__(C v) { return v / (C(1) + std::exp(-v)); }, x);
    case UnaryOp::Softplus: {
      // prm: beta (a), threshold (b); linear above the threshold for stability, as PyTorch.
      const C beta = prm.has_a ? pa : C(1), thr = prm.has_b ? pb : C(20);
      return map<T, T>(
          name, out,
          [beta, thr] __device__(C v) {
            return v * beta > thr ? v : std::log1p(std::exp(v * beta)) / beta;
          },
          x);
    }
    case UnaryOp::Floor:
      return map<T, T>(
          name, out, [] __device__(C v) { return std::floor(v); }, x);
    case UnaryOp::Ceil:
      return map<T, T>(
          name, out, [] __device__(C v) { return std::ceil(v); }, x);
    case UnaryOp::Round:  // half to even, as the Cpu's nearbyint in the default rounding mode
      return map<T, T>(
          name, out, [] __device__(C v) { return std::nearbyint(v); }, x);
    case UnaryOp::Trunc:
      return map<T, T>(
          name, out, [] __device__(C v) { return std::trunc(v); }, x);
    case UnaryOp::Clamp: {
      const bool has_lo = prm.has_a, has_hi = prm.has_b;
      return map<T, T>(
          name, out,
          [=] __device__(C v) {
            if (has_lo) v = v < pa ? pa : v;  // NaN stays NaN
            if (has_hi) v = v > pb ? pb : v;
            return v;
          },
          x);
    }
    case UnaryOp::PowScalar:
      if (prm.a == 2.0)
        return map<T, T>(
            name, out, [] __device__(C v) { return v * v; }, x);
      if (prm.a == 0.5)
        return map<T, T>(
            name, out, [] __device__(C v) { return std::sqrt(v); }, x);
      return map<T, T>(
          name, out, [pa] __device__(C v) { return std::pow(v, pa); }, x);
    case UnaryOp::IsNan:
      return map<bool, T>(
          name, out, [] __device__(C v) { return v != v; }, x);
    case UnaryOp::IsInf:
      return map<bool, T>(
          name, out, [] __device__(C v) { return std::isinf(v); }, x);
    case UnaryOp::LogicalNot:
      return map<bool, T>(
          name, out, [] __device__(C v) { return v == C(0); }, x);
    case UnaryOp::BitwiseNot:
      break;
  }
  backend().no_kernel(op_name(op), x.dtype);
}

template <class T>
void unary_int(UnaryOp op, const UnaryParams& prm, const RawTensor& x, const RawTensor& out) {
  const char* name = op_name(op).data();
  // Wrap-around arithmetic, computed unsigned to avoid signed-overflow UB (as the Cpu).
  using U = std::make_unsigned_t<T>;
  switch (op) {
    case UnaryOp::Neg:
      return map<T, T>(
          name, out, [] __device__(T v) { return static_cast<T>(U(0) - U(v)); }, x);
    case UnaryOp::Abs:
      return map<T, T>(
          name, out,
          [] __device__(T v) { return static_cast<T>(negative(v) ? U(0) - U(v) : U(v)); }, x);
    case UnaryOp::Sign:
      return map<T, T>(
          name, out, [] __device__(T v) { return static_cast<T>((v > 0) - negative(v)); }, x);
    case UnaryOp::Square:
      return map<T, T>(
          name, out, [] __device__(T v) { return static_cast<T>(U(v) * U(v)); }, x);
    case UnaryOp::Relu:
      return map<T, T>(
          name, out, [] __device__(T v) { return negative(v) ? T(0) : v; }, x);
    case UnaryOp::Floor:
    case UnaryOp::Ceil:
    case UnaryOp::Round:
    case UnaryOp::Trunc:
      return map<T, T>(
          name, out, [] __device__(T v) { return v; }, x);
    case UnaryOp::Clamp: {
      const bool has_lo = prm.has_a, has_hi = prm.has_b;
      const T lo = convert<T>(prm.a), hi = convert<T>(prm.b);
      return map<T, T>(
          name, out,
          [=] __device__(T v) {
            if (has_lo && v < lo) v = lo;
            if (has_hi && v > hi) v = hi;
            return v;
          },
          x);
    }
    case UnaryOp::IsNan:
    case UnaryOp::IsInf:
      return map<bool, T>(
          name, out, [] __device__(T) { return false; }, x);
    case UnaryOp::LogicalNot:
      return map<bool, T>(
          name, out, [] __device__(T v) { return v == T(0); }, x);
    case UnaryOp::BitwiseNot:
      return map<T, T>(
          name, out, [] __device__(T v) { return static_cast<T>(~v); }, x);
    default:
      break;
  }
  backend().no_kernel(op_name(op), x.dtype);
}

void unary_bool(UnaryOp op, const RawTensor& x, const RawTensor& out) {
  const char* name = op_name(op).data();
  switch (op) {
    case UnaryOp::IsNan:
    case UnaryOp::IsInf:
      return map<bool, bool>(
          name, out, [] __device__(bool) { return false; }, x);
    case UnaryOp::LogicalNot:
    case UnaryOp::BitwiseNot:
      return map<bool, bool>(
          name, out, [] __device__(bool v) { return !v; }, x);
    default:
      break;
  }
  backend().no_kernel(op_name(op), x.dtype);
}

template <class T>
void unary_typed(UnaryOp op, const UnaryParams& prm, const RawTensor& x, const RawTensor& out) {
  if constexpr (std::is_integral_v<T>) {
    unary_int<T>(op, prm, x, out);
  } else {
    unary_float<T>(op, prm, x, out);
  }
}

}  // namespace

void CudaBackend::unary(UnaryOp op, const UnaryParams& params, const RawTensor& x,
                        const RawTensor& out) {
  EMBER_CUDA_DISPATCH_NUMERIC(x.dtype, unary_bool(op, x, out), unary_typed, op, params, x, out)
}

}  // namespace ember::cuda
