// Comparisons (==, !=, <, <=, >, >=) and logical and, or and xor of float32 or int32 (is_int)
// operands (float64 or int64 in the WIDE variant, word.glsl; the 1- and 2-byte dtypes in the ANY
// variant, elements.glsl; int64 as two 32-bit words in the PAIR variant, for devices without
// shaderInt64 or float64), and isnan, isinf and logical_not
// of a float a (b bound to a), over strided (broadcast: stride 0, or negative) operands of rank
// up to 6, written as Bool: one byte per element, four packed in each 32-bit word of a
// contiguous output, an invocation a word (no two write one word); a last word the output
// shares with other bytes keeps them. The output's range is padded to whole words
// (vulkan_backend.cpp). NaN compares unequal to everything, as in C++ and PyTorch, and counts as
// true in the logical ops.
#version 450
#extension GL_GOOGLE_include_directive : require
#ifdef ANY
#include "elements.glsl"
#endif
#include "word.glsl"
layout(local_size_x = 256) in;
#ifdef ANY  // float16, bfloat16, uint8, int8 and Bool operands (elements.glsl)
layout(std430, set = 0, binding = 0) readonly buffer A { uint a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { uint b[]; };
#else
layout(std430, set = 0, binding = 0) readonly buffer A { WORD a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { WORD b[]; };
#endif
layout(std430, set = 0, binding = 2) buffer Out { uint o[]; };
layout(push_constant) uniform Params {
  uint count, rank, op, out_word;
  uint a_base, b_base, is_int, type;  // type (ANY): the operands' dtype (convert_code)
  uint shape[6];
  int a_stride[6];
  int b_stride[6];
} p;

#ifndef PAIR
bool apply_float(uint op, FLOAT x, FLOAT y) {
  switch (op) {
    case 0u: return x == y;
    case 1u: return !(x == y);  // glslang's != is the ordered one, false for NaN
    case 2u: return x < y;
    case 3u: return x <= y;
    case 4u: return x > y;
    case 5u: return x >= y;
    case 6u: return isnan(x);  // the one-operand tests (y is x)
    case 7u: return isinf(x);
  }
  return false;
}

// Whether a value is not zero, from its bits: a float comparison with 0.0 may flush subnormals
// to zero, the Cpu's does not. NaN counts as true.
bool truthy(WORD bits) { return (bits & (p.is_int == 1u ? ALL_BITS : MAGNITUDE_BITS)) != WORD(0); }

bool apply(uint op, WORD xb, WORD yb) {
  switch (op) {
    case 8u: return !truthy(xb);  // logical_not
    case 9u: return truthy(xb) && truthy(yb);  // logical_and, or, xor
    case 10u: return truthy(xb) || truthy(yb);
    case 11u: return truthy(xb) != truthy(yb);
  }
  if (p.is_int == 0u) return apply_float(op, AS_FLOAT(xb), AS_FLOAT(yb));
  const INT x = INT(xb), y = INT(yb);
  switch (op) {
    case 0u: return x == y;
    case 1u: return x != y;
    case 2u: return x < y;
    case 3u: return x <= y;
    case 4u: return x > y;
    case 5u: return x >= y;
  }
  return false;
}
#else
// int64 as (low, high) words.
bool apply_pair(uint op, uvec2 x, uvec2 y) {
  const bool tx = x != uvec2(0u), ty = y != uvec2(0u);
  const bool eq = x == y, lt = pair_less(x, y);
  switch (op) {
    case 0u: return eq;
    case 1u: return !eq;
    case 2u: return lt;
    case 3u: return lt || eq;
    case 4u: return !(lt || eq);
    case 5u: return !lt;
    case 8u: return !tx;
    case 9u: return tx && ty;
    case 10u: return tx || ty;
    case 11u: return tx != ty;
  }
  return false;  // isnan, isinf of an integer
}
#endif

#ifdef ANY
// Values compared exactly in double (the 16-bit floats) or int64; truth from the bits.
bool apply_any(uint op, uint t, uint64_t xb, uint64_t yb) {
  switch (op) {
    case 8u: return !truthy(t, xb);
    case 9u: return truthy(t, xb) && truthy(t, yb);
    case 10u: return truthy(t, xb) || truthy(t, yb);
    case 11u: return truthy(t, xb) != truthy(t, yb);
  }
  if (t_float(t)) {
    const double x = float_value(t, xb), y = float_value(t, yb);
    switch (op) {
      case 0u: return x == y;
      case 1u: return !(x == y);
      case 2u: return x < y;
      case 3u: return x <= y;
      case 4u: return x > y;
      case 5u: return x >= y;
      case 6u: return isnan(x);
      case 7u: return isinf(x);
    }
    return false;
  }
  const int64_t x = int_value(t, xb), y = int_value(t, yb);
  switch (op) {
    case 0u: return x == y;
    case 1u: return x != y;
    case 2u: return x < y;
    case 3u: return x <= y;
    case 4u: return x > y;
    case 5u: return x >= y;
  }
  return false;  // isnan, isinf of an integer
}
#endif

void main() {
  const uint words = (p.count + 3u) / 4u;
  const uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint w = gl_GlobalInvocationID.x; w < words; w += step) {
    uint word = 0u, mask = 0u;
    for (uint k = 0u; k < 4u; ++k) {
      const uint i = w * 4u + k;
      if (i >= p.count) break;
      uint rest = i;
      int ia = int(p.a_base), ib = int(p.b_base);
      for (int d = int(p.rank) - 1; d >= 0; --d) {
        const int c = int(rest % p.shape[d]);
        rest /= p.shape[d];
        ia += c * p.a_stride[d];
        ib += c * p.b_stride[d];
      }
#ifdef ANY
      const bool r = apply_any(p.op, p.type, LOAD_BITS(a, p.type, uint(ia)),
                               LOAD_BITS(b, p.type, uint(ib)));
#elif defined(PAIR)
      const bool r = apply_pair(p.op, a[ia], b[ib]);
#else
      const bool r = apply(p.op, a[ia], b[ib]);
#endif
      if (r) word |= 1u << (8u * k);
      mask |= 0xffu << (8u * k);
    }
    // The last word of a view that ends inside it keeps its other bytes (no other invocation
    // writes that word).
    o[p.out_word + w] = mask == 0xffffffffu ? word : (o[p.out_word + w] & ~mask) | word;
  }
}
