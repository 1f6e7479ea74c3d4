// The float16 matmul that Vulkan allows, written in CUDA, for scripts/vulkan_coop_ceiling.sh:
// what mma.sync m16n8k16 and ldmatrix reach at gemm_coop.glsl's tilings when, as in a Vulkan
// compute shader, slices travel from memory through registers into at most 48 KiB of shared
// memory (REG, AHEAD slices ahead, one barrier a slice), beside the same tiles filled by
// cp.async (ASYNC, STAGES deep), which Vulkan does not expose. Both read 8192^3 row-major a and b
// whole (no edges), pad shared rows by 8 halves as gemm_coop.glsl does and write float16.
// usage: gemm_staged [n]  (cuBLAS's float16 GEMM first, in the same process)
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "mma.cuh"

namespace {

enum Fill { REG, ASYNC };

template <int BM, int BN, int BK, int WM, int WN>
struct Shape {
  static constexpr int kThreads = (BM / WM) * (BN / WN) * 32;
  static constexpr int kSa = BK + 8, kSb = BN + 8;  // padded rows, in halves
  static constexpr int kStageA = BM * kSa, kStageB = BK * kSb;
  static constexpr int kLoadsA = BM * BK / 8 / kThreads, kLoadsB = BK * BN / 8 / kThreads;
  static_assert(BM * BK / 8 % kThreads == 0 && BK * BN / 8 % kThreads == 0, "whole vectors");
};

struct At {  // a vector of a slice: in memory, and in its stage (halves)
  const half* from;
  int to;
};

__device__ inline unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

template <int BM, int BN, int BK, int WM, int WN, Fill FILL, int STAGES>
__global__ void __launch_bounds__(Shape<BM, BN, BK, WM, WN>::kThreads)
    gemm(const half* __restrict__ a, const half* __restrict__ b, half* __restrict__ c, int n,
         int band) {
  using S = Shape<BM, BN, BK, WM, WN>;
  constexpr int FM = WM / 16, FN = WN / 8;
  constexpr int kStages = FILL == REG ? 2 : STAGES;  // of shared memory
  static_assert(sizeof(half) * kStages * (S::kStageA + S::kStageB) <= 48 * 1024, "48 KiB");
  __shared__ __align__(16) half pool[kStages * (S::kStageA + S::kStageB)];
  half* sa = pool;
  half* sb = pool + kStages * S::kStageA;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = warp / (BN / WN), wn = warp % (BN / WN);
  // Tiles in bands of `band` rows of tiles, down a band's column first (gemm_tile.glsl's order;
  // 1: row after row).
  const int tiles_n = n / BN, per_band = band * tiles_n, in_band = blockIdx.x % per_band;
  const int row0 = (blockIdx.x / per_band * band + in_band % band) * BM;
  const int col0 = in_band / band * BN;
  float acc[FM][FN][4] = {};

  // Where vector i of this invocation's share of a slice lies, in memory and in a stage.
  auto a_at = [&](int i, int k0) {
    const int v = tid + i * S::kThreads, row = v / (BK / 8), kv = v % (BK / 8);
    return At{a + size_t(row0 + row) * n + k0 + kv * 8, row * S::kSa + kv * 8};
  };
  auto b_at = [&](int i, int k0) {
    const int v = tid + i * S::kThreads, kk = v / (BN / 8), cv = v % (BN / 8);
    return At{b + size_t(k0 + kk) * n + col0 + cv * 8, kk * S::kSb + cv * 8};
  };
  auto compute = [&](int stage) {
    const half* as = sa + stage * S::kStageA;
    const half* bs = sb + stage * S::kStageB;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      unsigned fa[FM][4], fb[FN][2];
#pragma unroll
      for (int i = 0; i < FM; ++i) {
        const half* p = as + (wm * WM + i * 16 + lane % 16) * S::kSa + kk + lane / 16 * 8;
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(fa[i][0]), "=r"(fa[i][1]), "=r"(fa[i][2]), "=r"(fa[i][3])
                     : "r"(smem_addr(p)));
      }
#pragma unroll
      for (int j = 0; j < FN; j += 2) {
        const half* p = bs + (kk + lane % 16) * S::kSb + wn * WN + j * 8 + lane / 16 * 8;
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(fb[j][0]), "=r"(fb[j][1]), "=r"(fb[j + 1][0]), "=r"(fb[j + 1][1])
                     : "r"(smem_addr(p)));
      }
#pragma unroll
      for (int i = 0; i < FM; ++i) {
#pragma unroll
        for (int j = 0; j < FN; ++j) {
          mma_16816(acc[i][j], fa[i], fb[j]);
        }
      }
    }
  };
  const int slices = n / BK;
  if constexpr (FILL == REG) {
    // STAGES - 1 slices ahead in registers (1 or 2), two stages of shared memory, one barrier a
    // slice: gemm_coop.glsl's loop.
    constexpr int AHEAD = STAGES - 1;
    uint4 ra[AHEAD][S::kLoadsA], rb[AHEAD][S::kLoadsB];
    auto fetch = [&](int set, int s) {
#pragma unroll
      for (int i = 0; i < S::kLoadsA; ++i)
        ra[set][i] = *reinterpret_cast<const uint4*>(a_at(i, s * BK).from);
#pragma unroll
      for (int i = 0; i < S::kLoadsB; ++i)
        rb[set][i] = *reinterpret_cast<const uint4*>(b_at(i, s * BK).from);
    };
    auto put = [&](int set, int stage) {
#pragma unroll
      for (int i = 0; i < S::kLoadsA; ++i)
        *reinterpret_cast<uint4*>(sa + stage * S::kStageA + a_at(i, 0).to) = ra[set][i];
#pragma unroll
      for (int i = 0; i < S::kLoadsB; ++i)
        *reinterpret_cast<uint4*>(sb + stage * S::kStageB + b_at(i, 0).to) = rb[set][i];
    };
    static_assert(AHEAD == 1 || AHEAD == 2, "one or two slices ahead");
    fetch(0, 0);
    if constexpr (AHEAD == 2) fetch(1, 1);
    put(0, 0);
    __syncthreads();
    if constexpr (AHEAD == 2) {
      for (int s = 0; s < slices; s += 2) {
        if (s + 2 < slices) fetch(0, s + 2);
        compute(0);
        if (s + 1 < slices) put(1, 1);
        __syncthreads();
        if (s + 1 >= slices) break;
        if (s + 3 < slices) fetch(1, s + 3);
        compute(1);
        if (s + 2 < slices) put(0, 0);
        __syncthreads();
      }
    } else {
      for (int s = 0; s < slices; ++s) {
        if (s + 1 < slices) fetch(0, s + 1);
        compute(s % 2);
        if (s + 1 < slices) put(0, (s + 1) % 2);
        __syncthreads();
      }
    }
  } else {
    auto copy = [](half* to, const half* from) {  // 16 bytes, memory to shared, no registers
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(to)), "l"(from));
    };
    auto issue = [&](int s) {
      const int stage = s % STAGES;
      if (s < slices) {
#pragma unroll
        for (int i = 0; i < S::kLoadsA; ++i) {
          const At at = a_at(i, s * BK);
          copy(sa + stage * S::kStageA + at.to, at.from);
        }
#pragma unroll
        for (int i = 0; i < S::kLoadsB; ++i) {
          const At at = b_at(i, s * BK);
          copy(sb + stage * S::kStageB + at.to, at.from);
        }
      }
      asm volatile("cp.async.commit_group;\n" ::);
    };
    for (int s = 0; s < STAGES - 1; ++s) issue(s);
    for (int s = 0; s < slices; ++s) {
      asm volatile("cp.async.wait_group %0;\n" ::"n"(STAGES - 2));
      __syncthreads();  // slice s is in, and slice s - 1's stage is read by every warp
      issue(s + STAGES - 1);
      compute(s % STAGES);
    }
  }
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int i = 0; i < FM; ++i) {
#pragma unroll
    for (int j = 0; j < FN; ++j) {
      const size_t row = row0 + wm * WM + i * 16 + g, col = col0 + wn * WN + j * 8 + t * 2;
      *reinterpret_cast<half2*>(c + row * n + col) = __floats2half2_rn(acc[i][j][0], acc[i][j][1]);
      *reinterpret_cast<half2*>(c + (row + 8) * n + col) =
          __floats2half2_rn(acc[i][j][2], acc[i][j][3]);
    }
  }
}

