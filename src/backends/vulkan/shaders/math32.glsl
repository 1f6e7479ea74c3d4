// float32 math with the Cpu's (C's) conventions where GLSL leaves results undefined, for the
// default variants of unary.comp and binary.comp, which serve devices without float64: pow,
// fmod (exact), atan and atan2 (a few ulps), hypot. pow's precision is the driver's exp2 and
// log2, hypot's its square root.

float nan_value() { return uintBitsToFloat(0x7fc00000u); }
float inf_value() { return uintBitsToFloat(0x7f800000u); }
bool negative_bit(float v) { return (floatBitsToUint(v) >> 31) != 0u; }

// x^y as C's pow: y = 2 is x * x and y = 0.5 the square root (as the Cpu computes them), x^0
// and 1^y are 1 (even for NaN), a zero base gives a zero or an infinity signed for an odd
// integer exponent, and a negative base keeps its sign's parity for an integer exponent and is
// NaN for any other (GLSL's pow is defined for x > 0 only).
float pow_of(float v, float y) {
  if (y == 0.0 || v == 1.0) return 1.0;
  if (isnan(v) || isnan(y)) return nan_value();
  if (y == 1.0) return v;
  if (y == 2.0) return v * v;
  if (y == 0.5 && v > 0.0 && !isinf(v)) return sqrt(v);
  const bool integer = y == floor(y);
  const bool odd = integer && abs(y) < 16777216.0 && mod(y, 2.0) != 0.0;
  if (v == 0.0) {
    const float m = y > 0.0 ? 0.0 : inf_value();
    return odd && negative_bit(v) ? -m : m;
  }
  if (isinf(y)) {
    const float a = abs(v);
    if (a == 1.0) return 1.0;
    return (a > 1.0) == (y > 0.0) ? inf_value() : 0.0;
  }
  if (isinf(v)) {  // -inf: +-inf or +-0 by the exponent's sign and parity
    const float m = y > 0.0 ? inf_value() : 0.0;
    return v < 0.0 && odd ? -m : m;
  }
  if (v > 0.0) return pow(v, y);
  if (!integer) return nan_value();
  const float m = pow(-v, y);
  return odd ? -m : m;
}

// C's fmod, exactly: |a| less the largest multiples of |b| times powers of two that fit (each
// subtraction exact), with a's sign.
float fmod_of(float a, float b) {
  if (isnan(a) || isnan(b) || isinf(a) || b == 0.0) return nan_value();
  if (isinf(b) || a == 0.0) return a;
  float r = abs(a);
  const float d = abs(b);
  int ed, er;
  frexp(d, ed);
  while (r >= d) {
    frexp(r, er);
    float step = ldexp(d, er - ed);
    if (step > r) step *= 0.5;
    r -= step;
  }
  return a < 0.0 ? -r : r;
}

// atan to a few ulps (drivers' own are far coarser: lavapipe's was off by 28 ulps at 1): the
// argument reduced to |x| <= tan(pi/8) by the tangent's addition formulas, then an odd
// polynomial (Cephes' atanf coefficients).
float atan_of(float v) {
  const float a = abs(v);
  float base = 0.0, t = a;
  if (a > 2.41421356237309505) {  // tan(3 pi / 8)
    base = 1.57079632679489662;
    t = -1.0 / a;
  } else if (a > 0.414213562373095049) {  // tan(pi / 8)
    base = 0.785398163397448310;
    t = (a - 1.0) / (a + 1.0);
  }
  const float z = t * t;
  const float r = base + ((((8.05374449538e-2 * z - 1.38776856032e-1) * z + 1.99777106478e-1) * z -
                           3.33329491539e-1) * z * t + t);
  return negative_bit(v) ? -r : r;  // atan(-0) is -0; NaN stays NaN
}

// atan2(y, x) with C's conventions for zeros, infinities and signs.
float atan2_of(float y, float x) {
  if (isnan(x) || isnan(y)) return nan_value();
  const float pi = 3.14159265358979324, half_pi = 1.57079632679489662;
  float r;
  if (y == 0.0) {
    r = negative_bit(x) ? pi : 0.0;
  } else if (x == 0.0) {
    r = half_pi;
  } else if (isinf(x) && isinf(y)) {
    r = x < 0.0 ? 2.35619449019234492 : 0.785398163397448310;
  } else if (isinf(x)) {
    r = x < 0.0 ? pi : 0.0;
  } else if (isinf(y)) {
    r = half_pi;
  } else {
    r = atan_of(abs(y / x));
    if (x < 0.0) r = pi - r;
  }
  return negative_bit(y) ? -r : r;
}

// hypot: inf wins over NaN; scaled by a power of two so that the squares neither overflow nor
// vanish.
float hypot_of(float x, float y) {
  if (isinf(x) || isinf(y)) return inf_value();
  if (isnan(x) || isnan(y)) return nan_value();
  const float big = max(abs(x), abs(y)), small = min(abs(x), abs(y));
  if (big == 0.0) return 0.0;
  int e;
  frexp(big, e);
  const float b = ldexp(big, -e), s = ldexp(small, -e);
  return ldexp(sqrt(b * b + s * s), e);
}
