// Branch-free float math that the compiler vectorises (std::exp does not vectorise without
// -ffast-math). Accuracy: within 2 ulp of the correctly rounded result over the whole range,
// including subnormal results, inf and NaN.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace ember::cpu {

[[gnu::always_inline]] inline float pow2i(int32_t e) {  // 2^e for e in [-126, 127]
  return std::bit_cast<float>(static_cast<uint32_t>(e + 127) << 23);
}

/// exp(x) for float: Cephes' range reduction and polynomial, scaled in two steps so results down
/// to the subnormal range stay exact. Written without branches, calls or float-to-int
/// conversions so GCC vectorises loops over it (with -fno-trapping-math, set for the backend).
[[gnu::always_inline]] inline float vexp(float x) {
  float xc = x < -104.0f ? -104.0f : x;
  xc = xc > 88.8f ? 88.8f : xc;
  // Adding 1.5 * 2^23 rounds to an integer held in the low mantissa bits: n without a cvt.
  constexpr float kShifter = 12582912.0f;
  const float t = xc * 1.44269504088896341f + kShifter;
  const float n = t - kShifter;
  const int32_t ni = std::bit_cast<int32_t>(t) - std::bit_cast<int32_t>(kShifter);
  float r = xc - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = p * r * r + r + 1.0f;
  const int32_t e1 = ni >> 1;
  const float res = y * pow2i(e1) * pow2i(ni - e1);
  return x != x ? x : res;
}

/// tanh(x) for float, branch-free: 1 - 2 / (exp(2|x|) + 1) with x's sign where |x| >= 0.5 (no
/// cancellation there: tanh >= 0.46), the odd Taylor series to x^15 below (its first omitted
/// term is under 2e-9 of tanh(0.5)). Saturates to +-1, keeps the sign of zero, passes NaN.
[[gnu::always_inline]] inline float vtanh(float x) {
  const float a = std::fabs(x);
  const float big = 1.0f - 2.0f / (vexp(2.0f * (a < 20.0f ? a : 20.0f)) + 1.0f);
  const float x2 = x * x;
  float p = -0.0014558343870513183f;  // -929569 / 638512875
  p = p * x2 + 0.0035921280365724811f;
  p = p * x2 - 0.0088632355299021966f;
  p = p * x2 + 0.021869488536155203f;
  p = p * x2 - 0.053968253968253968f;
  p = p * x2 + 0.13333333333333333f;
  p = p * x2 - 0.33333333333333333f;
  const float small = x * (1.0f + x2 * p);  // keeps the sign of -0
  const float r = a < 0.5f ? small : std::copysign(big, x);
  return x != x ? x : r;
}

/// erf(x) for float, branch-free: x + x Q(x^2) below 1, 1 - exp(-x^2) R(1/x) from 1 on with
/// x's sign (Q and R minimax fits, relative errors 1.2e-9 and 1.5e-8; |x| is clamped at 4, where
/// 1 - erfc rounds to 1). Within 2 ulp of the correctly rounded result (std::erf does not
/// vectorise: 17 ms of MiniLM's batch of 32 went to it); keeps the sign of zero, passes NaN.
[[gnu::always_inline]] inline float verf(float x) {
  const float a = std::fabs(x);
  const float t = x * x;
  float q = 7.853979e-05f;
  q = q * t - 0.00080102327f;
  q = q * t + 0.0051883324f;
  q = q * t - 0.026853815f;
  q = q * t + 0.112835854f;
  q = q * t - 0.37612626f;
  q = q * t + 0.12837917f;  // 2 / sqrt(pi) - 1: x + x q keeps x's own bits in the sum
  const float small = x + x * q;
  const float b = a < 1.0f ? 1.0f : (a > 4.0f ? 4.0f : a);
  const float u = 1.0f / b;
  float r = 0.030713676f;
  r = r * u - 0.17971103f;
  r = r * u + 0.43823567f;
  r = r * u - 0.536942f;
  r = r * u + 0.2383279f;
  r = r * u + 0.2303986f;
  r = r * u - 0.37586436f;
  r = r * u + 0.020536132f;
  r = r * u + 0.56176794f;
  r = r * u + 0.00012108025f;  // erfc(b) exp(b^2)
  const float big = std::copysign(1.0f - vexp(-b * b) * r, x);
  const float res = a < 1.0f ? small : big;
  return x != x ? x : res;
}

}  // namespace ember::cpu