struct Problem {
  int n;
  std::vector<half> ha, hb;
  half *a, *b, *c;
};

// Milliseconds a launch, the best of 5 rounds of 5 after one to warm up.
template <class Launch>
float best_ms(Launch launch) {
  launch();
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  float best = 1e30f;
  for (int r = 0; r < 5; ++r) {
    cudaEventRecord(e0);
    for (int i = 0; i < 5; ++i) launch();
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    best = std::min(best, ms / 5);
  }
  return best;
}

template <int BM, int BN, int BK, int WM, int WN, Fill FILL, int STAGES>
void run(const Problem& p, int band = 8) {
  using S = Shape<BM, BN, BK, WM, WN>;
  auto kernel = gemm<BM, BN, BK, WM, WN, FILL, STAGES>;
  cudaFuncAttributes attr{};
  cudaFuncGetAttributes(&attr, kernel);
  int per_sm = 0;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, S::kThreads, 0);
  const int n = p.n, blocks = (n / BM) * (n / BN);
  cudaMemset(p.c, 0, size_t(n) * n * sizeof(half));
  const float best = best_ms([&] { kernel<<<blocks, S::kThreads>>>(p.a, p.b, p.c, n, band); });
  std::vector<half> out(size_t(n) * n);
  cudaMemcpy(out.data(), p.c, out.size() * sizeof(half), cudaMemcpyDeviceToHost);
  std::mt19937 rng(7);
  double worst = 0;
  for (int s = 0; s < 64; ++s) {
    const size_t i = rng() % n, j = rng() % n;
    double want = 0;
    for (size_t k = 0; k < size_t(n); ++k)
      want += double(__half2float(p.ha[i * n + k])) * double(__half2float(p.hb[k * n + j]));
    worst = std::max(
        worst, std::fabs(double(__half2float(out[i * n + j])) - want) / (std::fabs(want) + 1));
  }
  std::printf(
      "%s %dx%dx%d, warps of %dx%d, %s %d, bands of %d: %.3f ms, %.1f TFLOPS; %d registers, %d "
      "blocks an SM, "
      "%zu bytes shared; worst error %.1e (%s) %s\n",
      FILL == REG ? "registers" : "cp.async", BM, BN, BK, WM, WN, FILL == REG ? "ahead" : "stages",
      FILL == REG ? STAGES - 1 : STAGES, band, best, 2.0 * n * n * double(n) / best * 1e-9,
      attr.numRegs, per_sm, attr.sharedSizeBytes, worst, worst < 2e-2 ? "ok" : "WRONG",
      cudaGetErrorString(cudaGetLastError()));
}

}  // namespace

