// cumsum / cumprod along one dim of a strided operand (rank up to 6) into a contiguous output. A
// workgroup a row: the row goes through in chunks of 256, each scanned in shared memory by
// doubling steps (Hillis-Steele), then offset by the carry of the chunks before it, in a fixed
// order (the same bits from run to run). The default variant is float32, summing in float32
// where the Cpu keeps double (they differ in the last bits); the ANY variant (elements.glsl)
// takes every dtype as the Cpu does: floats in double, integers and Bool in int64 (an int64
// output), each value held as 64 bits. The PAIR variant (word.glsl) scans int64 in two 32-bit
// words, wrapping as the Cpu's: the integers on a device without float64 (the host widens
// them to int64 first).
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#ifdef ANY
#include "elements.glsl"
layout(std430, set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(std430, set = 0, binding = 1) buffer Out { uint o[]; };
#define VALUE uint64_t
#elif defined(PAIR)
#include "word.glsl"
layout(std430, set = 0, binding = 0) readonly buffer X { uvec2 x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Out { uvec2 o[]; };
#define VALUE uvec2
#else
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Out { float o[]; };
#define VALUE float
#endif
layout(push_constant) uniform Params {
  uint rows, rank, len, op;  // op 0: cumsum, 1: cumprod
  uint x_base, out_base;
  int x_step, out_step;      // between neighbours along the dim
  uint shape[6];             // the rows' shape (the dim 1)
  int x_stride[6];
  int out_stride[6];
  uint types, pad0, pad1, pad2;  // ANY: x's dtype | out's << 8
} p;

shared VALUE s[256];

#ifdef ANY
bool floats() { return t_float(p.types & 255u); }
VALUE identity() {
  if (floats()) return doubleBitsToUint64(p.op == 0u ? 0.0 : 1.0);
  return p.op == 0u ? 0UL : 1UL;
}
VALUE combine(VALUE a, VALUE b) {
  if (floats()) {
    const double x = uint64BitsToDouble(a), y = uint64BitsToDouble(b);
    return doubleBitsToUint64(p.op == 0u ? x + y : x * y);
  }
  return p.op == 0u ? a + b : uint64_t(int64_t(a) * int64_t(b));
}
VALUE load(int at) {
  const uint t = p.types & 255u;
  const uint64_t bits = LOAD_BITS(x, t, uint(at));
  return floats() ? doubleBitsToUint64(float_value(t, bits)) : uint64_t(int_value(t, bits));
}
void store(int at, VALUE v) {
  const uint t = p.types >> 8;
  const uint64_t bits = floats() ? float_bits(t, uint64BitsToDouble(v)) : int_bits(t, int64_t(v));
  STORE_BITS(o, t, uint(at), bits);
}
#elif defined(PAIR)
VALUE identity() { return uvec2(p.op == 0u ? 0u : 1u, 0u); }
VALUE combine(VALUE a, VALUE b) { return p.op == 0u ? pair_add(a, b) : pair_mul(a, b); }
VALUE load(int at) { return x[at]; }
void store(int at, VALUE v) { o[at] = v; }
#else
VALUE identity() { return p.op == 0u ? 0.0 : 1.0; }
VALUE combine(VALUE a, VALUE b) { return p.op == 0u ? a + b : a * b; }
VALUE load(int at) { return x[at]; }
void store(int at, VALUE v) { o[at] = v; }
#endif

void main() {
  const uint t = gl_LocalInvocationID.x;
  for (uint r = gl_WorkGroupID.x; r < p.rows; r += gl_NumWorkGroups.x) {
    uint rest = r;
    int xb = int(p.x_base), ob = int(p.out_base);
    for (int d = int(p.rank) - 1; d >= 0; --d) {
      const int c = int(rest % p.shape[d]);
      rest /= p.shape[d];
      xb += c * p.x_stride[d];
      ob += c * p.out_stride[d];
    }
    VALUE carry = identity();
    for (uint k0 = 0u; k0 < p.len; k0 += 256u) {
      const uint k = k0 + t;
      s[t] = k < p.len ? load(xb + int(k) * p.x_step) : identity();
      barrier();
      for (uint h = 1u; h < 256u; h <<= 1u) {
        const VALUE other = t >= h ? s[t - h] : identity();
        barrier();
        s[t] = combine(other, s[t]);
        barrier();
      }
      if (k < p.len) store(ob + int(k) * p.out_step, combine(carry, s[t]));
      carry = combine(carry, s[255]);
      barrier();  // s is refilled by the next chunk
    }
  }
}
