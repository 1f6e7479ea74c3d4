// A range check (Backend::check_range): whether any value of a strided operand of rank up to 6
// lies outside [lo, hi] (NaN is outside), compared in double as the Cpu compares. One workgroup
// scans the operand, invocation t every 256th element, and merges in shared memory; invocation 0
// writes the result slot: the extremes of the bad values as order-preserving 64-bit keys (integer
// operands: the value with its sign bit flipped; floats: their bits made to order), whether a
// NaN and whether any bad value was seen, and what the keys are (1: integers, 0: doubles, 2:
// float32 bits in the high word). No atomics. Needs shaderInt64 and shaderFloat64, but for the
// PAIR variant: integers compared as keys in two words (lo and hi the host's integer bounds),
// float32 as 32-bit keys (-0 as +0; lo and hi the keys of the host's float bounds, which decide
// every float as the Cpu's double comparison, subnormals included); no float64.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "word.glsl"
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) readonly buffer X { uint x[]; };
#ifdef PAIR
#define KEY uvec2  // (low, high): ordered by the high word, then the low one
#else
#define KEY uint64_t
#endif
layout(std430, set = 0, binding = 1) writeonly buffer Slot { KEY slot[]; };
layout(push_constant) uniform Params {
  uint count, rank, base, type;  // type: 0 f32, 1 i32, 2 f64, 3 i64, 4 u8, 5 i8 or Bool
  uint slot_at, pad0;            // the slot's first 64-bit word
#ifdef PAIR
  uvec2 lo, hi;  // keys of the bounds: integers' in two words, float32's in .x
#else
  double lo, hi;
#endif
  uint shape[6];
  int stride[6];
} p;

shared KEY s_min[256];
shared KEY s_max[256];
shared uint s_flags[256];  // 1: bad, 2: NaN

#ifdef PAIR
bool key_less(uvec2 a, uvec2 b) { return a.y < b.y || (a.y == b.y && a.x < b.x); }
uvec2 key_min(uvec2 a, uvec2 b) { return key_less(b, a) ? b : a; }
uvec2 key_max(uvec2 a, uvec2 b) { return key_less(a, b) ? b : a; }
const KEY kNoLow = uvec2(0xffffffffu), kNoHigh = uvec2(0u);

// Element `at`'s flags (1: outside, 3: NaN) and key.
uint classify(int at, out uvec2 key) {
  uvec2 v = uvec2(0u);
  switch (p.type) {
    case 0u: {
      const uint u = x[at] == 0x80000000u ? 0u : x[at];
      const uint k = (u & 0x80000000u) != 0u ? ~u : (u | 0x80000000u);
      key = uvec2(0u, k);
      if ((u & 0x7fffffffu) > 0x7f800000u) return 3u;  // NaN
      return k < p.lo.x || k > p.hi.x ? 1u : 0u;
    }
    case 1u: v = pair_of(int(x[at])); break;
    case 3u: v = uvec2(x[2 * at], x[2 * at + 1]); break;
    case 4u: v = uvec2((x[at >> 2] >> (8 * (at & 3))) & 0xffu, 0u); break;
    case 5u: v = pair_of(bitfieldExtract(int(x[at >> 2]), 8 * (at & 3), 8)); break;
  }
  key = uvec2(v.x, v.y ^ 0x80000000u);
  return key_less(key, p.lo) || key_less(p.hi, key) ? 1u : 0u;
}
#else
#define key_min min
#define key_max max
const KEY kNoLow = ~0UL, kNoHigh = 0UL, kSign = 0x8000000000000000UL;

uint classify(int at, out uint64_t key) {
  const bool integral = p.type == 1u || p.type >= 3u;
  int64_t iv = 0L;
  double fv = 0.0;
  switch (p.type) {
    case 0u: fv = double(uintBitsToFloat(x[at])); break;
    case 1u: iv = int64_t(int(x[at])); break;
    case 2u: fv = uint64BitsToDouble(uint64_t(x[2 * at]) | (uint64_t(x[2 * at + 1]) << 32)); break;
    case 3u: iv = int64_t(uint64_t(x[2 * at]) | (uint64_t(x[2 * at + 1]) << 32)); break;
    case 4u: iv = int64_t((x[at >> 2] >> (8 * (at & 3))) & 0xffu); break;
    case 5u: iv = int64_t(bitfieldExtract(int(x[at >> 2]), 8 * (at & 3), 8)); break;
  }
  const double v = integral ? double(iv) : fv;
  const uint64_t u = doubleBitsToUint64(v);
  key = integral ? (uint64_t(iv) ^ kSign) : (u & kSign) != 0UL ? ~u : (u | kSign);
  if (isnan(v)) return 3u;
  return v < p.lo || v > p.hi ? 1u : 0u;
}
#endif

void main() {
  const uint t = gl_LocalInvocationID.x;
  KEY lo_key = kNoLow, hi_key = kNoHigh;
  uint flags = 0u;
  for (uint i = t; i < p.count; i += 256u) {
    uint rest = i;
    int at = int(p.base);
    for (int d = int(p.rank) - 1; d >= 0; --d) {
      at += int(rest % p.shape[d]) * p.stride[d];
      rest /= p.shape[d];
    }
    KEY key;
    const uint f = classify(at, key);
    flags |= f;
    if (f == 1u) {
      lo_key = key_min(lo_key, key);
      hi_key = key_max(hi_key, key);
    }
  }
  s_min[t] = lo_key;
  s_max[t] = hi_key;
  s_flags[t] = flags;
  barrier();
  for (uint width = 128u; width > 0u; width >>= 1) {
    if (t < width) {
      s_min[t] = key_min(s_min[t], s_min[t + width]);
      s_max[t] = key_max(s_max[t], s_max[t + width]);
      s_flags[t] |= s_flags[t + width];
    }
    barrier();
  }
  if (t == 0u) {
    slot[p.slot_at] = s_min[0];
    slot[p.slot_at + 1u] = s_max[0];
#ifdef PAIR
    slot[p.slot_at + 2u] = uvec2(s_flags[0], 0u);
    slot[p.slot_at + 3u] = uvec2(p.type == 0u ? 2u : 1u, 0u);
#else
    slot[p.slot_at + 2u] = uint64_t(s_flags[0]);
    slot[p.slot_at + 3u] = (p.type == 1u || p.type >= 3u) ? 1UL : 0UL;
#endif
  }
}
