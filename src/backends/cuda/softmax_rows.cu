// cross_entropy's fused row kernels over contiguous [N, C] logits (f32, f16, bf16), one block per
// row: logsumexp_rows reads each row once with an online max-and-sum (a rescaled running sum, as
// flash attention's softmax), and cross_entropy_backward writes coef * (softmax - one_hot) in the
// logits' type in one more pass. softmax and log_softmax over the last dim reuse logsumexp_rows
// and write y in one more pass; their backward is one block per row. Arithmetic in f32; the
// block's combine order is fixed, so results do not change from run to run.
#include <cub/cub.cuh>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "common.cuh"
#include "cuda_backend.hpp"
#include "elementwise.cuh"

namespace ember::cuda {
namespace {

constexpr int kRowThreads = 512;

// exp(a - m) for a <= m, with a == m giving 1 even where both are +inf: a row holding +inf
// (and no NaN) sums to the count of its +infs, so its log-sum-exp is +inf. The fast exp: its
// relative error (a few 1e-7) is below what the f32 sum keeps.
__device__ __forceinline__ float exp_below(float a, float m) {
  return a == m ? 1.0f : __expf(a - m);
}

// A running (max, sum of exp(x - max)) pair; combining two rescales the smaller-max side. A NaN
// anywhere makes the pair NaN for good (m = NaN), so the row's result is NaN, as PyTorch's.
struct MaxSum {
  float m, s;
};
struct MaxSumCombine {
  __device__ MaxSum operator()(const MaxSum& a, const MaxSum& b) const {
    if (isnan(a.m) || isnan(b.m)) return {NAN, NAN};
    if (a.m == -INFINITY) return b;
    if (b.m == -INFINITY) return a;
    const float m = fmaxf(a.m, b.m);
    return {m, a.s * exp_below(a.m, m) + b.s * exp_below(b.m, m)};
  }
};

// Rows are read in 16-byte packs when every row starts 16-byte aligned (the vocabulary-sized
// rows of a language model's logits): 8 16-bit values per load instead of one.
template <class T>
constexpr int kPackOf = static_cast<int>(16 / sizeof(T));
template <class T>
using RowPack = Pack<T, kPackOf<T>>;

template <class T>
bool rows_in_packs(const RawTensor& x) {
  return aligned_to(x.data(), 16) && x.shape[1] % kPackOf<T> == 0;
}

// Folds n values into the running pair: one rescale per call, one exp per value.
__device__ __forceinline__ void fold(MaxSum& acc, const float* v, int n) {
  float m = acc.m;
  bool nan = isnan(m);
  for (int i = 0; i < n; ++i) {
    nan |= isnan(v[i]);
    m = fmaxf(m, v[i]);
  }
  if (nan) {
    acc = {NAN, NAN};
    return;
  }
  if (m == -INFINITY) return;  // nothing but -inf so far
  float s = acc.m == -INFINITY ? 0.0f : acc.s * exp_below(acc.m, m);
  for (int i = 0; i < n; ++i) s += exp_below(v[i], m);
  acc = {m, s};
}

template <class T, bool kPacked>
__global__ void logsumexp_rows_kernel(const T* __restrict__ x, int64_t cols,
                                      float* __restrict__ lse) {
  using Reduce = cub::BlockReduce<MaxSum, kRowThreads>;
  __shared__ typename Reduce::TempStorage temp;
  const T* row = x + static_cast<int64_t>(blockIdx.x) * cols;
  MaxSum acc{-INFINITY, 0.0f};
  if constexpr (kPacked) {
    constexpr int K = kPackOf<T>;
    const auto* packs = reinterpret_cast<const RowPack<T>*>(row);
    for (int64_t j = threadIdx.x; j < cols / K; j += kRowThreads) {
      const RowPack<T> p = packs[j];
      float v[K];
#pragma unroll
      for (int i = 0; i < K; ++i) v[i] = static_cast<float>(p.v[i]);
      fold(acc, v, K);
    }
  } else {
    for (int64_t k = threadIdx.x; k < cols; k += kRowThreads) {
      const float v = static_cast<float>(row[k]);
      fold(acc, &v, 1);
    }
  }
  const MaxSum total = Reduce(temp).Reduce(acc, MaxSumCombine());
  if (threadIdx.x == 0) {
    // A row of -inf (or NaN) gives -inf (NaN), as log(sum(exp(x))) would.
    lse[blockIdx.x] = total.m == -INFINITY || isnan(total.m) ? total.m : total.m + logf(total.s);
  }
}

template <class T, bool kPacked>
__global__ void cross_entropy_backward_kernel(const T* __restrict__ x, int64_t cols,
                                              const float* __restrict__ lse,
                                              const int64_t* __restrict__ target,
                                              const float* __restrict__ coef, T* __restrict__ dx) {
  const int64_t r = blockIdx.x;
  const T* row = x + r * cols;
  T* out = dx + r * cols;
  const float l = lse[r], c = coef[r];
  const int64_t t = target[r];
  if constexpr (kPacked) {
    constexpr int K = kPackOf<T>;
    const auto* in = reinterpret_cast<const RowPack<T>*>(row);
    auto* o = reinterpret_cast<RowPack<T>*>(out);
    for (int64_t j = threadIdx.x; j < cols / K; j += kRowThreads) {
      const RowPack<T> p = in[j];
      RowPack<T> q;
#pragma unroll
      for (int i = 0; i < K; ++i) {
        const float e = __expf(static_cast<float>(p.v[i]) - l);
        q.v[i] = T(c * (j * K + i == t ? e - 1.0f : e));
      }
      o[j] = q;
    }
  } else {
    for (int64_t k = threadIdx.x; k < cols; k += kRowThreads) {
      const float e = __expf(static_cast<float>(row[k]) - l);
      out[k] = T(c * (k == t ? e - 1.0f : e));
    }
  }
}

template <class T>
void logsumexp_rows_typed(const RawTensor& x, const RawTensor& lse) {
  const int64_t rows = x.shape[0], cols = x.shape[1];
  const auto grid = static_cast<unsigned>(rows);
  const auto* xp = static_cast<const T*>(x.data());
  auto* out = static_cast<float*>(lse.data());
  if (rows_in_packs<T>(x)) {
    logsumexp_rows_kernel<T, true><<<grid, kRowThreads, 0, stream_of(x)>>>(xp, cols, out);
  } else {
    logsumexp_rows_kernel<T, false><<<grid, kRowThreads, 0, stream_of(x)>>>(xp, cols, out);
  }
  EMBER_CUDA_LAUNCHED("cross_entropy");
}

template <class T>
void cross_entropy_backward_typed(const RawTensor& x, const RawTensor& lse, const RawTensor& target,
                                  const RawTensor& coef, const RawTensor& dx) {
  const int64_t rows = x.shape[0], cols = x.shape[1];
  const auto grid = static_cast<unsigned>(rows);
  auto launch = [&](auto packed) {
    cross_entropy_backward_kernel<T, decltype(packed)::value>
        <<<grid, kRowThreads, 0, stream_of(x)>>>(
            static_cast<const T*>(x.data()), cols, static_cast<const float*>(lse.data()),
            static_cast<const int64_t*>(target.data()), static_cast<const float*>(coef.data()),
            static_cast<T*>(dx.data()));
  };
  if (rows_in_packs<T>(x) && aligned_to(dx.data(), 16)) {
    launch(std::true_type{});
  } else {
    launch(std::false_type{});
  }
  EMBER_CUDA_LAUNCHED("cross_entropy_backward");
}

// softmax / log_softmax over the last dim, after logsumexp_rows: y = exp(x - lse) or x - lse,
// one thread per element (rows of any length), in y's type (x's or f32).
template <class Tx, class Ty>
__global__ void softmax_from_lse_kernel(const Tx* __restrict__ x, int64_t n, int64_t cols,
                                        const float* __restrict__ lse, bool log,
                                        Ty* __restrict__ y) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float l = lse[i / cols];
    // A row holding +inf: inf - inf is NaN for that entry, and NaN for the row, as the
    // composite's max-shifted sum gives.
    const float v = l == INFINITY ? NAN : static_cast<float>(x[i]) - l;
    y[i] = Ty(log ? v : expf(v));
  }
}

