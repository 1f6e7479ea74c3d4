// Generator: an explicit, seedable source of randomness (Philox counters). Every random op takes
// one, or uses the global default; the same seed gives the same numbers on any thread count.
#pragma once

#include <atomic>
#include <cstdint>

namespace ember {

class Generator {
 public:
  explicit Generator(uint64_t seed = 0x853c49e6748fea9bULL) : seed_(seed) {}
  Generator(const Generator& other) : seed_(other.seed_), offset_(other.offset_.load()) {}
  Generator& operator=(const Generator& other) {
    seed_ = other.seed_;
    offset_ = other.offset_.load();
    return *this;
  }

  void manual_seed(uint64_t seed) {
    seed_ = seed;
    offset_ = 0;
  }
  uint64_t seed() const { return seed_; }
  /// The counter the next draw starts at; save it with seed() to resume a stream exactly.
  uint64_t offset() const { return offset_.load(); }
  void set_offset(uint64_t offset) { offset_ = offset; }
  /// Claims `n` counters and returns the first (thread-safe).
  uint64_t reserve(uint64_t n) { return offset_.fetch_add(n); }

 private:
  uint64_t seed_;
  std::atomic<uint64_t> offset_{0};
};

/// The global generator used when an op is given none.
Generator& default_generator();
/// Seeds the global generator (torch.manual_seed).
void manual_seed(uint64_t seed);

}  // namespace ember
