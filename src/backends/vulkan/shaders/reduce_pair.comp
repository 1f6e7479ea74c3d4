// reduce.comp for integer and Bool operands on a device without its shaderInt64 and
// shaderFloat64: sum, prod, amax, amin, all and any over any set of dims, folded as int64 held in
// two 32-bit words (word.glsl's PAIR functions; sums and products wrap, as the Cpu's), written
// in the output's integer or Bool dtype. The same workgroup an output, tree in shared memory and
// parts (op >> 8) as reduce.comp. Type codes as convert.comp's.
#version 450
#extension GL_GOOGLE_include_directive : require
#define PAIR
#include "word.glsl"
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(std430, set = 0, binding = 1) buffer Out { uint o[]; };
layout(push_constant) uniform Params {
  uint out_count, red_count, op, x_base;      // op: the ReduceOp | parts << 8
  uint out_base, kept_rank, red_rank, types;  // types: x's | out's << 8
  uint kept_shape[6];
  int kept_stride[6];
  uint red_shape[6];
  int red_stride[6];
} p;

shared uvec2 part[256];

const uint SUM = 0u, PROD = 2u, AMAX = 3u, AMIN = 4u, ALL = 5u, ANY = 6u;
const uint T_I32 = 1u, T_U8 = 2u, T_I8 = 3u, T_BOOL = 4u, T_I64 = 7u;
uint op;

uvec2 fold(uvec2 a, uvec2 v) {
  switch (op) {
    case PROD: return pair_mul(a, v);
    case AMAX: return pair_less(a, v) ? v : a;
    case AMIN: return pair_less(v, a) ? v : a;
    case ALL: return a & v;
    case ANY: return a | v;
  }
  return pair_add(a, v);
}

// Element `at` of integer type t as an int64 pair (Bool as 0 and 1).
uvec2 load(uint t, uint at) {
  if (t == T_I64) return uvec2(x[2u * at], x[2u * at + 1u]);
  if (t == T_I32) return pair_of(int(x[at]));
  const int b = int((x[at >> 2u] >> (8u * (at & 3u))) & 0xffu);
  if (t == T_I8) return pair_of(bitfieldExtract(b, 0, 8));
  return uvec2(t == T_BOOL ? uint(b != 0) : uint(b), 0u);
}

// Writes v as element `at` of integer type t (wrapped to its width; Bool: not zero), 1-byte
// elements with atomics on their word, which other invocations may write.
void store(uint t, uint at, uvec2 v) {
  if (t == T_I64) {
    o[2u * at] = v.x;
    o[2u * at + 1u] = v.y;
  } else if (t == T_I32) {
    o[at] = v.x;
  } else {
    const uint sh = 8u * (at & 3u), byte = t == T_BOOL ? uint(v != uvec2(0u)) : v.x & 0xffu;
    atomicAnd(o[at >> 2u], ~(0xffu << sh));
    atomicOr(o[at >> 2u], byte << sh);
  }
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
  const uint xt = p.types & 255u, ot = p.types >> 8;
  op = p.op & 255u;
  const uint parts = max((p.op >> 8) & 0xffffu, 1u), chunk = (p.red_count + parts - 1u) / parts;
  const bool serial = (p.op >> 24) != 0u;  // an invocation an output, as reduce.comp's
  const bool logical = op == ALL || op == ANY;
  const uvec2 start = op == PROD || op == ALL ? uvec2(1u, 0u)
                      : op == AMAX            ? uvec2(0u, 0x80000000u)
                      : op == AMIN            ? uvec2(0xffffffffu, 0x7fffffffu)
                                              : uvec2(0u);
  // Output v is part v % parts of output v / parts (parts 1: output v itself).
  const uint first = serial ? gl_GlobalInvocationID.x : gl_WorkGroupID.x;
  const uint step = serial ? gl_NumWorkGroups.x * 256u : gl_NumWorkGroups.x;
  for (uint v = first; v < p.out_count * parts; v += step) {
    const uint out_i = v / parts, begin = (v % parts) * chunk;
    const uint end = min(p.red_count, begin + chunk);
    const int base = int(p.x_base) + offset_of(out_i, p.kept_rank, p.kept_shape, p.kept_stride);
    uvec2 acc = start;
    for (uint r = begin + (serial ? 0u : t); r < end; r += serial ? 1u : 256u) {
      const uvec2 e = load(xt, uint(base + offset_of(r, p.red_rank, p.red_shape, p.red_stride)));
      acc = fold(acc, logical ? uvec2(uint(e != uvec2(0u)), 0u) : e);
    }
    if (serial) {
      store(ot, p.out_base + v, acc);
      continue;
    }
    part[t] = acc;
    barrier();
    for (uint width = 128u; width > 0u; width >>= 1) {
      if (t < width) part[t] = fold(part[t], part[t + width]);
      barrier();
    }
    if (t == 0u) store(ot, p.out_base + v, part[0]);
    barrier();  // part[] is reused by the next output
  }
}
