// Batched float32 matmul, out [B, M, N] = a [B, M, K] x b [B, K, N], over strided operands (a
// transposed view, a batch broadcast with stride 0, negative strides), written contiguous, through
// gemm_tiled.glsl's register-blocked tiles, or gemm_lanes.glsl's with LANES (a CPU device), which
// LANES_INT32 runs on int32 (wrapping sums, as the int64 sums of matmul.comp's ANY variant
// truncated: int8 weights' products on lavapipe).
#version 450
#extension GL_GOOGLE_include_directive : require
#ifdef LANES_INT32
#define LANES
#define GEMM_T int
#else
#define GEMM_T float
#endif
layout(std430, set = 0, binding = 0) readonly buffer A { GEMM_T a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { GEMM_T b[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Out { GEMM_T o[]; };
#ifndef LANES
layout(std430, set = 0, binding = 0) readonly buffer A4 { vec4 a4[]; };
layout(std430, set = 0, binding = 1) readonly buffer B4 { vec4 b4[]; };
#endif
layout(push_constant) uniform Params {
  uint m, n, k, tiles;
  uint a_base, b_base, out_base, pad0;
  int a_batch, a_row, a_col;
  uint flags;  // 1: a's rows are read 4 at a time, 2: b's (matmul.cpp: unit-stride, 4-aligned)
  int b_batch, b_row, b_col, pad2;
} p;

uint gemm_m() { return p.m; }
uint gemm_n() { return p.n; }
uint gemm_k() { return p.k; }
uint gemm_splits() { return 1u; }
uint gemm_tiles() { return p.tiles; }
void gemm_setup() {}
bool a_along_k() { return p.a_col == 1; }
bool b_along_n() { return p.b_col == 1 || p.b_row != 1; }
GEMM_T load_a(uint batch, uint row, uint k) {
  return a[int(p.a_base) + int(batch) * p.a_batch + int(row) * p.a_row + int(k) * p.a_col];
}
GEMM_T load_b(uint batch, uint k, uint col) {
  return b[int(p.b_base) + int(batch) * p.b_batch + int(k) * p.b_row + int(col) * p.b_col];
}
#ifndef LANES
#define GEMM_VEC4
bool a_vec4() { return (p.flags & 1u) != 0u; }
bool b_vec4() { return (p.flags & 2u) != 0u; }
vec4 load_a4(uint batch, uint row, uint k) {
  return a4[(int(p.a_base) + int(batch) * p.a_batch + int(row) * p.a_row + int(k)) / 4];
}
vec4 load_b4(uint batch, uint k, uint col) {
  return b4[(int(p.b_base) + int(batch) * p.b_batch + int(k) * p.b_row + int(col)) / 4];
}
#endif
void store(uint batch, uint split, uint row, uint col, GEMM_T v) {
  o[p.out_base + (batch * p.m + row) * p.n + col] = v;
}

#ifdef LANES
#include "gemm_lanes.glsl"
#else
#include "gemm_tiled.glsl"
#endif