// The input gradient, one block per row: softmax gx = y * (gy - sum(gy * y)), log_softmax
// gx = gy - exp(y) * sum(gy); the row's sum in f32 in a fixed order.
template <class Tx, class Ty>
__global__ void softmax_backward_kernel(const Ty* __restrict__ y, const Ty* __restrict__ gy,
                                        int64_t cols, bool log, Tx* __restrict__ gx) {
  using Reduce = cub::BlockReduce<float, kRowThreads>;
  __shared__ typename Reduce::TempStorage temp;
  __shared__ float shared_sum;
  const int64_t r = blockIdx.x;
  const Ty* yr = y + r * cols;
  const Ty* gr = gy + r * cols;
  float acc = 0;
  for (int64_t k = threadIdx.x; k < cols; k += kRowThreads) {
    const float g = static_cast<float>(gr[k]);
    acc += log ? g : g * static_cast<float>(yr[k]);
  }
  const float total = Reduce(temp).Sum(acc);
  if (threadIdx.x == 0) shared_sum = total;
  __syncthreads();
  const float s = shared_sum;
  Tx* out = gx + r * cols;
  for (int64_t k = threadIdx.x; k < cols; k += kRowThreads) {
    const float g = static_cast<float>(gr[k]), v = static_cast<float>(yr[k]);
    out[k] = Tx(log ? g - expf(v) * s : v * (g - s));
  }
}

