// float32 math with the Cpu's (C's) conventions where GLSL leaves results undefined, for the
// default variants of unary.comp and binary.comp (division on every device; the rest where the
// device has no float64): division (correctly rounded), pow (y log2 x in exact pieces), fmod
// (exact), atan and atan2 (a few ulps), hypot. hypot's precision is the driver's square root.

float nan_value() { return uintBitsToFloat(0x7fc00000u); }
float inf_value() { return uintBitsToFloat(0x7f800000u); }
bool negative_bit(float v) { return (floatBitsToUint(v) >> 31) != 0u; }
// m (+0 or +inf) negated where `negative`, through its bits: NVIDIA's compiler folds a select
// between -0.0 and 0.0 to one of them (floor_divide gave -0 for +0 on an H100).
float signed_by(float m, bool negative) {
  return uintBitsToFloat(floatBitsToUint(m) | (negative ? 0x80000000u : 0u));
}

// x * 2^e, exactly where the result is a normal float, through powers of two built from their
// bits: a driver may compute ldexp as x * exp2(e), whose 2^e overflows (e past 127) or vanishes
// (e below -126) while the product would not (fmod's shifted divisors, hypot's rescaling).
float scale2(float x, int e) {
  for (int i = 0; i < 3 && e > 127; ++i) {
    x *= uintBitsToFloat(0x7f000000u);  // 2^127
    e -= 127;
  }
  for (int i = 0; i < 3 && e < -126; ++i) {
    x *= uintBitsToFloat(0x00800000u);  // 2^-126
    e += 126;
  }
  return x * uintBitsToFloat(uint(clamp(e, -126, 127) + 127) << 23u);
}

// |v| = m * 2^e with m in [0.5, 1), for a finite nonzero v, subnormals too: from the bits, since
// a driver may flush a subnormal to zero in any arithmetic (frexp's included).
float significand(float v, out int e) {
  uint b = floatBitsToUint(v) & 0x7fffffffu;
  if (b < 0x00800000u) {  // subnormal: b * 2^-149, its leading bit moved to the exponent's place
    const int top = findMSB(b);
    e = top - 148;
    b <<= uint(23 - top);
  } else {
    e = int(b >> 23u) - 126;
  }
  return uintBitsToFloat(0x3f000000u | (b & 0x007fffffu));
}

// a * b as hi + lo exactly, for a and b of moderate size (|a|, |b| below 2^100 and the product
// normal): Dekker's product of Veltkamp's halves, a product or a sum at a time. Not fma, which
// Vulkan lets a driver compute as a rounded product and a sum; `precise` keeps the compiler
// from fusing or reordering.
void two_product(float a, float b, out float hi, out float lo) {
  precise const float ca = 4097.0 * a, cb = 4097.0 * b;
  precise const float ah = ca - (ca - a), bh = cb - (cb - b);
  precise const float al = a - ah, bl = b - bh;
  precise const float h = a * b;
  precise const float l = ((ah * bh - h) + ah * bl + al * bh) + al * bl;
  hi = h;
  lo = l;
}

// |mx - q * my|, exactly where it is a float (as it is for q within an ulp or so of mx / my):
// q * my as hi + lo, and mx - hi exact (Sterbenz: hi is within a factor of 2 of mx).
float remainder_of(float mx, float my, float q) {
  float hi, lo;
  two_product(q, my, hi, lo);
  precise const float r = (mx - hi) - lo;
  return abs(r);
}

// x / y correctly rounded, as the Cpu's: Vulkan allows 2.5 ulps, and NVIDIA's division is
// x * (1 / y), an ulp off at times and 0 for |y| past 2^126 (floor_divide and atan2 of huge
// values went wrong on an H100). The significands' quotient by the driver, corrected once by its
// exact remainder (Newton's step), then the nearest of it and its neighbours by their exact
// remainders, then scaled; a subnormal quotient is rounded once, to its multiple of 2^-149, and
// written as bits (a driver that flushes subnormals would have flushed it in the scaling).
float div_of(float x, float y) {
  if (isnan(x) || isnan(y)) return nan_value();
  const bool negative = negative_bit(x) != negative_bit(y);
  const bool x_zero = (floatBitsToUint(x) & 0x7fffffffu) == 0u;
  const bool y_zero = (floatBitsToUint(y) & 0x7fffffffu) == 0u;
  if (isinf(x)) return isinf(y) ? nan_value() : signed_by(inf_value(), negative);
  if (y_zero) return x_zero ? nan_value() : signed_by(inf_value(), negative);
  if (isinf(y) || x_zero) return signed_by(0.0, negative);
  int ex, ey;
  const float mx = significand(x, ex), my = significand(y, ey);
  float q = mx / my;  // in (0.5, 2): where the driver's division keeps its 2.5 ulps
  float hi, lo;
  two_product(q, my, hi, lo);
  precise const float r = (mx - hi) - lo;
  precise const float refined = q + r / my;
  q = refined;
  const uint bits = floatBitsToUint(q);
  const float below = uintBitsToFloat(bits - 1u), above = uintBitsToFloat(bits + 1u);
  float best = remainder_of(mx, my, q);
  const float r_below = remainder_of(mx, my, below), r_above = remainder_of(mx, my, above);
  if (r_below < best) {
    q = below;
    best = r_below;
  }
  if (r_above < best) q = above;
  const int scale = ex - ey;
  if (scale >= (q >= 1.0 ? -126 : -125)) return signed_by(scale2(q, scale), negative);
  // Subnormal: the whole number c nearest to mx / my * 2^t (t = scale + 149, below 24), ties to
  // even, by the exact remainders of c - 1, c and c + 1; the float is then c's bits.
  const int t = scale + 149;
  if (t < -1) return signed_by(0.0, negative);  // under half the least subnormal
  const float scaled = scale2(mx, t), c = roundEven(scale2(q, t));  // both exact
  float nearest = c, least = remainder_of(scaled, my, c);
  for (int i = -1; i <= 1; i += 2) {
    const float other = c + float(i);
    if (other < 0.0) continue;
    const float r_other = remainder_of(scaled, my, other);
    if (r_other < least || (r_other == least && (uint(other) & 1u) == 0u)) {
      nearest = other;
      least = r_other;
    }
  }
  return signed_by(uintBitsToFloat(uint(nearest)), negative);
}

