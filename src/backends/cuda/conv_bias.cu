// The small kernels around cuDNN's convolutions (conv.cpp): the bias broadcast the forward adds
// onto, the fused relu, and the bias gradient, summed in double per channel as on the Cpu.
#include <cstdint>

#include "common.cuh"
#include "cuda_backend.hpp"
#include "ember/backends/cuda/cuda.hpp"

namespace ember::cuda {
namespace {

template <class T>
__global__ void broadcast_bias_kernel(const T* bias, int64_t channels, int64_t spatial, int64_t n,
                                      T* out) {
  EMBER_CUDA_FOR(i, n) { out[i] = bias[(i / spatial) % channels]; }
}

template <class T>
__global__ void relu_kernel(T* out, int64_t n) {
  using C = Compute<T>;
  EMBER_CUDA_FOR(i, n) {
    const C v = static_cast<C>(out[i]);
    if (v < C(0)) out[i] = T(C(0));  // NaN stays, as relu()
  }
}

// One block per channel (grid-stride over channels): a fixed-order tree over double partial
// sums, so the result does not depend on scheduling.
template <class T>
__global__ void bias_grad_kernel(const T* gy, int64_t images, int64_t channels, int64_t spatial,
                                 T* gb) {
  __shared__ double part[kThreads];
  for (int64_t c = blockIdx.x; c < channels; c += gridDim.x) {
    double acc = 0;
    const int64_t n = images * spatial;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const int64_t img = j / spatial, s = j - img * spatial;
      acc += static_cast<double>(static_cast<Compute<T>>(gy[(img * channels + c) * spatial + s]));
    }
    part[threadIdx.x] = acc;
    __syncthreads();
    for (int stride = kThreads / 2; stride > 0; stride /= 2) {
      if (static_cast<int>(threadIdx.x) < stride) part[threadIdx.x] += part[threadIdx.x + stride];
      __syncthreads();
    }
    if (threadIdx.x == 0) gb[c] = static_cast<T>(static_cast<Compute<T>>(part[0]));
    __syncthreads();  // part is reused by the next channel
  }
}

template <class T>
void launch_broadcast_bias(const RawTensor& bias, const RawTensor& out, const char* op) {
  const int64_t n = out.numel(), channels = out.shape[1], spatial = n / (out.shape[0] * channels);
  broadcast_bias_kernel<T><<<grid_for(n), kThreads, 0, stream_of(out)>>>(
      bias.data_as<T>(), channels, spatial, n, out.data_as<T>());
  EMBER_CUDA_LAUNCHED(op);
}

template <class T>
void launch_relu(const RawTensor& out, const char* op) {
  relu_kernel<T>
      <<<grid_for(out.numel()), kThreads, 0, stream_of(out)>>>(out.data_as<T>(), out.numel());
  EMBER_CUDA_LAUNCHED(op);
}

template <class T>
void launch_bias_grad(const RawTensor& gy, const RawTensor& gb, const char* op) {
  const int64_t images = gy.shape[0], channels = gy.shape[1];
  int64_t spatial = 1;
  for (int i = 2; i < gy.rank(); ++i) spatial *= gy.shape[i];
  const unsigned blocks = static_cast<unsigned>(channels < 65536 ? channels : 65536);
  bias_grad_kernel<T><<<blocks, kThreads, 0, stream_of(gb)>>>(gy.data_as<T>(), images, channels,
                                                              spatial, gb.data_as<T>());
  EMBER_CUDA_LAUNCHED(op);
}

}  // namespace

// out [N, O, *] = bias[o] everywhere (out is non-empty).
void conv_broadcast_bias(const RawTensor& bias, const RawTensor& out, const char* op) {
  EMBER_CUDA_DISPATCH_FLOAT(out.dtype, backend().no_kernel(op, out.dtype), launch_broadcast_bias,
                            bias, out, op)
}

// out = relu(out), in place.
void conv_relu(const RawTensor& out, const char* op) {
  EMBER_CUDA_DISPATCH_FLOAT(out.dtype, backend().no_kernel(op, out.dtype), launch_relu, out, op)
}

// gb [O] = grad_out [N, O, *] summed over every dim but 1 (gb is non-empty).
void conv_bias_grad(const RawTensor& gy, const RawTensor& gb, const char* op) {
  EMBER_CUDA_DISPATCH_FLOAT(gb.dtype, backend().no_kernel(op, gb.dtype), launch_bias_grad, gy, gb,
                            op)
}

}  // namespace ember::cuda
