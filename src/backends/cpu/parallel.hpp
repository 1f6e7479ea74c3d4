// parallel_for over an index range. OpenMP where available: oneDNN uses the same OpenMP pool, so
// Ember's kernels and its GEMM never oversubscribe the cores. Serial on builds without threads.
#pragma once

#include <algorithm>
#include <cstdint>

#include "ember/backends/cpu/cpu.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace ember::cpu {

/// Below this many elements of simple elementwise work, threads cost more than they save.
inline constexpr int64_t kGrain = 32768;

/// Calls f(begin, end) on disjoint pieces of [begin, end), each at least `grain` long.
template <class F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, const F& f) {
  const int64_t n = end - begin;
  if (n <= 0) return;
#if defined(_OPENMP)
  const int threads = num_threads();
  const int64_t pieces = std::min<int64_t>(threads, (n + grain - 1) / std::max<int64_t>(grain, 1));
  if (pieces > 1 && !omp_in_parallel()) {
#pragma omp parallel num_threads(static_cast<int>(pieces))
    {
      const int64_t t = omp_get_thread_num();
      const int64_t chunk = (n + pieces - 1) / pieces;
      const int64_t b = begin + t * chunk;
      const int64_t e = std::min(end, b + chunk);
      if (b < e) f(b, e);
    }
    return;
  }
#else
  (void)grain;
#endif
  f(begin, end);
}

}  // namespace ember::cpu
