// Binary float32 ops over strided (broadcast: stride 0, or negative) operands of rank up to 6,
// written to a contiguous output; the op is a push constant (Ember's BinaryOp numbering, see
// binary_code() in elementwise.cpp).
#version 450
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) readonly buffer A { float a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { float b[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Out { float o[]; };
layout(push_constant) uniform Params {
  uint count, rank, op, out_base;
  uint a_base, b_base, pad0, pad1;
  uint shape[6];
  int a_stride[6];
  int b_stride[6];
} p;

float apply(uint op, float x, float y) {
  switch (op) {
    case 0u: return x + y;
    case 1u: return x - y;
    case 2u: return x * y;
    case 3u: return x / y;
    case 4u: return (isnan(x) || isnan(y)) ? x + y : max(x, y);  // NaN propagates, as PyTorch's
    case 5u: return (isnan(x) || isnan(y)) ? x + y : min(x, y);
  }
  return 0.0;
}

void main() {
  const uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += step) {
    uint rest = i;
    int ia = int(p.a_base), ib = int(p.b_base);
    for (int d = int(p.rank) - 1; d >= 0; --d) {
      const int c = int(rest % p.shape[d]);
      rest /= p.shape[d];
      ia += c * p.a_stride[d];
      ib += c * p.b_stride[d];
    }
    o[p.out_base + i] = apply(p.op, a[ia], b[ib]);
  }
}
