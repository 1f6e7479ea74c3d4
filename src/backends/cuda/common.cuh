// What every Cuda kernel file shares: element types and conversions (the Cpu's, compiled for the
// device too: src/core/convert.hpp), dtype dispatch, launch shapes, strided addressing, and the
// order-preserving keys of range checks. Included by .cu files only.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "../../core/convert.hpp"
#include "../../core/int_math.hpp"
#include "check.hpp"
#include "ember/core/raw_tensor.hpp"
#include "state.hpp"

namespace ember::cuda {

/// Raises the launch error of the last kernel, if any, naming the op.
#define EMBER_CUDA_LAUNCHED(op) EMBER_CUDA_CHECK(cudaGetLastError(), op)

// Calls FN<T>(args...) with T the element type of `dtype` (Half and BFloat16 for the 16-bit
// floats: bit containers whose arithmetic is float, as on the Cpu).
#define EMBER_CUDA_DISPATCH_FLOATS(dtype, FN, ...) \
  case DType::f32:                                 \
    FN<float>(__VA_ARGS__);                        \
    break;                                         \
  case DType::f64:                                 \
    FN<double>(__VA_ARGS__);                       \
    break;                                         \
  case DType::f16:                                 \
    FN<Half>(__VA_ARGS__);                         \
    break;                                         \
  case DType::bf16:                                \
    FN<BFloat16>(__VA_ARGS__);                     \
    break;
#define EMBER_CUDA_DISPATCH_INTS(dtype, FN, ...) \
  case DType::i64:                               \
    FN<int64_t>(__VA_ARGS__);                    \
    break;                                       \
  case DType::i32:                               \
    FN<int32_t>(__VA_ARGS__);                    \
    break;                                       \
  case DType::i8:                                \
    FN<int8_t>(__VA_ARGS__);                     \
    break;                                       \
  case DType::u8:                                \
    FN<uint8_t>(__VA_ARGS__);                    \
    break;
/// Every dtype.
#define EMBER_CUDA_DISPATCH_ALL(dtype, FN, ...)        \
  switch (dtype) {                                     \
    EMBER_CUDA_DISPATCH_FLOATS(dtype, FN, __VA_ARGS__) \
    EMBER_CUDA_DISPATCH_INTS(dtype, FN, __VA_ARGS__)   \
    case DType::boolean:                               \
      FN<bool>(__VA_ARGS__);                           \
      break;                                           \
  }
/// Float and Int dtypes; `otherwise` runs for Bool.
#define EMBER_CUDA_DISPATCH_NUMERIC(dtype, otherwise, FN, ...) \
  switch (dtype) {                                             \
    EMBER_CUDA_DISPATCH_FLOATS(dtype, FN, __VA_ARGS__)         \
    EMBER_CUDA_DISPATCH_INTS(dtype, FN, __VA_ARGS__)           \
    default:                                                   \
      otherwise;                                               \
  }
/// The four float dtypes; `otherwise` runs for the rest.
#define EMBER_CUDA_DISPATCH_FLOAT(dtype, otherwise, FN, ...) \
  switch (dtype) {                                           \
    EMBER_CUDA_DISPATCH_FLOATS(dtype, FN, __VA_ARGS__)       \
    default:                                                 \
      otherwise;                                             \
  }
/// FN<Tx, Ty> for the f32, f16 and bf16 Tx of `xd`, with Ty f32 (yd f32) or Tx: kernels that read
/// 16-bit data and write it or f32 (the norms, softmax); no_kernel(op, xd) for other dtypes.
#define EMBER_CUDA_DISPATCH_FLOAT_IO(op, xd, yd, FN, ...)                               \
  do {                                                                                  \
    const bool y_f32 = (yd) == DType::f32;                                              \
    switch (xd) {                                                                       \
      case DType::f32:                                                                  \
        FN<float, float>(__VA_ARGS__);                                                  \
        break;                                                                          \
      case DType::f16:                                                                  \
        y_f32 ? FN<Half, float>(__VA_ARGS__) : FN<Half, Half>(__VA_ARGS__);             \
        break;                                                                          \
      case DType::bf16:                                                                 \
        y_f32 ? FN<BFloat16, float>(__VA_ARGS__) : FN<BFloat16, BFloat16>(__VA_ARGS__); \
        break;                                                                          \
      default:                                                                          \
        no_kernel(op, xd);                                                              \
    }                                                                                   \
  } while (0)

constexpr int kThreads = 256;

/// Blocks for a grid-stride loop over n items, kThreads per block: enough to fill the GPU, few
/// enough that each thread loops a little on huge tensors.
inline unsigned grid_for(int64_t n, int threads = kThreads) {
  const int64_t blocks = (n + threads - 1) / threads;
  constexpr int64_t kMaxBlocks = int64_t{1} << 16;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks < kMaxBlocks ? blocks : kMaxBlocks));
}

/// Grid-stride loop over [0, n).
#define EMBER_CUDA_FOR(i, n)                                                \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (n); \
       i += int64_t{gridDim.x} * blockDim.x)

/// Strided addressing of N operands over one shape, dims merged where every operand allows (a
/// contiguous tensor becomes one dim). offset(k, i) is operand k's element offset of linear
/// index i in row-major order.
template <int N>
struct Strided {
  int rank = 0;
  int64_t sizes[kMaxRank];
  int64_t strides[N][kMaxRank];

  __device__ void offsets(int64_t i, int64_t (&off)[N]) const {
    for (int k = 0; k < N; ++k) off[k] = 0;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t size = sizes[d];
      const int64_t q = i / size, r = i - q * size;
      for (int k = 0; k < N; ++k) off[k] += r * strides[k][d];
      i = q;
    }
  }
};

/// The addressing of `ts` (same shape as `shape`) with unit dims dropped and mergeable dims
/// merged.
template <int N>
Strided<N> make_strided(const Shape& shape, const RawTensor* const (&ts)[N]) {
  Strided<N> s;
  for (int d = 0; d < shape.rank(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = s.rank > 0;
    for (int k = 0; k < N && merge; ++k) {
      merge = s.strides[k][s.rank - 1] == ts[k]->strides[d] * shape[d];
    }
    if (merge) {
      s.sizes[s.rank - 1] *= shape[d];
      for (int k = 0; k < N; ++k) s.strides[k][s.rank - 1] = ts[k]->strides[d];
    } else {
      s.sizes[s.rank] = shape[d];
      for (int k = 0; k < N; ++k) s.strides[k][s.rank] = ts[k]->strides[d];
      ++s.rank;
    }
  }
  return s;
}

/// An order-preserving unsigned key of a double (a < b iff key(a) < key(b)), for atomicMin/Max.
__device__ inline unsigned long long range_key(double v) {
  const auto u = static_cast<unsigned long long>(__double_as_longlong(v));
  return (u >> 63) ? ~u : (u | (1ull << 63));
}
__host__ __device__ inline double range_value(unsigned long long key) {
  const unsigned long long u = (key >> 63) ? (key & ~(1ull << 63)) : ~key;
  double v;
  memcpy(&v, &u, sizeof v);
  return v;
}

}  // namespace ember::cuda
