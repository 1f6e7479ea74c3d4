// The floor of a per-op time on the GPU: one empty kernel launched through the CUDA runtime on a
// stream of its own, as every Ember op launches at least one. bench_cuda's add_1elem row is
// measured against it.
#include <cuda_runtime.h>

namespace {
__global__ void empty_kernel() {}
}  // namespace

namespace ember::bench {

void* launch_floor_stream() {
  static cudaStream_t stream = [] {
    cudaStream_t s = nullptr;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    return s;
  }();
  return stream;
}

void launch_empty(void* stream) { empty_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(); }

void wait_for(void* stream) { cudaStreamSynchronize(static_cast<cudaStream_t>(stream)); }

}  // namespace ember::bench
