// Element conversion between Ember's C++ element types, without undefined behaviour: NaN and
// out-of-range floats saturate when cast to integers (PyTorch leaves these unspecified). Shared by
// the Cpu and Cuda kernels (EMBER_HD).
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include "ember/core/half.hpp"
#include "ember/core/host_device.hpp"

namespace ember {

template <class T>
inline constexpr bool is_half_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

/// The type arithmetic happens in: float for the 16-bit floats, else the type itself.
template <class T>
using Compute = std::conditional_t<is_half_v<T>, float, T>;

template <class To, class From>
EMBER_HD inline To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (is_half_v<From>) {
    return convert<To>(static_cast<float>(v));
  } else if constexpr (is_half_v<To>) {
    return To(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    if (!(v == v)) return To(0);
    constexpr double lo = static_cast<double>(std::numeric_limits<To>::min());
    constexpr double hi = static_cast<double>(std::numeric_limits<To>::max());
    const double d = static_cast<double>(v);
    if (d <= lo) return std::numeric_limits<To>::min();
    if (d >= hi) return std::numeric_limits<To>::max();
    return static_cast<To>(d);
  } else {
    return static_cast<To>(v);
  }
}

/// a + b as scatter_add and index_add accumulate: logical or on bool, wrap-around on integers
/// (computed unsigned, without signed-overflow UB), in the compute type on floats.
template <class T>
EMBER_HD inline T accumulate(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return a || b;
  } else if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return T(static_cast<Compute<T>>(a) + static_cast<Compute<T>>(b));
  }
}

}  // namespace ember
