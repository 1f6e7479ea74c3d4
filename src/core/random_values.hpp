// The values of Ember's random fills, element by element, from the Philox words of that element:
// shared by the Cpu and Cuda kernels (EMBER_HD), so that a seed gives the same tensor on both.
// Element i of a draw takes philox::block(seed, offset + i); normal elements 2j and 2j + 1 share
// counter offset + 2j and take the two halves of one Box-Muller pair.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "convert.hpp"
#include "ember/core/backend.hpp"
#include "ember/core/host_device.hpp"
#include "ember/core/philox.hpp"

namespace ember::random_values {

using Words = std::array<uint32_t, 4>;

/// A uniform in [0, 1) with the precision of T: 53 bits for f64, 24 otherwise.
template <class T>
EMBER_HD double unit(const Words& w) {
  if constexpr (std::is_same_v<T, double>) {
    return philox::to_unit_double(w[0], w[1]);
  } else {
    return static_cast<double>(philox::to_unit_float(w[0]));
  }
}

/// The largest T below v (v finite).
template <class T>
EMBER_HD T next_below(T v) {
  if constexpr (is_half_v<T>) {
    // Sign-magnitude bits: a positive value steps down by one, a negative one up; 0 goes to -0+.
    const uint16_t b = v.bits;
    if ((b & 0x7fffu) == 0) return T::from_bits(0x8001u);
    return T::from_bits(static_cast<uint16_t>((b & 0x8000u) ? b + 1 : b - 1));
  } else {
    return std::nextafter(v, -std::numeric_limits<T>::infinity());
  }
}

/// a + (b - a) * u in [a, b).
template <class T>
struct Uniform {
  double a, span;
  T below;  // the largest T below b: rounding a + span * u to T can land on b (often, in 16 bits)
  Compute<T> hi;

  explicit Uniform(const RandomParams& p)
      : a(p.a), span(p.b - p.a), below(T{}), hi(static_cast<Compute<T>>(convert<T>(p.b))) {
    if constexpr (std::is_floating_point_v<Compute<T>>) below = next_below(convert<T>(p.b));
  }
  EMBER_HD T operator()(const Words& w) const {
    const T v = convert<T>(a + span * unit<T>(w));
    if constexpr (std::is_floating_point_v<Compute<T>>) {
      return span > 0 && static_cast<Compute<T>>(v) >= hi ? below : v;
    } else {
      return v;
    }
  }
};

/// The pair of normals of words w (elements 2j and 2j + 1).
template <class T>
struct Normal {
  double mean, std;

  explicit Normal(const RandomParams& p) : mean(p.a), std(p.b) {}
  EMBER_HD void operator()(const Words& w, T& z0, T& z1) const {
    // u1 = 1 - u is in (0, 1], so log(u1) is finite.
    const double u1 = 1.0 - philox::to_unit_double(w[0], w[1]);
    const double u2 = philox::to_unit_double(w[2], w[3]);
    double n0, n1;
    philox::box_muller(u1, u2, n0, n1);
    z0 = convert<T>(mean + std * n0);
    z1 = convert<T>(mean + std * n1);
  }
};

/// An integer in [lo, hi), modulo 64 random bits: the bias is below range / 2^64, invisible for
/// any practical range.
template <class T>
struct RandInt {
  int64_t lo;
  uint64_t range;

  RandInt(int64_t low, int64_t high)
      : lo(low), range(static_cast<uint64_t>(high) - static_cast<uint64_t>(low)) {}
  EMBER_HD T operator()(const Words& w) const {
    const uint64_t bits = (static_cast<uint64_t>(w[0]) << 32) | w[1];
    const int64_t v = static_cast<int64_t>(static_cast<uint64_t>(lo) + bits % range);
    if constexpr (std::is_integral_v<T>) {
      return convert<T>(v);
    } else {
      return convert<T>(static_cast<double>(v));
    }
  }
};

/// 1 with probability p.
template <class T>
struct Bernoulli {
  double p;

  EMBER_HD T operator()(const Words& w) const {
    return convert<T>(philox::to_unit_double(w[0], w[1]) < p ? 1 : 0);
  }
};

}  // namespace ember::random_values
