// 16-bit floating types stored as raw bits; arithmetic happens in float (Ember computes f16 and
// bf16 in f32 and rounds on store, as PyTorch's CPU kernels do).
#pragma once

#include <cstdint>
#include <cstring>

#include "ember/core/host_device.hpp"

namespace ember {

namespace detail {
EMBER_HD inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
EMBER_HD inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
}  // namespace detail

/// IEEE 754 binary16.
struct Half {
  uint16_t bits = 0;

  Half() = default;
  EMBER_HD Half(float f) : bits(from_float(f)) {}  // NOLINT: implicit like a built-in float type
  EMBER_HD operator float() const { return to_float(bits); }  // NOLINT

  EMBER_HD static Half from_bits(uint16_t b) {
    Half h;
    h.bits = b;
    return h;
  }

  EMBER_HD static float to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0x1f) return detail::bits_float(sign | 0x7f800000u | (mant << 13));  // inf / nan
    if (exp != 0) return detail::bits_float(sign | ((exp + 112) << 23) | (mant << 13));
    if (mant == 0) return detail::bits_float(sign);
    // Subnormal: value = mant * 2^-24.
    float f = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return sign ? -f : f;
  }

  // Round to nearest even, with overflow to inf and gradual underflow.
  EMBER_HD static uint16_t from_float(float f) {
    uint32_t x = detail::float_bits(f);
    const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
    x &= 0x7fffffffu;
    if (x >= 0x7f800000u) return sign | (x > 0x7f800000u ? 0x7e00u : 0x7c00u);
    if (x >= 0x477ff000u) return sign | 0x7c00u;  // rounds past 65504
    if (x < 0x38800000u) {                        // below the smallest normal half
      // Adding 0.5 (as a float) shifts the mantissa so the FPU rounds it for us.
      const float magic = detail::bits_float(0x3f000000u);
      const float r = detail::bits_float(x) + magic;
      return sign | static_cast<uint16_t>(detail::float_bits(r) - 0x3f000000u);
    }
    const uint32_t odd = (x >> 13) & 1u;
    x += 0xc8000fffu + odd;  // rebias exponent (-112 << 23) and round to nearest even
    return sign | static_cast<uint16_t>(x >> 13);
  }
};

/// bfloat16: the top half of a float32.
struct BFloat16 {
  uint16_t bits = 0;

  BFloat16() = default;
  EMBER_HD BFloat16(float f) : bits(from_float(f)) {}  // NOLINT
  EMBER_HD operator float() const {
    return detail::bits_float(static_cast<uint32_t>(bits) << 16);
  }  // NOLINT

  EMBER_HD static BFloat16 from_bits(uint16_t b) {
    BFloat16 h;
    h.bits = b;
    return h;
  }
  EMBER_HD static uint16_t from_float(float f) {
    uint32_t x = detail::float_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
      return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet nan
    x += 0x7fffu + ((x >> 16) & 1u);                    // round to nearest even
    return static_cast<uint16_t>(x >> 16);
  }
};

}  // namespace ember
