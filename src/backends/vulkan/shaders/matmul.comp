// Batched matmul, out [B, M, N] = a [B, M, K] x b [B, K, N], over strided operands (a transposed
// view, a batch broadcast with stride 0, negative strides), written contiguous. A workgroup
// computes 16x16 outputs through 16x16 tiles of a and b in shared memory, looping over tiles when
// there are more than workgroups (the dispatch is one-dimensional). Sums run in k order. Built as
// the ANY variant (elements.glsl) for every dtype but float32 (matmul_tiled.comp's), summing
// floats in double and integers in int64 (wrapping to the dtype, as the Cpu's).
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 16, local_size_y = 16) in;
#ifdef ANY
#include "elements.glsl"
layout(std430, set = 0, binding = 0) readonly buffer A { uint a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { uint b[]; };
layout(std430, set = 0, binding = 2) buffer Out { uint o[]; };
#define VALUE uint64_t  // a double's bits for floats, an int64 for integers
#else
layout(std430, set = 0, binding = 0) readonly buffer A { float a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { float b[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Out { float o[]; };
#define VALUE float
#endif
layout(push_constant) uniform Params {
  uint m, n, k, tiles;
  uint a_base, b_base, out_base, type;  // type (ANY): the dtype of all three
  int a_batch, a_row, a_col, pad1;
  int b_batch, b_row, b_col, pad2;
} p;

shared VALUE ta[16][16];
shared VALUE tb[16][16];

#ifdef ANY
VALUE load_a(int at) {
  const uint64_t bits = LOAD_BITS(a, p.type, uint(at));
  return t_float(p.type) ? doubleBitsToUint64(float_value(p.type, bits))
                         : uint64_t(int_value(p.type, bits));
}
VALUE load_b(int at) {
  const uint64_t bits = LOAD_BITS(b, p.type, uint(at));
  return t_float(p.type) ? doubleBitsToUint64(float_value(p.type, bits))
                         : uint64_t(int_value(p.type, bits));
}
VALUE zero() { return t_float(p.type) ? doubleBitsToUint64(0.0) : 0UL; }
VALUE fma_value(VALUE x, VALUE y, VALUE acc) {
  if (t_float(p.type)) {
    return doubleBitsToUint64(fma(uint64BitsToDouble(x), uint64BitsToDouble(y),
                                  uint64BitsToDouble(acc)));
  }
  return uint64_t(int64_t(x) * int64_t(y) + int64_t(acc));
}
void store(uint at, VALUE v) {
  const uint64_t bits =
      t_float(p.type) ? float_bits(p.type, uint64BitsToDouble(v)) : int_bits(p.type, int64_t(v));
  STORE_BITS(o, p.type, at, bits);
}
#else
VALUE load_a(int at) { return a[at]; }
VALUE load_b(int at) { return b[at]; }
VALUE zero() { return 0.0; }
VALUE fma_value(VALUE x, VALUE y, VALUE acc) { return fma(x, y, acc); }
void store(uint at, VALUE v) { o[at] = v; }
#endif

void main() {
  const uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
  const uint tiles_n = (p.n + 15u) / 16u, tiles_m = (p.m + 15u) / 16u;
  for (uint t = gl_WorkGroupID.x; t < p.tiles; t += gl_NumWorkGroups.x) {
    const uint batch = t / (tiles_m * tiles_n);
    const uint r = t - batch * tiles_m * tiles_n;
    const uint row = (r / tiles_n) * 16u + ty, col = (r % tiles_n) * 16u + tx;
    const int a0 = int(p.a_base) + int(batch) * p.a_batch + int(row) * p.a_row;
    const int b0 = int(p.b_base) + int(batch) * p.b_batch + int(col) * p.b_col;
    VALUE acc = zero();
    for (uint k0 = 0u; k0 < p.k; k0 += 16u) {
      ta[ty][tx] = (row < p.m && k0 + tx < p.k) ? load_a(a0 + int(k0 + tx) * p.a_col) : zero();
      tb[ty][tx] = (k0 + ty < p.k && col < p.n) ? load_b(b0 + int(k0 + ty) * p.b_row) : zero();
      barrier();
      for (uint kk = 0u; kk < 16u; ++kk) acc = fma_value(ta[ty][kk], tb[kk][tx], acc);
      barrier();
    }
    if (row < p.m && col < p.n) store(p.out_base + (batch * p.m + row) * p.n + col, acc);
  }
}
