#include "allocator.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "ember/backends/cpu/cpu.hpp"
#include "ember/core/error.hpp"
#include "os.hpp"
#include "sync.hpp"

namespace ember::cpu {
namespace {

constexpr size_t kAlign = 64;              // a cache line; every vector load is aligned
constexpr size_t kHuge = size_t{2} << 20;  // 2 MiB: huge-page size and alignment
constexpr size_t kSmallStep = 64;          // classes 64 B apart up to 1 KiB
constexpr size_t kSmallMax = 1024;
constexpr int kNumClasses = 16 + 4 * 64;

// Size class index and its rounded byte size.
int size_class(size_t n, size_t* rounded) {
  if (n <= kSmallMax) {
    const size_t c = (n + kSmallStep - 1) / kSmallStep;
    *rounded = std::max<size_t>(c, 1) * kSmallStep;
    return static_cast<int>(std::max<size_t>(c, 1)) - 1;
  }
  // Quarter octaves: 1024 * 2^(k/4) rounded up to a multiple of 64.
  const int lg = 63 - __builtin_clzll(n - 1);  // floor(log2(n - 1))
  const size_t base = size_t{1} << lg;
  const size_t quarter = base / 4;
  const size_t q = (n - base + quarter - 1) / quarter;  // 1..4
  *rounded = base + q * quarter;
  return 16 + (lg - 10) * 4 + static_cast<int>(q) - 1;
}

class CachingAllocator {
 public:
  ~CachingAllocator() { release_all(); }

  void* take(size_t nbytes, size_t* rounded) {
    // Checked before rounding, which could wrap near SIZE_MAX.
    if (nbytes > max_bytes()) [[unlikely]] {
      EMBER_FAIL("[cpu allocator] cannot allocate ", nbytes, " bytes (more than the limit of ",
                 max_bytes(), " bytes, ", max_bytes() >> 20,
                 " MiB: the machine's memory unless EMBER_CPU_MAX_ALLOC_MB sets it)");
    }
    const int c = size_class(nbytes, rounded);
    {
      LockGuard lock(mutex_);
      ++stats_.allocations;
      stats_.allocated_bytes += *rounded;
      stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
      auto& list = free_[c];
      if (!list.empty()) {
        void* p = list.back();
        list.pop_back();
        stats_.cached_bytes -= *rounded;
        ++stats_.cache_hits;
        return p;
      }
      ++stats_.system_allocations;
    }
    const bool huge = *rounded >= kHuge;
    void* p = os::allocate(*rounded, huge ? kHuge : kAlign);
    if (!p) {
      release_all();  // the cache may hold what the system lacks: retry once without it
      p = os::allocate(*rounded, huge ? kHuge : kAlign);
    }
    if (!p) {
      LockGuard lock(mutex_);
      stats_.allocated_bytes -= *rounded;
      EMBER_FAIL("[cpu allocator] cannot allocate ", nbytes,
                 " bytes (out of memory: ", stats_.allocated_bytes, " bytes in use)");
    }
    if (huge) os::advise_huge_pages(p, *rounded);
    return p;
  }

  void give(void* p, size_t rounded) {
    size_t r = 0;
    const int c = size_class(rounded, &r);
    LockGuard lock(mutex_);
    stats_.allocated_bytes -= rounded;
    if (stats_.cached_bytes + rounded > cache_limit()) {
      os::release(p, rounded);
      return;
    }
    free_[c].push_back(p);
    stats_.cached_bytes += rounded;
  }

  void release_all() {
    LockGuard lock(mutex_);
    for (int c = 0; c < kNumClasses; ++c) {
      for (void* p : free_[c]) os::release(p, 0);
      free_[c].clear();
    }
    stats_.cached_bytes = 0;
  }

  AllocatorStats stats() {
    LockGuard lock(mutex_);
    return stats_;
  }
  void reset_peak() {
    LockGuard lock(mutex_);
    stats_.peak_allocated_bytes = stats_.allocated_bytes;
  }

 private:
  // The largest single request: EMBER_CPU_MAX_ALLOC_MB, else the machine's memory (a larger
  // buffer could only swap or be killed on first touch, as overcommit lets malloc succeed).
  static size_t max_bytes() {
    static const size_t limit = [] {
      const size_t most = static_cast<size_t>(PTRDIFF_MAX);
      const long mb = os::env_int("EMBER_CPU_MAX_ALLOC_MB", 0);
      if (mb > 0) {
        return static_cast<size_t>(mb) > (most >> 20) ? most : static_cast<size_t>(mb) << 20;
      }
      const size_t phys = os::physical_memory();
      return phys > 0 && phys < most ? phys : most;
    }();
    return limit;
  }
  static size_t cache_limit() {
    static const size_t limit = static_cast<size_t>(os::env_int("EMBER_CPU_CACHE_MB", 4096)) << 20;
    return limit;
  }

  Mutex mutex_;
  std::vector<void*> free_[kNumClasses];
  AllocatorStats stats_;
};

CachingAllocator& allocator() {
  static auto* a = new CachingAllocator();  // never destroyed: storages may outlive statics
  return *a;
}

// Storage handles' control blocks are recycled like the buffers: every op makes one, and a
// malloc/free pair per op is a large share of small-tensor overhead.
class BlockPool {
 public:
  void* take(size_t n) {
    {
      LockGuard lock(mutex_);
      if (n == size_ && !free_.empty()) {
        void* p = free_.back();
        free_.pop_back();
        return p;
      }
    }
    return ::operator new(n);
  }
  void give(void* p, size_t n) {
    {
      LockGuard lock(mutex_);
      if (size_ == 0) size_ = n;
      if (n == size_ && free_.size() < 4096) {
        free_.push_back(p);
        return;
      }
    }
    ::operator delete(p);
  }

 private:
  Mutex mutex_;
  size_t size_ = 0;  // every control block of Storage has the same size
  std::vector<void*> free_;
};

BlockPool& block_pool() {
  static auto* pool = new BlockPool();  // never destroyed: storages may outlive statics
  return *pool;
}

template <class T>
struct PoolAllocator {
  using value_type = T;
  PoolAllocator() = default;
  template <class U>
  PoolAllocator(const PoolAllocator<U>&) {}  // NOLINT: rebinding, as the standard requires
  T* allocate(size_t n) { return static_cast<T*>(block_pool().take(n * sizeof(T))); }
  void deallocate(T* p, size_t n) { block_pool().give(p, n * sizeof(T)); }
  friend bool operator==(const PoolAllocator&, const PoolAllocator&) { return true; }
};

void release_storage(void* context, void* data, size_t nbytes) {
  static_cast<CachingAllocator*>(context)->give(data, nbytes);
}

}  // namespace

std::shared_ptr<Storage> allocate_storage(size_t nbytes) {
  size_t rounded = 0;
  CachingAllocator& a = allocator();
  void* p = a.take(nbytes, &rounded);
  // Storage records the rounded size so the buffer goes back to its class.
  return std::allocate_shared<Storage>(PoolAllocator<Storage>(), p, rounded, Device::cpu(),
                                       release_storage, &a);
}

AllocatorStats allocator_stats() { return allocator().stats(); }
void reset_peak_allocated() { allocator().reset_peak(); }
void empty_cache() { allocator().release_all(); }

}  // namespace ember::cpu
