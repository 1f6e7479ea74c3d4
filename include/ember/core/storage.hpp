// Storage: one device buffer shared by every view of it. Freed through the allocator it came from.
#pragma once

#include <cstddef>
#include <memory>

#include "ember/core/device.hpp"

namespace ember {

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
