// The ceiling of VK_NV_cooperative_matrix's multiply-add (probe.cpp): every subgroup runs
// ITERS x FM x FN 16x16x16 products on fragments held in registers, loaded once, with no memory
// traffic in the loop; the sums are stored at the end so that the driver keeps the work.
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
layout(std430, binding = 0) readonly buffer A4 { uvec4 a4[]; };
layout(std430, binding = 2) buffer O4 { uvec4 o4[]; };
#define ACC fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>
void main() {
  fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fa[FM], fb[FN];
  ACC acc[FM][FN];
  [[unroll]] for (uint i = 0u; i < FM; ++i) coopMatLoadNV(fa[i], a4, i * 32u, 2u, false);
  [[unroll]] for (uint j = 0u; j < FN; ++j) {
    coopMatLoadNV(fb[j], a4, 1024u + j * 32u, 2u, false);
  }
  [[unroll]] for (uint i = 0u; i < FM; ++i) {
    [[unroll]] for (uint j = 0u; j < FN; ++j) acc[i][j] = ACC(0.0);
  }
  for (uint it = 0u; it < ITERS; ++it) {
    [[unroll]] for (uint i = 0u; i < FM; ++i) {
      [[unroll]] for (uint j = 0u; j < FN; ++j) {
      acc[i][j] = coopMatMulAddNV(fa[i], fb[j], acc[i][j]);
    }
    }
  }
  const uint base = (gl_WorkGroupID.x * (THREADS / 32u) + gl_SubgroupID) * FM * FN * 64u;
  [[unroll]] for (uint i = 0u; i < FM; ++i) {
    [[unroll]] for (uint j = 0u; j < FN; ++j) {
      coopMatStoreNV(acc[i][j], o4, base + (i * FN + j) * 64u, 4u, false);
    }
  }
}
