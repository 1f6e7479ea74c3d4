// Contiguous <-> channels-last for CudaBackend::copy (conv.cpp's staging, the front end's
// relayouts): [A, B, *rest] <-> [A, *rest, B] as a batched 2-d transpose through 32x32
// shared-memory tiles, so reads and writes are both coalesced. It moves bytes, not values, so one
// kernel per element size serves every dtype.
#include <cstdint>

#include "common.cuh"
#include "cuda_backend.hpp"
#include "ember/backends/cuda/cuda.hpp"

namespace ember::cuda {
namespace {

constexpr int kTile = 32, kRowsPerPass = 8;

// dst[b][c][r] = src[b][r][c] for r < rows, c < cols, b < gridDim.z.
template <class T>
__global__ void transpose_kernel(const T* __restrict__ src, T* __restrict__ dst, int64_t rows,
                                 int64_t cols) {
  __shared__ T tile[kTile][kTile + 1];  // +1: no bank conflicts on the column reads
  const int64_t plane = rows * cols;
  src += int64_t{blockIdx.z} * plane;
  dst += int64_t{blockIdx.z} * plane;
  const int64_t r0 = int64_t{blockIdx.y} * kTile, c0 = int64_t{blockIdx.x} * kTile;
  for (int i = threadIdx.y; i < kTile; i += kRowsPerPass) {
    const int64_t r = r0 + i, c = c0 + threadIdx.x;
    if (r < rows && c < cols) tile[i][threadIdx.x] = src[r * cols + c];
  }
  __syncthreads();
  for (int i = threadIdx.y; i < kTile; i += kRowsPerPass) {
    const int64_t c = c0 + i, r = r0 + threadIdx.x;
    if (r < rows && c < cols) dst[c * rows + r] = tile[threadIdx.x][i];
  }
}

template <class T>
void launch(const void* src, void* dst, int64_t batch, int64_t rows, int64_t cols,
            cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((cols + kTile - 1) / kTile),
                  static_cast<unsigned>((rows + kTile - 1) / kTile), static_cast<unsigned>(batch));
  transpose_kernel<T><<<grid, dim3(kTile, kRowsPerPass), 0, stream>>>(
      static_cast<const T*>(src), static_cast<T*>(dst), rows, cols);
}

int64_t rest_of(const Shape& s) {
  int64_t n = 1;
  for (int i = 2; i < s.rank(); ++i) n *= s[i];
  return n;
}

constexpr int64_t kMaxY = 65535, kMaxZ = 65535;

// Whether the grid holds a [batch, rows, cols] transpose.
bool fits(int64_t batch, int64_t rows) {
  return (rows + kTile - 1) / kTile <= kMaxY && batch <= kMaxZ;
}

// dst = src transposed per batch (the grid holds it).
void transpose(const RawTensor& src, const RawTensor& dst, int64_t batch, int64_t rows,
               int64_t cols, const char* op) {
  const cudaStream_t stream = stream_of(dst);
  switch (dtype_size(src.dtype)) {
    case 1:
      launch<uint8_t>(src.data(), dst.data(), batch, rows, cols, stream);
      break;
    case 2:
      launch<uint16_t>(src.data(), dst.data(), batch, rows, cols, stream);
      break;
    case 4:
      launch<uint32_t>(src.data(), dst.data(), batch, rows, cols, stream);
      break;
    default:
      launch<uint64_t>(src.data(), dst.data(), batch, rows, cols, stream);
      break;
  }
  EMBER_CUDA_LAUNCHED(op);
}

bool channels_last_moves(const Shape& s) { return s.rank() > 2 && s[1] > 1 && rest_of(s) > 1; }

}  // namespace

bool relayout_channels(const RawTensor& src, const RawTensor& dst, const char* op) {
  if (src.dtype != dst.dtype || !channels_last_moves(dst.shape)) return false;
  const int64_t n = dst.shape[0], c = dst.shape[1], rest = rest_of(dst.shape);
  if (src.is_contiguous() && dst.is_channels_last()) {
    if (!fits(n, c)) return false;
    transpose(src, dst, n, c, rest, op);
    return true;
  }
  if (src.is_channels_last() && dst.is_contiguous()) {
    if (!fits(n, rest)) return false;
    transpose(src, dst, n, rest, c, op);
    return true;
  }
  return false;
}

}  // namespace ember::cuda
