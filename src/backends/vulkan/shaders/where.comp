// where(cond, a, b) for a and b of one 4-byte dtype (float32, int32: bits moved unchanged; 8-byte ones in the
// WIDE variant, word.glsl; 1- and 2-byte ones in the ANY variant) and a
// Bool cond (bytes, read out of 32-bit words; its range is padded to whole words), all strided
// (broadcast: stride 0, or negative) up to rank 6, written to a contiguous output. Any nonzero
// byte is true.
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) readonly buffer C { uint c[]; };
#ifdef ANY  // 1- and 2-byte elements (elements.glsl), written with atomics on their word
#include "elements.glsl"
layout(std430, set = 0, binding = 1) readonly buffer A { uint a[]; };
layout(std430, set = 0, binding = 2) readonly buffer B { uint b[]; };
layout(std430, set = 0, binding = 3) buffer Out { uint o[]; };
#else
#include "word.glsl"
layout(std430, set = 0, binding = 1) readonly buffer A { WORD a[]; };
layout(std430, set = 0, binding = 2) readonly buffer B { WORD b[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Out { WORD o[]; };
#endif
layout(push_constant) uniform Params {
  uint count, rank, out_base, c_base;
  uint a_base, b_base, type, pad1;  // type (ANY): the elements' (convert_code)
  uint shape[6];
  int c_stride[6];
  int a_stride[6];
  int b_stride[6];
} p;

void main() {
  const uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += step) {
    uint rest = i;
    int ic = int(p.c_base), ia = int(p.a_base), ib = int(p.b_base);
    for (int d = int(p.rank) - 1; d >= 0; --d) {
      const int k = int(rest % p.shape[d]);
      rest /= p.shape[d];
      ic += k * p.c_stride[d];
      ia += k * p.a_stride[d];
      ib += k * p.b_stride[d];
    }
    const uint byte = (c[uint(ic) >> 2u] >> (8u * (uint(ic) & 3u))) & 0xffu;
#ifdef ANY
    const uint64_t v = byte != 0u ? LOAD_BITS(a, p.type, uint(ia)) : LOAD_BITS(b, p.type, uint(ib));
    STORE_BITS(o, p.type, p.out_base + i, v);
#else
    o[p.out_base + i] = byte != 0u ? a[ia] : b[ib];
#endif
  }
}
