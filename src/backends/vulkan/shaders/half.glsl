// float16 and bfloat16 to and from float32 by bit manipulation, as the Cpu converts
// (core/half.hpp): GLSL's packHalf2x16 leaves rounding to the driver and unpackHalf2x16 may flush
// subnormals.
// float16 bits to float32, by bit manipulation: unpackHalf2x16 may flush subnormals.
float half_to_float(uint h) {
  const uint sign = (h & 0x8000u) << 16u, e = (h >> 10u) & 0x1fu, m = h & 0x3ffu;
  if (e == 0u) {  // zero or subnormal: m * 2^-24, a normal float32 (exact)
    return uintBitsToFloat(sign | floatBitsToUint(float(m) * 5.9604644775390625e-8));
  }
  if (e == 31u) return uintBitsToFloat(sign | 0x7f800000u | (m << 13u));  // inf, NaN
  return uintBitsToFloat(sign | ((e + 112u) << 23u) | (m << 13u));
}

// float32 to bfloat16 bits, round to nearest even; NaN stays a (quiet) NaN.
uint to_bf16(float f) {
  const uint b = floatBitsToUint(f);
  if (isnan(f)) return (b >> 16u) | 0x40u;
  return (b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u;
}

// float32 to float16 bits, round to nearest even, overflow to inf, NaN kept (packHalf2x16's
// rounding is left to the driver, so it is done here).
uint to_f16(float f) {
  const uint b = floatBitsToUint(f);
  const uint sign = (b >> 16u) & 0x8000u;
  const uint mag = b & 0x7fffffffu;
  if (mag >= 0x7f800000u) return sign | 0x7c00u | (mag > 0x7f800000u ? 0x200u : 0u);
  if (mag >= 0x477ff000u) return sign | 0x7c00u;  // rounds past 65504: inf
  if (mag < 0x38800000u) {  // a subnormal half (or zero): the value in units of 2^-24
    const float scaled = uintBitsToFloat(mag) * 16777216.0;  // exact: a power of two
    const float r = roundEven(scaled);
    return sign | uint(r);
  }
  const uint e = (mag >> 23u) - 112u;  // the half's exponent field
  const uint m = mag & 0x7fffffu;
  uint h = (e << 10u) | (m >> 13u);
  const uint rest = m & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u) == 1u)) h += 1u;  // carries into e
  return sign | h;
}
