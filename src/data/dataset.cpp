// Dataset helpers compiled once: seeded permutations, range checks and their error messages.
#include "ember/data/dataset.hpp"

#include <cmath>

#include "ember/core/error.hpp"
#include "ember/core/philox.hpp"

namespace ember::data {

namespace detail {

void index_error(const char* what, size_t index, size_t size) {
  EMBER_FAIL("[", what, "] index ", index, " is out of range for a dataset of ", size, " items");
}

void check_range(const char* what, size_t begin, size_t end, size_t size) {
  EMBER_CHECK(begin <= end && end <= size, "[", what, "] range [", begin, ", ", end,
              ") is not inside a dataset of ", size, " items");
}

void check_positive(const char* what, const char* name, size_t value) {
  EMBER_CHECK(value >= 1, "[", what, "] ", name, " must be at least 1, got ", value);
}

}  // namespace detail

std::vector<size_t> permutation(size_t n, uint64_t seed, uint64_t stream) {
  std::vector<size_t> idx(n);
  for (size_t i = 0; i < n; ++i) idx[i] = i;
  // Philox counters: the stream in the high 24 bits, the draw in the low 40 (datasets of up to
  // 2^40 items). The swap partner of position i is a 64-bit draw scaled to [0, i] by a multiply
  // (bias below 2^-24 for any real dataset, and the same on every platform).
  const uint64_t base = stream << 40;
  for (size_t i = n; i > 1; --i) {
    const auto w = philox::block(seed, base + (i - 1));
    const uint64_t r = (static_cast<uint64_t>(w[0]) << 32) | w[1];
    const auto j = static_cast<size_t>((static_cast<unsigned __int128>(r) * i) >> 64);
    std::swap(idx[i - 1], idx[j]);
  }
  return idx;
}

size_t split_point(size_t n, double fraction) {
  EMBER_CHECK(fraction >= 0.0 && fraction <= 1.0, "[split] fraction must be in [0, 1], got ",
              fraction);
  return static_cast<size_t>(std::llround(static_cast<double>(n) * fraction));
}

}  // namespace ember::data