int main(int argc, char** argv) {
  Problem p;
  p.n = argc > 1 ? std::atoi(argv[1]) : 8192;
  const size_t count = size_t(p.n) * p.n;
  p.ha.resize(count);
  p.hb.resize(count);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  for (auto& v : p.ha) v = __float2half(u(rng));
  for (auto& v : p.hb) v = __float2half(u(rng));
  cudaMalloc(&p.a, count * sizeof(half));
  cudaMalloc(&p.b, count * sizeof(half));
  cudaMalloc(&p.c, count * sizeof(half));
  cudaMemcpy(p.a, p.ha.data(), count * sizeof(half), cudaMemcpyHostToDevice);
  cudaMemcpy(p.b, p.hb.data(), count * sizeof(half), cudaMemcpyHostToDevice);
  {  // the peer: cuBLAS, float32 sums, row-major as (b^T a^T)^T
    cublasHandle_t h;
    cublasCreate(&h);
    const float one = 1, zero = 0;
    auto gemm = [&] {
      cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, p.n, p.n, p.n, &one, p.b, CUDA_R_16F, p.n, p.a,
                   CUDA_R_16F, p.n, &zero, p.c, CUDA_R_16F, p.n, CUBLAS_COMPUTE_32F,
                   CUBLAS_GEMM_DEFAULT);
    };
    const float best = best_ms(gemm);
    std::printf("cuBLAS: %.3f ms, %.1f TFLOPS\n", best,
                2.0 * p.n * p.n * double(p.n) / best * 1e-9);
    cublasDestroy(h);
  }
  // gemm_coop.glsl's default, then deeper slices, then 64x64 warps; STAGES - 1 slices ahead.
  run<128, 128, 16, 64, 32, REG, 2>(p);
  run<128, 128, 16, 64, 32, REG, 3>(p, 1);
  run<128, 128, 16, 64, 32, REG, 3>(p);
  run<128, 128, 32, 64, 32, REG, 2>(p);
  run<128, 128, 32, 64, 32, REG, 3>(p);
  run<128, 128, 16, 64, 64, REG, 3>(p);
  run<128, 128, 32, 64, 64, REG, 2>(p);
  run<128, 256, 16, 64, 64, REG, 2>(p);
  run<128, 256, 16, 64, 64, REG, 3>(p);
  // The same tiles filled asynchronously, as deep as 48 KiB allows.
  run<128, 128, 16, 64, 32, ASYNC, 4>(p);
  run<128, 128, 32, 64, 32, ASYNC, 2>(p);
  run<128, 128, 32, 64, 64, ASYNC, 2>(p);
  run<128, 256, 16, 64, 64, ASYNC, 3>(p);
  return 0;
}
