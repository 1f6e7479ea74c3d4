// Launchers of the Cuda backend's kernels (kernels.cu), callable from host C++.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace ember::cuda {

/// dst[0, n) = the `width`-byte pattern at `value` (1, 2, 4 or 8 bytes: any dtype's element).
cudaError_t fill_bytes(void* dst, const void* value, int width, int64_t n, cudaStream_t stream);

}  // namespace ember::cuda
