// Indexing along one dim with int64 indices, over elements of 32 bits (or 64 in the WIDE and PAIR
// variants, word.glsl, or any dtype in the ANY variant: those of 1 and 2 bytes, written with atomics on
// their word), all operands strided up to rank 6 but the contiguous output:
//   mode 0, gather:       out[c] = a[c with c[dim] = idx[c]]             (shape: out's = idx's)
//   mode 1, index_select: out[c] = a[c with c[dim] = idx[c[dim]]]        (shape: out's)
//   mode 2 + r, scatter:  out[c] (= | += | *= | max= | min=, r = 0..4) a[c'] for every c' of
//                         idx's shape with idx[c'] = c[dim] and c' = c elsewhere, in the order of
//                         c'[dim]: an invocation per element of out, which it reads and writes
//                         (shape: out's), so no atomics and the Cpu's sequential order; with
//                         many entries a line, they are sorted first and binary-searched.
// An index outside [0, bound) (a queued range check failed) is skipped: gather writes 0.
#version 450
#extension GL_GOOGLE_include_directive : require
#ifdef ANY  // elements of any dtype (elements.glsl), held in 64 bits
#define WIDE
#include "elements.glsl"
#endif
#include "word.glsl"
#if !defined(WIDE) && !defined(PAIR)
#include "half.glsl"
#endif
layout(local_size_x = 256) in;
#ifdef ANY
layout(std430, set = 0, binding = 0) readonly buffer A { uint a[]; };
layout(std430, set = 0, binding = 2) buffer Out { uint o[]; };
#define ELEMENT_TYPE ((p.mode >> 16) & 255u)
#define LOAD_A(at) LOAD_BITS(a, ELEMENT_TYPE, at)
#define LOAD_O(at) LOAD_BITS(o, ELEMENT_TYPE, at)
#define STORE_O(at, v) STORE_BITS(o, ELEMENT_TYPE, at, v)
#else
layout(std430, set = 0, binding = 0) readonly buffer A { WORD a[]; };
layout(std430, set = 0, binding = 2) buffer Out { WORD o[]; };
#define LOAD_A(at) a[at]
#define LOAD_O(at) o[at]
#define STORE_O(at, v) o[at] = (v)
#endif
layout(std430, set = 0, binding = 1) readonly buffer Idx { uint idx[]; };
layout(push_constant) uniform Params {
  uint count, rank, dim, mode;  // mode: low byte as above, bit 8: integer elements, bit 9 (10):
                                // float32 rounded to float16 (bfloat16), bits 16-23: the dtype
                                // (ANY: convert_code in vulkan_backend.cpp)
  uint a_base, i_word, o_base, bound;  // bound: the indexed dim's size
  uint shape[6];                       // out's
  int i_stride[6];                     // idx's (gather, index_select: dim only)
  int a_stride[6];                     // a's
  uint i_shape[6];                     // scatter: idx's shape
} p;

// The index at element offset `at` of idx (two 32-bit words, little-endian), or -1 when it is
// outside [0, bound).
int index_at(int at) {
  const uint lo = idx[p.i_word + 2u * uint(at)], hi = idx[p.i_word + 2u * uint(at) + 1u];
  return hi == 0u && lo < p.bound ? int(lo) : -1;
}

// Whether the int64 index at element offset `at` of idx is below `target` (in [0, 2^31)).
bool index_below(int at, uint target) {
  const uint lo = idx[p.i_word + 2u * uint(at)], hi = idx[p.i_word + 2u * uint(at) + 1u];
  return int(hi) < 0 || (hi == 0u && lo < target);
}

