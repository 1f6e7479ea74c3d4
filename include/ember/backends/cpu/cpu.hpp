// The Cpu backend's public knobs: thread count and the caching host allocator's counters.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ember {
class Backend;
}

namespace ember::cpu {

/// The Cpu backend (always built).
Backend& backend();

/// Threads Ember's Cpu kernels (and the GEMM library) use. Defaults to EMBER_NUM_THREADS when
/// set, else the number of cores. 1 on builds without threads.
int num_threads();
void set_num_threads(int n);

/// Counters of the caching host allocator. Buffers are kept for reuse instead of returned to the
/// OS: touching a fresh page costs far more than reusing a warm one.
struct AllocatorStats {
  size_t allocated_bytes = 0;       // handed out now
  size_t peak_allocated_bytes = 0;  // high-water mark of allocated_bytes
  size_t cached_bytes = 0;          // held for reuse
  uint64_t allocations = 0;         // requests served
  uint64_t cache_hits = 0;          // requests served from the cache
  uint64_t system_allocations = 0;  // requests that went to the OS
};
AllocatorStats allocator_stats();
void reset_peak_allocated();
/// Returns every cached buffer to the OS.
void empty_cache();

}  // namespace ember::cpu
