// The allocator's lock: a spin lock, since its critical sections are a few instructions long and
// an uncontended pthread mutex costs more than the work it guards. Compiles away on builds
// without threads (EMBER_NO_THREADS, embedded).
#pragma once

#if !defined(EMBER_NO_THREADS)
#include <atomic>
#include <thread>
#endif

namespace ember::cpu {

#if defined(EMBER_NO_THREADS)
struct Mutex {};
struct LockGuard {
  explicit LockGuard(Mutex&) {}
};
#else
class Mutex {
 public:
  // Yields while waiting: on few cores the holder may be preempted, and spinning would burn
  // the waiter's whole time slice.
  void lock() {
    while (flag_.test_and_set(std::memory_order_acquire)) {
      while (flag_.test(std::memory_order_relaxed)) std::this_thread::yield();
    }
  }
  void unlock() { flag_.clear(std::memory_order_release); }

 private:
  std::atomic_flag flag_;
};
class LockGuard {
 public:
  explicit LockGuard(Mutex& m) : m_(m) { m_.lock(); }
  ~LockGuard() { m_.unlock(); }
  LockGuard(const LockGuard&) = delete;
  LockGuard& operator=(const LockGuard&) = delete;

 private:
  Mutex& m_;
};
#endif

}  // namespace ember::cpu
