// dst = src converted where either is int64 and neither float64, on a device without the
// shaderInt64 and shaderFloat64 of convert.comp's WIDE variant: int64 held in two 32-bit words
// (word.glsl's PAIR), converted as the Cpu converts (core/convert.hpp): into narrower integers
// by wrapping, into Bool as "not zero", into floats rounded once to nearest even (float16 and
// bfloat16 through float32, as the Cpu), and floats into int64 by truncation, saturating (NaN
// gives 0). An element an invocation, through dst_stride; elements under 4 bytes written with
// atomics on their word, whose other bytes other invocations may write. arange (iota 1): the
// values start + (first + i) * step as int64 (the host's integral start and step, exact as the
// Cpu's double sums are below 2^53), into narrower integers saturating as the Cpu's double
// does; iota 2: in float32 (a non-integral step), within a rounding of the Cpu's double.
#version 450
#extension GL_GOOGLE_include_directive : require
#define PAIR
#include "word.glsl"
#include "half.glsl"
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) readonly buffer Src { uint src[]; };
layout(std430, set = 0, binding = 1) buffer Dst { uint dst[]; };
layout(push_constant) uniform Params {  // convert.comp's, up to its iota values
  uint count, rank, src_base, dst_byte;   // src_base in source elements, dst_byte in bytes
  uint src_type, dst_type, strided, iota;
  uint shape[6];
  int stride[6];
  int dst_stride[6];
  uint first, pad1;    // arange: this piece's first element (a tensor wider than a binding)
  uvec2 start, step;  // arange's: int64 pairs (iota 1) or float32 bits in .x (iota 2)
} p;

const uint F32 = 0u, I32 = 1u, U8 = 2u, I8 = 3u, BOOL = 4u, F16 = 5u, BF16 = 6u, I64 = 7u;

uint size_of(uint t) { return t >= I64 ? 8u : (t <= I32 ? 4u : (t >= F16 ? 2u : 1u)); }

uvec2 negated(uvec2 v) { return pair_add(~v, uvec2(1u, 0u)); }

// An int64 as the nearest float: its 32 leading bits with the bits below them folded into the
// lowest (they only break ties there, far below float32's rounding bit), then one rounding.
float float_of(uvec2 v) {
  const bool neg = int(v.y) < 0;
  const uvec2 m = neg ? negated(v) : v;  // -2^63 stays 2^63 as unsigned
  float f = float(m.x);
  if (m.y != 0u) {
    const int shift = findMSB(m.y) + 1;  // m >> shift has 32 bits
    const uint top = shift == 32 ? m.y : (m.y << (32 - shift)) | (m.x >> shift);
    const uint below = shift == 32 ? m.x : m.x << (32 - shift);
    f = ldexp(float(top | uint(below != 0u)), shift);
  }
  return neg ? -f : f;
}

// A float into int64: truncated, saturating at int64's ends, NaN 0. Exact: an integer-valued
// float at or above 2^32 splits into its high and low words without rounding.
uvec2 int64_of(float f) {
  if (isnan(f)) return uvec2(0u);
  if (f <= -9223372036854775808.0) return uvec2(0u, 0x80000000u);
  if (f >= 9223372036854775808.0) return uvec2(0xffffffffu, 0x7fffffffu);
  const float t = trunc(abs(f));
  const float hi = floor(t * (1.0 / 4294967296.0));
  const uvec2 m = uvec2(uint(t - hi * 4294967296.0), uint(hi));
  return f < 0.0 ? negated(m) : m;
}

float float_value(uint t, uint bits) {
  if (t == F32) return uintBitsToFloat(bits);
  if (t == F16) return half_to_float(bits);
  return uintBitsToFloat(bits << 16u);  // BF16
}

// Source element `at` (bits right-aligned; an int64 as its pair).
uvec2 load(uint at, uint size) {
  if (size == 8u) return uvec2(src[2u * at], src[2u * at + 1u]);
  if (size == 4u) return uvec2(src[at], 0u);
  if (size == 2u) return uvec2((src[at >> 1u] >> (16u * (at & 1u))) & 0xffffu, 0u);
  return uvec2((src[at >> 2u] >> (8u * (at & 3u))) & 0xffu, 0u);
}

