// How a scatter kernel folds an update into its destination element, for every ScatterReduce
// (Cpu and Cuda share it, EMBER_HD). Max and min propagate NaN from either side, as PyTorch's
// scatter_reduce amax/amin do; on bool, * is and, max is or, min is and.
#pragma once

#include "convert.hpp"
#include "ember/core/ops.hpp"

namespace ember {

template <ScatterReduce R, class T>
EMBER_HD inline T scatter_combine(T d, T v) {
  using C = Compute<T>;
  if constexpr (R == ScatterReduce::None) {
    return v;
  } else if constexpr (R == ScatterReduce::Add) {
    return accumulate(d, v);
  } else if constexpr (std::is_same_v<T, bool>) {
    return R == ScatterReduce::Max ? (d || v) : (d && v);
  } else if constexpr (R == ScatterReduce::Mul) {
    if constexpr (std::is_integral_v<T>) {  // wraps, computed without signed-overflow UB
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(static_cast<U>(d) * static_cast<U>(v)));
    } else {
      return T(static_cast<C>(d) * static_cast<C>(v));
    }
  } else {
    const C a = static_cast<C>(d), b = static_cast<C>(v);
    if constexpr (!std::is_integral_v<C>) {
      if (b != b) return v;  // a NaN update wins; a NaN d stays (the comparisons are false)
    }
    if constexpr (R == ScatterReduce::Max) {
      return b > a ? v : d;
    } else {
      return b < a ? v : d;
    }
  }
}

}  // namespace ember
