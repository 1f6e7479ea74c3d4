// Binary ops over strided (broadcast: stride 0, or negative) operands of rank up to 6, written to
// a contiguous output; the op is a specialisation constant (binary_code() in vulkan_backend.cpp),
// so that each op's pipeline holds its own code alone (as unary.comp's). The
// default variant does the arithmetic of float32 and int32 (is_int), the WIDE one (word.glsl)
// that of float64 and int64, the PAIR one int64's addition, subtraction, multiplication, maximum,
// minimum and bitwise ops in two 32-bit words (for devices without WIDE's shaderInt64 and
// shaderFloat64), and the ANY one (elements.glsl) every op on every dtype. Integer
// arithmetic wraps, as the Cpu's; integers are not divided (the front end divides them in
// float).
#version 450
#extension GL_GOOGLE_include_directive : require
#ifdef ANY
#include "elements.glsl"
#include "math64.glsl"
#endif
#include "word.glsl"
#if !defined(ANY) && !defined(WIDE) && !defined(PAIR)
#include "math32.glsl"
#endif
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint OP = 0u;
#ifdef ANY  // every dtype, read and written as elements.glsl's
layout(std430, set = 0, binding = 0) readonly buffer A { uint a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { uint b[]; };
layout(std430, set = 0, binding = 2) buffer Out { uint o[]; };
#else
layout(std430, set = 0, binding = 0) readonly buffer A { WORD a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { WORD b[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Out { WORD o[]; };
#endif
layout(push_constant) uniform Params {
  uint count, rank, op, out_base;
  uint a_base, b_base, is_int, type;  // type (ANY): the dtype (convert_code)
  uint shape[6];
  int a_stride[6];
  int b_stride[6];
} p;

#ifdef PAIR
uvec2 apply(uint op, uvec2 x, uvec2 y) {
  switch (op) {
    case 0u: return pair_add(x, y);
    case 1u: return pair_add(x, pair_add(~y, uvec2(1u, 0u)));  // x + (-y)
    case 2u: return pair_mul(x, y);
    case 4u: return pair_less(x, y) ? y : x;
    case 5u: return pair_less(y, x) ? y : x;
    case 8u: {  // int_pow: products wrap, negative exponents give 0 but for bases 1 and -1
      const uvec2 one = uvec2(1u, 0u);
      if (pair_negative(y)) {
        if (x == one) return one;
        return x == uvec2(0xffffffffu) ? ((y.x & 1u) != 0u ? x : one) : uvec2(0u);
      }
      uvec2 r = one, b = x;
      for (uvec2 e = y; e != uvec2(0u); e = pair_shr(e, 1u)) {
        if ((e.x & 1u) != 0u) r = pair_mul(r, b);
        b = pair_mul(b, b);
      }
      return r;
    }
    case 11u:
    case 12u: {  // remainder and fmod: 0 for a zero divisor (the front end reports it) and -1
      if (y == uvec2(0u) || y == uvec2(0xffffffffu)) return uvec2(0u);
      uvec2 m;
      pair_div(x, y, m);
      const bool adjust = op == 11u && m != uvec2(0u) && pair_negative(y) != pair_negative(m);
      return adjust ? pair_add(m, y) : m;
    }
    case 13u: {  // floor_divide
      if (y == uvec2(0u)) return y;
      if (y == uvec2(0xffffffffu)) return pair_neg(x);
      uvec2 m;
      const uvec2 q = pair_div(x, y, m);
      const bool adjust = m != uvec2(0u) && pair_negative(y) != pair_negative(m);
      return adjust ? pair_sub(q, uvec2(1u, 0u)) : q;
    }
    case 14u: return x & y;
    case 15u: return x | y;
    case 16u: return x ^ y;
    case 17u: return pair_negative(y) || y.y != 0u || y.x >= 64u ? uvec2(0u) : pair_shl(x, y.x);
    case 18u:  // arithmetic; past the width the sign fills it
      if (pair_negative(y) || y.y != 0u || y.x >= 64u) {
        return pair_negative(x) ? uvec2(0xffffffffu) : uvec2(0u);
      }
      return pair_shr(x, y.x);
  }
  return uvec2(0u);
}
#else
FLOAT apply_float(uint op, FLOAT x, FLOAT y) {
  switch (op) {
    case 0u: return x + y;
    case 1u: return x - y;
    case 2u: return x * y;
#if !defined(ANY) && !defined(WIDE)
    case 3u: return div_of(x, y);  // correctly rounded (math32.glsl), as the Cpu's
#else
    case 3u: return x / y;
#endif
    // NaN propagates, as PyTorch's; otherwise the Cpu's select (maximum(+0, -0) is -0)
    case 4u: return (isnan(x) || isnan(y)) ? x + y : (x > y ? x : y);
    case 5u: return (isnan(x) || isnan(y)) ? x + y : (x < y ? x : y);
    case 6u: return y <= 0.0 ? 0.0 : x;  // relu_backward(grad, y): a NaN y passes the grad
    case 7u: return AS_FLOAT((FLOAT_BITS(x) & MAGNITUDE_BITS) | (FLOAT_BITS(y) & ~MAGNITUDE_BITS));
#if !defined(ANY) && !defined(WIDE)
    // float32 on a device without float64 (math32.glsl; with it, the ANY variant's double)
    case 8u: return pow_of(x, y);
    case 9u: return atan2_of(x, y);
    case 10u: return hypot_of(x, y);
    case 11u: {  // remainder: the divisor's sign (Python's %), from the exact fmod
      const float m = fmod_of(x, y);
      return m != 0.0 && ((y < 0.0) != (m < 0.0)) ? m + y : m;
    }
    case 12u: return fmod_of(x, y);
    case 13u: {  // floor_divide, as special::floor_divide
      if (y == 0.0) {  // x / y, spelled out: Vulkan leaves a division by zero undefined
        if (x == 0.0 || isnan(x)) return nan_value();
        return negative_bit(x) != negative_bit(y) ? -inf_value() : inf_value();
      }
      const float m = fmod_of(x, y);
      float q = div_of(x - m, y);
      if (m != 0.0 && ((y < 0.0) != (m < 0.0))) q -= 1.0;
      if (q == 0.0) return signed_by(0.0, negative_bit(x) != negative_bit(y));
      const float f = floor(q);
      return q - f > 0.5 ? f + 1.0 : f;
    }
#endif
  }
  return 0.0;
}

WORD apply(uint op, WORD xb, WORD yb) {
  if (p.is_int == 0u) {
    return FLOAT_BITS(apply_float(op, AS_FLOAT(xb), AS_FLOAT(yb)));
  }
  const INT x = INT(xb), y = INT(yb);
  switch (op) {
    case 0u: return WORD(x + y);
    case 1u: return WORD(x - y);
    case 2u: return WORD(x * y);
    case 4u: return WORD(max(x, y));
    case 5u: return WORD(min(x, y));
    case 8u: {  // int_pow: products wrap, negative exponents give 0 but for bases 1 and -1
      if (y < INT(0)) {
        return WORD(x == INT(1) ? INT(1)
                                : (x == INT(-1) ? ((y & INT(1)) != INT(0) ? x : INT(1)) : INT(0)));
      }
      INT r = INT(1), b = x;
      for (INT e = y; e != INT(0); e >>= 1) {
        if ((e & INT(1)) != INT(0)) r *= b;
        b *= b;
      }
      return WORD(r);
    }
    case 11u:
    case 12u: {  // remainder and fmod: 0 for a zero divisor (the front end reports it) and -1
      if (y == INT(0) || y == INT(-1)) return WORD(0);
      const INT m = x - (x / y) * y;  // division toward zero
      return WORD(op == 11u && m != INT(0) && ((y < INT(0)) != (m < INT(0))) ? m + y : m);
    }
    case 13u: {  // floor_divide; by -1 it wraps
      if (y == INT(0)) return WORD(0);
      if (y == INT(-1)) return WORD(-x);
      const INT q = x / y, m = x - q * y;
      return WORD(m != INT(0) && ((y < INT(0)) != (m < INT(0))) ? q - INT(1) : q);
    }
    case 14u: return xb & yb;  // bitwise and, or, xor
    case 15u: return xb | yb;
    case 16u: return xb ^ yb;
    case 17u: return WORD(y < INT(0) || y >= WIDTH ? INT(0) : x << y);
    case 18u:  // arithmetic; past the width the sign fills it
      return WORD(y < INT(0) || y >= WIDTH ? (x < INT(0) ? INT(-1) : INT(0)) : x >> y);
  }
  return WORD(0);
}
#endif

#ifdef ANY
// C's fmod in double, exactly: |a| less the largest multiples of |b| times powers of two that fit
// (each subtraction exact), with a's sign.
double fmod_exact(double a, double b) {
  if (isnan(a) || isnan(b) || isinf(a) || b == 0.0) return m64_nan();
  if (isinf(b) || a == 0.0) return a;
  double r = abs(a);
  const double d = abs(b);
  int ed, er;
  frexp(d, ed);
  for (int i = 0; i < 2200 && r >= d; ++i) {  // bounded, as math32.glsl's fmod_of
    frexp(r, er);
    double step = ldexp(d, er - ed);
    if (step > r) step *= 0.5;
    r -= step;
  }
  return a < 0.0 ? -r : r;
}

// Every binary op on every dtype: floats in double (math64.glsl), rounded to their type after;
// integers and Bool in int64 (the store wraps them to the dtype; Bool is "not zero"), with the
// Cpu's integer conventions (special_math.hpp, int_math.hpp).
uint64_t apply_any(uint op, uint t, uint64_t xb, uint64_t yb) {
  if (t_float(t)) {
    const double x = float_value(t, xb), y = float_value(t, yb);
    const bool nan = isnan(x) || isnan(y);
    double r;
    switch (op) {
      case 0u: r = x + y; break;
      case 1u: r = x - y; break;
      case 2u: r = x * y; break;
      case 3u: r = x / y; break;
      case 4u: r = nan ? x + y : (x > y ? x : y); break;
      case 5u: r = nan ? x + y : (x < y ? x : y); break;
      case 6u: r = y <= 0.0 ? 0.0 : x; break;
      case 7u: r = uint64BitsToDouble((doubleBitsToUint64(x) & 0x7fffffffffffffffUL) |
                                      (doubleBitsToUint64(y) & 0x8000000000000000UL));
               break;
      case 8u: r = m64_pow(x, y); break;
      case 9u: r = m64_atan2(x, y); break;
      case 10u: {  // hypot: inf wins over NaN; scaled so that the squares neither overflow nor
                   // vanish
        const double ax = abs(x), ay = abs(y), big = max(ax, ay), small = min(ax, ay);
        if (isinf(x) || isinf(y)) {
          r = m64_inf();
        } else if (nan) {
          r = m64_nan();
        } else if (big == 0.0) {
          r = 0.0;
        } else {
          const double q = small / big;
          r = big * sqrt(1.0 + q * q);
        }
        break;
      }
      case 11u: {  // remainder: the divisor's sign (Python's %)
        r = fmod_exact(x, y);
        if (r != 0.0 && ((y < 0.0) != (r < 0.0))) r += y;
        break;
      }
      case 12u: r = fmod_exact(x, y); break;
      default: {  // floor_divide, as special::floor_divide
        if (y == 0.0) {
          r = x / y;
          break;
        }
        const double m = fmod_exact(x, y);
        double q = (x - m) / y;
        if (m != 0.0 && ((y < 0.0) != (m < 0.0))) q -= 1.0;
        if (q == 0.0) {
          r = uint64BitsToDouble(doubleBitsToUint64(x / y) & (1UL << 63));  // signed zero, as above
          break;
        }
        const double f = floor(q);
        r = q - f > 0.5 ? f + 1.0 : f;
        break;
      }
    }
    return float_bits(t, r);
  }
  const int64_t x = int_value(t, xb), y = int_value(t, yb);
  const int64_t width = int64_t(8u * t_size(t));
  switch (op) {
    case 0u: return int_bits(t, x + y);
    case 1u: return int_bits(t, x - y);
    case 2u: return int_bits(t, x * y);
    case 4u: return int_bits(t, max(x, y));
    case 5u: return int_bits(t, min(x, y));
    case 8u: {  // int_pow: products wrap, negative exponents give 0 but for bases 1 and -1
      if (y < 0L) return int_bits(t, x == 1L ? 1L : (x == -1L ? ((y & 1L) != 0L ? -1L : 1L) : 0L));
      int64_t r = 1L, b = x;
      for (int64_t e = y; e != 0L; e >>= 1) {
        if ((e & 1L) != 0L) r *= b;
        b *= b;
      }
      return int_bits(t, r);
    }
    case 11u:
    case 12u: {  // remainder and fmod: 0 for a zero divisor (the front end reports it) and -1
      if (y == 0L || y == -1L) return 0UL;
      const int64_t m = x - (x / y) * y;
      return int_bits(t, op == 11u && m != 0L && ((y < 0L) != (m < 0L)) ? m + y : m);
    }
    case 13u: {  // floor_divide
      if (y == 0L) return 0UL;
      if (y == -1L) return int_bits(t, -x);
      const int64_t q = x / y, m = x - q * y;
      return int_bits(t, m != 0L && ((y < 0L) != (m < 0L)) ? q - 1L : q);
    }
    case 14u: return int_bits(t, x & y);
    case 15u: return int_bits(t, x | y);
    case 16u: return int_bits(t, x ^ y);
    case 17u: return int_bits(t, y < 0L || y >= width ? 0L : x << y);
  }
  // bitwise_right_shift: arithmetic (x is sign-extended); past the width, the sign fills it
  return int_bits(t, y < 0L || y >= width ? (x < 0L ? -1L : 0L) : x >> y);
}
#endif

void main() {
  const uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += step) {
    uint rest = i;
    int ia = int(p.a_base), ib = int(p.b_base);
    for (int d = int(p.rank) - 1; d >= 0; --d) {
      const int c = int(rest % p.shape[d]);
      rest /= p.shape[d];
      ia += c * p.a_stride[d];
      ib += c * p.b_stride[d];
    }
#ifdef ANY
    const uint64_t r =
        apply_any(OP, p.type, LOAD_BITS(a, p.type, uint(ia)), LOAD_BITS(b, p.type, uint(ib)));
    STORE_BITS(o, p.type, p.out_base + i, r);
#else
    o[p.out_base + i] = apply(OP, a[ia], b[ib]);
#endif
  }
}
