// sort and topk along one dim of a strided operand of any dtype (elements.glsl), as the Cpu's:
// stable (ties by index), NaN the largest value. Each row is padded to P, a power of two, and
// sorted by a bitonic network over (key, index) pairs in scratch buffers, a dispatch per step:
//   mode 0: keys and indices of every row (padding: the largest key and index, so it sorts last)
//   mode 1: one compare-exchange step (k, j) of the network over all rows
//   mode 2: the first kout of each row into the outputs: the values (read back from x by index,
//           so they keep their bits) and the int64 indices
// A key is a 64-bit unsigned number that orders as the values: floats by their double bits made
// to order (-0 as +0, NaN above +inf), integers with the sign bit flipped; descending sorts
// invert it (NaN then first), and the index stays the ascending tie-break either way.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "elements.glsl"
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(std430, set = 0, binding = 1) buffer Keys { uint64_t keys[]; };
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

const uint64_t kSign = 0x8000000000000000UL;

int row_offset(uint r) {
  int at = int(p.x_base);
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    at += int(r % p.shape[d]) * p.stride[d];
    r /= p.shape[d];
  }
  return at;
}

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

void main() {
  const uint t = p.type & 255u;
  const uint step = gl_NumWorkGroups.x * 256u;
  if (p.mode == 0u) {
    for (uint i = gl_GlobalInvocationID.x; i < p.rows * p.padded; i += step) {
      const uint r = i / p.padded, e = i % p.padded;
      if (e < p.len) {
        const int at = row_offset(r) + int(e) * p.dim_stride;
        keys[i] = key_of(t, LOAD_BITS(x, t, uint(at)));
        index[i] = e;
      } else {
        keys[i] = ~0UL;
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
      const uint64_t ka = keys[a], kb = keys[b];
      const uint ia = index[a], ib = index[b];
      const bool a_after = ka > kb || (ka == kb && ia > ib);
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
      STORE_BITS(v, t, p.v_base + at, LOAD_BITS(x, t, bits_at));
      iv[p.i_word + 2u * at] = src;
      iv[p.i_word + 2u * at + 1u] = 0u;
    }
  }
}
