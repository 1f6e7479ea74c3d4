// fill: every 32-bit word of the bound range gets `lo` (words == 1 per element) or the 64-bit
// pattern lo, hi (two words per element): f32/i32, and f64/i64, values written as bits.
#version 450
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) writeonly buffer Out { uint words[]; };
layout(push_constant) uniform Params {
  uint count;  // elements
  uint base;   // first word of the tensor in the binding
  uint wide;   // 1: two words per element
  uint lo, hi;
} p;

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) {
    if (p.wide == 1u) {
      words[p.base + 2u * i] = p.lo;
      words[p.base + 2u * i + 1u] = p.hi;
    } else {
      words[p.base + i] = p.lo;
    }
  }
}
