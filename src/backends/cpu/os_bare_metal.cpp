// os.hpp for bare-metal builds (EMBER_EMBEDDED): memory from the C library's heap, one core, no
// environment. os.cpp is the hosted (POSIX) implementation.
#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "os.hpp"

namespace ember::cpu::os {

// malloc plus manual alignment, with the block's start stored just below the aligned pointer:
// works with any C library (newlib's aligned_alloc needs posix_memalign, which bare-metal newlib
// lacks). Without an MMU there are no huge pages, so a cache line is all the alignment needed.
void* allocate(size_t nbytes, size_t alignment) {
  alignment = std::min<size_t>(alignment, 64);
  if (nbytes > SIZE_MAX - alignment - sizeof(void*)) return nullptr;  // the total would wrap
  void* block = std::malloc(nbytes + alignment + sizeof(void*));
  if (!block) return nullptr;
  uintptr_t p = reinterpret_cast<uintptr_t>(block) + sizeof(void*);
  p = (p + alignment - 1) & ~uintptr_t{alignment - 1};
  reinterpret_cast<void**>(p)[-1] = block;
  return reinterpret_cast<void*>(p);
}

void release(void* p, size_t) {
  if (p) std::free(static_cast<void**>(p)[-1]);
}

void advise_huge_pages(void*, size_t) {}

int core_count() { return 1; }

size_t physical_memory() { return 0; }

long env_int(const char*, long fallback) { return fallback; }

}  // namespace ember::cpu::os
