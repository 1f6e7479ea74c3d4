// Unary elementwise kernels: one loop per (op, dtype), instantiated from the registry's list.
#include <cmath>

#include "../../core/convert.hpp"
#include "../../core/special_math.hpp"
#include "cpu_backend.hpp"
#include "ember/core/error.hpp"
#include "loops.hpp"
#include "vmath.hpp"

namespace ember::cpu {
namespace {

// out[i] = f(x[i]) computed in Compute<In>, stored as Out.
template <class In, class Out, class F>
void map_unary(const RawTensor& x, const RawTensor& out, F f) {
  // flatten: the op lambda must be inlined into the loop, or the loop stays scalar (GCC gives
  // up inlining in a file with this many instantiations).
  const auto row = [f](char** p, const int64_t* st, int64_t n) __attribute__((flatten)) {
    using C = Compute<In>;
    if (dense(st[0], sizeof(Out)) && dense(st[1], sizeof(In))) {
      Out* o = reinterpret_cast<Out*>(p[0]);
      const In* a = reinterpret_cast<const In*>(p[1]);
      for (int64_t i = 0; i < n; ++i) o[i] = convert<Out>(f(static_cast<C>(a[i])));
    } else {
      for (int64_t i = 0; i < n; ++i) {
        const C v = static_cast<C>(*reinterpret_cast<const In*>(p[1] + i * st[1]));
        *reinterpret_cast<Out*>(p[0] + i * st[0]) = convert<Out>(f(v));
      }
    }
  };
  if (run_contiguous<2>({&out, &x}, row)) return;
  StridedLoop<2>(out.shape, {&out, &x}).run(row);
}

// Always inlined: as a call it would keep every exp, sigmoid and silu loop scalar.
template <class C>
[[gnu::always_inline]] inline C exp_of(C v) {
  if constexpr (std::is_same_v<C, float>) {
    return vexp(v);
  } else {
    return std::exp(v);
  }
}

template <class C>
[[gnu::always_inline]] inline C tanh_of(C v) {
  if constexpr (std::is_same_v<C, float>) {
    return vtanh(v);
  } else {
    return std::tanh(v);
  }
}

template <class C>
[[gnu::always_inline]] inline C erf_of(C v) {
  if constexpr (std::is_same_v<C, float>) {
    return verf(v);
  } else {
    return std::erf(v);
  }
}

template <class T>
void unary_float(UnaryOp op, const UnaryParams& prm, const RawTensor& x, const RawTensor& out) {
  using C = Compute<T>;
  const C pa = static_cast<C>(prm.a), pb = static_cast<C>(prm.b);
  switch (op) {
    case UnaryOp::Neg:
      return map_unary<T, T>(x, out, [](C v) { return -v; });
    case UnaryOp::Abs:
      return map_unary<T, T>(x, out, [](C v) { return std::fabs(v); });
    case UnaryOp::Sign:
      // sign(NaN) and sign(-0) are +0, as PyTorch's (CPU and CUDA, 1.13 to 2.11).
      return map_unary<T, T>(x, out, [](C v) { return v > 0 ? C(1) : (v < 0 ? C(-1) : C(0)); });
    case UnaryOp::Square:
      return map_unary<T, T>(x, out, [](C v) { return v * v; });
    case UnaryOp::Relu:
      return map_unary<T, T>(x, out, [](C v) { return v < 0 ? C(0) : v; });
    case UnaryOp::Exp:
      return map_unary<T, T>(x, out, [](C v) { return exp_of(v); });
    case UnaryOp::Exp2:
      return map_unary<T, T>(x, out, [](C v) { return std::exp2(v); });
    case UnaryOp::Log:
      return map_unary<T, T>(x, out, [](C v) { return std::log(v); });
    case UnaryOp::Log2:
      return map_unary<T, T>(x, out, [](C v) { return std::log2(v); });
    case UnaryOp::Log10:
      return map_unary<T, T>(x, out, [](C v) { return std::log10(v); });
    case UnaryOp::Log1p:
      return map_unary<T, T>(x, out, [](C v) { return std::log1p(v); });
    case UnaryOp::Expm1:
      return map_unary<T, T>(x, out, [](C v) { return std::expm1(v); });
    case UnaryOp::Sqrt:
      return map_unary<T, T>(x, out, [](C v) { return std::sqrt(v); });
    case UnaryOp::Rsqrt:
      return map_unary<T, T>(x, out, [](C v) { return C(1) / std::sqrt(v); });
    case UnaryOp::Reciprocal:
      return map_unary<T, T>(x, out, [](C v) { return C(1) / v; });
    case UnaryOp::Sin:
      return map_unary<T, T>(x, out, [](C v) { return std::sin(v); });
    case UnaryOp::Cos:
      return map_unary<T, T>(x, out, [](C v) { return std::cos(v); });
    case UnaryOp::Tan:
      return map_unary<T, T>(x, out, [](C v) { return std::tan(v); });
    case UnaryOp::Asin:
      return map_unary<T, T>(x, out, [](C v) { return std::asin(v); });
    case UnaryOp::Acos:
      return map_unary<T, T>(x, out, [](C v) { return std::acos(v); });
    case UnaryOp::Atan:
      return map_unary<T, T>(x, out, [](C v) { return std::atan(v); });
    case UnaryOp::Sinh:
      return map_unary<T, T>(x, out, [](C v) { return std::sinh(v); });
    case UnaryOp::Cosh:
      return map_unary<T, T>(x, out, [](C v) { return std::cosh(v); });
    case UnaryOp::Tanh:
      return map_unary<T, T>(x, out, [](C v) { return tanh_of(v); });
    case UnaryOp::Erf:
      return map_unary<T, T>(x, out, [](C v) { return erf_of(v); });
    case UnaryOp::Erfinv:
      return map_unary<T, T>(x, out, [](C v) { return C(special::erfinv(v)); });
    case UnaryOp::Lgamma:
      return map_unary<T, T>(x, out, [](C v) { return std::lgamma(v); });
    case UnaryOp::Digamma:
      return map_unary<T, T>(x, out, [](C v) { return C(special::digamma(v)); });
    case UnaryOp::Polygamma: {
      const int n = static_cast<int>(prm.a);
      return map_unary<T, T>(x, out, [n](C v) { return C(special::polygamma(n, v)); });
    }
    case UnaryOp::Sigmoid:
      return map_unary<T, T>(x, out, [](C v) { return C(1) / (C(1) + exp_of(-v)); });
    case UnaryOp::Gelu:
      return map_unary<T, T>(
          x, out, [](C v) { return C(0.5) * v * (C(1) + erf_of(v * C(0.70710678118654752440))); });
    case UnaryOp::GeluTanh:
      return map_unary<T, T>(x, out, [](C v) {
        const C inner = C(0.79788456080286535588) * (v + C(0.044715) * v * v * v);
        return C(0.5) * v * (C(1) + tanh_of(inner));
      });
    case UnaryOp::Silu:
      return map_unary<T, T>(x, out, [](C v) { return v / (C(1) + exp_of(-v)); });
    case UnaryOp::Softplus: {
      // prm: beta (a), threshold (b); linear above the threshold for stability, as PyTorch.
      const C beta = prm.has_a ? pa : C(1), thr = prm.has_b ? pb : C(20);
      return map_unary<T, T>(x, out, [beta, thr](C v) {
        return v * beta > thr ? v : std::log1p(exp_of(v * beta)) / beta;
      });
    }
    case UnaryOp::Floor:
      return map_unary<T, T>(x, out, [](C v) { return std::floor(v); });
    case UnaryOp::Ceil:
      return map_unary<T, T>(x, out, [](C v) { return std::ceil(v); });
    case UnaryOp::Round:
      return map_unary<T, T>(x, out, [](C v) { return std::nearbyint(v); });
    case UnaryOp::Trunc:
      return map_unary<T, T>(x, out, [](C v) { return std::trunc(v); });
    case UnaryOp::Clamp: {
      const bool has_lo = prm.has_a, has_hi = prm.has_b;
      return map_unary<T, T>(x, out, [=](C v) {
        if (has_lo) v = v < pa ? pa : v;  // NaN stays NaN
        if (has_hi) v = v > pb ? pb : v;
        return v;
      });
    }
    case UnaryOp::PowScalar: {
      if (prm.a == 2.0) return map_unary<T, T>(x, out, [](C v) { return v * v; });
      if (prm.a == 0.5) return map_unary<T, T>(x, out, [](C v) { return std::sqrt(v); });
      return map_unary<T, T>(x, out, [pa](C v) { return std::pow(v, pa); });
    }
    case UnaryOp::IsNan:
      return map_unary<T, bool>(x, out, [](C v) { return v != v; });
    case UnaryOp::IsInf:
      return map_unary<T, bool>(x, out, [](C v) { return std::isinf(v); });
    case UnaryOp::LogicalNot:
      return map_unary<T, bool>(x, out, [](C v) { return v == C(0); });
    case UnaryOp::BitwiseNot:
      break;
  }
  EMBER_FAIL("[", op_name(op), "] has no Cpu kernel for ", x.dtype);
}

template <class T>
void unary_bool(UnaryOp op, const RawTensor& x, const RawTensor& out) {
  switch (op) {
    case UnaryOp::IsNan:
    case UnaryOp::IsInf:
      return map_unary<T, bool>(x, out, [](T) { return false; });
    case UnaryOp::LogicalNot:
    case UnaryOp::BitwiseNot:
      return map_unary<T, bool>(x, out, [](T v) { return !v; });
    default:
      break;
  }
  EMBER_FAIL("[", op_name(op), "] has no Cpu kernel for ", x.dtype);
}

template <class T>
void unary_int(UnaryOp op, const UnaryParams& prm, const RawTensor& x, const RawTensor& out) {
  // Negation and squares wrap, computed unsigned (-INT64_MIN is INT64_MIN, as in PyTorch) rather
  // than overflowing, which is undefined.
  using U = std::make_unsigned_t<T>;
  const auto negated = [](T v) { return static_cast<T>(U(0) - static_cast<U>(v)); };
  switch (op) {
    case UnaryOp::Neg:
      return map_unary<T, T>(x, out, negated);
    case UnaryOp::Abs:
      return map_unary<T, T>(x, out, [&](T v) { return v < 0 ? negated(v) : v; });
    case UnaryOp::Sign:
      return map_unary<T, T>(x, out, [](T v) { return static_cast<T>((v > 0) - (v < 0)); });
    case UnaryOp::Square:
      return map_unary<T, T>(
          x, out, [](T v) { return static_cast<T>(static_cast<U>(v) * static_cast<U>(v)); });
    case UnaryOp::Relu:
      return map_unary<T, T>(x, out, [](T v) { return v < 0 ? T(0) : v; });
    case UnaryOp::Floor:
    case UnaryOp::Ceil:
    case UnaryOp::Round:
    case UnaryOp::Trunc:
      return map_unary<T, T>(x, out, [](T v) { return v; });
    case UnaryOp::Clamp: {
      const bool has_lo = prm.has_a, has_hi = prm.has_b;
      const T lo = convert<T>(prm.a), hi = convert<T>(prm.b);
      return map_unary<T, T>(x, out, [=](T v) {
        if (has_lo && v < lo) v = lo;
        if (has_hi && v > hi) v = hi;
        return v;
      });
    }
    case UnaryOp::IsNan:
    case UnaryOp::IsInf:
      return map_unary<T, bool>(x, out, [](T) { return false; });
    case UnaryOp::LogicalNot:
      return map_unary<T, bool>(x, out, [](T v) { return v == T(0); });
    case UnaryOp::BitwiseNot:
      return map_unary<T, T>(x, out, [](T v) { return static_cast<T>(~v); });
    default:
      break;
  }
  EMBER_FAIL("[", op_name(op), "] has no Cpu kernel for ", x.dtype);
}

}  // namespace

void CpuBackend::unary(UnaryOp op, const UnaryParams& params, const RawTensor& x,
                       const RawTensor& out) {
  visit_dtype(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      unary_bool<T>(op, x, out);
    } else if constexpr (std::is_integral_v<T>) {
      unary_int<T>(op, params, x, out);
    } else {
      unary_float<T>(op, params, x, out);
    }
  });
}

}  // namespace ember::cpu
