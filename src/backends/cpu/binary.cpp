// Binary elementwise kernels and where(): one loop per (op, dtype), with contiguous and
// scalar-operand fast paths the compiler vectorises.
#include <bit>
#include <cmath>

#include "../../core/convert.hpp"
#include "../../core/int_math.hpp"
#include "../../core/special_math.hpp"
#include "cpu_backend.hpp"
#include "ember/core/error.hpp"
#include "loops.hpp"

namespace ember::cpu {
namespace {

// out[i] = f(a[i], b[i]) computed in Compute<In>, stored as Out.
template <class In, class Out, class F>
void map_binary(const RawTensor& a, const RawTensor& b, const RawTensor& out, F f) {
  // flatten: the op lambda must be inlined into the loop, or the loop stays scalar (GCC gives
  // up inlining in a file with this many instantiations).
  const auto row = [f](char** p, const int64_t* st, int64_t n) __attribute__((flatten)) {
    using C = Compute<In>;
    Out* o = reinterpret_cast<Out*>(p[0]);
    const In* x = reinterpret_cast<const In*>(p[1]);
    const In* y = reinterpret_cast<const In*>(p[2]);
    if (dense(st[0], sizeof(Out))) {
      if (dense(st[1], sizeof(In)) && dense(st[2], sizeof(In))) {
        for (int64_t i = 0; i < n; ++i) o[i] = convert<Out>(f(C(x[i]), C(y[i])));
        return;
      }
      if (dense(st[1], sizeof(In)) && st[2] == 0) {
        const C yv = C(*y);
        for (int64_t i = 0; i < n; ++i) o[i] = convert<Out>(f(C(x[i]), yv));
        return;
      }
      if (st[1] == 0 && dense(st[2], sizeof(In))) {
        const C xv = C(*x);
        for (int64_t i = 0; i < n; ++i) o[i] = convert<Out>(f(xv, C(y[i])));
        return;
      }
    }
    for (int64_t i = 0; i < n; ++i) {
      const C xv = C(*reinterpret_cast<const In*>(p[1] + i * st[1]));
      const C yv = C(*reinterpret_cast<const In*>(p[2] + i * st[2]));
      *reinterpret_cast<Out*>(p[0] + i * st[0]) = convert<Out>(f(xv, yv));
    }
  };
  if (run_contiguous<3>({&out, &a, &b}, row)) return;
  StridedLoop<3>(out.shape, {&out, &a, &b}).run(row);
}

// Ops every dtype has: comparisons and logical ops, producing bool. Returns false if not one.
template <class T>
bool compare_or_logical(BinaryOp op, const RawTensor& a, const RawTensor& b, const RawTensor& out) {
  using C = Compute<T>;
  switch (op) {
    case BinaryOp::Eq:
      map_binary<T, bool>(a, b, out, [](C x, C y) { return x == y; });
      break;
    case BinaryOp::Ne:
      map_binary<T, bool>(a, b, out, [](C x, C y) { return x != y; });
      break;
    case BinaryOp::Lt:
      map_binary<T, bool>(a, b, out, [](C x, C y) { return x < y; });
      break;
    case BinaryOp::Le:
      map_binary<T, bool>(a, b, out, [](C x, C y) { return x <= y; });
      break;
    case BinaryOp::Gt:
      map_binary<T, bool>(a, b, out, [](C x, C y) { return x > y; });
      break;
    case BinaryOp::Ge:
      map_binary<T, bool>(a, b, out, [](C x, C y) { return x >= y; });
      break;
    case BinaryOp::LogicalAnd:
      map_binary<T, bool>(a, b, out, [](C x, C y) { return x != C(0) && y != C(0); });
      break;
    case BinaryOp::LogicalOr:
      map_binary<T, bool>(a, b, out, [](C x, C y) { return x != C(0) || y != C(0); });
      break;
    case BinaryOp::LogicalXor:
      map_binary<T, bool>(a, b, out, [](C x, C y) { return (x != C(0)) != (y != C(0)); });
      break;
    default:
      return false;
  }
  return true;
}

template <class T>
void binary_float(BinaryOp op, const RawTensor& a, const RawTensor& b, const RawTensor& out) {
  using C = Compute<T>;
  switch (op) {
    case BinaryOp::Add:
      return map_binary<T, T>(a, b, out, [](C x, C y) { return x + y; });
    case BinaryOp::Sub:
      return map_binary<T, T>(a, b, out, [](C x, C y) { return x - y; });
    case BinaryOp::Mul:
      return map_binary<T, T>(a, b, out, [](C x, C y) { return x * y; });
    case BinaryOp::Div:
      return map_binary<T, T>(a, b, out, [](C x, C y) { return x / y; });
    case BinaryOp::Pow:
      return map_binary<T, T>(a, b, out, [](C x, C y) { return std::pow(x, y); });
    case BinaryOp::Atan2:
      return map_binary<T, T>(a, b, out, [](C x, C y) { return std::atan2(x, y); });
    case BinaryOp::Hypot:
      return map_binary<T, T>(a, b, out, [](C x, C y) { return std::hypot(x, y); });
    case BinaryOp::Copysign:
      return map_binary<T, T>(a, b, out, [](C x, C y) { return std::copysign(x, y); });
    case BinaryOp::Remainder:
      return map_binary<T, T>(a, b, out, [](C x, C y) { return special::remainder(x, y); });
    case BinaryOp::Fmod:
      return map_binary<T, T>(a, b, out, [](C x, C y) { return std::fmod(x, y); });
    case BinaryOp::FloorDivide:
      return map_binary<T, T>(a, b, out, [](C x, C y) { return special::floor_divide(x, y); });
    case BinaryOp::Minimum:  // NaN propagates, as in PyTorch
      return map_binary<T, T>(a, b, out, [](C x, C y) { return x != x ? x : (x < y ? x : y); });
    case BinaryOp::Maximum:
      return map_binary<T, T>(a, b, out, [](C x, C y) { return x != x ? x : (x > y ? x : y); });
    case BinaryOp::ReluBackward:  // PyTorch's threshold_backward: a NaN output passes the grad
      return map_binary<T, T>(a, b, out, [](C g, C y) { return y <= C(0) ? C(0) : g; });
    default:
      if (compare_or_logical<T>(op, a, b, out)) return;
  }
  EMBER_FAIL("[", op_name(op), "] has no Cpu kernel for ", a.dtype);
}

template <class T>
void binary_int(BinaryOp op, const RawTensor& a, const RawTensor& b, const RawTensor& out) {
  // Wrap-around arithmetic as in PyTorch; computed unsigned to avoid signed-overflow UB.
  using U = std::make_unsigned_t<std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>>;
  switch (op) {
    case BinaryOp::Add:
      return map_binary<T, T>(a, b, out, [](T x, T y) { return static_cast<T>(U(x) + U(y)); });
    case BinaryOp::Sub:
      return map_binary<T, T>(a, b, out, [](T x, T y) { return static_cast<T>(U(x) - U(y)); });
    case BinaryOp::Mul:
      return map_binary<T, T>(a, b, out, [](T x, T y) { return static_cast<T>(U(x) * U(y)); });
    case BinaryOp::Pow:
      return map_binary<T, T>(a, b, out, [](T x, T y) { return int_pow(x, y); });
    case BinaryOp::Remainder:
      return map_binary<T, T>(a, b, out, [](T x, T y) { return special::int_remainder(x, y); });
    case BinaryOp::Fmod:
      return map_binary<T, T>(a, b, out, [](T x, T y) { return special::int_fmod(x, y); });
    case BinaryOp::FloorDivide:
      return map_binary<T, T>(a, b, out, [](T x, T y) { return special::int_floor_divide(x, y); });
    case BinaryOp::Minimum:
      return map_binary<T, T>(a, b, out, [](T x, T y) { return x < y ? x : y; });
    case BinaryOp::Maximum:
      return map_binary<T, T>(a, b, out, [](T x, T y) { return x > y ? x : y; });
    case BinaryOp::BitwiseAnd:
      return map_binary<T, T>(a, b, out, [](T x, T y) { return static_cast<T>(x & y); });
    case BinaryOp::BitwiseOr:
      return map_binary<T, T>(a, b, out, [](T x, T y) { return static_cast<T>(x | y); });
    case BinaryOp::BitwiseXor:
      return map_binary<T, T>(a, b, out, [](T x, T y) { return static_cast<T>(x ^ y); });
    case BinaryOp::BitwiseShl:
      return map_binary<T, T>(a, b, out, [](T x, T y) {
        return (negative(y) || y >= T(sizeof(T) * 8)) ? T(0) : static_cast<T>(U(x) << y);
      });
    case BinaryOp::BitwiseShr:
      return map_binary<T, T>(a, b, out, [](T x, T y) {
        // Arithmetic shift for signed types; shifting by the width or more fills with the sign.
        if (negative(y) || y >= T(sizeof(T) * 8)) return negative(x) ? T(-1) : T(0);
        return static_cast<T>(x >> y);
      });
    default:
      if (compare_or_logical<T>(op, a, b, out)) return;
  }
  EMBER_FAIL("[", op_name(op), "] has no Cpu kernel for ", a.dtype);
}

template <>
void binary_int<bool>(BinaryOp op, const RawTensor& a, const RawTensor& b, const RawTensor& out) {
  switch (op) {
    case BinaryOp::BitwiseAnd:
      return map_binary<bool, bool>(a, b, out, [](bool x, bool y) { return x && y; });
    case BinaryOp::BitwiseOr:
      return map_binary<bool, bool>(a, b, out, [](bool x, bool y) { return x || y; });
    case BinaryOp::BitwiseXor:
      return map_binary<bool, bool>(a, b, out, [](bool x, bool y) { return x != y; });
    default:
      if (compare_or_logical<bool>(op, a, b, out)) return;
  }
  EMBER_FAIL("[", op_name(op), "] has no Cpu kernel for ", a.dtype);
}

}  // namespace

void CpuBackend::binary(BinaryOp op, const RawTensor& a, const RawTensor& b, const RawTensor& out) {
  visit_dtype(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      binary_int<T>(op, a, b, out);
    } else {
      binary_float<T>(op, a, b, out);
    }
  });
}

