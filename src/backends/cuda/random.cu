// Random fills: the Cpu's element values (src/core/random_values.hpp) from the same Philox
// counters, so a seed gives the same tensor on Cpu and Cuda (up to the last bit of f64 normals,
// whose log/sin/cos differ from the host's libm by an ulp or two).
#include "../../core/random_values.hpp"
#include "common.cuh"
#include "cuda_backend.hpp"

namespace ember::cuda {
namespace {

template <class T, class F>
__global__ void random_kernel(T* d, int64_t n, uint64_t seed, uint64_t offset, F f) {
  EMBER_CUDA_FOR(i, n) d[i] = f(philox::block(seed, offset + static_cast<uint64_t>(i)));
}

template <class T>
__global__ void normal_kernel(T* d, int64_t n, uint64_t seed, uint64_t offset,
                              random_values::Normal<T> f) {
  EMBER_CUDA_FOR(j, (n + 1) / 2) {
    T z0, z1;
    f(philox::block(seed, offset + 2 * static_cast<uint64_t>(j)), z0, z1);
    d[2 * j] = z0;
    if (2 * j + 1 < n) d[2 * j + 1] = z1;
  }
}

template <class T>
void random_typed(RandomOp op, const RandomParams& prm, const RawTensor& dst) {
  const int64_t n = dst.numel();
  T* d = dst.data_as<T>();
  cudaStream_t stream = stream_of(dst);
  switch (op) {
    case RandomOp::Uniform:
      random_kernel<<<grid_for(n), kThreads, 0, stream>>>(d, n, prm.seed, prm.offset,
                                                          random_values::Uniform<T>(prm));
      break;
    case RandomOp::Normal:
      normal_kernel<<<grid_for((n + 1) / 2), kThreads, 0, stream>>>(d, n, prm.seed, prm.offset,
                                                                    random_values::Normal<T>(prm));
      break;
    case RandomOp::RandInt: {
      const int64_t lo = static_cast<int64_t>(prm.a), hi = static_cast<int64_t>(prm.b);
      EMBER_CHECK(hi > lo, "[randint] empty range [", lo, ", ", hi, ")");
      random_kernel<<<grid_for(n), kThreads, 0, stream>>>(d, n, prm.seed, prm.offset,
                                                          random_values::RandInt<T>(lo, hi));
      break;
    }
    case RandomOp::Bernoulli:
      random_kernel<<<grid_for(n), kThreads, 0, stream>>>(d, n, prm.seed, prm.offset,
                                                          random_values::Bernoulli<T>{prm.a});
      break;
  }
  EMBER_CUDA_LAUNCHED("random");
}

}  // namespace

void CudaBackend::random(RandomOp op, const RandomParams& params, const RawTensor& dst) {
  if (dst.numel() == 0) return;
  // The seed and offset are kernel arguments: every replay would repeat the same numbers.
  state_of(dst).check_not_capturing("random",
                                    "a replay would draw the same numbers again (make random "
                                    "tensors outside the capture and pass them in)");
  EMBER_CUDA_DISPATCH_ALL(dst.dtype, random_typed, op, params, dst)
}

}  // namespace ember::cuda
