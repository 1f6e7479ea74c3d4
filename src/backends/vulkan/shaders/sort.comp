// sort and topk along one dim of a strided operand of any dtype (elements.glsl), as the Cpu's:
// stable (ties by index), NaN the largest value. Each row is padded to P, a power of two, and
// sorted by a bitonic network over (key, index) pairs in scratch buffers, a dispatch per step:
//   mode 0: keys and indices of every row (padding: the largest key and index, so it sorts last)
//   mode 1: one compare-exchange step (k, j) of the network over all rows
//   mode 2: the first kout of each row into the outputs: the values (read back from x by index,
//           so they keep their bits) and the int64 indices
// A key is a 64-bit unsigned number that orders as the values: floats by their double bits made
// to order (-0 as +0, NaN above +inf), integers with the sign bit flipped; descending sorts
// invert it (NaN then first), and the index stays the ascending tie-break either way. The PAIR
// variant (devices without shaderInt64 or shaderFloat64) holds a key in two 32-bit words (low,
// high), ordered by the high word then the low one: a float's 32-bit key (its float32 bits made
// to order, exact for the 16-bit floats) in the high word, an integer's two words with the sign
// bit flipped.
#version 450
#extension GL_GOOGLE_include_directive : require
#ifdef PAIR
#include "word.glsl"
#include "half.glsl"
#define KEY uvec2
#define BITS uvec2
const uint T_F32 = 0u, T_I32 = 1u, T_U8 = 2u, T_I8 = 3u, T_BOOL = 4u, T_F16 = 5u, T_BF16 = 6u,
           T_I64 = 7u;
const KEY kLast = uvec2(0xffffffffu);
#else
#include "elements.glsl"
#define KEY uint64_t
#define BITS uint64_t
const KEY kLast = ~0UL;
#endif
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(std430, set = 0, binding = 1) buffer Keys { KEY keys[]; };
layout(std430, set = 0, binding = 2) buffer Index { uint index[]; };
layout(std430, set = 0, binding = 3) buffer V { uint v[]; };
layout(std430, set = 0, binding = 4) writeonly buffer I { uint iv[]; };
layout(push_constant) uniform Params {
  uint rows, len, padded, kout;
  uint mode, k, j, type;  // type | descending << 8
  uint x_base, v_base, i_word, rank;
  int dim_stride;
  uint inner;  // the output's elements between neighbours along the dim
  uint pad0, pad1;
  uint shape[6];  // x's with the dim 1: the rows
  int stride[6];
} p;

int row_offset(uint r) {
  int at = int(p.x_base);
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    at += int(r % p.shape[d]) * p.stride[d];
    r /= p.shape[d];
  }
  return at;
}

#ifdef PAIR
uint t_size(uint t) { return t == T_I64 ? 8u : (t <= T_I32 ? 4u : (t >= T_F16 ? 2u : 1u)); }

// Element `at` of type t, right-aligned (an int64 in both words).
uvec2 load_bits(uint t, uint at) {
  const uint size = t_size(t);
  if (size == 8u) return uvec2(x[2u * at], x[2u * at + 1u]);
  if (size == 4u) return uvec2(x[at], 0u);
  if (size == 2u) return uvec2((x[at >> 1u] >> (16u * (at & 1u))) & 0xffffu, 0u);
  return uvec2((x[at >> 2u] >> (8u * (at & 3u))) & 0xffu, 0u);
}

void store_bits(uint t, uint at, uvec2 bits) {
  const uint size = t_size(t);
  if (size == 8u) {
    v[2u * at] = bits.x;
    v[2u * at + 1u] = bits.y;
  } else if (size == 4u) {
    v[at] = bits.x;
  } else {  // other invocations write the word's other bytes
    const uint sh = size == 2u ? 16u * (at & 1u) : 8u * (at & 3u);
    const uint m = (size == 2u ? 0xffffu : 0xffu) << sh, w = size == 2u ? at >> 1u : at >> 2u;
    atomicAnd(v[w], ~m);
    atomicOr(v[w], (bits.x << sh) & m);
  }
}

