// The machine's measured limits that the other benchmarks are compared with: the f32 FMA peak
// (GFLOP/s) and the memcpy bandwidth (GB/s), each on a given number of threads.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ember::bench {

/// Runs `iters` rounds of independent 8-wide f32 FMAs on each of `threads` threads; returns the
/// FLOPs done (2 per lane per FMA).
double fma_burst(int threads, int64_t iters);

/// Measured f32 FMA peak on `threads` threads, in GFLOP/s: the last value recorded with
/// record_fma_peak, else measured once here and cached.
double fma_peak_gflops(int threads);
void record_fma_peak(int threads, double gflops);

/// Copies `bytes` from src to dst with memcpy, split evenly over `threads` threads.
void parallel_memcpy(void* dst, const void* src, int64_t bytes, int threads);

/// Checks every 4099th element of `got` against f(i) in double precision (relative 1e-6): a
/// benchmark's result is checked once before it is timed.
template <class F>
bool sampled_ok(const std::vector<float>& got, F f) {
  for (size_t i = 0; i < got.size(); i += 4099) {
    const double ref = f(i);
    if (!(std::abs(got[i] - ref) <= 1e-6 * std::abs(ref) + 1e-30)) return false;
  }
  return true;
}

}  // namespace ember::bench
