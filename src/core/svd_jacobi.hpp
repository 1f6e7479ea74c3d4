// One-sided (Hestenes) Jacobi SVD, the pieces the Cpu and Cuda kernels share (EMBER_HD): the
// round-robin order of column pairs and the rotation that makes one pair orthogonal. Both
// backends run the same rotations in the same order in double, so their singular vectors agree,
// signs included, up to rounding.
//
// The method: the columns w_j of the (tall) matrix are rotated in pairs until every pair is
// orthogonal; then s_j = |w_j|, u_j = w_j / s_j, and the product of the rotations is V. It gets
// small singular values to high relative accuracy, which matrix_norm(-2) needs.
#pragma once

#include <cmath>
#include <cstdint>

#include "ember/core/host_device.hpp"

namespace ember::jacobi {

/// Sweeps before giving up (double converges in well under 20 for any size seen in tests).
inline constexpr int kMaxSweeps = 60;

/// The columns a pair of steps work on: n rounded up to even (the odd one out sits a step out).
EMBER_HD inline int64_t padded(int64_t n) { return n + (n & 1); }

/// Pair i (0 <= i < padded / 2) of round-robin step t (0 <= t < padded - 1): column 0 stays put,
/// the others turn one place per step, so each pair of columns meets once per sweep and the
/// pairs of one step are disjoint (the Cuda kernel rotates them at once). A column >= n is the
/// padding: skip the pair.
EMBER_HD inline void pair(int64_t padded_n, int64_t t, int64_t i, int64_t* a, int64_t* b) {
  const int64_t turn = padded_n - 1;
  auto at = [&](int64_t pos) { return pos == 0 ? int64_t{0} : (pos - 1 + t) % turn + 1; };
  const int64_t x = at(i), y = at(padded_n - 1 - i);
  *a = x < y ? x : y;
  *b = x < y ? y : x;
}

/// The relative tolerance on |w_a . w_b| / (|w_a| |w_b|), LAPACK's sqrt(rows) * eps.
EMBER_HD inline double tolerance(int64_t rows) {
  return std::sqrt(static_cast<double>(rows > 1 ? rows : 1)) * 2.220446049250313e-16;
}

/// The rotation [c -s; s c] that makes columns with squared norms alpha, beta and dot product
/// gamma orthogonal (w_a' = c w_a - s w_b, w_b' = s w_a + c w_b); false when they already are.
EMBER_HD inline bool rotation(double alpha, double beta, double gamma, double tol, double* c,
                              double* s) {
  if (!(std::fabs(gamma) > tol * std::sqrt(alpha * beta))) return false;  // also NaN: stop
  const double zeta = (beta - alpha) / (2 * gamma);
  const double t = (zeta >= 0 ? 1.0 : -1.0) / (std::fabs(zeta) + std::hypot(1.0, zeta));
  *c = 1 / std::sqrt(1 + t * t);
  *s = *c * t;
  return true;
}

}  // namespace ember::jacobi
