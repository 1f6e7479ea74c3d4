// The tile loop of matmul_tiled.comp and conv_tiled.comp for a CPU device (lavapipe), compiled
// with -DLANES; the same interface as gemm_tiled.glsl. llvmpipe runs an invocation as one lane of
// a SIMD vector (a subgroup is a vector) and turns every load or store whose address may differ
// between lanes into a loop over the lanes, about 12 cycles a lane on Zen 3 whether it reads
// memory or shared memory, while arithmetic, and a subgroup broadcast of a given lane, is one
// vector instruction: gemm_tiled.glsl's staged slices cost 50 cycles a multiply-add there. So a
// workgroup is one subgroup and stages nothing. Its tile is TM rows by THREADS * TN columns; lane
// l sums columns l, l + THREADS, ... of every row, reading TN values of B a k and TM / THREADS of
// A, which reach the other lanes by broadcast: each value read is used in TM (B) or
// THREADS * TN (A) multiply-adds. The includer's GEMM_T, where it defines one, is the element
// type (int: wrapping sums); float otherwise.
#ifndef GEMM_T
#define GEMM_T float
#endif
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint THREADS = 8;  // the subgroup size: 4, 8 or 16
layout(constant_id = 1) const uint BM = 32;      // TM
layout(constant_id = 2) const uint BN = 32;      // THREADS * TN
layout(constant_id = 3) const uint BK = 8;       // steps of k a loop iteration
layout(constant_id = 4) const uint TM = 32;      // a multiple of THREADS
layout(constant_id = 5) const uint TN = 4;
layout(constant_id = 6) const uint BAND = 8;  // rows of tiles a band (gemm_tile.glsl)

#include "gemm_tile.glsl"

float madd(float a, float b, float c) { return fma(a, b, c); }
int madd(int a, int b, int c) { return a * b + c; }

// Lane l's v in every lane. A broadcast's lane must be a constant in SPIR-V 1.3, so the lane is a
// case label; the unrolled loops that call this make it a constant, and the switch folds away.
GEMM_T lane_value(GEMM_T v, uint l) {
  switch (l) {
    case 0u: return subgroupBroadcast(v, 0u);
    case 1u: return subgroupBroadcast(v, 1u);
    case 2u: return subgroupBroadcast(v, 2u);
    case 3u: return subgroupBroadcast(v, 3u);
    case 4u: return subgroupBroadcast(v, 4u);
    case 5u: return subgroupBroadcast(v, 5u);
    case 6u: return subgroupBroadcast(v, 6u);
    case 7u: return subgroupBroadcast(v, 7u);
    case 8u: return subgroupBroadcast(v, 8u);
    case 9u: return subgroupBroadcast(v, 9u);
    case 10u: return subgroupBroadcast(v, 10u);
    case 11u: return subgroupBroadcast(v, 11u);
    case 12u: return subgroupBroadcast(v, 12u);
    case 13u: return subgroupBroadcast(v, 13u);
    case 14u: return subgroupBroadcast(v, 14u);
    default: return subgroupBroadcast(v, 15u);
  }
}

void main() {
  gemm_setup();
  const uint m = gemm_m(), n = gemm_n(), k = gemm_k();
  const uint lane = gl_SubgroupInvocationID;
  for (uint t = gl_WorkGroupID.x; t < gemm_tiles(); t += gl_NumWorkGroups.x) {
    const GemmTile g = gemm_tile(t, m, n, k, gemm_splits(), BM, BN, BK, BAND);
    GEMM_T acc[TM][TN];
    [[unroll]] for (uint i = 0u; i < TM; ++i) {
      [[unroll]] for (uint j = 0u; j < TN; ++j) acc[i][j] = GEMM_T(0);
    }
    for (uint k0 = g.k_begin; k0 < g.k_end; k0 += BK) {
      [[unroll]] for (uint kk = 0u; kk < BK; ++kk) {
        const uint kx = k0 + kk;
        const bool in_k = kx < g.k_end;
        GEMM_T av[TM / THREADS], bv[TN];
        [[unroll]] for (uint q = 0u; q < TM / THREADS; ++q) {
          const uint row = g.row0 + q * THREADS + lane;
          av[q] = in_k && row < m ? load_a(g.batch, row, kx) : GEMM_T(0);
        }
        [[unroll]] for (uint j = 0u; j < TN; ++j) {
          const uint col = g.col0 + j * THREADS + lane;
          bv[j] = in_k && col < n ? load_b(g.batch, kx, col) : GEMM_T(0);
        }
        [[unroll]] for (uint i = 0u; i < TM; ++i) {
          const GEMM_T ai = lane_value(av[i / THREADS], i % THREADS);
          [[unroll]] for (uint j = 0u; j < TN; ++j) acc[i][j] = madd(ai, bv[j], acc[i][j]);
        }
      }
    }
    [[unroll]] for (uint i = 0u; i < TM; ++i) {
      const uint row = g.row0 + i;
      if (row >= m) continue;
      [[unroll]] for (uint j = 0u; j < TN; ++j) {
        const uint col = g.col0 + j * THREADS + lane;
        if (col < n) store(g.batch, g.split, row, col, acc[i][j]);
      }
    }
  }
}
