#include "os.hpp"

#include <cstdlib>

#if defined(__linux__)
#include <sys/mman.h>
#endif
#if defined(__linux__) || defined(__APPLE__)
#include <unistd.h>
#endif

namespace ember::cpu::os {

void* allocate(size_t nbytes, size_t alignment) {
  const size_t rounded = (nbytes + alignment - 1) / alignment * alignment;
  return std::aligned_alloc(alignment, rounded == 0 ? alignment : rounded);
}

void release(void* p, size_t) { std::free(p); }

void advise_huge_pages(void* p, size_t nbytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  madvise(p, nbytes, MADV_HUGEPAGE);
#else
  (void)p;
  (void)nbytes;
#endif
}

int core_count() {
#if defined(__linux__)
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
#else
  return 1;
#endif
}

size_t physical_memory() {
#if defined(__linux__) || defined(__APPLE__)
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<size_t>(pages) * static_cast<size_t>(page);
#else
  return 0;
#endif
}

long env_int(const char* name, long fallback) {
#if defined(__linux__) || defined(__APPLE__)
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return (end && *end == '\0') ? n : fallback;
#else
  (void)name;
  return fallback;
#endif
}

}  // namespace ember::cpu::os
