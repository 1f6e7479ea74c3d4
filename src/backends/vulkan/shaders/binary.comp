// Binary ops on float32 or int32 (is_int), float64 or int64 (the WIDE variant, word.glsl), or the
// 1- and 2-byte dtypes (the ANY variant, elements.glsl), over strided (broadcast: stride 0, or
// negative) operands of rank up to 6, written to a contiguous output; the op is a push constant
// (binary_code() in vulkan_backend.cpp). Integer arithmetic wraps, as the Cpu's; there is no
// integer division (the front end divides integers in float).
#version 450
#extension GL_GOOGLE_include_directive : require
#ifdef ANY
#include "elements.glsl"
#endif
#include "word.glsl"
layout(local_size_x = 256) in;
#ifdef ANY  // float16, bfloat16, uint8, int8 and Bool, read and written as elements.glsl's
layout(std430, set = 0, binding = 0) readonly buffer A { uint a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { uint b[]; };
layout(std430, set = 0, binding = 2) buffer Out { uint o[]; };
#else
layout(std430, set = 0, binding = 0) readonly buffer A { WORD a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { WORD b[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Out { WORD o[]; };
#endif
layout(push_constant) uniform Params {
  uint count, rank, op, out_base;
  uint a_base, b_base, is_int, type;  // type (ANY): the dtype (convert_code)
  uint shape[6];
  int a_stride[6];
  int b_stride[6];
} p;

FLOAT apply_float(uint op, FLOAT x, FLOAT y) {
  switch (op) {
    case 0u: return x + y;
    case 1u: return x - y;
    case 2u: return x * y;
    case 3u: return x / y;
    case 4u: return (isnan(x) || isnan(y)) ? x + y : max(x, y);  // NaN propagates, as PyTorch's
    case 5u: return (isnan(x) || isnan(y)) ? x + y : min(x, y);
    case 6u: return y <= 0.0 ? 0.0 : x;  // relu_backward(grad, y): a NaN y passes the grad
    case 7u: return AS_FLOAT((FLOAT_BITS(x) & MAGNITUDE_BITS) | (FLOAT_BITS(y) & ~MAGNITUDE_BITS));
  }
  return 0.0;
}

WORD apply(uint op, WORD xb, WORD yb) {
  if (p.is_int == 0u) {
    return FLOAT_BITS(apply_float(op, AS_FLOAT(xb), AS_FLOAT(yb)));
  }
  const INT x = INT(xb), y = INT(yb);
  switch (op) {
    case 0u: return WORD(x + y);
    case 1u: return WORD(x - y);
    case 2u: return WORD(x * y);
    case 4u: return WORD(max(x, y));
    case 5u: return WORD(min(x, y));
  }
  return WORD(0);
}

#ifdef ANY
// The 16-bit floats computed in float32 and rounded back, as the Cpu computes them; the small
// integers and Bool in int64, wrapped (Bool: "not zero") by the store.
uint64_t apply_any(uint op, uint t, uint64_t xb, uint64_t yb) {
  if (t_float(t)) {
    const float r = apply_float(op, float(float_value(t, xb)), float(float_value(t, yb)));
    return float_bits(t, double(r));
  }
  const int64_t x = int_value(t, xb), y = int_value(t, yb);
  switch (op) {
    case 0u: return int_bits(t, x + y);
    case 1u: return int_bits(t, x - y);
    case 2u: return int_bits(t, x * y);
    case 4u: return int_bits(t, max(x, y));
  }
  return int_bits(t, min(x, y));
}
#endif

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
#ifdef ANY
    const uint64_t r =
        apply_any(p.op, p.type, LOAD_BITS(a, p.type, uint(ia)), LOAD_BITS(b, p.type, uint(ib)));
    STORE_BITS(o, p.type, p.out_base + i, r);
#else
    o[p.out_base + i] = apply(p.op, a[ia], b[ib]);
#endif
  }
}
