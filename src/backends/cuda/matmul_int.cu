// Integer matmul (i64, i32, i8, u8), which cuBLAS lacks: a tiled kernel over strided operands.
// Products accumulate in 64 bits and wrap, then truncate to the output type, as the Cpu's
// int64 accumulation does (the arithmetic is unsigned here, where wrapping is defined).
#include <cstdint>

#include "common.cuh"
#include "cuda_backend.hpp"

namespace ember::cuda {
namespace {

constexpr int kTile = 16;

template <class T>
__device__ uint64_t widen(T v) {
  return static_cast<uint64_t>(static_cast<int64_t>(v));
}

// One kTile x kTile block of out per thread block, tiles of a and b staged in shared memory; the
// grid strides over the tiles and batches it does not cover.
template <class T>
__global__ void matmul_int_kernel(const T* a, const T* b, T* c, int64_t batch, int64_t m, int64_t n,
                                  int64_t k, int64_t as0, int64_t as1, int64_t as2, int64_t bs0,
                                  int64_t bs1, int64_t bs2) {
  __shared__ uint64_t ta[kTile][kTile];
  __shared__ uint64_t tb[kTile][kTile];
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  // The loop bounds depend on the block only, so every thread reaches each __syncthreads.
  for (int64_t bi = blockIdx.z; bi < batch; bi += gridDim.z) {
    for (int64_t i0 = int64_t{blockIdx.y} * kTile; i0 < m; i0 += int64_t{gridDim.y} * kTile) {
      for (int64_t j0 = int64_t{blockIdx.x} * kTile; j0 < n; j0 += int64_t{gridDim.x} * kTile) {
        const int64_t i = i0 + ty, j = j0 + tx;
        uint64_t acc = 0;
        for (int64_t p0 = 0; p0 < k; p0 += kTile) {
          ta[ty][tx] = i < m && p0 + tx < k ? widen(a[bi * as0 + i * as1 + (p0 + tx) * as2]) : 0;
          tb[ty][tx] = p0 + ty < k && j < n ? widen(b[bi * bs0 + (p0 + ty) * bs1 + j * bs2]) : 0;
          __syncthreads();
#pragma unroll
          for (int q = 0; q < kTile; ++q) acc += ta[ty][q] * tb[q][tx];
          __syncthreads();
        }
        if (i < m && j < n) c[(bi * m + i) * n + j] = static_cast<T>(static_cast<int64_t>(acc));
      }
    }
  }
}

unsigned blocks(int64_t n, int64_t limit) {
  const int64_t b = (n + kTile - 1) / kTile;
  return static_cast<unsigned>(b < limit ? b : limit);
}

template <class T>
void launch(const RawTensor& a, const RawTensor& b, const RawTensor& out) {
  const int64_t batch = out.shape[0], m = out.shape[1], n = out.shape[2], k = a.shape[2];
  const dim3 grid(blocks(n, int64_t{1} << 20), blocks(m, 65535),
                  static_cast<unsigned>(batch < 65535 ? batch : 65535));
  matmul_int_kernel<T><<<grid, dim3(kTile, kTile), 0, stream_of(out)>>>(
      a.data_as<T>(), b.data_as<T>(), out.data_as<T>(), batch, m, n, k, a.strides[0], a.strides[1],
      a.strides[2], b.strides[0], b.strides[1], b.strides[2]);
  EMBER_CUDA_LAUNCHED("matmul");
}

}  // namespace

void matmul_int(const RawTensor& a, const RawTensor& b, const RawTensor& out) {
  switch (out.dtype) {
    EMBER_CUDA_DISPATCH_INTS(out.dtype, launch, a, b, out)
    default:
      EMBER_FAIL("[matmul] no integer kernel for ", out.dtype);
  }
}

}  // namespace ember::cuda
