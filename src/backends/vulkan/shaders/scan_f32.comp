// cumsum / cumprod of float32 along one dim of a strided operand (rank up to 6) into a contiguous
// output. A workgroup a row: the row goes through in chunks of 256, each scanned in shared memory
// by doubling steps (Hillis-Steele), then offset by the carry of the chunks before it, in a fixed
// order (the same bits from run to run). Sums and products are in float32, where the Cpu keeps
// double: they differ in the last bits.
#version 450
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Out { float o[]; };
layout(push_constant) uniform Params {
  uint rows, rank, len, op;  // op 0: cumsum, 1: cumprod
  uint x_base, out_base;
  int x_step, out_step;      // between neighbours along the dim
  uint shape[6];             // the rows' shape (the dim 1)
  int x_stride[6];
  int out_stride[6];
} p;

shared float s[256];

float combine(float a, float b) { return p.op == 0u ? a + b : a * b; }

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
    float carry = p.op == 0u ? 0.0 : 1.0;
    for (uint k0 = 0u; k0 < p.len; k0 += 256u) {
      const uint k = k0 + t;
      s[t] = k < p.len ? x[xb + int(k) * p.x_step] : (p.op == 0u ? 0.0 : 1.0);
      barrier();
      for (uint h = 1u; h < 256u; h <<= 1u) {
        const float other = t >= h ? s[t - h] : (p.op == 0u ? 0.0 : 1.0);
        barrier();
        s[t] = combine(other, s[t]);
        barrier();
      }
      if (k < p.len) o[ob + int(k) * p.out_step] = combine(carry, s[t]);
      carry = combine(carry, s[255]);
      barrier();  // s is refilled by the next chunk
    }
  }
}
