// FMA peak: several independent accumulator chains of 8-wide FMAs, enough to cover the FMA latency
// on every x86 core with AVX2 (Zen 1: 5 cycles, 1 per cycle; Skylake: 4 cycles, 2 per cycle). The
// kernel is compiled for AVX2+FMA with a target attribute, so it does not depend on -march.
#include "peak.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define EMBER_BENCH_X86 1
#endif

namespace ember::bench {
namespace {

constexpr int kChains = 12;  // 12 ymm accumulators: >= latency x throughput on current cores

#if defined(EMBER_BENCH_X86)
__attribute__((target("avx2,fma"))) float fma_chains(int64_t iters, float seed) {
  __m256 acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = _mm256_set1_ps(seed + static_cast<float>(k));
  const __m256 mul = _mm256_set1_ps(0.9999999f);
  const __m256 add = _mm256_set1_ps(1e-7f);
  for (int64_t i = 0; i < iters; ++i) {
    for (int k = 0; k < kChains; ++k) acc[k] = _mm256_fmadd_ps(acc[k], mul, add);
  }
  __m256 s = acc[0];
  for (int k = 1; k < kChains; ++k) s = _mm256_add_ps(s, acc[k]);
  float lanes[8];
  _mm256_storeu_ps(lanes, s);
  float total = 0.f;
  for (float l : lanes) total += l;
  return total;
}
#else
float fma_chains(int64_t iters, float seed) {  // portable stand-in: 8 lanes by hand
  float acc[kChains][8];
  for (int k = 0; k < kChains; ++k) std::fill(acc[k], acc[k] + 8, seed + static_cast<float>(k));
  for (int64_t i = 0; i < iters; ++i)
    for (int k = 0; k < kChains; ++k)
      for (int l = 0; l < 8; ++l) acc[k][l] = acc[k][l] * 0.9999999f + 1e-7f;
  float total = 0.f;
  for (auto& a : acc)
    for (float v : a) total += v;
  return total;
}
#endif

volatile float g_sink;
std::mutex g_peak_mutex;
std::map<int, double> g_peak;  // GFLOP/s by thread count

}  // namespace

double fma_burst(int threads, int64_t iters) {
  if (threads <= 1) {
    g_sink = fma_chains(iters, 1.0f);
  } else {
    std::vector<std::thread> pool;
    std::vector<float> out(static_cast<size_t>(threads));
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] { out[static_cast<size_t>(t)] = fma_chains(iters, 1.0f + t); });
    }
    for (auto& th : pool) th.join();
    g_sink = out[0];
  }
  return static_cast<double>(threads) * static_cast<double>(iters) * kChains * 8 * 2;
}

void record_fma_peak(int threads, double gflops) {
  std::lock_guard<std::mutex> lock(g_peak_mutex);
  g_peak[threads] = gflops;
}

double fma_peak_gflops(int threads) {
  std::lock_guard<std::mutex> lock(g_peak_mutex);
  if (auto it = g_peak.find(threads); it != g_peak.end()) return it->second;
  // Best of several ~50 ms bursts: the peak is a maximum, and the best burst is least disturbed.
  double best = 0.0;
  for (int rep = 0; rep < 8; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    const double flops = fma_burst(threads, 4'000'000);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, flops / s * 1e-9);
  }
  g_peak[threads] = best;
  return best;
}

void parallel_memcpy(void* dst, const void* src, int64_t bytes, int threads) {
  if (threads <= 1) {
    std::memcpy(dst, src, static_cast<size_t>(bytes));
    return;
  }
  const int64_t chunk = (bytes / threads + 63) / 64 * 64;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    const int64_t b = std::min(bytes, t * chunk), e = std::min(bytes, b + chunk);
    pool.emplace_back([=] {
      std::memcpy(static_cast<char*>(dst) + b, static_cast<const char*>(src) + b,
                  static_cast<size_t>(e - b));
    });
  }
  for (auto& th : pool) th.join();
}

}  // namespace ember::bench
