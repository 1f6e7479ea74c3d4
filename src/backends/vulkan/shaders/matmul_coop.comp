// Batched float16 matmul on tensor cores (VK_NV_cooperative_matrix), out [B, M, N] = a [B, M, K]
// x b [B, K, N] over strided operands, summing in float32 and rounding once to float16, as
// cuBLAS does. A workgroup of four 32-wide subgroups computes a 64x64 tile of out: each subgroup
// a 32x32 quarter as 2x2 fragments of 16x16, from 32-deep slices of a and b staged in shared
// memory (zero past the edges, so fragments never read out of bounds). Results go out through a
// 16x16 scratch per subgroup, which bounds-checks the edges. Taken only where the device lists
// 16x16x16 float16 x float16 + float32 for subgroups of 32 (context.cpp).
#version 450
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
layout(local_size_x = 128) in;

layout(std430, set = 0, binding = 0) readonly buffer A { float16_t a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { float16_t b[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Out { float16_t o[]; };
layout(push_constant) uniform Params {
  uint m, n, k, tiles;
  uint a_base, b_base, out_base, pad0;
  int a_batch, a_row, a_col, pad1;
  int b_batch, b_row, b_col, pad2;
} p;

const uint BM = 64u, BN = 64u, BK = 32u, F = 16u;
shared float16_t sa[BM * BK];  // row-major slice of a: sa[row * BK + k]
shared float16_t sb[BK * BN];  // row-major slice of b: sb[k * BN + col]
shared float scratch[4u * F * F];

#define HALF fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define ACC fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  const uint wm = sg / 2u, wn = sg % 2u;  // this subgroup's quarter of the tile
  const uint tiles_m = (p.m + BM - 1u) / BM, tiles_n = (p.n + BN - 1u) / BN;
  for (uint t = gl_WorkGroupID.x; t < p.tiles; t += gl_NumWorkGroups.x) {
    const uint batch = t / (tiles_m * tiles_n);
    const uint r = t - batch * tiles_m * tiles_n;
    const uint row0 = (r / tiles_n) * BM, col0 = (r % tiles_n) * BN;
    const int a0 = int(p.a_base) + int(batch) * p.a_batch;
    const int b0 = int(p.b_base) + int(batch) * p.b_batch;
    ACC acc[2][2];
    for (uint i = 0u; i < 2u; ++i) {
      for (uint j = 0u; j < 2u; ++j) acc[i][j] = ACC(0.0);
    }
    for (uint k0 = 0u; k0 < p.k; k0 += BK) {
      for (uint e = tid; e < BM * BK; e += 128u) {
        const uint mi = e / BK, ki = e % BK, row = row0 + mi, kk = k0 + ki;
        sa[e] = (row < p.m && kk < p.k) ? a[a0 + int(row) * p.a_row + int(kk) * p.a_col]
                                        : float16_t(0.0);
      }
      for (uint e = tid; e < BK * BN; e += 128u) {
        const uint ki = e / BN, ni = e % BN, col = col0 + ni, kk = k0 + ki;
        sb[e] = (col < p.n && kk < p.k) ? b[b0 + int(kk) * p.b_row + int(col) * p.b_col]
                                        : float16_t(0.0);
      }
      barrier();
      for (uint kk = 0u; kk < BK; kk += F) {
        HALF fa[2], fb[2];
        for (uint i = 0u; i < 2u; ++i) {
          coopMatLoadNV(fa[i], sa, (wm * 32u + i * F) * BK + kk, BK, false);
        }
        for (uint j = 0u; j < 2u; ++j) {
          coopMatLoadNV(fb[j], sb, kk * BN + wn * 32u + j * F, BN, false);
        }
        for (uint i = 0u; i < 2u; ++i) {
          for (uint j = 0u; j < 2u; ++j) acc[i][j] = coopMatMulAddNV(fa[i], fb[j], acc[i][j]);
        }
      }
      barrier();
    }
    for (uint i = 0u; i < 2u; ++i) {
      for (uint j = 0u; j < 2u; ++j) {
        coopMatStoreNV(acc[i][j], scratch, sg * F * F, F, false);
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        for (uint e = lane; e < F * F; e += gl_SubgroupSize) {
          const uint row = row0 + wm * 32u + i * F + e / F;
          const uint col = col0 + wn * 32u + j * F + e % F;
          if (row < p.m && col < p.n) {
            o[p.out_base + (batch * p.m + row) * p.n + col] = float16_t(scratch[sg * F * F + e]);
          }
        }
        subgroupMemoryBarrierShared();
        subgroupBarrier();
      }
    }
  }
}