void CpuBackend::where(const RawTensor& cond, const RawTensor& a, const RawTensor& b,
                       const RawTensor& out) {
  StridedLoop<4> loop(out.shape, {&out, &cond, &a, &b});
  visit_dtype(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    loop.run([](char** p, const int64_t* st, int64_t n) {
      // Dense rows, each value operand dense or one broadcast scalar (ReLU's backward,
      // masked_fill): a select loop the compiler vectorises.
      constexpr int64_t sz = sizeof(T);
      if (st[0] == sz && st[1] == 1 && (st[2] == sz || st[2] == 0) && (st[3] == sz || st[3] == 0)) {
        T* o = reinterpret_cast<T*>(p[0]);
        const bool* c = reinterpret_cast<const bool*>(p[1]);
        const T* a = reinterpret_cast<const T*>(p[2]);
        const T* b = reinterpret_cast<const T*>(p[3]);
        // Branch-free through the bits: a branch per element mispredicts on ReLU's signs.
        const int64_t sa = st[2] ? 1 : 0, sb = st[3] ? 1 : 0;
        if (sa && sb) {
          for (int64_t i = 0; i < n; ++i) o[i] = select_bits(c[i], a[i], b[i]);
        } else if (sa) {
          const T bv = *b;
          for (int64_t i = 0; i < n; ++i) o[i] = select_bits(c[i], a[i], bv);
        } else if (sb) {
          const T av = *a;
          for (int64_t i = 0; i < n; ++i) o[i] = select_bits(c[i], av, b[i]);
        } else {
          const T av = *a, bv = *b;
          for (int64_t i = 0; i < n; ++i) o[i] = select_bits(c[i], av, bv);
        }
        return;
      }
      for (int64_t i = 0; i < n; ++i) {
        const bool c = *reinterpret_cast<const bool*>(p[1] + i * st[1]);
        *reinterpret_cast<T*>(p[0] + i * st[0]) =
            *reinterpret_cast<const T*>(p[c ? 2 : 3] + i * st[c ? 2 : 3]);
      }
    });
  });
}

}  // namespace ember::cpu
