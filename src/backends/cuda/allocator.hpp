// The caching device allocator: blocks freed by storages are kept, by size, for the next request
// instead of going back to cudaFree (cudaMalloc and cudaFree synchronise the device). One stream
// per device orders all work, so a block freed on the host may be handed out again at once: any
// kernel that used it was queued before any kernel that will.
//
// Graph capture (DeviceGraph) adds private pools: while one captures, every allocation comes
// from it, and its blocks, freed or not, stay reserved for the graph while it lives, because a
// replay writes them again at the captured addresses; memory_stats counts them as in use.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <unordered_map>

#include "ember/core/storage.hpp"

namespace ember::cuda {

class DeviceAllocator {
 public:
  explicit DeviceAllocator(int device) : device_(device) {}
  DeviceAllocator(const DeviceAllocator&) = delete;
  DeviceAllocator& operator=(const DeviceAllocator&) = delete;

  /// A block of at least nbytes (rounded to 512 bytes below 1 MiB, to 2 MiB above). On out of
  /// memory, frees the cache and tries once more, then raises an error with the requested, free
  /// and cached sizes; nothing is lost and the process carries on.
  void* allocate(size_t nbytes, size_t* rounded);
  /// Returns a block to the cache.
  void release(void* ptr, size_t rounded);
  /// Frees every cached block (cudaFree), as torch.cuda.empty_cache.
  void empty_cache();
  MemoryStats stats() const;

  /// A new private pool for one graph's capture.
  int create_pool();
  /// Until end_capture(), allocations come from `pool` (its free blocks, then cached blocks it
  /// takes over, then cudaMalloc) and are never given back to cudaFree.
  void begin_capture(int pool);
  void end_capture();
  /// The graph is gone: its pool's free blocks return to the cache, the rest as they are freed.
  void release_pool(int pool);
  void reset_peak();

  static size_t round_size(size_t nbytes);

 private:
  int device_;
  mutable std::mutex mutex_;
  std::multimap<size_t, void*> free_;  // cached blocks by size
  struct Pool {
    std::multimap<size_t, void*> free;  // blocks the graph reuses on replay: not for others
    size_t blocks = 0;                  // blocks it owns, free or held
    bool alive = true;
  };
  void adopt(void* ptr);  // the capturing pool takes ptr (mutex_ held)
  std::unordered_map<int, Pool> pools_;
  std::unordered_map<void*, int> owner_;  // blocks that belong to a pool
  int capturing_ = -1;
  int next_pool_ = 0;
  size_t in_use_ = 0, cached_ = 0, peak_ = 0;
};

}  // namespace ember::cuda
