// OS-dependent pieces of the Cpu backend, behind small functions so the embedded build can swap
// them: aligned page allocation and the core count.
#pragma once

#include <cstddef>

namespace ember::cpu::os {

/// Memory aligned to `alignment` (a power of two); nullptr on failure.
void* allocate(size_t nbytes, size_t alignment);
void release(void* p, size_t nbytes);
/// Asks the kernel to back a large buffer with huge pages (a hint; may do nothing).
void advise_huge_pages(void* p, size_t nbytes);
int core_count();
/// The machine's physical memory in bytes; 0 where unknown.
size_t physical_memory();
/// The integer value of an environment variable, or `fallback`.
long env_int(const char* name, long fallback);

}  // namespace ember::cpu::os
