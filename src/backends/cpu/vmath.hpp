// Branch-free float math that the compiler vectorises (std::exp does not vectorise without
// -ffast-math). Accuracy: within 2 ulp of the correctly rounded result over the whole range,
// including subnormal results, inf and NaN.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace ember::cpu {

inline float pow2i(int32_t e) {  // 2^e for e in [-126, 127]
  const uint32_t bits = static_cast<uint32_t>(e + 127) << 23;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

/// exp(x) for float: Cephes' range reduction and polynomial, scaled in two steps so results down
/// to the subnormal range stay exact.
inline float vexp(float x) {
  const float xc = x > 88.8f ? 88.8f : (x < -104.0f ? -104.0f : x);
  const float n = std::floor(xc * 1.44269504088896341f + 0.5f);
  float r = xc - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = p * r * r + r + 1.0f;
  const int32_t ni = static_cast<int32_t>(n);
  const int32_t e1 = ni / 2;
  const float res = y * pow2i(e1) * pow2i(ni - e1);
  return x != x ? x : res;
}

}  // namespace ember::cpu
