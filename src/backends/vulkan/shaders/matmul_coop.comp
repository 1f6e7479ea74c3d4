// Batched float16 matmul on tensor cores (VK_NV_cooperative_matrix), out [B, M, N] = a [B, M, K]
// x b [B, K, N] over strided operands, summing in float32 and rounding once to float16, as cuBLAS
// does. A workgroup of eight 32-wide subgroups computes a 128x128 tile of out, each subgroup a
// 64x32 part of it as 4x2 fragments of 16x16. BK-deep slices of a and b are staged in shared
// memory, twice: the next slice is read from memory into registers while the fragments work on
// the current one, then stored to the other half, so one barrier a slice suffices. Operands that
// are row-major with 8-element-aligned rows are read 8 halves (128 bits) at a time; any other
// layout element by element (flags). Rows of shared memory are padded by 8 halves so that the
// fragments' loads do not fall on one bank. Results go out through a 16x16 scratch per subgroup,
// 8 halves per invocation. Taken only where the device lists 16x16x16 float16 x float16 +
// float32 for subgroups of 32 (context.cpp).
//
// EMULATE compiles the same tiling without cooperative matrices, for CI's lavapipe: a "subgroup"
// is 32 consecutive invocations, a fragment load remembers where its rows are in shared memory,
// the product reads them there, and invocation l holds row l / 2, columns 8 (l % 2) to 8 (l % 2)
// + 7 of an accumulator. Everything else (loads, staging, edges, the scratch, the stores) is the
// code the GPU runs. Its slices are 16 deep, to fit lavapipe's 32 KiB of shared memory.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#ifndef EMULATE
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#endif
layout(local_size_x = 256) in;

