// The ceiling of the card's warp-level MMA (mma.sync m16n8k16, f16 x f16 + f32; Hopper's
// warpgroup MMA, which cuBLAS uses, is faster), for scripts/vulkan_coop_ceiling.sh: every warp
// runs ITERS x ACC independent MMAs on registers. usage: mma_sync [blocks_per_sm] [warps_per_block]
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>

#include "mma.cuh"
constexpr int ITERS = 4096, ACC = 16;
__global__ void kernel(float* out, unsigned seed) {
  unsigned a[4], b[2];
  for (int i = 0; i < 4; ++i) a[i] = (seed * (threadIdx.x + 3 * i)) & 0x3bff3bffu;
  for (int i = 0; i < 2; ++i) b[i] = (seed * (threadIdx.x + 7 * i)) & 0x3bff3bffu;
  float c[ACC][4] = {};
  for (int it = 0; it < ITERS; ++it) {
#pragma unroll
    for (int j = 0; j < ACC; ++j) {
      mma_16816(c[j], a, b);
    }
  }
  float s = 0;
  for (int j = 0; j < ACC; ++j) s += c[j][0] + c[j][1] + c[j][2] + c[j][3];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
int main(int argc, char** argv) {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const int per_sm = argc > 1 ? atoi(argv[1]) : 2, warps = argc > 2 ? atoi(argv[2]) : 8;
  const int blocks = sms * per_sm, threads = warps * 32;
  float* out;
  cudaMalloc(&out, sizeof(float) * blocks * threads);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  kernel<<<blocks, threads>>>(out, 12345u);
  float best = 1e30f;
  for (int r = 0; r < 5; ++r) {
    cudaEventRecord(e0);
    kernel<<<blocks, threads>>>(out, 12345u + r);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms;
    cudaEventElapsedTime(&ms, e0, e1);
    if (ms < best) best = ms;
  }
  const double flop = 2.0 * 16 * 8 * 16 * double(ITERS) * ACC * blocks * warps;
  printf("mma.sync m16n8k16 (cuda): %d SMs x %d blocks x %d warps: %.3f ms, %.1f TFLOPS (%s)\n",
         sms, per_sm, warps, best, flop / best * 1e-9, cudaGetErrorString(cudaGetLastError()));
  return 0;
}
