// Integer element arithmetic with PyTorch's results and no undefined behaviour, shared by the Cpu
// and Cuda kernels (EMBER_HD).
#pragma once

#include <type_traits>

#include "ember/core/host_device.hpp"

namespace ember {

/// v < 0, without the "pointless comparison" warning for unsigned types.
template <class T>
EMBER_HD constexpr bool negative(T v) {
  if constexpr (std::is_signed_v<T>) {
    return v < 0;
  } else {
    return false;
  }
}

/// base ** exp with wrap-around; a negative exponent gives 0 except for bases 1 and -1.
template <class C>
EMBER_HD C int_pow(C base, C exp) {
  if (negative(exp)) {
    if (base == 1) return C(1);
    if (negative(base) && base == C(-1)) return (exp & 1) ? base : C(1);
    return C(0);
  }
  // Products in an unsigned type at least as wide as unsigned int (narrower ones promote to int,
  // where they too could overflow): wrapping, without the signed overflow UBSan reports.
  using W = std::conditional_t<(sizeof(C) < sizeof(unsigned)), unsigned, std::make_unsigned_t<C>>;
  C result = 1;
  while (exp) {
    if (exp & 1) result = static_cast<C>(W(result) * W(base));
    base = static_cast<C>(W(base) * W(base));
    exp >>= 1;
  }
  return result;
}

}  // namespace ember