WORD combine(uint r, WORD acc, WORD v) {
  if (r == 0u) return v;
#ifdef ANY
  // Floats in double, rounded to the dtype each step as the Cpu rounds its float compute type;
  // integers in int64, wrapped to the dtype by the store; Bool as 0 and 1 (sum: or, prod: and).
  const uint t = ELEMENT_TYPE;
  if (!t_float(t)) {
    const int64_t x = int_value(t, acc), y = int_value(t, v);
    return int_bits(t, r == 1u ? x + y : r == 2u ? x * y : r == 3u ? max(x, y) : min(x, y));
  }
  const double x = float_value(t, acc), y = float_value(t, v);
  const bool nan = isnan(x) || isnan(y);
  return float_bits(t, r == 1u ? x + y
                       : r == 2u ? x * y
                       : r == 3u ? (nan ? x + y : max(x, y))
                                 : (nan ? x + y : min(x, y)));
#elif defined(PAIR)  // int64 (float64 is refused on the host)
  switch (r) {
    case 1u: return pair_add(acc, v);
    case 2u: return pair_mul(acc, v);
    case 3u: return pair_less(acc, v) ? v : acc;
  }
  return pair_less(v, acc) ? v : acc;
#else
  if ((p.mode & 256u) != 0u) {
    const INT x = INT(acc), y = INT(v);
    switch (r) {
      case 1u: return WORD(x + y);
      case 2u: return WORD(x * y);
      case 3u: return WORD(max(x, y));
    }
    return WORD(min(x, y));
  }
  const FLOAT x = AS_FLOAT(acc), y = AS_FLOAT(v);
  const bool nan = isnan(x) || isnan(y);  // NaN propagates
  const FLOAT f = r == 1u ? x + y : r == 2u ? x * y : nan ? x + y : r == 3u ? max(x, y) : min(x, y);
#ifndef WIDE
  // float16 and bfloat16 standing in float32 (a device without float64): rounded each step, as
  // the Cpu rounds its float compute type.
  if ((p.mode & 512u) != 0u) return FLOAT_BITS(half_to_float(to_f16(f)));
  if ((p.mode & 1024u) != 0u) return to_bf16(f) << 16u;
#endif
  return FLOAT_BITS(f);
#endif
}

void main() {
  const uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  const uint mode = p.mode & 255u;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += step) {
    uint c[6] = uint[6](0u, 0u, 0u, 0u, 0u, 0u);  // a 0-d output reads index 0 of dim 0
    uint rest = i;
    for (int d = int(p.rank) - 1; d >= 0; --d) {
      c[d] = rest % p.shape[d];
      rest /= p.shape[d];
    }
    if (mode <= 1u) {
      int ia = int(p.a_base), ii = 0;
      for (uint d = 0u; d < p.rank; ++d) {
        if (d != p.dim) ia += int(c[d]) * p.a_stride[d];
        if (mode == 0u || d == p.dim) ii += int(c[d]) * p.i_stride[d];
      }
      const int j = index_at(ii);
      const WORD v = j < 0 ? WORD(0) : LOAD_A(uint(ia + j * p.a_stride[p.dim]));
      STORE_O(p.o_base + i, v);
      continue;
    }
    // scatter: only where every other coordinate lies inside idx's shape
    bool inside = true;
    int ia = int(p.a_base), ii = 0;
    for (uint d = 0u; d < p.rank; ++d) {
      if (d == p.dim) continue;
      inside = inside && c[d] < p.i_shape[d];
      ia += int(c[d]) * p.a_stride[d];
      ii += int(c[d]) * p.i_stride[d];
    }
    if (!inside) continue;
    WORD acc = LOAD_O(p.o_base + i);
    const uint len = p.i_shape[p.dim];
    const int step = p.i_stride[p.dim];
    if ((p.mode & 2048u) != 0u) {
      // Sorted (bit 11): idx holds each line's indices sorted (stably), then where each came
      // from along dim, in the layout i_stride describes: the entries naming c[dim] are found by
      // a binary search and folded in their order in the line, as the scan below folds them.
      uint keys = 1u;  // the sorted layout's element count: the positions come after the keys
      for (uint d = 0u; d < p.rank; ++d) keys += (p.i_shape[d] - 1u) * uint(p.i_stride[d]);
      uint lo = 0u, hi = len;
      while (lo < hi) {
        const uint mid = (lo + hi) / 2u;
        if (index_below(ii + int(mid) * step, c[p.dim])) {
          lo = mid + 1u;
        } else {
          hi = mid;
        }
      }
      for (uint k = lo; k < len && index_at(ii + int(k) * step) == int(c[p.dim]); ++k) {
        const int from = int(idx[p.i_word + 2u * (keys + uint(ii + int(k) * step))]);
        acc = combine(mode - 2u, acc, LOAD_A(uint(ia + from * p.a_stride[p.dim])));
      }
    } else {
      for (uint k = 0u; k < len; ++k) {
        if (index_at(ii + int(k) * step) == int(c[p.dim])) {
          acc = combine(mode - 2u, acc, LOAD_A(uint(ia + int(k) * p.a_stride[p.dim])));
        }
      }
    }
    STORE_O(p.o_base + i, acc);
  }
}
