// The float16 tile loop on tensor cores (VK_NV_cooperative_matrix) of matmul_coop.comp and
// conv_coop.comp: out [B, M, N] = A [B, M, K] x B [B, K, N] in float16, summed in float32, where
// the including shader says what A, B and out are:
//   uint gemm_m(), gemm_n(), gemm_k()                         the sizes
//   uint gemm_splits()                                        parts of k summed apart, >= 1
//   uint gemm_tiles()                                         B * splits * tiles_m * tiles_n
//   uvec4 fetch_a(uint batch, uint row, uint kk, uint k_end)  A's row from column kk, 8 halves
//   uvec4 fetch_b(uint batch, uint kk, uint col, uint k_end)  B's row kk from column col
//       (float16 bits, two a word; zeros past m, n or k_end)
//   void store8(uint batch, uint split, uint row, uint col, float v[8])
//       out's row from column col, 8 float32 sums (row < m; the columns past n to be skipped)
// A workgroup of SGM x SGN subgroups of 32 computes a BM x BN tile of out, each subgroup a
// (FM * 16) x (FN * FC) part of it as FM x FN fragments of 16 x FC, FC 16 or 8 (specialisation
// constants, coop_tiles in matmul.cpp: 128x128, a matmul's 2 x 4 subgroups of 64x32, a
// convolution's 4 x 4 of 32x32; 16x8x16 products where the device lists them, as NVIDIA's KHR
// driver does: mma.sync's shape, which its multiply-add alone ran 3x faster than 16x16x16). BK-deep
// slices of A and B are staged in shared memory, twice, and read from memory AHEAD slices ahead
// into registers. With 1, slice s + 1 is read while the fragments work on slice s, then stored to
// the other half. With 2 (a matmul's), slice s + 2 is read while s computes and s + 1, read
// during s - 1, is stored: a read has two slices' work to arrive in, for a second set of
// registers (8 more; with matmul_coop.comp's FLAGS freeing as many, 236 against 203 TFLOPS at
// 8192^3 on an H100, where a convolution, whose gathers hold more, ran slower). Either way one
// barrier a slice suffices. Rows of shared memory are padded by 8 halves so that the fragments'
// loads do not fall on one bank. The sums leave through a float32 scratch per subgroup, 8 of them
// per invocation, so that the includer rounds once, after any bias; the scratch reuses the
// slices' memory once the last slice is read. Taken only where the device lists 16x16x16 float16
// x float16 + float32 for subgroups of 32 (context.cpp).
//
// EMULATE compiles the same tiling without cooperative matrices, for CI's lavapipe: a "subgroup"
// is 32 consecutive invocations, a fragment load remembers where its rows are in shared memory,
// the product reads them there, and invocation l holds row l / 2, columns 8 (l % 2) to 8 (l % 2)
// + 7 of an accumulator (with FC = 8, columns 4 (l % 2) to 4 (l % 2) + 3). Everything else
// (loads, staging, edges, the scratch, the stores) is the code the GPU runs. Its slices are 16
// deep, to fit lavapipe's 32 KiB of shared memory, and its fragments 16x8 (context.cpp).
// The includer enables the extensions (before its first declaration): GL_EXT_control_flow_
// attributes, and without EMULATE GL_NV_cooperative_matrix, GL_EXT_shader_explicit_arithmetic_
// types_float16, GL_KHR_memory_scope_semantics and GL_KHR_shader_subgroup_basic; and it includes
// half.glsl. pack8 is defined here. The build compiles it for GL_NV_cooperative_matrix (all that
// Debian's glslang 12 knows) and rewrites a copy into VK_KHR_cooperative_matrix (spirv_khr.hpp),
// which needs A's and B's fragment types apart: B's columns, FC, are a specialisation constant.
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint THREADS = 256;  // 32 * SGM * SGN
layout(constant_id = 1) const uint SGM = 2;        // subgroups along the tile's rows
layout(constant_id = 2) const uint SGN = 4;        // and columns
layout(constant_id = 3) const uint FM = 4;         // a subgroup's fragments along rows
layout(constant_id = 4) const uint FN = 2;         // and columns
layout(constant_id = 5) const uint BK = 32;        // a multiple of 16
layout(constant_id = 6) const uint BAND = 8;       // rows of tiles a band (gemm_tile.glsl)
layout(constant_id = 7) const uint FC = 16;        // a fragment's columns: 16 or 8
layout(constant_id = 8) const uint AHEAD = 2;      // slices read ahead: 1 or 2

