// Scalar: a number given to an op (x + 1.0f, full(..., 7), clamp(x, 0, 6)). Remembers whether it
// was written as an integer, a float or a bool so type promotion follows PyTorch.
#pragma once

#include <cstdint>
#include <type_traits>

#include "ember/core/dtype.hpp"

namespace ember {

class Scalar {
 public:
  Scalar() = default;
  Scalar(bool v) : f_(v), i_(v), kind_(KindId::Bool) {}  // NOLINT: numbers convert implicitly
  template <class T>
  requires(std::is_integral_v<T> && !std::is_same_v<T, bool>) Scalar(T v)
      : f_(static_cast<double>(v)), i_(static_cast<int64_t>(v)), kind_(KindId::Int) {}  // NOLINT
  template <class T>
  requires std::is_floating_point_v<T> Scalar(T v)
      : f_(static_cast<double>(v)), i_(saturate(f_)), kind_(KindId::Float) {}  // NOLINT
  Scalar(Half v) : Scalar(static_cast<float>(v)) {}                            // NOLINT
  Scalar(BFloat16 v) : Scalar(static_cast<float>(v)) {}                        // NOLINT

  KindId kind() const { return kind_; }
  double to_double() const { return f_; }
  int64_t to_int() const { return i_; }
  bool to_bool() const { return kind_ == KindId::Float ? f_ != 0.0 : i_ != 0; }

  /// The value as C++ type T (integers keep all 64 bits; no rounding through double).
  template <class T>
  T to() const {
    if constexpr (std::is_same_v<T, bool>) {
      return to_bool();
    } else if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(to_int());
    } else {
      return static_cast<T>(f_);
    }
  }

 private:
  // A float's integer value: truncated, saturated at int64's bounds, 0 for NaN (casting a double
  // outside int64's range is undefined behaviour, and scalars such as -inf are common: masks).
  static constexpr int64_t saturate(double v) {
    if (v != v) return 0;
    if (v >= 9223372036854775807.0) return INT64_MAX;
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return static_cast<int64_t>(v);
  }

  double f_ = 0.0;
  int64_t i_ = 0;
  KindId kind_ = KindId::Float;
};

}  // namespace ember
