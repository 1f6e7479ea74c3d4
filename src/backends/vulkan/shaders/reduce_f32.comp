// Float32 sum, mean, prod, amax and amin over any set of dims of a strided operand: one workgroup
// per output element (a grid-stride loop over outputs), each invocation folding every 256th
// reduced element, then a tree over shared memory in a fixed order. The kept and the reduced
// dims each come as shape and strides (rank up to 6 each); the output is contiguous. Sums add in
// f32 (the Cpu adds in f64); max and min propagate NaN, as PyTorch's.
#version 450
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Out { float o[]; };
layout(push_constant) uniform Params {
  uint out_count, red_count, op, x_base;
  uint out_base, kept_rank, red_rank, pad0;
  uint kept_shape[6];
  int kept_stride[6];
  uint red_shape[6];
  int red_stride[6];
} p;

shared float part[256];

float init_value(uint op) {
  if (op == 2u) return 1.0;
  if (op == 3u) return -uintBitsToFloat(0x7f800000u);
  if (op == 4u) return uintBitsToFloat(0x7f800000u);
  return 0.0;
}

float fold(uint op, float a, float v) {
  switch (op) {
    case 2u: return a * v;
    case 3u: return (v > a || isnan(v) || isnan(a)) ? (isnan(a) ? a : v) : a;
    case 4u: return (v < a || isnan(v) || isnan(a)) ? (isnan(a) ? a : v) : a;
  }
  return a + v;  // sum, mean
}

// The element offset of index i of a dims set (shape, strides), the last dim fastest.
int offset_of(uint i, uint rank, uint shape[6], int stride[6]) {
  int off = 0;
  for (int d = int(rank) - 1; d >= 0; --d) {
    off += int(i % shape[d]) * stride[d];
    i /= shape[d];
  }
  return off;
}

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint op = p.op & 255u;
  const bool serial = (p.op >> 24) != 0u;  // an invocation an output, as reduce.comp's
  const uint first = serial ? gl_GlobalInvocationID.x : gl_WorkGroupID.x;
  const uint step = serial ? gl_NumWorkGroups.x * 256u : gl_NumWorkGroups.x;
  for (uint out_i = first; out_i < p.out_count; out_i += step) {
    const int base = int(p.x_base) + offset_of(out_i, p.kept_rank, p.kept_shape, p.kept_stride);
    float acc = init_value(op);
    for (uint r = serial ? 0u : t; r < p.red_count; r += serial ? 1u : 256u) {
      acc = fold(op, acc, x[base + offset_of(r, p.red_rank, p.red_shape, p.red_stride)]);
    }
    if (!serial) {
      part[t] = acc;
      barrier();
      for (uint width = 128u; width > 0u; width >>= 1) {
        if (t < width) part[t] = fold(op, part[t], part[t + width]);
        barrier();
      }
      acc = part[0];
    }
    if (serial || t == 0u) o[p.out_base + out_i] = op == 1u ? acc / float(p.red_count) : acc;
    if (!serial) barrier();  // part[] is reused by the next output
  }
}
