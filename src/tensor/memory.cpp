// Memory statistics and the cache, forwarded to the device's backend.
#include "ember/tensor/memory.hpp"

#include "internal.hpp"

namespace ember {

MemoryStats memory_stats(Device device) { return detail::backend_for(device).memory_stats(device); }

void reset_peak_memory(Device device) { detail::backend_for(device).reset_peak_memory(device); }

void empty_cache(Device device) { detail::backend_for(device).empty_cache(device); }

}  // namespace ember
