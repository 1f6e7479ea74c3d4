#include "allocator.hpp"

#include <cuda_runtime.h>

#include "check.hpp"

namespace ember::cuda {

size_t DeviceAllocator::round_size(size_t nbytes) {
  constexpr size_t kSmall = 512, kLarge = size_t{2} << 20, kSmallLimit = size_t{1} << 20;
  if (nbytes == 0) nbytes = 1;
  const size_t unit = nbytes < kSmallLimit ? kSmall : kLarge;
  return (nbytes + unit - 1) / unit * unit;
}

void* DeviceAllocator::allocate(size_t nbytes, size_t* rounded) {
  const size_t size = round_size(nbytes);
  *rounded = size;
  std::lock_guard<std::mutex> lock(mutex_);
  // Best fit, but not a block more than twice the size: a small tensor must not pin a huge one.
  auto it = free_.lower_bound(size);
  if (it != free_.end() && it->first <= 2 * size) {
    void* p = it->second;
    *rounded = it->first;
    cached_ -= it->first;
    free_.erase(it);
    in_use_ += *rounded;
    if (in_use_ > peak_) peak_ = in_use_;
    return p;
  }
  EMBER_CUDA_CHECK(cudaSetDevice(device_), "allocate");
  void* p = nullptr;
  cudaError_t err = cudaMalloc(&p, size);
  if (err == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    for (auto& [bytes, block] : free_) cudaFree(block);  // then retry once with the cache freed
    free_.clear();
    cached_ = 0;
    err = cudaMalloc(&p, size);
  }
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    size_t free_bytes = 0, total = 0;
    cudaMemGetInfo(&free_bytes, &total);
    EMBER_FAIL("[cuda:", device_, " allocator] cannot allocate ", nbytes, " bytes (",
               cudaGetErrorString(err), "): ", free_bytes, " of ", total,
               " bytes free on the device, ", cached_, " cached by Ember, ", in_use_, " in use");
  }
  in_use_ += size;
  if (in_use_ > peak_) peak_ = in_use_;
  return p;
}

void DeviceAllocator::release(void* ptr, size_t rounded) {
  std::lock_guard<std::mutex> lock(mutex_);
  in_use_ -= rounded;
  cached_ += rounded;
  free_.emplace(rounded, ptr);
}

void DeviceAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  cudaSetDevice(device_);
  for (auto& [bytes, block] : free_) cudaFree(block);
  free_.clear();
  cached_ = 0;
}

MemoryStats DeviceAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {in_use_, cached_, peak_};
}

void DeviceAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  peak_ = in_use_;
}

}  // namespace ember::cuda
