// Binary elementwise kernels: one map per (op, dtype), the Cpu's binary.cpp formulas in the
// compute type (float for the 16-bit floats); comparisons and logical ops write bool.
#include <cmath>

#include "../../core/special_math.hpp"
#include "cuda_backend.hpp"
#include "elementwise.cuh"
#include "ember/backends/cuda/cuda.hpp"

namespace ember::cuda {
namespace {

// Ops every dtype has: comparisons and logical ops, producing bool. Returns false if not one.
template <class T>
bool compare_or_logical(BinaryOp op, const RawTensor& a, const RawTensor& b, const RawTensor& out) {
  using C = Compute<T>;
  const char* name = op_name(op).data();
  switch (op) {
    case BinaryOp::Eq:
      map<bool, T, T>(
          name, out, [] __device__(C x, C y) { return x == y; }, a, b);
      break;
    case BinaryOp::Ne:
      map<bool, T, T>(
          name, out, [] __device__(C x, C y) { return x != y; }, a, b);
      break;
    case BinaryOp::Lt:
      map<bool, T, T>(
          name, out, [] __device__(C x, C y) { return x < y; }, a, b);
      break;
    case BinaryOp::Le:
      map<bool, T, T>(
          name, out, [] __device__(C x, C y) { return x <= y; }, a, b);
      break;
    case BinaryOp::Gt:
      map<bool, T, T>(
          name, out, [] __device__(C x, C y) { return x > y; }, a, b);
      break;
    case BinaryOp::Ge:
      map<bool, T, T>(
          name, out, [] __device__(C x, C y) { return x >= y; }, a, b);
      break;
    case BinaryOp::LogicalAnd:
      map<bool, T, T>(
          name, out, [] __device__(C x, C y) { return x != C(0) && y != C(0); }, a, b);
      break;
    case BinaryOp::LogicalOr:
      map<bool, T, T>(
          name, out, [] __device__(C x, C y) { return x != C(0) || y != C(0); }, a, b);
      break;
    case BinaryOp::LogicalXor:
      map<bool, T, T>(
          name, out, [] __device__(C x, C y) { return (x != C(0)) != (y != C(0)); }, a, b);
      break;
    default:
      return false;
  }
  return true;
}

template <class T>
void binary_float(BinaryOp op, const RawTensor& a, const RawTensor& b, const RawTensor& out) {
  using C = Compute<T>;
  const char* name = op_name(op).data();
  switch (op) {
    case BinaryOp::Add:
      return map<T, T, T>(
          name, out, [] __device__(C x, C y) { return x + y; }, a, b);
    case BinaryOp::Sub:
      return map<T, T, T>(
          name, out, [] __device__(C x, C y) { return x - y; }, a, b);
    case BinaryOp::Mul:
      return map<T, T, T>(
          name, out, [] __device__(C x, C y) { return x * y; }, a, b);
    case BinaryOp::Div:
      return map<T, T, T>(
          name, out, [] __device__(C x, C y) { return x / y; }, a, b);
    case BinaryOp::Pow:
      return map<T, T, T>(
          name, out, [] __device__(C x, C y) { return std::pow(x, y); }, a, b);
    case BinaryOp::Atan2:
      return map<T, T, T>(
          name, out, [] __device__(C x, C y) { return std::atan2(x, y); }, a, b);
    case BinaryOp::Hypot:
      return map<T, T, T>(
          name, out, [] __device__(C x, C y) { return std::hypot(x, y); }, a, b);
    case BinaryOp::Copysign:
      return map<T, T, T>(
          name, out, [] __device__(C x, C y) { return std::copysign(x, y); }, a, b);
    case BinaryOp::Remainder:
      return map<T, T, T>(
          name, out, [] __device__(C x, C y) { return special::remainder(x, y); }, a, b);
    case BinaryOp::Fmod:
      return map<T, T, T>(
          name, out, [] __device__(C x, C y) { return std::fmod(x, y); }, a, b);
    case BinaryOp::FloorDivide:
      return map<T, T, T>(
          name, out, [] __device__(C x, C y) { return special::floor_divide(x, y); }, a, b);
    case BinaryOp::Minimum:  // NaN propagates, as in PyTorch
      return map<T, T, T>(
          name, out, [] __device__(C x, C y) { return x != x ? x : (x < y ? x : y); }, a, b);
    case BinaryOp::Maximum:
      return map<T, T, T>(
          name, out, [] __device__(C x, C y) { return x != x ? x : (x > y ? x : y); }, a, b);
    case BinaryOp::ReluBackward:  // PyTorch's threshold_backward: a NaN output passes the grad
      return map<T, T, T>(
          name, out, [] __device__(C g, C y) { return y <= C(0) ? C(0) : g; }, a, b);
    default:
      if (compare_or_logical<T>(op, a, b, out)) return;
  }
  backend().no_kernel(op_name(op), a.dtype);
}

template <class T>
void binary_int(BinaryOp op, const RawTensor& a, const RawTensor& b, const RawTensor& out) {
  // Wrap-around arithmetic as in PyTorch; computed unsigned to avoid signed-overflow UB.
  using U = std::make_unsigned_t<T>;
  constexpr T kBits = T(sizeof(T) * 8);
  const char* name = op_name(op).data();
  switch (op) {
    case BinaryOp::Add:
      return map<T, T, T>(
          name, out, [] __device__(T x, T y) { return static_cast<T>(U(x) + U(y)); }, a, b);
    case BinaryOp::Sub:
      return map<T, T, T>(
          name, out, [] __device__(T x, T y) { return static_cast<T>(U(x) - U(y)); }, a, b);
    case BinaryOp::Mul:
      return map<T, T, T>(
          name, out, [] __device__(T x, T y) { return static_cast<T>(U(x) * U(y)); }, a, b);
    case BinaryOp::Pow:
      return map<T, T, T>(
          name, out, [] __device__(T x, T y) { return int_pow(x, y); }, a, b);
    case BinaryOp::Remainder:
      return map<T, T, T>(
          name, out, [] __device__(T x, T y) { return special::int_remainder(x, y); }, a, b);
    case BinaryOp::Fmod:
      return map<T, T, T>(
          name, out, [] __device__(T x, T y) { return special::int_fmod(x, y); }, a, b);
    case BinaryOp::FloorDivide:
      return map<T, T, T>(
          name, out, [] __device__(T x, T y) { return special::int_floor_divide(x, y); }, a, b);
    case BinaryOp::Minimum:
      return map<T, T, T>(
          name, out, [] __device__(T x, T y) { return x < y ? x : y; }, a, b);
    case BinaryOp::Maximum:
      return map<T, T, T>(
          name, out, [] __device__(T x, T y) { return x > y ? x : y; }, a, b);
    case BinaryOp::BitwiseAnd:
      return map<T, T, T>(
          name, out, [] __device__(T x, T y) { return static_cast<T>(x & y); }, a, b);
    case BinaryOp::BitwiseOr:
      return map<T, T, T>(
          name, out, [] __device__(T x, T y) { return static_cast<T>(x | y); }, a, b);
    case BinaryOp::BitwiseXor:
      return map<T, T, T>(
          name, out, [] __device__(T x, T y) { return static_cast<T>(x ^ y); }, a, b);
    case BinaryOp::BitwiseShl:
      return map<T, T, T>(
          name, out,
          [] __device__(T x, T y) {
            return (negative(y) || y >= kBits) ? T(0) : static_cast<T>(U(x) << y);
          },
          a, b);
    case BinaryOp::BitwiseShr:
      return map<T, T, T>(
          name, out,
          [] __device__(T x, T y) {
            // Arithmetic shift for signed types; by the width or more fills with the sign.
            if (negative(y) || y >= kBits) return negative(x) ? T(-1) : T(0);
            return static_cast<T>(x >> y);
          },
          a, b);
    default:
      if (compare_or_logical<T>(op, a, b, out)) return;
  }
  backend().no_kernel(op_name(op), a.dtype);
}

void binary_bool(BinaryOp op, const RawTensor& a, const RawTensor& b, const RawTensor& out) {
  const char* name = op_name(op).data();
  switch (op) {
    case BinaryOp::BitwiseAnd:
      return map<bool, bool, bool>(
          name, out, [] __device__(bool x, bool y) { return x && y; }, a, b);
    case BinaryOp::BitwiseOr:
      return map<bool, bool, bool>(
          name, out, [] __device__(bool x, bool y) { return x || y; }, a, b);
    case BinaryOp::BitwiseXor:
      return map<bool, bool, bool>(
          name, out, [] __device__(bool x, bool y) { return x != y; }, a, b);
    default:
      if (compare_or_logical<bool>(op, a, b, out)) return;
  }
  backend().no_kernel(op_name(op), a.dtype);
}

template <class T>
void binary_typed(BinaryOp op, const RawTensor& a, const RawTensor& b, const RawTensor& out) {
  if constexpr (std::is_integral_v<T>) {
    binary_int<T>(op, a, b, out);
  } else {
    binary_float<T>(op, a, b, out);
  }
}

}  // namespace

void CudaBackend::binary(BinaryOp op, const RawTensor& a, const RawTensor& b,
                         const RawTensor& out) {
  EMBER_CUDA_DISPATCH_NUMERIC(a.dtype, binary_bool(op, a, b, out), binary_typed, op, a, b, out)
}

}  // namespace ember::cuda
