// argmax / argmin of float32 along one dim of a strided operand (rank up to 6), as the Cpu's: NaN
// wins (the first NaN), then the larger (smaller) value, ties to the first index. The value goes
// to a contiguous float32 output, the index to a contiguous int64 one (two 32-bit words, the high
// one zero). A workgroup per output: each invocation scans every 256th element, then a tree in
// shared memory in a fixed order.
#version 450
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer V { float v[]; };
layout(std430, set = 0, binding = 2) writeonly buffer I { uint idx[]; };
layout(push_constant) uniform Params {
  uint count, rank, len, op;  // op 0: argmax, 1: argmin
  uint x_base, v_base, i_word, pad0;
  int dim_stride, pad1, pad2, pad3;
  uint shape[6];  // the outputs' (the reduced dim 1)
  int stride[6];  // x's
} p;

shared float sv[256];
shared uint si[256];

const uint kNone = 0xffffffffu;

// Whether (a, ia) beats (b, ib).
bool beats(float a, uint ia, float b, uint ib) {
  const bool an = isnan(a), bn = isnan(b);
  if (an || bn) return an && (!bn || ia < ib);
  if (a == b) return ia < ib;
  return p.op == 0u ? a > b : a < b;
}

void main() {
  const uint t = gl_LocalInvocationID.x;
  for (uint o = gl_WorkGroupID.x; o < p.count; o += gl_NumWorkGroups.x) {
    uint rest = o;
    int base = int(p.x_base);
    for (int d = int(p.rank) - 1; d >= 0; --d) {
      const uint c = rest % p.shape[d];
      rest /= p.shape[d];
      base += int(c) * p.stride[d];
    }
    float best = 0.0;
    uint bi = kNone;
    for (uint j = t; j < p.len; j += 256u) {
      const float val = x[base + int(j) * p.dim_stride];
      if (bi == kNone || beats(val, j, best, bi)) {
        best = val;
        bi = j;
      }
    }
    sv[t] = best;
    si[t] = bi;
    barrier();
    for (uint h = 128u; h > 0u; h >>= 1u) {
      if (t < h) {
        const uint other = si[t + h];
        if (other != kNone && (si[t] == kNone || beats(sv[t + h], other, sv[t], si[t]))) {
          sv[t] = sv[t + h];
          si[t] = other;
        }
      }
      barrier();
    }
    if (t == 0u) {
      v[p.v_base + o] = sv[0];
      idx[p.i_word + 2u * o] = si[0];
      idx[p.i_word + 2u * o + 1u] = 0u;
    }
    barrier();  // the shared arrays serve the next output
  }
}
