// The ceiling of gemm_coop.glsl's tile loop without memory traffic (probe.cpp): two BK-deep
// slices of A and B staged in shared memory once, padded as gemm_coop.glsl pads them, then every
// subgroup loads its FM + FN fragments from them and multiplies, ITERS times, alternating the
// slices (so that the loads cannot leave the loop), with no barrier.
#version 450
#extension GL_EXT_control_flow_attributes : require
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint THREADS = 256;
layout(constant_id = 1) const uint FM = 4;
layout(constant_id = 2) const uint FN = 2;
layout(constant_id = 3) const uint ITERS = 1024;
layout(constant_id = 4) const uint SGN = 4;
layout(constant_id = 5) const uint BK = 32;
layout(std430, binding = 0) readonly buffer A4 { uvec4 a4[]; };
layout(std430, binding = 2) buffer O4 { uvec4 o4[]; };
#define ACC fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>
const uint SGM = THREADS / 32u / SGN, BM = SGM * FM * 16u, BN = SGN * FN * 16u;
const uint SA = (BK + 8u) / 8u, SB = (BN + 8u) / 8u, A_VECS = BM * SA, B_VECS = BK * SB;
shared uvec4 pool[2u * (A_VECS + B_VECS)];
void main() {
  for (uint v = gl_LocalInvocationID.x; v < 2u * (A_VECS + B_VECS); v += THREADS) {
    pool[v] = a4[v];
  }
  barrier();
  const uint sg = gl_SubgroupID, wm = sg / SGN, wn = sg % SGN;
  ACC acc[FM][FN];
  [[unroll]] for (uint i = 0u; i < FM; ++i) {
    [[unroll]] for (uint j = 0u; j < FN; ++j) acc[i][j] = ACC(0.0);
  }
  for (uint it = 0u; it < ITERS; ++it) {
    const uint stage = it & 1u;
    [[unroll]] for (uint kk = 0u; kk < BK; kk += 16u) {
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fa[FM], fb[FN];
      [[unroll]] for (uint i = 0u; i < FM; ++i) {
        coopMatLoadNV(fa[i], pool, stage * A_VECS + ((wm * FM + i) * 16u) * SA + kk / 8u, SA,
                      false);
      }
      [[unroll]] for (uint j = 0u; j < FN; ++j) {
        coopMatLoadNV(fb[j], pool,
                      2u * A_VECS + stage * B_VECS + kk * SB + ((wn * FN + j) * 16u) / 8u, SB,
                      false);
      }
      [[unroll]] for (uint i = 0u; i < FM; ++i) {
        [[unroll]] for (uint j = 0u; j < FN; ++j) {
      acc[i][j] = coopMatMulAddNV(fa[i], fb[j], acc[i][j]);
    }
      }
    }
  }
  const uint base = (gl_WorkGroupID.x * (THREADS / 32u) + sg) * FM * FN * 64u;
  [[unroll]] for (uint i = 0u; i < FM; ++i) {
    [[unroll]] for (uint j = 0u; j < FN; ++j) {
      coopMatStoreNV(acc[i][j], o4, base + (i * FN + j) * 64u, 4u, false);
    }
  }
}
