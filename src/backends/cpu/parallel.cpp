#include "parallel.hpp"

#include <algorithm>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace ember::cpu {

void parallel_for_impl(int64_t begin, int64_t end, int64_t grain, RangeFn fn, const void* ctx) {
  const int64_t n = end - begin;
  if (n <= 0) return;
#if defined(_OPENMP)
  const int threads = num_threads();
  const int64_t pieces = std::min<int64_t>(threads, (n + grain - 1) / std::max<int64_t>(grain, 1));
  if (pieces > 1 && !omp_in_parallel()) {
#pragma omp parallel num_threads(static_cast <int>(pieces))
    {
      const int64_t t = omp_get_thread_num();
      const int64_t chunk = (n + pieces - 1) / pieces;
      const int64_t b = begin + t * chunk;
      const int64_t e = std::min(end, b + chunk);
      if (b < e) fn(b, e, ctx);
    }
    return;
  }
#else
  (void)grain;
#endif
  fn(begin, end, ctx);
}

}  // namespace ember::cpu
