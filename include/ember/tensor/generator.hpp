// Generator: an explicit, seedable source of randomness (Philox counters). Every random op takes
// one, or uses the global default; the same seed gives the same numbers on any thread count.
#pragma once

#include <cstdint>

namespace ember {

class Generator {
 public:
  explicit Generator(uint64_t seed = 0x853c49e6748fea9bULL) : seed_(seed) {}

  void manual_seed(uint64_t seed) {
    seed_ = seed;
    offset_ = 0;
  }
  uint64_t seed() const { return seed_; }
  /// The counter the next draw starts at; save it with seed() to resume a stream exactly.
  uint64_t offset() const { return offset_; }
  void set_offset(uint64_t offset) { offset_ = offset; }
  /// Claims `n` counters and returns the first. Thread-safe, unlike the setters above: seed a
  /// generator before sharing it between threads.
  uint64_t reserve(uint64_t n);

 private:
  uint64_t seed_;
  alignas(8) uint64_t offset_ = 0;  // atomic in reserve(); microcontrollers have no 64-bit atomics
};

/// The global generator used when an op is given none.
Generator& default_generator();
/// Seeds the global generator (torch.manual_seed).
void manual_seed(uint64_t seed);

}  // namespace ember
