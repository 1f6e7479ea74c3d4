// An element's bits in the 32-bit variant of a shader, or in the 64-bit one (compiled with
// -DWIDE, which needs shaderInt64, and shaderFloat64 where FLOAT is used): WORD holds them,
// FLOAT and INT read them as a float or a signed integer of that width. The PAIR variant holds
// 64 bits as two 32-bit words (low, high) for devices without WIDE's features: it moves any
// 8-byte element, and does int64's arithmetic with the pair_ functions.
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : enable
#ifdef PAIR
#define WORD uvec2
uvec2 pair_add(uvec2 x, uvec2 y) {
  uint carry;
  const uint lo = uaddCarry(x.x, y.x, carry);
  return uvec2(lo, x.y + y.y + carry);
}
// The low 64 bits of the product, as int64 wraps.
uvec2 pair_mul(uvec2 x, uvec2 y) {
  uint hi, lo;
  umulExtended(x.x, y.x, hi, lo);
  return uvec2(lo, hi + x.x * y.y + x.y * y.x);
}
bool pair_less(uvec2 x, uvec2 y) { return int(x.y) < int(y.y) || (x.y == y.y && x.x < y.x); }
uvec2 pair_of(int v) { return uvec2(uint(v), v < 0 ? 0xffffffffu : 0u); }
bool pair_negative(uvec2 x) { return int(x.y) < 0; }
uvec2 pair_neg(uvec2 x) { return pair_add(~x, uvec2(1u, 0u)); }  // wraps at int64's minimum
uvec2 pair_sub(uvec2 x, uvec2 y) { return pair_add(x, pair_neg(y)); }
// Shifts by 0 to 63 bits; pair_shr is arithmetic (the sign fills).
uvec2 pair_shl(uvec2 x, uint n) {
  if (n == 0u) return x;
  return n >= 32u ? uvec2(0u, x.x << (n - 32u)) : uvec2(x.x << n, (x.y << n) | (x.x >> (32u - n)));
}
uvec2 pair_shr(uvec2 x, uint n) {
  if (n == 0u) return x;
  const uint fill = pair_negative(x) ? 0xffffffffu : 0u;
  return n >= 32u ? uvec2(uint(int(x.y) >> int(n - 32u)), fill)
                  : uvec2((x.x >> n) | (x.y << (32u - n)), uint(int(x.y) >> int(n)));
}
// Unsigned 64-bit division by shift and subtract (d not 0): the quotient, and the remainder
// into r.
uvec2 pair_udiv(uvec2 n, uvec2 d, out uvec2 r) {
  uvec2 q = uvec2(0u);
  r = uvec2(0u);
  for (int i = 63; i >= 0; --i) {
    const uint bit = i >= 32 ? (n.y >> uint(i - 32)) & 1u : (n.x >> uint(i)) & 1u;
    r = uvec2((r.x << 1u) | bit, (r.y << 1u) | (r.x >> 31u));
    if (r.y > d.y || (r.y == d.y && r.x >= d.x)) {
      r = pair_sub(r, d);
      if (i >= 32) q.y |= 1u << uint(i - 32); else q.x |= 1u << uint(i);
    }
  }
  return q;
}
// Signed division toward zero (d not 0 or -1), as C's / and %: the remainder into m.
uvec2 pair_div(uvec2 x, uvec2 y, out uvec2 m) {
  const bool xn = pair_negative(x), yn = pair_negative(y);
  uvec2 r;
  const uvec2 q = pair_udiv(xn ? pair_neg(x) : x, yn ? pair_neg(y) : y, r);
  m = xn ? pair_neg(r) : r;
  return xn != yn ? pair_neg(q) : q;
}
#elif defined(WIDE)
#define WORD uint64_t
#define FLOAT double
#define INT int64_t
#define AS_FLOAT(w) uint64BitsToDouble(w)
#define FLOAT_BITS(f) doubleBitsToUint64(f)
#define MAGNITUDE_BITS 0x7fffffffffffffffUL
#define ALL_BITS 0xffffffffffffffffUL
#define WIDTH 64L
#else
#define WORD uint
#define FLOAT float
#define INT int
#define AS_FLOAT(w) uintBitsToFloat(w)
#define FLOAT_BITS(f) floatBitsToUint(f)
#define MAGNITUDE_BITS 0x7fffffffu
#define ALL_BITS 0xffffffffu
#define WIDTH 32
#endif