// A float into an integer type of at most 32 bits as the Cpu's convert(): NaN 0, saturating.
uint small_int_of(float f, uint t) {
  if (isnan(f)) return 0u;
  const float lo = t == I32 ? -2147483648.0 : (t == U8 ? 0.0 : -128.0);
  const float hi = t == I32 ? 2147483647.0 : (t == U8 ? 255.0 : 127.0);
  if (f <= lo) return t == I32 ? 0x80000000u : uint(int(lo));
  if (f >= hi) return t == I32 ? 0x7fffffffu : uint(int(hi));
  return uint(int(trunc(f)));
}

// The destination's bits of a float value (arange's float32 path).
uvec2 from_float(float f) {
  const uint d = p.dst_type;
  if (d == I64) return int64_of(f);
  if (d == F32) return uvec2(floatBitsToUint(f), 0u);
  if (d == F16) return uvec2(to_f16(f), 0u);
  if (d == BF16) return uvec2(to_bf16(f), 0u);
  if (d == BOOL) return uvec2(uint((floatBitsToUint(f) & 0x7fffffffu) != 0u), 0u);
  return uvec2(small_int_of(f, d), 0u);
}

// An int64 into a narrower integer type, saturating (arange's integers, which the Cpu computes
// in double and converts with saturation).
uvec2 saturated(uvec2 v, uint t) {
  if (t != I32 && t != U8 && t != I8) return v;
  const int lo = t == I32 ? int(0x80000000u) : (t == U8 ? 0 : -128);
  const int hi = t == I32 ? 0x7fffffff : (t == U8 ? 255 : 127);
  if (pair_less(v, pair_of(lo))) return pair_of(lo);
  if (pair_less(pair_of(hi), v)) return pair_of(hi);
  return v;
}

// The destination's bits of the bits of a source element of type s.
uvec2 converted(uint s, uvec2 bits) {
  const uint d = p.dst_type;
  if (s == d) return bits;
  if (d == I64) {
    if (s == I32) return pair_of(int(bits.x));
    if (s == I8) return pair_of(bitfieldExtract(int(bits.x), 0, 8));
    if (s == BOOL) return uvec2(uint(bits.x != 0u), 0u);
    if (s == U8) return bits;
    return int64_of(float_value(s, bits.x));
  }
  // from int64
  if (d == BOOL) return uvec2(uint(bits != uvec2(0u)), 0u);
  if (d == I32 || d == U8 || d == I8) return uvec2(bits.x, 0u);  // wrapped by the store
  const float f = float_of(bits);
  if (d == F32) return uvec2(floatBitsToUint(f), 0u);
  return uvec2(d == F16 ? to_f16(f) : to_bf16(f), 0u);
}

void main() {
  const uint ssize = size_of(p.src_type), dsize = size_of(p.dst_type);
  const uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += step) {
    uint rest = i;
    int from = int(p.src_base);
    uint to = p.dst_byte / dsize;
    for (int d = int(p.rank) - 1; d >= 0; --d) {
      const uint c = rest % p.shape[d];
      rest /= p.shape[d];
      from += int(c) * p.stride[d];
      to += uint(int(c) * p.dst_stride[d]);
    }
    uvec2 v;
    if (p.iota == 1u) {
      const uvec2 value = pair_add(p.start, pair_mul(uvec2(p.first + i, 0u), p.step));
      v = converted(I64, saturated(value, p.dst_type));
    } else if (p.iota == 2u) {
      v = from_float(uintBitsToFloat(p.start.x) + float(p.first + i) * uintBitsToFloat(p.step.x));
    } else {
      v = converted(p.src_type, load(uint(from), ssize));
    }
    if (dsize == 8u) {
      dst[2u * to] = v.x;
      dst[2u * to + 1u] = v.y;
    } else if (dsize == 4u) {
      dst[to] = v.x;
    } else {
      const uint shift = 8u * ((to * dsize) & 3u), mask = ((1u << (8u * dsize)) - 1u) << shift;
      atomicAnd(dst[(to * dsize) >> 2u], ~mask);
      atomicOr(dst[(to * dsize) >> 2u], (v.x << shift) & mask);
    }
  }
}