template <class Tx, class Ty>
void softmax_rows_typed(const RawTensor& x, const RawTensor& lse, bool log, const RawTensor& y) {
  const int64_t n = x.numel(), cols = x.shape[1];
  constexpr int threads = 256;
  const auto blocks = static_cast<unsigned>(std::min<int64_t>((n + threads - 1) / threads, 65535));
  softmax_from_lse_kernel<Tx, Ty><<<blocks, threads, 0, stream_of(x)>>>(
      static_cast<const Tx*>(x.data()), n, cols, static_cast<const float*>(lse.data()), log,
      static_cast<Ty*>(y.data()));
  EMBER_CUDA_LAUNCHED(log ? "log_softmax" : "softmax");
}

template <class Tx, class Ty>
void softmax_rows_backward_typed(const RawTensor& y, const RawTensor& gy, bool log,
                                 const RawTensor& gx) {
  const int64_t rows = y.shape[0], cols = y.shape[1];
  softmax_backward_kernel<Tx, Ty><<<static_cast<unsigned>(rows), kRowThreads, 0, stream_of(y)>>>(
      static_cast<const Ty*>(y.data()), static_cast<const Ty*>(gy.data()), cols, log,
      static_cast<Tx*>(gx.data()));
  EMBER_CUDA_LAUNCHED(log ? "log_softmax_backward" : "softmax_backward");
}

// Rows are blocks: the grid's x dimension holds 2^31 - 1 of them.
void check_rows(const RawTensor& x, const char* op) {
  EMBER_CHECK(x.shape.rank() == 2 && x.is_contiguous(), "[", op,
              "] needs contiguous [N, C] logits, got ", x.shape);
  EMBER_CHECK(x.shape[0] < (int64_t{1} << 31), "[", op, "] ", x.shape[0],
              " rows exceed the 2^31 - 1 a launch takes");
}

}  // namespace

void CudaBackend::logsumexp_rows(const RawTensor& x, const RawTensor& lse) {
  check_rows(x, "cross_entropy");
  if (x.shape[0] == 0) return;
  switch (x.dtype) {
    case DType::f32:
      return logsumexp_rows_typed<float>(x, lse);
    case DType::f16:
      return logsumexp_rows_typed<Half>(x, lse);
    case DType::bf16:
      return logsumexp_rows_typed<BFloat16>(x, lse);
    default:
      no_kernel("logsumexp_rows", x.dtype);
  }
}

void CudaBackend::cross_entropy_backward(const RawTensor& x, const RawTensor& lse,
                                         const RawTensor& target, const RawTensor& coef,
                                         const RawTensor& dx) {
  check_rows(x, "cross_entropy_backward");
  if (x.shape[0] == 0) return;
  switch (x.dtype) {
    case DType::f32:
      return cross_entropy_backward_typed<float>(x, lse, target, coef, dx);
    case DType::f16:
      return cross_entropy_backward_typed<Half>(x, lse, target, coef, dx);
    case DType::bf16:
      return cross_entropy_backward_typed<BFloat16>(x, lse, target, coef, dx);
    default:
      no_kernel("cross_entropy_backward", x.dtype);
  }
}

void CudaBackend::softmax_rows(const RawTensor& x, const RawTensor& lse, bool log,
                               const RawTensor& y) {
  const char* op = log ? "log_softmax" : "softmax";
  check_rows(x, op);
  EMBER_CHECK(
      y.is_contiguous() && y.shape == x.shape && (y.dtype == x.dtype || y.dtype == DType::f32), "[",
      op, "] writes contiguous ", x.shape, " in ", x.dtype, " or f32");
  if (x.numel() == 0) return;
  EMBER_CUDA_DISPATCH_FLOAT_IO(op, x.dtype, y.dtype, softmax_rows_typed, x, lse, log, y);
}

void CudaBackend::softmax_rows_backward(const RawTensor& y, const RawTensor& gy, bool log,
                                        const RawTensor& gx) {
  const char* op = log ? "log_softmax_backward" : "softmax_backward";
  check_rows(y, op);
  EMBER_CHECK(gy.is_contiguous() && gx.is_contiguous() && gy.shape == y.shape &&
                  gx.shape == y.shape && gy.dtype == y.dtype &&
                  (y.dtype == gx.dtype || y.dtype == DType::f32),
              "[", op, "] needs contiguous gy in y's dtype ", y.dtype, " and gx in it or 16-bit");
  if (y.numel() == 0) return;
  EMBER_CUDA_DISPATCH_FLOAT_IO(op, gx.dtype, y.dtype, softmax_rows_backward_typed, y, gy, log, gx);
}

}  // namespace ember::cuda
