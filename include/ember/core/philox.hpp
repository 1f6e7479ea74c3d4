// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"): a counter-based
// generator, so element i of a draw depends only on (seed, offset + i). Results are the same
// whatever the thread count or backend.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

#include "ember/core/host_device.hpp"

namespace ember::philox {

EMBER_HD inline std::array<uint32_t, 4> round10(std::array<uint32_t, 4> c, uint64_t key) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  for (int r = 0; r < 10; ++r) {
    const uint64_t p0 = static_cast<uint64_t>(kM0) * c[0];
    const uint64_t p1 = static_cast<uint64_t>(kM1) * c[2];
    c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k0, static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k1, static_cast<uint32_t>(p0)};
    k0 += kW0;
    k1 += kW1;
  }
  return c;
}

/// Four 32-bit random words for counter `n` under `key`.
EMBER_HD inline std::array<uint32_t, 4> block(uint64_t key, uint64_t n) {
  return round10({static_cast<uint32_t>(n), static_cast<uint32_t>(n >> 32), 0u, 0u}, key);
}

/// Uniform in [0, 1) with 24 random bits (float) or 53 (double).
EMBER_HD inline float to_unit_float(uint32_t x) { return static_cast<float>(x >> 8) * 0x1.0p-24f; }
EMBER_HD inline double to_unit_double(uint32_t hi, uint32_t lo) {
  const uint64_t v = (static_cast<uint64_t>(hi) << 21) ^ (lo >> 11);
  return static_cast<double>(v & ((uint64_t{1} << 53) - 1)) * 0x1.0p-53;
}

/// A standard normal pair from two uniforms (Box-Muller); u1 in (0, 1].
EMBER_HD inline void box_muller(double u1, double u2, double& z0, double& z1) {
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double t = 6.283185307179586 * u2;
  z0 = r * std::cos(t);
  z1 = r * std::sin(t);
}

}  // namespace ember::philox
