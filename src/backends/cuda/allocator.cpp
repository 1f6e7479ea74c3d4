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

namespace {

// Best fit from `blocks`, but not a block more than twice the size: a small tensor must not pin
// a huge one. Null when none fits; else *rounded is the block's size.
void* take_best_fit(std::multimap<size_t, void*>& blocks, size_t size, size_t* rounded) {
  auto it = blocks.lower_bound(size);
  if (it == blocks.end() || it->first > 2 * size) return nullptr;
  void* p = it->second;
  *rounded = it->first;
  blocks.erase(it);
  return p;
}

}  // namespace

void* DeviceAllocator::allocate(size_t nbytes, size_t* rounded) {
  const size_t size = round_size(nbytes);
  *rounded = size;
  std::lock_guard<std::mutex> lock(mutex_);
  void* p = nullptr;
  if (capturing_ >= 0) {
    // The pool's own free blocks first: reusing them within the capture is ordered as eager
    // reuse is. They count as in use already (the graph holds them).
    p = take_best_fit(pools_.at(capturing_).free, size, rounded);
    if (p) return p;
    // A block taken from the cache joins the pool.
    if ((p = take_best_fit(free_, size, rounded))) adopt(p);
  } else {
    p = take_best_fit(free_, size, rounded);
  }
  if (p) {
    cached_ -= *rounded;
    in_use_ += *rounded;
    if (in_use_ > peak_) peak_ = in_use_;
    return p;
  }
  EMBER_CUDA_CHECK(cudaSetDevice(device_), "allocate");
  cudaError_t err = cudaMalloc(&p, size);
  if (err == cudaErrorMemoryAllocation && capturing_ < 0) {
    (void)cudaGetLastError();
    for (auto& [bytes, block] : free_) cudaFree(block);  // then retry once with the cache freed
    free_.clear();
    cached_ = 0;  // pools' blocks count as in use, not cached
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
  if (capturing_ >= 0) adopt(p);
  in_use_ += size;
  if (in_use_ > peak_) peak_ = in_use_;
  return p;
}

void DeviceAllocator::adopt(void* ptr) {
  owner_[ptr] = capturing_;
  ++pools_.at(capturing_).blocks;
}

void DeviceAllocator::release(void* ptr, size_t rounded) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = owner_.find(ptr);
  // A block made before the capture and freed during it may still be read by the graph (it was
  // the capture's input): it joins the pool too, so no one else gets it while the graph lives.
  if (it == owner_.end() && capturing_ >= 0) {
    adopt(ptr);
    it = owner_.find(ptr);
  }
  if (it != owner_.end()) {
    auto pool = pools_.find(it->second);
    if (pool->second.alive) {  // still the graph's: in use until the graph goes
      pool->second.free.emplace(rounded, ptr);
      return;
    }
    owner_.erase(it);
    if (--pool->second.blocks == 0) pools_.erase(pool);  // the dead pool's last block
  }
  in_use_ -= rounded;
  cached_ += rounded;
  free_.emplace(rounded, ptr);
}

void DeviceAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (capturing_ >= 0) return;  // cudaFree would end the capture; the pools keep theirs anyway
  cudaSetDevice(device_);
  for (auto& [bytes, block] : free_) cudaFree(block);
  free_.clear();
  cached_ = 0;  // pools' blocks count as in use, not cached
}

int DeviceAllocator::create_pool() {
  std::lock_guard<std::mutex> lock(mutex_);
  pools_.emplace(next_pool_, Pool{});
  return next_pool_++;
}

void DeviceAllocator::begin_capture(int pool) {
  std::lock_guard<std::mutex> lock(mutex_);
  capturing_ = pool;
}

void DeviceAllocator::end_capture() {
  std::lock_guard<std::mutex> lock(mutex_);
  capturing_ = -1;
}

void DeviceAllocator::release_pool(int pool) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = pools_.find(pool);
  if (it == pools_.end()) return;
  for (auto& [bytes, block] : it->second.free) {
    owner_.erase(block);
    free_.emplace(bytes, block);
    in_use_ -= bytes;
    cached_ += bytes;
    --it->second.blocks;
  }
  it->second.free.clear();
  it->second.alive = false;
  // Blocks still held by tensors find the pool dead when freed and go to the cache; the entry
  // goes with the last of them.
  if (it->second.blocks == 0) pools_.erase(it);
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
