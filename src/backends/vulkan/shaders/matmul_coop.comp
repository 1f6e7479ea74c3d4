// Batched float16 matmul on tensor cores through gemm_coop.glsl, out [B, M, N] = a [B, M, K] x
// b [B, K, N] over strided operands, summing in float32 and rounding once to float16 (to nearest
// even, by bit manipulation), as cuBLAS does. Operands whose rows are unit-stride and 8-element
// aligned are read 128 bits at a time, any other layout element by element; out is written 128
// bits at a time where its rows are 8-aligned, element by element otherwise (atomic and/or on the
// word: two invocations may share it). FLAGS says which: a specialisation constant, so that a
// pipeline drops the element-by-element paths it never takes and their registers (8 fewer, which
// let gemm_coop.glsl read two slices ahead within 128).
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#ifndef EMULATE
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#endif

// Each operand twice: 32-bit words (two halves each) and 128-bit vectors (eight).
layout(std430, set = 0, binding = 0) readonly buffer A { uint a[]; };
layout(std430, set = 0, binding = 0) readonly buffer A4 { uvec4 a4[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { uint b[]; };
layout(std430, set = 0, binding = 1) readonly buffer B4 { uvec4 b4[]; };
layout(std430, set = 0, binding = 2) buffer Out { uint o[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Out4 { uvec4 o4[]; };
layout(push_constant) uniform Params {
  uint m, n, k, tiles;
  uint a_base, b_base, out_base, type;  // bases in halves from each binding's start
  int a_batch, a_row, a_col;
  uint flags;  // unread: FLAGS
  int b_batch, b_row, b_col, pad;
} p;

// 1: a's rows are read 8 halves at a time, 2: b's, 4: out's written so (after gemm_coop.glsl's
// constants).
layout(constant_id = 9) const uint FLAGS = 0;

#include "half.glsl"

// Half `i` (from the binding's start) of a word-addressed buffer.
uint half_of(uint word, int i) { return (i & 1) != 0 ? word >> 16u : word & 0xffffu; }

uvec4 pack8(uint h[8]);

uint gemm_m() { return p.m; }
uint gemm_n() { return p.n; }
uint gemm_k() { return p.k; }
uint gemm_splits() { return 1u; }
uint gemm_tiles() { return p.tiles; }

uvec4 fetch_a(uint batch, uint row, uint kk, uint k_end) {
  const int a0 = int(p.a_base) + int(batch) * p.a_batch;
  if ((FLAGS & 1u) != 0u) {  // k is a multiple of 8: a vector is wholly in or out
    return row < p.m && kk < k_end ? a4[(a0 + int(row) * p.a_row + int(kk)) / 8] : uvec4(0u);
  }
  uint h[8];
  [[unroll]] for (uint i = 0u; i < 8u; ++i) {
    const int at = a0 + int(row) * p.a_row + int(kk + i) * p.a_col;
    h[i] = row < p.m && kk + i < k_end ? half_of(a[at >> 1], at) : 0u;
  }
  return pack8(h);
}

uvec4 fetch_b(uint batch, uint kk, uint col, uint k_end) {
  const int b0 = int(p.b_base) + int(batch) * p.b_batch;
  if ((FLAGS & 2u) != 0u) {  // n is a multiple of 8
    return kk < k_end && col < p.n ? b4[(b0 + int(kk) * p.b_row + int(col)) / 8] : uvec4(0u);
  }
  uint h[8];
  [[unroll]] for (uint i = 0u; i < 8u; ++i) {
    const int at = b0 + int(kk) * p.b_row + int(col + i) * p.b_col;
    h[i] = kk < k_end && col + i < p.n ? half_of(b[at >> 1], at) : 0u;
  }
  return pack8(h);
}

void store8(uint batch, uint split, uint row, uint col, float v[8]) {
  uint h[8];
  [[unroll]] for (uint i = 0u; i < 8u; ++i) h[i] = to_f16(v[i]);
  const uint at = p.out_base + (batch * p.m + row) * p.n + col;
  if ((FLAGS & 4u) != 0u) {  // n a multiple of 8, `at` of 8 too
    o4[at / 8u] = pack8(h);
    return;
  }
  [[unroll]] for (uint i = 0u; i < 8u; ++i) {
    if (col + i >= p.n) break;
    const uint shift = ((at + i) & 1u) * 16u;
    atomicAnd(o[(at + i) >> 1u], ~(0xffffu << shift));
    atomicOr(o[(at + i) >> 1u], h[i] << shift);
  }
}

#include "gemm_coop.glsl"