// Each operand twice: 32-bit words (two halves each) and 128-bit vectors (eight).
layout(std430, set = 0, binding = 0) readonly buffer A { uint a[]; };
layout(std430, set = 0, binding = 0) readonly buffer A4 { uvec4 a4[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { uint b[]; };
layout(std430, set = 0, binding = 1) readonly buffer B4 { uvec4 b4[]; };
layout(std430, set = 0, binding = 2) buffer Out { uint o[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Out4 { uvec4 o4[]; };
layout(push_constant) uniform Params {
  uint m, n, k, tiles;
  uint a_base, b_base, out_base, type;  // bases in halves from each binding's start
  int a_batch, a_row, a_col;
  uint flags;  // 1: a's rows are read 8 halves at a time, 2: b's, 4: out's
  int b_batch, b_row, b_col, pad;
} p;

#include "half.glsl"

const uint THREADS = 256u, BM = 128u, BN = 128u, F = 16u;
#ifdef EMULATE
const uint BK = 16u;
#else
const uint BK = 32u;
#endif
const uint SA = (BK + 8u) / 8u;         // a row of a's slice, in vectors (8 halves of padding)
const uint SB = (BN + 8u) / 8u;         // a row of b's slice
const uint A_VECS = BM * SA;            // a's slice
const uint B_VECS = BK * SB;            // b's slice
const uint A_LOADS = BM * BK / 8u / THREADS;  // vectors an invocation reads a slice
const uint B_LOADS = BK * BN / 8u / THREADS;
const uint SCRATCH = F * 3u;            // a 16x16 fragment, rows of 2 vectors + 1 of padding

shared uvec4 sa[2u * A_VECS];
shared uvec4 sb[2u * B_VECS];
shared uvec4 scratch[8u * SCRATCH];

uint tid, sg, lane;

// Half `i` (from the binding's start) of a word-addressed buffer.
uint half_of(uint word, int i) { return (i & 1) != 0 ? word >> 16u : word & 0xffffu; }

uvec4 pack8(uint h[8]) {
  return uvec4(h[0] | (h[1] << 16u), h[2] | (h[3] << 16u), h[4] | (h[5] << 16u),
               h[6] | (h[7] << 16u));
}

// Eight halves of a's row `row`, from column kk: zeros past the edges.
uvec4 fetch_a(int a0, uint row, uint kk) {
  if ((p.flags & 1u) != 0u) {  // k is a multiple of 8: a vector is wholly in or out
    return row < p.m && kk < p.k ? a4[(a0 + int(row) * p.a_row + int(kk)) / 8] : uvec4(0u);
  }
  uint h[8];
  [[unroll]] for (uint i = 0u; i < 8u; ++i) {
    const int at = a0 + int(row) * p.a_row + int(kk + i) * p.a_col;
    h[i] = row < p.m && kk + i < p.k ? half_of(a[at >> 1], at) : 0u;
  }
  return pack8(h);
}

// Eight halves of b's row `kk`, from column col.
uvec4 fetch_b(int b0, uint kk, uint col) {
  if ((p.flags & 2u) != 0u) {  // n is a multiple of 8
    return kk < p.k && col < p.n ? b4[(b0 + int(kk) * p.b_row + int(col)) / 8] : uvec4(0u);
  }
  uint h[8];
  [[unroll]] for (uint i = 0u; i < 8u; ++i) {
    const int at = b0 + int(kk) * p.b_row + int(col + i) * p.b_col;
    h[i] = kk < p.k && col + i < p.n ? half_of(b[at >> 1], at) : 0u;
  }
  return pack8(h);
}

uvec4 ra[A_LOADS], rb[B_LOADS];  // the next slice, on its way to shared memory

void fetch(int a0, int b0, uint row0, uint col0, uint k0) {
  [[unroll]] for (uint i = 0u; i < A_LOADS; ++i) {
    const uint v = tid + i * THREADS, row = v / (BK / 8u), kv = v % (BK / 8u);
    ra[i] = fetch_a(a0, row0 + row, k0 + kv * 8u);
  }
  [[unroll]] for (uint i = 0u; i < B_LOADS; ++i) {
    const uint v = tid + i * THREADS, kk = v / (BN / 8u), cv = v % (BN / 8u);
    rb[i] = fetch_b(b0, k0 + kk, col0 + cv * 8u);
  }
}

void put(uint stage) {
  [[unroll]] for (uint i = 0u; i < A_LOADS; ++i) {
    const uint v = tid + i * THREADS, row = v / (BK / 8u), kv = v % (BK / 8u);
    sa[stage * A_VECS + row * SA + kv] = ra[i];
  }
  [[unroll]] for (uint i = 0u; i < B_LOADS; ++i) {
    const uint v = tid + i * THREADS, kk = v / (BN / 8u), cv = v % (BN / 8u);
    sb[stage * B_VECS + kk * SB + cv] = rb[i];
  }
}

#ifdef EMULATE
// A fragment: where its 16 rows start in shared memory, in vectors, and their stride.
struct Frag {
  uint at, stride;
};
#define FRAG_A Frag
#define FRAG_B Frag
#define ACC float[8]

float shared_half(bool of_a, uint vec, uint i) {  // half i of vector `vec` of sa or sb
  const uvec4 v = of_a ? sa[vec + i / 8u] : sb[vec + i / 8u];
  const uint word = v[(i % 8u) / 2u];
  return half_to_float((i & 1u) != 0u ? word >> 16u : word & 0xffffu);
}

void load_a(out Frag f, uint at, uint stride) { f = Frag(at, stride); }
void load_b(out Frag f, uint at, uint stride) { f = Frag(at, stride); }

// acc += fa x fb for this invocation's row and 8 columns.
void mul_add(Frag fa, Frag fb, inout float acc[8]) {
  const uint row = lane / 2u, col = (lane % 2u) * 8u;
  [[unroll]] for (uint kk = 0u; kk < F; ++kk) {
    const float x = shared_half(true, fa.at + row * fa.stride, kk);
    [[unroll]] for (uint j = 0u; j < 8u; ++j) {
      acc[j] = fma(x, shared_half(false, fb.at + kk * fb.stride, col + j), acc[j]);
    }
  }
}

void zero(out float acc[8]) {
  [[unroll]] for (uint j = 0u; j < 8u; ++j) acc[j] = 0.0;
}

// The fragment rounded to float16 into this subgroup's scratch (its own row and columns).
void to_scratch(float acc[8]) {
  uint h[8];
  [[unroll]] for (uint j = 0u; j < 8u; ++j) h[j] = to_f16(acc[j]);
  scratch[sg * SCRATCH + (lane / 2u) * 3u + lane % 2u] = pack8(h);
}
#else
#define FRAG_A fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define FRAG_B fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define ACC fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>

// Offsets and strides count vectors of 8 halves, the arrays' element.
void load_a(out FRAG_A f, uint at, uint stride) { coopMatLoadNV(f, sa, at, stride, false); }
void load_b(out FRAG_B f, uint at, uint stride) { coopMatLoadNV(f, sb, at, stride, false); }
void mul_add(FRAG_A fa, FRAG_B fb, inout ACC acc) { acc = coopMatMulAddNV(fa, fb, acc); }
void zero(out ACC acc) { acc = ACC(0.0); }
void to_scratch(ACC acc) {
  const FRAG_A h = FRAG_A(acc);
  coopMatStoreNV(h, scratch, sg * SCRATCH, 3u, false);
  subgroupMemoryBarrierShared();
  subgroupBarrier();
}
#endif

// Half h (0 to 7) of vector v.
uint half_in(uvec4 v, uint h) {
  const uint word = v[h / 2u];
  return (h & 1u) != 0u ? word >> 16u : word & 0xffffu;
}

void main() {
  tid = gl_LocalInvocationID.x;
  sg = tid / 32u;  // gl_SubgroupID where subgroups are 32 wide, as context.cpp checks
  lane = tid % 32u;
  const uint wm = sg / 4u, wn = sg % 4u;  // this subgroup's 64x32 of the tile
  const uint tiles_m = (p.m + BM - 1u) / BM, tiles_n = (p.n + BN - 1u) / BN;
  for (uint t = gl_WorkGroupID.x; t < p.tiles; t += gl_NumWorkGroups.x) {
    const uint batch = t / (tiles_m * tiles_n);
    const uint r = t - batch * tiles_m * tiles_n;
    const uint row0 = (r / tiles_n) * BM, col0 = (r % tiles_n) * BN;
    const int a0 = int(p.a_base) + int(batch) * p.a_batch;
    const int b0 = int(p.b_base) + int(batch) * p.b_batch;
    ACC acc[4][2];
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
      [[unroll]] for (uint j = 0u; j < 2u; ++j) zero(acc[i][j]);
    }
    fetch(a0, b0, row0, col0, 0u);
    put(0u);
    barrier();
    uint stage = 0u;
    for (uint k0 = 0u; k0 < p.k; k0 += BK) {
      const bool more = k0 + BK < p.k;
      if (more) fetch(a0, b0, row0, col0, k0 + BK);  // in flight while the fragments work
      [[unroll]] for (uint kk = 0u; kk < BK; kk += F) {
        FRAG_A fa[4];
        FRAG_B fb[2];
        [[unroll]] for (uint i = 0u; i < 4u; ++i) {
          load_a(fa[i], stage * A_VECS + (wm * 64u + i * F) * SA + kk / 8u, SA);
        }
        [[unroll]] for (uint j = 0u; j < 2u; ++j) {
          load_b(fb[j], stage * B_VECS + kk * SB + (wn * 32u + j * F) / 8u, SB);
        }
        [[unroll]] for (uint i = 0u; i < 4u; ++i) {
          [[unroll]] for (uint j = 0u; j < 2u; ++j) mul_add(fa[i], fb[j], acc[i][j]);
        }
      }
      // The other half was last read before the previous barrier: free to fill.
      if (more) put(stage ^ 1u);
      barrier();
      stage ^= 1u;
    }
    // Out, a fragment at a time: invocation `lane` stores row lane / 2, 8 of its columns.
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
      [[unroll]] for (uint j = 0u; j < 2u; ++j) {
        to_scratch(acc[i][j]);
        const uvec4 v = scratch[sg * SCRATCH + (lane / 2u) * 3u + lane % 2u];
        const uint row = row0 + wm * 64u + i * F + lane / 2u;
        const uint col = col0 + wn * 32u + j * F + (lane % 2u) * 8u;
        const uint at = p.out_base + (batch * p.m + row) * p.n + col;
        if (row < p.m && (p.flags & 4u) != 0u) {  // n a multiple of 8, `at` of 8 too
          if (col < p.n) o4[at / 8u] = v;
        } else if (row < p.m) {
          // Element by element; a word's other half may be another invocation's.
          [[unroll]] for (uint h = 0u; h < 8u; ++h) {
            if (col + h >= p.n) break;
            const uint shift = ((at + h) & 1u) * 16u;
            atomicAnd(o[(at + h) >> 1u], ~(0xffffu << shift));
            atomicOr(o[(at + h) >> 1u], half_in(v, h) << shift);
          }
        }
#ifndef EMULATE
        subgroupBarrier();  // the scratch is read before the next fragment overwrites it
#endif
      }
    }
  }
}
