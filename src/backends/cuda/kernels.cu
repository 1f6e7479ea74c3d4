// The Cuda backend's kernels, launched on the device's stream.
#include <cstdint>

#include "kernels.hpp"

namespace ember::cuda {
namespace {

template <class T>
__global__ void fill_kernel(T* dst, T value, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    dst[i] = value;
  }
}

template <class T>
void launch_fill(void* dst, const void* value, int64_t n, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  const int grid = static_cast<int>(blocks < 65535 ? blocks : 65535);
  fill_kernel<T>
      <<<grid, kThreads, 0, stream>>>(static_cast<T*>(dst), *static_cast<const T*>(value), n);
}

}  // namespace

cudaError_t fill_bytes(void* dst, const void* value, int width, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  switch (width) {
    case 1:
      launch_fill<uint8_t>(dst, value, n, stream);
      break;
    case 2:
      launch_fill<uint16_t>(dst, value, n, stream);
      break;
    case 4:
      launch_fill<uint32_t>(dst, value, n, stream);
      break;
    case 8:
      launch_fill<uint64_t>(dst, value, n, stream);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace ember::cuda
