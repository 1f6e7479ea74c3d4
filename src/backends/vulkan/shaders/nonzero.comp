// nonzero of a strided operand of any dtype (elements.glsl) and rank up to 6, in three passes
// over blocks of 1024 elements (a workgroup each, invocation t taking elements 4t to 4t + 3):
//   mode 0: counts[block] = the block's nonzero elements
//   mode 1: one workgroup turns counts into exclusive offsets, the total after the last block
//   mode 2: each block writes the coordinates of its nonzero elements, in row-major order, from
//           its offset: a scan over the invocations' counts in shared memory places each one
// The host reads the total between modes 1 and 2 to size the output, as PyTorch's nonzero
// synchronises. Coordinates are int64, two 32-bit words each. The BOOL variant reads a Bool
// operand's bytes alone and needs no 64-bit type: on a device without float64 the host tests
// other dtypes against zero into a Bool first.
#version 450
#extension GL_GOOGLE_include_directive : require
#ifndef BOOL
#include "elements.glsl"
#endif
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(std430, set = 0, binding = 1) buffer Counts { uint counts[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Out { uint o[]; };
layout(push_constant) uniform Params {
  uint count, rank, mode, type;
  uint x_base, blocks, out_word, pad0;
  uint shape[6];
  int stride[6];
} p;

shared uint part[256];

bool nonzero_at(uint i) {
  uint rest = i;
  int at = int(p.x_base);
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    at += int(rest % p.shape[d]) * p.stride[d];
    rest /= p.shape[d];
  }
#ifdef BOOL
  return ((x[uint(at) >> 2u] >> (8u * (uint(at) & 3u))) & 255u) != 0u;
#else
  return truthy(p.type, LOAD_BITS(x, p.type, uint(at)));
#endif
}

// part[] as an inclusive scan of its values (Hillis-Steele, in a fixed order).
void scan_parts(uint t) {
  for (uint width = 1u; width < 256u; width <<= 1) {
    const uint add = t >= width ? part[t - width] : 0u;
    barrier();
    part[t] += add;
    barrier();
  }
}

void main() {
  const uint t = gl_LocalInvocationID.x;
  if (p.mode == 1u) {  // exclusive offsets of the blocks, 256 at a time with a carry
    uint carry = 0u;
    for (uint base = 0u; base < p.blocks; base += 256u) {
      const uint b = base + t;
      const uint v = b < p.blocks ? counts[b] : 0u;
      part[t] = v;
      barrier();
      scan_parts(t);
      if (b < p.blocks) counts[b] = carry + part[t] - v;
      const uint total = part[255];
      barrier();
      carry += total;
    }
    if (t == 0u) counts[p.blocks] = carry;
    return;
  }
  for (uint block = gl_WorkGroupID.x; block < p.blocks; block += gl_NumWorkGroups.x) {
    const uint first = block * 1024u + 4u * t;
    uint mine = 0u;
    bool flag[4];
    for (uint k = 0u; k < 4u; ++k) {
      flag[k] = first + k < p.count && nonzero_at(first + k);
      mine += flag[k] ? 1u : 0u;
    }
    part[t] = mine;
    barrier();
    scan_parts(t);
    if (p.mode == 0u) {
      if (t == 0u) counts[block] = part[255];
    } else {
      uint row = counts[block] + part[t] - mine;
      for (uint k = 0u; k < 4u; ++k) {
        if (!flag[k]) continue;
        uint rest = first + k;
        for (int d = int(p.rank) - 1; d >= 0; --d) {
          const uint w = p.out_word + 2u * (row * p.rank + uint(d));
          o[w] = rest % p.shape[d];
          o[w + 1u] = 0u;
          rest /= p.shape[d];
        }
        ++row;
      }
    }
    barrier();  // part[] is reused by the next block
  }
}
