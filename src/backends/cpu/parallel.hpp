// parallel_for over an index range. OpenMP where available: oneDNN uses the same OpenMP pool, so
// Ember's kernels and its GEMM never oversubscribe the cores. Serial on builds without threads.
// The threading code is compiled once (parallel.cpp); callers' lambdas reach it through a thunk.
#pragma once

#include <cstdint>

#include "ember/backends/cpu/cpu.hpp"

namespace ember::cpu {

/// Below this many elements of simple elementwise work, threads cost more than they save.
inline constexpr int64_t kGrain = 32768;

using RangeFn = void (*)(int64_t begin, int64_t end, const void* ctx);
void parallel_for_impl(int64_t begin, int64_t end, int64_t grain, RangeFn fn, const void* ctx);

/// Calls f(begin, end) on disjoint pieces of [begin, end), each at least `grain` long.
template <class F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, const F& f) {
  parallel_for_impl(
      begin, end, grain,
      [](int64_t b, int64_t e, const void* ctx) { (*static_cast<const F*>(ctx))(b, e); }, &f);
}

}  // namespace ember::cpu
