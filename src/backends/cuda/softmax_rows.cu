// cross_entropy's fused row kernels over contiguous [N, C] logits (f32, f16, bf16), one block per
// row: logsumexp_rows reads each row once with an online max-and-sum (a rescaled running sum, as
// flash attention's softmax), and cross_entropy_backward writes coef * (softmax - one_hot) in the
// logits' type in one more pass. Arithmetic in f32; the block's combine order is fixed, so results
// do not change from run to run.
#include <cub/cub.cuh>

#include <cmath>

#include "common.cuh"
#include "cuda_backend.hpp"

namespace ember::cuda {
namespace {

constexpr int kRowThreads = 512;

// A running (max, sum of exp(x - max)) pair; combining two rescales the smaller-max side.
struct MaxSum {
  float m, s;
};
struct MaxSumCombine {
  __device__ MaxSum operator()(const MaxSum& a, const MaxSum& b) const {
    if (a.m == -INFINITY) return b;
    if (b.m == -INFINITY) return a;
    const float m = fmaxf(a.m, b.m);
    return {m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
  }
};

template <class T>
__global__ void logsumexp_rows_kernel(const T* __restrict__ x, int64_t cols,
                                      float* __restrict__ lse) {
  using Reduce = cub::BlockReduce<MaxSum, kRowThreads>;
  __shared__ typename Reduce::TempStorage temp;
  const T* row = x + static_cast<int64_t>(blockIdx.x) * cols;
  MaxSum acc{-INFINITY, 0.0f};
  for (int64_t k = threadIdx.x; k < cols; k += kRowThreads) {
    const float v = static_cast<float>(row[k]);
    if (v > acc.m) {
      acc.s = (acc.m == -INFINITY ? 0.0f : acc.s * expf(acc.m - v)) + 1.0f;
      acc.m = v;
    } else {
      acc.s += expf(v - acc.m);
    }
  }
  const MaxSum total = Reduce(temp).Reduce(acc, MaxSumCombine());
  if (threadIdx.x == 0) {
    // A row of -inf (or NaN) gives -inf (NaN), as log(sum(exp(x))) would.
    lse[blockIdx.x] = total.m == -INFINITY || isnan(total.m) ? total.m : total.m + logf(total.s);
  }
}

template <class T>
__global__ void cross_entropy_backward_kernel(const T* __restrict__ x, int64_t cols,
                                              const float* __restrict__ lse,
                                              const int64_t* __restrict__ target,
                                              const float* __restrict__ coef, T* __restrict__ dx) {
  const int64_t r = blockIdx.x;
  const T* row = x + r * cols;
  T* out = dx + r * cols;
  const float l = lse[r], c = coef[r];
  const int64_t t = target[r];
  for (int64_t k = threadIdx.x; k < cols; k += kRowThreads) {
    const float p = expf(static_cast<float>(row[k]) - l);
    out[k] = T(c * (k == t ? p - 1.0f : p));
  }
}

template <class T>
void logsumexp_rows_typed(const RawTensor& x, const RawTensor& lse) {
  const int64_t rows = x.shape[0], cols = x.shape[1];
  logsumexp_rows_kernel<T><<<static_cast<unsigned>(rows), kRowThreads, 0, stream_of(x)>>>(
      static_cast<const T*>(x.data()), cols, static_cast<float*>(lse.data()));
  EMBER_CUDA_LAUNCHED("cross_entropy");
}

template <class T>
void cross_entropy_backward_typed(const RawTensor& x, const RawTensor& lse, const RawTensor& target,
                                  const RawTensor& coef, const RawTensor& dx) {
  const int64_t rows = x.shape[0], cols = x.shape[1];
  cross_entropy_backward_kernel<T><<<static_cast<unsigned>(rows), kRowThreads, 0, stream_of(x)>>>(
      static_cast<const T*>(x.data()), cols, static_cast<const float*>(lse.data()),
      static_cast<const int64_t*>(target.data()), static_cast<const float*>(coef.data()),
      static_cast<T*>(dx.data()));
  EMBER_CUDA_LAUNCHED("cross_entropy_backward");
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

}  // namespace ember::cuda
