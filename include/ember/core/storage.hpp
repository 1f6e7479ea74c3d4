// Storage: one device buffer shared by every view of it. Freed through the allocator it came from.
#pragma once

#include <cstddef>
#include <memory>

#include "ember/core/device.hpp"

namespace ember {

/// A device's memory as its backend's allocator sees it, in bytes (ember::memory_stats).
struct MemoryStats {
  size_t in_use = 0;  // held by live storages
  size_t cached = 0;  // kept by the allocator for reuse, not in use (empty_cache frees it)
  size_t peak = 0;    // high-water mark of in_use since start or reset_peak_memory
};

class Storage {
 public:
  /// `release(context, data, nbytes)` returns the buffer to whoever made it.
  using Release = void (*)(void* context, void* data, size_t nbytes);

  Storage(void* data, size_t nbytes, Device device, Release release, void* context)
      : data_(data), nbytes_(nbytes), device_(device), release_(release), context_(context) {}
  ~Storage() {
    if (release_) release_(context_, data_, nbytes_);
  }
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

 private:
  void* data_;
  size_t nbytes_;
  Device device_;
  Release release_;
  void* context_;
};

}  // namespace ember
