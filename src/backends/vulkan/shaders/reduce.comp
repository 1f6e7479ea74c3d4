// Sum, mean, prod, amax, amin, all and any over any set of dims of a strided operand of any
// dtype (elements.glsl): floats fold in double, integers and Bool in int64 (sums and products
// wrap, as the Cpu's), and the result is written in the output's dtype (sums of integers are
// int64, all and any Bool). One workgroup per output element, each invocation folding every
// 256th reduced element, then a tree in shared memory in a fixed order. Max and min propagate
// NaN. With `parts` (op >> 8) above 1, each output's reduced elements are cut into that many
// consecutive ranges folded apart into out [outputs, parts] (double or int64), which a second
// pass folds: few outputs of long reductions (a bias gradient) then fill a GPU. With bit 24 of
// op set, an invocation folds each output in order instead (short reductions of many outputs,
// which a workgroup each left mostly idle: lavapipe took 1.8 s for 43,690 sums of 7). The
// float32-only reduce_f32.comp is the fast path; this one needs shaderInt64 and shaderFloat64.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "elements.glsl"
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(std430, set = 0, binding = 1) buffer Out { uint o[]; };
layout(push_constant) uniform Params {
  uint out_count, red_count, op, x_base;  // op: the ReduceOp | parts << 8
  uint out_base, kept_rank, red_rank, types;  // types: x's | out's << 8
  uint kept_shape[6];
  int kept_stride[6];
  uint red_shape[6];
  int red_stride[6];
} p;

shared double fpart[256];
shared int64_t ipart[256];

const uint SUM = 0u, MEAN = 1u, PROD = 2u, AMAX = 3u, AMIN = 4u, ALL = 5u, ANY = 6u;
uint op;

double fold_f(double a, double v) {
  switch (op) {
    case PROD: return a * v;
    case AMAX: return isnan(a) || isnan(v) ? (isnan(a) ? a : v) : max(a, v);
    case AMIN: return isnan(a) || isnan(v) ? (isnan(a) ? a : v) : min(a, v);
  }
  return a + v;  // sum, mean
}

int64_t fold_i(int64_t a, int64_t v) {
  switch (op) {
    case PROD: return a * v;
    case AMAX: return max(a, v);
    case AMIN: return min(a, v);
    case ALL: return a & v;
    case ANY: return a | v;
  }
  return a + v;
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

// Writes output (or part) v from its fold: floats' in fa, integers' and truth values' in ia.
void store(uint v, double fa, int64_t ia) {
  const uint xt = p.types & 255u, ot = p.types >> 8;
  const bool f = t_float(xt) && op != ALL && op != ANY;
  const double fr = op == MEAN ? fa / double(p.red_count) : fa;
  const uint64_t bits =
      f ? float_bits(ot, fr) : (t_float(ot) ? float_bits(ot, double(ia)) : int_bits(ot, ia));
  STORE_BITS(o, ot, p.out_base + v, bits);
}

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint xt = p.types & 255u, ot = p.types >> 8;
  op = p.op & 255u;
  const uint parts = max((p.op >> 8) & 0xffffu, 1u), chunk = (p.red_count + parts - 1u) / parts;
  const bool serial = (p.op >> 24) != 0u;
  // all and any fold truth values; the others fold values, in double for float operands
  const bool logical = op == ALL || op == ANY, f = t_float(xt) && !logical;
  const double inf = uint64BitsToDouble(0x7ff0000000000000UL);
  const double f0 = op == PROD ? 1.0 : (op == AMAX ? -inf : (op == AMIN ? inf : 0.0));
  const int64_t i0 = op == PROD || op == ALL ? 1L
                     : op == AMAX              ? int64_t(0x8000000000000000UL)
                     : op == AMIN              ? int64_t(0x7fffffffffffffffUL)
                                               : 0L;
  // Output v is part v % parts of output v / parts (parts 1: output v itself).
  const uint first = serial ? gl_GlobalInvocationID.x : gl_WorkGroupID.x;
  const uint step = serial ? gl_NumWorkGroups.x * 256u : gl_NumWorkGroups.x;
  for (uint v = first; v < p.out_count * parts; v += step) {
    const uint out_i = v / parts, begin = (v % parts) * chunk;
    const uint end = min(p.red_count, begin + chunk);
    const int base = int(p.x_base) + offset_of(out_i, p.kept_rank, p.kept_shape, p.kept_stride);
    double fa = f0;
    int64_t ia = i0;
    for (uint r = begin + (serial ? 0u : t); r < end; r += serial ? 1u : 256u) {
      const uint at = uint(base + offset_of(r, p.red_rank, p.red_shape, p.red_stride));
      const uint64_t bits = LOAD_BITS(x, xt, at);
      if (f) {
        fa = fold_f(fa, float_value(xt, bits));
      } else {
        ia = fold_i(ia, logical ? (truthy(xt, bits) ? 1L : 0L) : int_value(xt, bits));
      }
    }
    if (serial) {
      store(v, fa, ia);
      continue;
    }
    fpart[t] = fa;
    ipart[t] = ia;
    barrier();
    for (uint width = 128u; width > 0u; width >>= 1) {
      if (t < width) {
        fpart[t] = fold_f(fpart[t], fpart[t + width]);
        ipart[t] = fold_i(ipart[t], ipart[t + width]);
      }
      barrier();
    }
    if (t == 0u) store(v, fpart[0], ipart[0]);
    barrier();  // the parts are reused by the next output
  }
}
