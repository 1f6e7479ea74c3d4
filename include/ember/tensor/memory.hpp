// Memory per device, as its backend's allocator sees it (PyTorch's torch.cuda.memory_stats,
// reset_peak_memory_stats and empty_cache). A backend without an allocator of its own reports
// zeros and has nothing to free.
#pragma once

#include "ember/core/device.hpp"
#include "ember/core/storage.hpp"

namespace ember {

/// Bytes held by live tensors, cached by the allocator for reuse, and the peak in use since the
/// start or the last reset_peak_memory(device).
MemoryStats memory_stats(Device device);
/// Restarts the peak at the bytes in use now (the Learner does so every epoch).
void reset_peak_memory(Device device);
/// Returns the device's cached, unused memory to the system; live tensors are untouched.
void empty_cache(Device device);

}  // namespace ember
