// copy of 32-bit elements (any 4-byte dtype, bits moved unchanged; 8-byte ones in the WIDE
// variant, word.glsl) from a strided source of rank
// up to 6 into a contiguous destination.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "word.glsl"
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) readonly buffer Src { WORD src[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Dst { WORD dst[]; };
layout(push_constant) uniform Params {
  uint count, rank, src_base, dst_base;
  uint shape[6];
  int stride[6];
} p;

void main() {
  const uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += step) {
    uint rest = i;
    int at = int(p.src_base);
    for (int d = int(p.rank) - 1; d >= 0; --d) {
      const uint c = rest % p.shape[d];
      rest /= p.shape[d];
      at += int(c) * p.stride[d];
    }
    dst[p.dst_base + i] = src[at];
  }
}