#include "gemm_tile.glsl"

const uint F = 16u, BM = SGM * FM * F, BN = SGN * FN * FC;
const uint PER = F / FC;  // fragments side by side in a subgroup's 16x16 scratch
const uint SA = (BK + 8u) / 8u;               // a row of A's slice, in vectors of 8 halves
const uint SB = (BN + 8u) / 8u;               // a row of B's slice
const uint A_VECS = BM * SA;                  // A's slice
const uint B_VECS = BK * SB;                  // B's slice
const uint A_SLICE = BM * BK / 8u, B_SLICE = BK * BN / 8u;  // a slice's vectors
// Vectors an invocation reads a slice: the last may be read by some invocations only (a 256x128
// tile's B slice, 16 deep, is 256 vectors for 512 invocations).
const uint A_LOADS = (A_SLICE + THREADS - 1u) / THREADS;
const uint B_LOADS = (B_SLICE + THREADS - 1u) / THREADS;
const uint SCRATCH = F * 5u;  // a 16x16 fragment of float32 bits: rows of 4 vectors + 1 of padding
const uint SLICES = 2u * (A_VECS + B_VECS), SCRATCHES = SGM * SGN * SCRATCH;

// sa: two slices of A from 0, sb: two of B from 2 A_VECS; scratch from 0 after the k loop.
shared uvec4 pool[SLICES > SCRATCHES ? SLICES : SCRATCHES];
#define sa(i) pool[i]
#define sb(i) pool[2u * A_VECS + (i)]
#define scratch(i) pool[i]

uint tid, sg, lane;

// Eight halves, two a word.
uvec4 pack8(uint h[8]) {
  return uvec4(h[0] | (h[1] << 16u), h[2] | (h[3] << 16u), h[4] | (h[5] << 16u),
               h[6] | (h[7] << 16u));
}

// Two slices on their way to shared memory: even ones in ra0 and rb0, odd ones in ra1 and rb1
// (two named sets, not an array of two, so that they stay in registers).
uvec4 ra0[A_LOADS], rb0[B_LOADS], ra1[A_LOADS], rb1[B_LOADS];

#define FETCH_INTO(RA, RB)                                                     \
  [[unroll]] for (uint i = 0u; i < A_LOADS; ++i) {                             \
    const uint v = tid + i * THREADS, row = v / (BK / 8u), kv = v % (BK / 8u); \
    if (A_SLICE % THREADS != 0u && v >= A_SLICE) break;                        \
    RA[i] = fetch_a(batch, row0 + row, k0 + kv * 8u, k_end);                   \
  }                                                                            \
  [[unroll]] for (uint i = 0u; i < B_LOADS; ++i) {                             \
    const uint v = tid + i * THREADS, kk = v / (BN / 8u), cv = v % (BN / 8u);  \
    if (B_SLICE % THREADS != 0u && v >= B_SLICE) break;                        \
    RB[i] = fetch_b(batch, k0 + kk, col0 + cv * 8u, k_end);                    \
  }
#define PUT_FROM(RA, RB)                                                       \
  [[unroll]] for (uint i = 0u; i < A_LOADS; ++i) {                             \
    const uint v = tid + i * THREADS, row = v / (BK / 8u), kv = v % (BK / 8u); \
    if (A_SLICE % THREADS != 0u && v >= A_SLICE) break;                        \
    sa(stage * A_VECS + row * SA + kv) = RA[i];                                \
  }                                                                            \
  [[unroll]] for (uint i = 0u; i < B_LOADS; ++i) {                             \
    const uint v = tid + i * THREADS, kk = v / (BN / 8u), cv = v % (BN / 8u);  \
    if (B_SLICE % THREADS != 0u && v >= B_SLICE) break;                        \
    sb(stage * B_VECS + kk * SB + cv) = RB[i];                                 \
  }
