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
#elif defined(WIDE)
#define WORD uint64_t
#define FLOAT double
#define INT int64_t
#define AS_FLOAT(w) uint64BitsToDouble(w)
#define FLOAT_BITS(f) doubleBitsToUint64(f)
#define MAGNITUDE_BITS 0x7fffffffffffffffUL
#define ALL_BITS 0xffffffffffffffffUL
#else
#define WORD uint
#define FLOAT float
#define INT int
#define AS_FLOAT(w) uintBitsToFloat(w)
#define FLOAT_BITS(f) floatBitsToUint(f)
#define MAGNITUDE_BITS 0x7fffffffu
#define ALL_BITS 0xffffffffu
#endif
