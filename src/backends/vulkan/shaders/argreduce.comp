// argmax / argmin along one dim of a strided operand (rank up to 6), as the Cpu's: NaN wins (the
// first NaN), then the larger (smaller) value, ties to the first index. float32 in the default
// variant; every dtype in the ANY one (elements.glsl), which keeps each element's bits and
// decodes them to compare (floats in double, integers in int64: exact); int64 in two 32-bit
// words in the PAIR one (word.glsl), which takes every integer dtype on a device without
// float64 (the host widens them to int64 first). The value goes to a
// contiguous output of x's dtype, the index to a contiguous int64 one (two 32-bit words, the high
// one zero). A workgroup per output: each invocation scans every 256th element, then a tree in
// shared memory in a fixed order.
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#ifdef ANY  // every dtype (elements.glsl): floats compared in double, integers in int64
#include "elements.glsl"
layout(std430, set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(std430, set = 0, binding = 1) buffer V { uint v[]; };
#define VALUE uint64_t  // the element's own bits, decoded to compare
#elif defined(PAIR)  // int64 as (low, high) words
#include "word.glsl"
layout(std430, set = 0, binding = 0) readonly buffer X { uvec2 x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer V { uvec2 v[]; };
#define VALUE uvec2
#else
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer V { float v[]; };
#define VALUE float
#endif
layout(std430, set = 0, binding = 2) writeonly buffer I { uint idx[]; };
layout(push_constant) uniform Params {
  uint count, rank, len, op;  // op 0: argmax, 1: argmin
  uint x_base, v_base, i_word, type;  // type (ANY): x's dtype
  int dim_stride, pad1, pad2, pad3;
  uint shape[6];  // the outputs' (the reduced dim 1)
  int stride[6];  // x's
} p;

shared VALUE sv[256];
shared uint si[256];

const uint kNone = 0xffffffffu;

// Whether (a, ia) beats (b, ib).
bool beats_float(float a, uint ia, float b, uint ib) {
  const bool an = isnan(a), bn = isnan(b);
  if (an || bn) return an && (!bn || ia < ib);
  if (a == b) return ia < ib;
  return p.op == 0u ? a > b : a < b;
}
#ifdef ANY
bool beats(VALUE a, uint ia, VALUE b, uint ib) {
  if (t_float(p.type)) {
    const double x = float_value(p.type, a), y = float_value(p.type, b);
    const bool xn = isnan(x), yn = isnan(y);
    if (xn || yn) return xn && (!yn || ia < ib);
    if (x == y) return ia < ib;
    return p.op == 0u ? x > y : x < y;
  }
  const int64_t x = int_value(p.type, a), y = int_value(p.type, b);
  if (x == y) return ia < ib;
  return p.op == 0u ? x > y : x < y;
}
VALUE load(int at) { return LOAD_BITS(x, p.type, uint(at)); }
#elif defined(PAIR)
bool beats(VALUE a, uint ia, VALUE b, uint ib) {
  if (a == b) return ia < ib;
  return p.op == 0u ? pair_less(b, a) : pair_less(a, b);
}
VALUE load(int at) { return x[at]; }
#else
bool beats(VALUE a, uint ia, VALUE b, uint ib) { return beats_float(a, ia, b, ib); }
VALUE load(int at) { return x[at]; }
#endif

void main() {
  const uint t = gl_LocalInvocationID.x;
  for (uint o = gl_WorkGroupID.x; o < p.count; o += gl_NumWorkGroups.x) {
    uint rest = o;
    int base = int(p.x_base);
    for (int d = int(p.rank) - 1; d >= 0; --d) {
      const uint c = rest % p.shape[d];
      rest /= p.shape[d];
      base += int(c) * p.stride[d];
    }
    VALUE best = VALUE(0);
    uint bi = kNone;
    for (uint j = t; j < p.len; j += 256u) {
      const VALUE val = load(base + int(j) * p.dim_stride);
      if (bi == kNone || beats(val, j, best, bi)) {
        best = val;
        bi = j;
      }
    }
    sv[t] = best;
    si[t] = bi;
    barrier();
    for (uint h = 128u; h > 0u; h >>= 1u) {
      if (t < h) {
        const uint other = si[t + h];
        if (other != kNone && (si[t] == kNone || beats(sv[t + h], other, sv[t], si[t]))) {
          sv[t] = sv[t + h];
          si[t] = other;
        }
      }
      barrier();
    }
    if (t == 0u) {
#ifdef ANY
      STORE_BITS(v, p.type, p.v_base + o, sv[0]);
#else
      v[p.v_base + o] = sv[0];
#endif
      idx[p.i_word + 2u * o] = si[0];
      idx[p.i_word + 2u * o + 1u] = 0u;
    }
    barrier();  // the shared arrays serve the next output
  }
}
