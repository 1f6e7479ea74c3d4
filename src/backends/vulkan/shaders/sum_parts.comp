// Split-K's last step: out [e] = parts [splits, e] summed over its first dim in order, so that the
// result is the one a chain of additions part by part gives, in one dispatch. The parts are
// float32; out is float32, or with HALF_OUT float16 rounded once (to nearest even), written with
// atomic and/or on its word, which a neighbour's invocation shares.
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) readonly buffer Parts { float parts[]; };
#ifdef HALF_OUT
layout(std430, set = 0, binding = 1) buffer Out { uint o[]; };
#include "half.glsl"
#else
layout(std430, set = 0, binding = 1) writeonly buffer Out { float o[]; };
#endif
layout(push_constant) uniform Params {
  uint count, splits, parts_base, out_base;
} p;

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) {
    float s = parts[p.parts_base + i];
    for (uint j = 1u; j < p.splits; ++j) s += parts[p.parts_base + j * p.count + i];
#ifdef HALF_OUT
    const uint at = p.out_base + i, shift = (at & 1u) * 16u;
    atomicAnd(o[at >> 1u], ~(0xffffu << shift));
    atomicOr(o[at >> 1u], to_f16(s) << shift);
#else
    o[p.out_base + i] = s;
#endif
  }
}
