// Special functions and PyTorch's division conventions, shared by the Cpu and Cuda kernels
// (EMBER_HD). The special functions compute in double whatever the tensor's dtype: they are
// rare in models and float would lose digits near digamma's root and erfinv's tails.
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>

#include "ember/core/host_device.hpp"

namespace ember::special {

inline constexpr double kPi = 3.14159265358979323846;

/// digamma(x) = d/dx log Gamma(x), with PyTorch's values at the poles: -inf at +0, +inf at -0,
/// NaN at the negative integers.
EMBER_HD inline double digamma(double x) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (x == 0) return std::signbit(x) ? kInf : -kInf;
  double result = 0;
  if (x < 0) {
    if (x == std::trunc(x)) return std::numeric_limits<double>::quiet_NaN();
    // Reflection: psi(x) = psi(1 - x) - pi / tan(pi x); the argument reduced to (-1, 0] first
    // keeps tan accurate for large |x|.
    result = -kPi / std::tan(kPi * (x - std::trunc(x)));
    x = 1 - x;
  }
  // Recurrence psi(x) = psi(x + 1) - 1/x up to x >= 10, then the asymptotic series
  // psi(x) ~ ln x - 1/(2x) - sum B_2k / (2k x^2k), whose terms are negligible there.
  while (x < 10) {
    result -= 1 / x;
    x += 1;
  }
  const double y = 1 / (x * x);
  const double series =
      y * (1.0 / 12 - y * (1.0 / 120 -
                           y * (1.0 / 252 -
                                y * (1.0 / 240 - y * (1.0 / 132 - y * (691.0 / 32760 - y / 12))))));
  return result + std::log(x) - 0.5 / x - series;
}

/// The Hurwitz zeta function zeta(s, q) = sum_k (k + q)^-s for s > 1, by Euler-Maclaurin
/// summation: a direct sum until the terms are small, then the Bernoulli tail.
EMBER_HD inline double hurwitz_zeta(double s, double q) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  constexpr double kEps = 1.1102230246251565e-16;
  if (s == 1) return kInf;
  if (s < 1) return std::numeric_limits<double>::quiet_NaN();
  if (q <= 0) {
    if (q == std::floor(q)) return kInf;
    if (s != std::floor(s)) return std::numeric_limits<double>::quiet_NaN();
  }
  double sum = std::pow(q, -s), a = q, term = 0;
  for (int i = 0; i < 9 || a <= 9;) {
    ++i;
    a += 1;
    term = std::pow(a, -s);
    sum += term;
    if (std::fabs(term / sum) < kEps) return sum;
  }
  // Tail: integral + half the last term + sum_k B_2k / (2k)! * s(s+1)...(s+2k-2) a^(-s-2k+1).
  // The divisors are (2k)! / B_2k.
  constexpr double kDivisor[] = {12.0,
                                 -720.0,
                                 30240.0,
                                 -1209600.0,
                                 47900160.0,
                                 -1.8924375803183791606e9,
                                 7.47242496e10,
                                 -2.950130727918164224e12,
                                 1.1646782814350067249e14,
                                 -4.5979787224074726105e15,
                                 1.8152105401943546773e17,
                                 -7.1661652561756670113e18};
  sum += term * a / (s - 1) - 0.5 * term;
  double rising = 1, k = 0;
  for (double divisor : kDivisor) {
    rising *= s + k;
    term /= a;
    const double t = rising * term / divisor;
    sum += t;
    if (std::fabs(t / sum) < kEps) break;
    k += 1;
    rising *= s + k;
    term /= a;
    k += 1;
  }
  return sum;
}

/// polygamma(n, x), the n-th derivative of digamma: (-1)^(n+1) n! zeta(n + 1, x) for n >= 1.
EMBER_HD inline double polygamma(int n, double x) {
  if (n == 0) return digamma(x);
  double factorial = 1;
  for (int i = 2; i <= n; ++i) factorial *= i;
  return ((n % 2) ? 1.0 : -1.0) * factorial * hurwitz_zeta(n + 1.0, x);
}

/// The inverse error function: Giles' single-precision approximation ("Approximating the erfinv
/// function", 2010) refined by two Newton steps on erf to double precision.
EMBER_HD inline double erfinv(double y) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (!(std::fabs(y) <= 1)) return std::numeric_limits<double>::quiet_NaN();
  if (std::fabs(y) == 1) return y * kInf;
  double w = -std::log((1 - y) * (1 + y)), p;
  if (w < 5) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = std::sqrt(w) - 3;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  double x = p * y;
  for (int i = 0; i < 2; ++i) {
    // 2 / sqrt(pi) = 1.1283791670955126
    x -= (std::erf(x) - y) / (1.1283791670955126 * std::exp(-x * x));
  }
  return x;
}

// PyTorch's floating division conventions, computed from fmod so that they are exact.

/// remainder: the result has the divisor's sign (Python's %).
template <class C>
EMBER_HD C remainder(C a, C b) {
  C m = std::fmod(a, b);
  if (m != C(0) && ((b < C(0)) != (m < C(0)))) m += b;
  return m;
}

/// floor_divide: floor(a / b) as Python's //, consistent with remainder; a / b where b is 0.
template <class C>
EMBER_HD C floor_divide(C a, C b) {
  if (b == C(0)) return a / b;
  const C m = std::fmod(a, b);
  C q = (a - m) / b;
  if (m != C(0) && ((b < C(0)) != (m < C(0)))) q -= C(1);
  if (q == C(0)) return std::copysign(C(0), a / b);
  const C f = std::floor(q);
  return q - f > C(0.5) ? f + C(1) : f;
}

// Integer division without undefined behaviour: a zero divisor (which the front end reports)
// gives 0, and min / -1 wraps as two's complement.

template <class T>
EMBER_HD T int_fmod(T a, T b) {
  if (b == T(0)) return T(0);
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return T(0);
  }
  return static_cast<T>(a % b);
}

template <class T>
EMBER_HD T int_remainder(T a, T b) {
  const T m = int_fmod(a, b);
  if constexpr (std::is_signed_v<T>) {
    if (m != T(0) && ((b < T(0)) != (m < T(0)))) return static_cast<T>(m + b);
  }
  return m;
}

template <class T>
EMBER_HD T int_floor_divide(T a, T b) {
  if (b == T(0)) return T(0);
  using U = std::make_unsigned_t<T>;
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return static_cast<T>(U(0) - U(a));
    const T q = static_cast<T>(a / b), m = static_cast<T>(a % b);
    return (m != T(0) && ((b < T(0)) != (m < T(0)))) ? static_cast<T>(q - 1) : q;
  } else {
    return static_cast<T>(a / b);
  }
}

}  // namespace ember::special
