// Split-K's last step: out [e] = parts [splits, e] summed over its first dim in order, so that the
// result is the one a chain of additions part by part gives, in one dispatch (float32).
#version 450
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) readonly buffer Parts { float parts[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Out { float o[]; };
layout(push_constant) uniform Params {
  uint count, splits, parts_base, out_base;
} p;

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) {
    float s = parts[p.parts_base + i];
    for (uint j = 1u; j < p.splits; ++j) s += parts[p.parts_base + j * p.count + i];
    o[p.out_base + i] = s;
  }
}