// x^y for a finite x > 0 and finite y, as 2^(y log2 x) with y log2 x carried in pieces: x =
// m 2^e with m in [sqrt(1/2), sqrt(2)), y e and y log2(m) each as an exact sum of two floats,
// their whole parts apart from their fractions. GLSL's pow is exp2(y * log2(x)), whose rounding
// of y log2 x (99.66 for 1e-30^-1) cost 4e-6 of the result on an H100. What remains is the
// driver's log2(m), rounded once (Vulkan allows 2^-21 absolute), times y, and its exp2 of a
// fraction: a few ulps for small exponents, about |y| ulps at worst for large ones.
float pow_positive(float x, float y) {
  if (x == 1.0) return 1.0;  // (-1)^y of an even y too
  // |log2 x| >= 2^-24 for any other float, so past 2^33 |y log2 x| > 512: 0 or inf. (A driver's
  // log2 near 1 may be 0, so the estimate below cannot tell; and it keeps two_product's y small.)
  if (abs(y) >= 8589934592.0) return (x > 1.0) == (y > 0.0) ? inf_value() : 0.0;
  int e;
  float m = significand(x, e);
  if (m < 0.70710678) {
    m *= 2.0;
    e -= 1;
  }
  const float lm = log2(m), fe = float(e);
  const float estimate = y * fe + y * lm;  // y log2 x, roughly; past 300 the result is 0 or inf
  if (!(abs(estimate) < 300.0)) return estimate > 0.0 ? inf_value() : 0.0;
  float ah, al, bh, bl;
  two_product(y, fe, ah, al);
  two_product(y, lm, bh, bl);
  const float na = roundEven(ah), nb = roundEven(bh);
  precise const float f = ((ah - na) + (bh - nb)) + (al + bl);  // each difference exact
  return scale2(exp2(f), int(na + nb));
}

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
    return signed_by(y > 0.0 ? 0.0 : inf_value(), odd && negative_bit(v));
  }
  if (isinf(y)) {
    const float a = abs(v);
    if (a == 1.0) return 1.0;
    return (a > 1.0) == (y > 0.0) ? inf_value() : 0.0;
  }
  if (isinf(v)) {  // -inf: +-inf or +-0 by the exponent's sign and parity
    return signed_by(y > 0.0 ? inf_value() : 0.0, v < 0.0 && odd);
  }
  if (v > 0.0) return pow_positive(v, y);
  if (!integer) return nan_value();
  const float m = pow_positive(-v, y);
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
  // At most one subtraction a binary place of the quotient (under 280): the bound keeps a
  // driver that flushes a subnormal step to zero from looping forever.
  for (int i = 0; i < 300 && r >= d; ++i) {
    frexp(r, er);
    float step = scale2(d, er - ed);
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
    r = atan_of(abs(div_of(y, x)));
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
  const float b = scale2(big, -e), s = scale2(small, -e);
  return scale2(sqrt(b * b + s * s), e);
}

// The special functions in float32, after the Cpu's (src/core/special_math.hpp, which computes
// them in double): within a few units of 1e-7 of the value's scale. Near digamma's and lgamma's
// roots their relative error grows, as any float32 evaluation's does.

