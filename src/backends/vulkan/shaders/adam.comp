// One Adam/AdamW step over contiguous float32 tensors: param, grad, exp_avg, exp_avg_sq and, with
// amsgrad, max_exp_avg_sq in, the new param and state out (the same ranges, in place: each
// invocation reads its elements before it writes them), in the order of the Cpu's element formula
// (src/core/adam_step.hpp). The Cpu's and Cuda's compilers fuse multiply-adds there as the
// driver may here, so the three agree to float32 rounding, not bit for bit.
#version 450
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) readonly buffer Param { float w[]; };
layout(std430, set = 0, binding = 1) readonly buffer Grad { float g[]; };
layout(std430, set = 0, binding = 2) readonly buffer ExpAvg { float m[]; };
layout(std430, set = 0, binding = 3) readonly buffer ExpAvgSq { float v[]; };
layout(std430, set = 0, binding = 4) readonly buffer MaxExpAvgSq { float x[]; };  // amsgrad alone
layout(std430, set = 0, binding = 5) writeonly buffer ParamOut { float w_out[]; };
layout(std430, set = 0, binding = 6) writeonly buffer ExpAvgOut { float m_out[]; };
layout(std430, set = 0, binding = 7) writeonly buffer ExpAvgSqOut { float v_out[]; };
layout(std430, set = 0, binding = 8) writeonly buffer MaxExpAvgSqOut { float x_out[]; };
layout(push_constant) uniform Params {
  uint count, flags;  // flags: 1 decoupled weight decay, 2 coupled, 4 amsgrad
  uint w_base, g_base, m_base, v_base, x_base;
  uint w_out_base, m_out_base, v_out_base, x_out_base, pad;
  float decay, wd, one_minus_beta1, beta2, one_minus_beta2, bc2_sqrt, eps, neg_step;
} p;

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) {
    float wi = w[p.w_base + i], gi = g[p.g_base + i];
    if ((p.flags & 1u) != 0u) wi = wi * p.decay;
    if ((p.flags & 2u) != 0u) gi = gi + wi * p.wd;
    const float mi = m[p.m_base + i] + p.one_minus_beta1 * (gi - m[p.m_base + i]);
    const float vi = v[p.v_base + i] * p.beta2 + (gi * gi) * p.one_minus_beta2;
    float second = vi;
    if ((p.flags & 4u) != 0u) {
      const float xi = x[p.x_base + i];
      second = xi > vi ? xi : vi;  // maximum(max_exp_avg_sq, v), NaN from v
      x_out[p.x_out_base + i] = second;
    }
    const float denom = sqrt(second) / p.bc2_sqrt + p.eps;
    w_out[p.w_out_base + i] = wi + (mi / denom) * p.neg_step;
    m_out[p.m_out_base + i] = mi;
    v_out[p.v_out_base + i] = vi;
  }
}
