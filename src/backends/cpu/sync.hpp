// A mutex that compiles away on builds without threads (EMBER_NO_THREADS, embedded).
#pragma once

#if !defined(EMBER_NO_THREADS)
#include <mutex>
#endif

namespace ember::cpu {

#if defined(EMBER_NO_THREADS)
struct Mutex {};
struct LockGuard {
  explicit LockGuard(Mutex&) {}
};
#else
using Mutex = std::mutex;
using LockGuard = std::lock_guard<std::mutex>;
#endif

}  // namespace ember::cpu