void fetch0(uint batch, uint row0, uint col0, uint k0, uint k_end) { FETCH_INTO(ra0, rb0) }
void fetch1(uint batch, uint row0, uint col0, uint k0, uint k_end) { FETCH_INTO(ra1, rb1) }
void put0(uint stage) { PUT_FROM(ra0, rb0) }
void put1(uint stage) { PUT_FROM(ra1, rb1) }

#ifdef EMULATE
// A fragment: where its 16 rows start in shared memory, in vectors, and their stride.
struct Frag {
  uint at, stride;
};
#define FRAG_A Frag
#define FRAG_B Frag
#define ACC float[8]

float shared_half(bool of_a, uint vec, uint i) {  // half i from vector `vec` of sa or sb
  const uvec4 v = of_a ? sa(vec + i / 8u) : sb(vec + i / 8u);
  const uint word = v[(i % 8u) / 2u];
  return half_to_float((i & 1u) != 0u ? word >> 16u : word & 0xffffu);
}

void load_a(out Frag f, uint at, uint stride) { f = Frag(at, stride); }
void load_b(out Frag f, uint at, uint stride) { f = Frag(at, stride); }

// acc += fa x fb for this invocation's row and FC / 2 columns.
void mul_add(Frag fa, Frag fb, inout float acc[8]) {
  const uint row = lane / 2u, col = (lane % 2u) * (FC / 2u);
  [[unroll]] for (uint kk = 0u; kk < F; ++kk) {
    const float x = shared_half(true, fa.at + row * fa.stride, kk);
    [[unroll]] for (uint j = 0u; j < FC / 2u; ++j) {
      acc[j] = fma(x, shared_half(false, fb.at + kk * fb.stride, col + j), acc[j]);
    }
  }
}

void zero(out float acc[8]) {
  [[unroll]] for (uint j = 0u; j < 8u; ++j) acc[j] = 0.0;
}

// The fragment into this subgroup's scratch from column vector `cv` (its own row and columns).
void to_scratch(float acc[8], uint cv) {
  const uint at = sg * SCRATCH + (lane / 2u) * 5u + cv + (lane % 2u) * (FC / 8u);
  scratch(at) = floatBitsToUint(vec4(acc[0], acc[1], acc[2], acc[3]));
  if (FC == 16u) scratch(at + 1u) = floatBitsToUint(vec4(acc[4], acc[5], acc[6], acc[7]));
}
void scratch_written() {}
#else
#define FRAG_A fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define FRAG_B fcoopmatNV<16, gl_ScopeSubgroup, 16, FC>
#define ACC fcoopmatNV<32, gl_ScopeSubgroup, 16, FC>

// Offsets and strides count the arrays' elements: vectors of 8 halves, or of 4 floats' bits
// (glslang 12 stores a float32 matrix to integer arrays only).
void load_a(out FRAG_A f, uint at, uint stride) { coopMatLoadNV(f, pool, at, stride, false); }
void load_b(out FRAG_B f, uint at, uint stride) {
  coopMatLoadNV(f, pool, 2u * A_VECS + at, stride, false);
}
void mul_add(FRAG_A fa, FRAG_B fb, inout ACC acc) { acc = coopMatMulAddNV(fa, fb, acc); }
void zero(out ACC acc) { acc = ACC(0.0); }
void to_scratch(ACC acc, uint cv) { coopMatStoreNV(acc, pool, sg * SCRATCH + cv, 5u, false); }
void scratch_written() {
  subgroupMemoryBarrierShared();
  subgroupBarrier();
}
#endif

ACC acc[FM][FN];
uint wm, wn;  // this subgroup's part of the tile