// erfinv: Giles' single-precision approximation ("Approximating the erfinv function", 2010),
// which the Cpu refines in double.
float erfinv_of(float y) {
  if (!(abs(y) <= 1.0)) return nan_value();
  if (abs(y) == 1.0) return y * inf_value();
  float w = -log((1.0 - y) * (1.0 + y)), p;
  if (w < 5.0) {
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
    w = sqrt(w) - 3.0;
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
  return p * y;
}

// sin(pi x) and cos(pi x) by their Taylor series after reducing x by quarter turns (exact in
// float) to |r| <= 1/4, where the series stop short by under 1e-11: Vulkan asks little of a
// driver's sin and tan (NVIDIA's are good to about 5e-7 absolute, which near lgamma's and
// digamma's poles is most of a small sine), and integers give exact zeros.
vec2 sincos_pi(float x) {
  const float n = roundEven(2.0 * x);
  const float t = 3.14159265358979324 * (x - 0.5 * n), z = t * t;
  const float s =
      t * (1.0 + z * (-1.0 / 6.0 + z * (1.0 / 120.0 + z * (-1.0 / 5040.0 +
                                                         z * (1.0 / 362880.0 - z / 39916800.0)))));
  const float c =
      1.0 + z * (-0.5 + z * (1.0 / 24.0 + z * (-1.0 / 720.0 +
                                               z * (1.0 / 40320.0 - z / 3628800.0))));
  const float q = mod(n, 4.0);  // the quarter turns, in [0, 4)
  return q == 0.0 ? vec2(s, c) : q == 1.0 ? vec2(c, -s) : q == 2.0 ? vec2(-s, -c) : vec2(-c, s);
}

// lgamma: log |Gamma(x)|, inf at zero and the negative integers. Below 1/2 by reflection; above,
// raised past 8 by the recurrence (the product's log subtracted) for Stirling's series.
float lgamma_of(float x) {
  if (isnan(x)) return x;
  if (isinf(x)) return inf_value();
  float reflected = 0.0;  // lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x)
  const bool reflect = x < 0.5;
  if (reflect) {
    if (x == floor(x)) return inf_value();
    reflected = log(3.14159265358979324 / abs(sincos_pi(x).x));
    x = 1.0 - x;
  }
  float product = 1.0;
  while (x < 8.0) {
    product *= x;
    x += 1.0;
  }
  const float z = 1.0 / (x * x);
  const float series = (1.0 / 12.0 - z * (1.0 / 360.0 - z * (1.0 / 1260.0 - z / 1680.0))) / x;
  const float lg = (x - 0.5) * log(x) - x + 0.918938533204672742 + series - log(product);
  return reflect ? reflected - lg : lg;
}

// digamma, as the Cpu's: -inf at +0, +inf at -0, NaN at the negative integers; reflection below
// 0, the recurrence up to 10, then the asymptotic series.
float digamma_of(float x) {
  if (x == 0.0) return negative_bit(x) ? inf_value() : -inf_value();
  float result = 0.0;
  if (x < 0.0) {
    if (x == trunc(x)) return nan_value();
    // pi / tan(pi x) = pi cos(pi x) / sin(pi x), from the reduced series above: near a pole
    // the argument is reduced exactly, not near a multiple of pi, where float's pi is off by 1e-7.
    const vec2 sc = sincos_pi(x);
    result = -3.14159265358979324 * sc.y / sc.x;
    x = 1.0 - x;
  }
  while (x < 10.0) {
    result -= 1.0 / x;
    x += 1.0;
  }
  const float y = 1.0 / (x * x);
  const float series = y * (1.0 / 12.0 - y * (1.0 / 120.0 - y * (1.0 / 252.0 - y / 240.0)));
  return result + log(x) - 0.5 / x - series;
}

// The Hurwitz zeta function zeta(s, q) for s > 1 by Euler-Maclaurin summation, as the Cpu's.
float hurwitz_zeta_of(float s, float q) {
  if (s == 1.0) return inf_value();
  if (s < 1.0) return nan_value();
  if (q <= 0.0) {
    if (q == floor(q)) return inf_value();
    if (s != floor(s)) return nan_value();
  }
  float sum = pow_of(q, -s), a = q, term = 0.0;
  for (int i = 0; i < 9 || a <= 9.0;) {
    ++i;
    a += 1.0;
    term = pow_of(a, -s);
    sum += term;
    if (abs(term / sum) < 6e-8) return sum;
  }
  const float divisor[6] =
      float[6](12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9);
  sum += term * a / (s - 1.0) - 0.5 * term;
  float rising = 1.0, k = 0.0;
  for (int j = 0; j < 6; ++j) {
    rising *= s + k;
    term /= a;
    const float t = rising * term / divisor[j];
    sum += t;
    if (abs(t / sum) < 6e-8) break;
    k += 1.0;
    rising *= s + k;
    term /= a;
    k += 1.0;
  }
  return sum;
}

// polygamma(n, x) = (-1)^(n+1) n! zeta(n + 1, x) for n >= 1; digamma for n = 0.
float polygamma_of(int n, float x) {
  if (n == 0) return digamma_of(x);
  float factorial = 1.0;
  for (int i = 2; i <= n; ++i) factorial *= float(i);
  return ((n & 1) != 0 ? 1.0 : -1.0) * factorial * hurwitz_zeta_of(float(n) + 1.0, x);
}
