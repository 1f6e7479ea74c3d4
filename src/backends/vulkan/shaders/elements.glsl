// Elements of every dtype in 32-bit words, held as double (floats) or int64 (integers and Bool),
// for the shaders that take any dtype (WIDE-only: they need shaderInt64 and shaderFloat64). Type
// codes as convert.comp's (convert_code in vulkan_backend.cpp). Element offsets count elements of
// the type from the binding's start; 1- and 2-byte elements sit in words little-endian.
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#include "half.glsl"

const uint T_F32 = 0u, T_I32 = 1u, T_U8 = 2u, T_I8 = 3u, T_BOOL = 4u, T_F16 = 5u, T_BF16 = 6u,
           T_I64 = 7u, T_F64 = 8u;

uint t_size(uint t) { return t >= T_I64 ? 8u : (t <= T_I32 ? 4u : (t >= T_F16 ? 2u : 1u)); }
bool t_float(uint t) { return t == T_F32 || t == T_F16 || t == T_BF16 || t == T_F64; }

// The bits of element `at` of type t in buffer `buf` (a uint array), right-aligned.
#define LOAD_BITS(buf, t, at)                                                                \
  (t_size(t) == 8u   ? (uint64_t(buf[2u * (at)]) | (uint64_t(buf[2u * (at) + 1u]) << 32))   \
   : t_size(t) == 4u ? uint64_t(buf[at])                                                    \
   : t_size(t) == 2u ? uint64_t((buf[(at) >> 1u] >> (16u * ((at) & 1u))) & 0xffffu)         \
                     : uint64_t((buf[(at) >> 2u] >> (8u * ((at) & 3u))) & 0xffu))

// Writes bits (right-aligned) as element `at` of type t; 1- and 2-byte elements with atomics on
// their word, so that invocations writing its other bytes may run at the same time.
#define STORE_BITS(buf, t, at, bits)                                                          \
  {                                                                                           \
    const uint64_t v_ = (bits);                                                               \
    if (t_size(t) == 8u) {                                                                    \
      buf[2u * (at)] = uint(v_);                                                              \
      buf[2u * (at) + 1u] = uint(v_ >> 32);                                                   \
    } else if (t_size(t) == 4u) {                                                             \
      buf[at] = uint(v_);                                                                     \
    } else {                                                                                  \
      const bool h_ = t_size(t) == 2u;                                                        \
      const uint sh_ = h_ ? 16u * ((at) & 1u) : 8u * ((at) & 3u);                             \
      const uint m_ = (h_ ? 0xffffu : 0xffu) << sh_;                                          \
      const uint w_ = h_ ? (at) >> 1u : (at) >> 2u;                                           \
      atomicAnd(buf[w_], ~m_);                                                                \
      atomicOr(buf[w_], (uint(v_) << sh_) & m_);                                              \
    }                                                                                         \
  }

// A float element's value (t_float(t)).
// float32 bits as a double, exactly: subnormals from their bits, since a device that flushes
// float32 subnormals (NVIDIA's) reads them as zero through a float conversion.
double f32_value(uint b) {
  if ((b & 0x7f800000u) != 0u) return double(uintBitsToFloat(b));  // normal, inf or NaN
  const double m = ldexp(double(b & 0x007fffffu), -149);             // exact
  return (b & 0x80000000u) != 0u ? -m : m;
}

// A double as float32 bits, rounded to nearest even; subnormal results by integer rounding,
// for the same reason.
uint f32_bits(double v) {
  const double a = abs(v);
  if (!(a < 1.1754943508222875e-38LF)) return floatBitsToUint(float(v));  // normal, inf, NaN
  const uint m = uint(roundEven(ldexp(a, 149)));  // 2^23 (the smallest normal) at the top
  return (v < 0.0LF || (v == 0.0LF && doubleBitsToUint64(v) != 0UL) ? 0x80000000u : 0u) | m;
}

double float_value(uint t, uint64_t bits) {
  if (t == T_F64) return uint64BitsToDouble(bits);
  if (t == T_F32) return f32_value(uint(bits));
  if (t == T_F16) return double(half_to_float(uint(bits)));
  return f32_value(uint(bits) << 16u);  // BF16
}

// An integer or Bool element's value.
int64_t int_value(uint t, uint64_t bits) {
  if (t == T_I32) return int64_t(int(uint(bits)));
  if (t == T_I8) return int64_t(bitfieldExtract(int(uint(bits)), 0, 8));
  if (t == T_BOOL) return bits != 0UL ? 1L : 0L;
  return int64_t(bits);  // U8, I64
}

// Whether an element is not zero, from its bits (a float comparison may flush subnormals); NaN
// is not zero.
bool truthy(uint t, uint64_t bits) {
  if (t == T_F64) return (bits & 0x7fffffffffffffffUL) != 0UL;
  if (t == T_F32) return (bits & 0x7fffffffUL) != 0UL;
  if (t == T_F16 || t == T_BF16) return (bits & 0x7fffUL) != 0UL;
  return bits != 0UL;
}

// A float value as element bits of float type t (the 16-bit floats through float32, as the Cpu).
uint64_t float_bits(uint t, double v) {
  if (t == T_F64) return doubleBitsToUint64(v);
  if (t == T_F32) return uint64_t(f32_bits(v));
  const float f = float(v);
  if (t == T_F16) return uint64_t(to_f16(f));
  return uint64_t(to_bf16(f));  // BF16
}

// An integer value as element bits of integer type t: wrapped to its width; Bool is "not zero".
uint64_t int_bits(uint t, int64_t v) {
  if (t == T_BOOL) return v != 0L ? 1UL : 0UL;
  return uint64_t(v);  // the writer keeps the type's low bytes
}