// acc += the slice in shared-memory stage `stage`.
void compute(uint stage) {
  [[unroll]] for (uint kk = 0u; kk < BK; kk += F) {
    FRAG_A fa[FM];
    FRAG_B fb[FN];
    [[unroll]] for (uint i = 0u; i < FM; ++i) {
      load_a(fa[i], stage * A_VECS + ((wm * FM + i) * F) * SA + kk / 8u, SA);
    }
    [[unroll]] for (uint j = 0u; j < FN; ++j) {
      load_b(fb[j], stage * B_VECS + kk * SB + ((wn * FN + j) * FC) / 8u, SB);
    }
    [[unroll]] for (uint i = 0u; i < FM; ++i) {
      [[unroll]] for (uint j = 0u; j < FN; ++j) mul_add(fa[i], fb[j], acc[i][j]);
    }
  }
}

void main() {
  tid = gl_LocalInvocationID.x;
#ifdef EMULATE
  sg = tid / 32u;
  lane = tid % 32u;
#else
  sg = gl_SubgroupID;  // subgroups are 32 wide (context.cpp checks)
  lane = gl_SubgroupInvocationID;
#endif
  wm = sg / SGN;
  wn = sg % SGN;
  const uint m = gemm_m(), n = gemm_n(), k = gemm_k();
  for (uint t = gl_WorkGroupID.x; t < gemm_tiles(); t += gl_NumWorkGroups.x) {
    const GemmTile g = gemm_tile(t, m, n, k, gemm_splits(), BM, BN, BK, BAND);
    const uint batch = g.batch, split = g.split, k_begin = g.k_begin, k_end = g.k_end;
    const uint row0 = g.row0, col0 = g.col0;
    [[unroll]] for (uint i = 0u; i < FM; ++i) {
      [[unroll]] for (uint j = 0u; j < FN; ++j) zero(acc[i][j]);
    }
    fetch0(batch, row0, col0, k_begin, k_end);
    if (AHEAD == 2u && k_begin + BK < k_end) fetch1(batch, row0, col0, k_begin + BK, k_end);
    barrier();  // the previous tile's scratch is read
    put0(0u);
    barrier();
    if (AHEAD == 2u) {
      // Two slices an iteration, the even one in stage 0 and the odd one in stage 1; a stage is
      // filled only after the barrier that follows its last read.
      for (uint k0 = k_begin; k0 < k_end; k0 += 2u * BK) {
        const bool odd = k0 + BK < k_end, next = k0 + 2u * BK < k_end;
        if (next) fetch0(batch, row0, col0, k0 + 2u * BK, k_end);
        compute(0u);
        if (odd) put1(1u);
        barrier();
        if (!odd) break;
        if (k0 + 3u * BK < k_end) fetch1(batch, row0, col0, k0 + 3u * BK, k_end);
        compute(1u);
        if (next) put0(0u);
        barrier();
      }
    } else {
      uint stage = 0u;
      for (uint k0 = k_begin; k0 < k_end; k0 += BK) {
        const bool more = k0 + BK < k_end;
        if (more) fetch0(batch, row0, col0, k0 + BK, k_end);  // in flight while the fragments work
        compute(stage);
        // The other half was last read before the previous barrier: free to fill.
        if (more) put0(stage ^ 1u);
        barrier();
        stage ^= 1u;
      }
    }
    // Out, 16x16 at a time (PER fragments): invocation `lane` stores row lane / 2, 8 of its
    // columns.
    [[unroll]] for (uint i = 0u; i < FM; ++i) {
      [[unroll]] for (uint j = 0u; j < FN; j += PER) {
        [[unroll]] for (uint jj = 0u; jj < PER; ++jj) to_scratch(acc[i][j + jj], jj * FC / 4u);
        scratch_written();
        const uint at = sg * SCRATCH + (lane / 2u) * 5u + (lane % 2u) * 2u;
        const vec4 lo = uintBitsToFloat(scratch(at)), hi = uintBitsToFloat(scratch(at + 1u));
        const float v[8] = float[8](lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w);
        const uint row = row0 + (wm * FM + i) * F + lane / 2u;
        const uint col = col0 + (wn * FN + j) * FC + (lane % 2u) * 8u;
        if (row < m && col < n) store8(batch, split, row, col, v);
#ifndef EMULATE
        subgroupBarrier();  // the scratch is read before the next fragment overwrites it
#endif
      }
    }
  }
}