uvec2 key_of(uint t, uvec2 bits) {
  uvec2 key;
  if (t == T_F32 || t == T_F16 || t == T_BF16) {
    uint u = t == T_F32 ? bits.x : (t == T_F16 ? floatBitsToUint(half_to_float(bits.x)) : bits.x << 16u);
    if ((u & 0x7fffffffu) == 0u) u = 0u;  // -0 as +0, from the bits (no flush of subnormals)
    const bool nan = (u & 0x7fffffffu) > 0x7f800000u;
    key = nan ? kLast : uvec2(0u, (u & 0x80000000u) != 0u ? ~u : (u | 0x80000000u));
  } else {
    const uvec2 value = t == T_I64 ? bits
                        : t == T_I32 ? pair_of(int(bits.x))
                        : t == T_I8  ? pair_of(bitfieldExtract(int(bits.x), 0, 8))
                        : t == T_BOOL ? uvec2(uint(bits.x != 0u), 0u)
                                      : bits;  // U8
    key = uvec2(value.x, value.y ^ 0x80000000u);
  }
  return (p.type >> 8) != 0u ? ~key : key;
}

bool key_after(uvec2 a, uvec2 b) { return a.y > b.y || (a.y == b.y && a.x > b.x); }
#define LOAD(t, at) load_bits(t, at)
#define STORE(t, at, bits) store_bits(t, at, bits)
#else
const uint64_t kSign = 0x8000000000000000UL;
bool key_after(uint64_t a, uint64_t b) { return a > b; }
#define LOAD(t, at) LOAD_BITS(x, t, at)
#define STORE(t, at, bits) STORE_BITS(v, t, at, bits)


uint64_t key_of(uint t, uint64_t bits) {
  uint64_t key;
  if (t_float(t)) {
    const double d = float_value(t, bits);
    if (isnan(d)) {
      key = ~0UL;
    } else {
      const uint64_t u = doubleBitsToUint64(d == 0.0 ? 0.0 : d);
      key = (u & kSign) != 0UL ? ~u : (u | kSign);
    }
  } else {
    key = uint64_t(int_value(t, bits)) ^ kSign;
  }
  return (p.type >> 8) != 0u ? ~key : key;
}
#endif

void main() {
  const uint t = p.type & 255u;
  const uint step = gl_NumWorkGroups.x * 256u;
  if (p.mode == 0u) {
    for (uint i = gl_GlobalInvocationID.x; i < p.rows * p.padded; i += step) {
      const uint r = i / p.padded, e = i % p.padded;
      if (e < p.len) {
        const int at = row_offset(r) + int(e) * p.dim_stride;
        keys[i] = key_of(t, LOAD(t, uint(at)));
        index[i] = e;
      } else {
        keys[i] = kLast;
        index[i] = 0xffffffffu;
      }
    }
  } else if (p.mode == 1u) {
    const uint half_row = p.padded / 2u;
    for (uint q = gl_GlobalInvocationID.x; q < p.rows * half_row; q += step) {
      const uint r = q / half_row, h = q % half_row;
      const uint l = (h / p.j) * 2u * p.j + h % p.j;  // l has bit j clear; its partner is l + j
      const uint a = r * p.padded + l, b = a + p.j;
      const bool up = (l & p.k) == 0u;
      const KEY ka = keys[a], kb = keys[b];
      const uint ia = index[a], ib = index[b];
      const bool a_after = key_after(ka, kb) || (ka == kb && ia > ib);
      if (a_after == up) {
        keys[a] = kb;
        keys[b] = ka;
        index[a] = ib;
        index[b] = ia;
      }
    }
  } else {
    for (uint i = gl_GlobalInvocationID.x; i < p.rows * p.kout; i += step) {
      const uint r = i / p.kout, e = i % p.kout;
      const uint src = index[r * p.padded + e];
      const uint bits_at = uint(row_offset(r) + int(src) * p.dim_stride);
      const uint at = (r / p.inner) * p.kout * p.inner + r % p.inner + e * p.inner;
      STORE(t, p.v_base + at, LOAD(t, bits_at));
      iv[p.i_word + 2u * at] = src;
      iv[p.i_word + 2u * at + 1u] = 0u;
    }
  }
}
