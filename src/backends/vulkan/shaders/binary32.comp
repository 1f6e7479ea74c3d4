// Binary ops on float32 or int32 (is_int) over strided (broadcast: stride 0, or negative)
// operands of rank up to 6, written to a contiguous output; the op is a push constant
// (binary_code() in vulkan_backend.cpp). int32 arithmetic wraps, as the Cpu's; there is no int32
// division (the front end divides integers in float).
#version 450
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) readonly buffer A { uint a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { uint b[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Out { uint o[]; };
layout(push_constant) uniform Params {
  uint count, rank, op, out_base;
  uint a_base, b_base, is_int, pad1;
  uint shape[6];
  int a_stride[6];
  int b_stride[6];
} p;

float apply_float(uint op, float x, float y) {
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

uint apply(uint op, uint xb, uint yb) {
  if (p.is_int == 0u) {
    return floatBitsToUint(apply_float(op, uintBitsToFloat(xb), uintBitsToFloat(yb)));
  }
  const int x = int(xb), y = int(yb);
  switch (op) {
    case 0u: return uint(x + y);
    case 1u: return uint(x - y);
    case 2u: return uint(x * y);
    case 4u: return uint(max(x, y));
    case 5u: return uint(min(x, y));
  }
  return 0u;
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
