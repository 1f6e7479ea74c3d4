// The register-blocked tile loop of matmul_tiled.comp and conv_tiled.comp: out [B, M, N] =
// A [B, M, K] x B [B, K, N] in float32, where the including shader says what A, B and out are:
//   uint gemm_m(), gemm_n(), gemm_k()                 the sizes
//   uint gemm_splits()                                parts of k summed apart (split-K), >= 1
//   uint gemm_tiles()                                 B * splits * tiles_m * tiles_n
//   float load_a(uint batch, uint row, uint k)        an element of A (in range)
//   float load_b(uint batch, uint k, uint col)        an element of B (in range)
//   void store(uint batch, uint split, uint row, uint col, float v)   part `split`'s sum
//   bool a_along_k(), b_along_n()                     the operands' contiguous directions
//   void gemm_setup()                                 what an invocation computes first
// and, where it defines GEMM_VEC4, reads of 4 neighbours at once (a 128-bit load):
//   bool a_vec4(), b_vec4()                 whether A's rows (B's) are read 4 along k (n) at a time
//   vec4 load_a4(uint batch, uint row, uint k), vec4 load_b4(uint batch, uint k, uint col)
//       (the includer says yes only where k (n) is a multiple of 4 and element (row, k) of A,
//       (k, col) of B, is at a multiple of 4 whenever k (col) is: a vector is wholly in range or
//       out; this loop asks only at k (col) multiples of 4)
// A workgroup computes a BM x BN tile of out, each invocation TM x TN of it in registers, from
// BK-deep slices of A and B staged in shared memory. The tile sizes are specialisation constants
// chosen per device (matmul.cpp). Where TM and TN are multiples of 4, an invocation's rows come in
// groups of 4 neighbours, the groups BM / (TM / 4) apart (columns likewise), so that it reads
// each group from shared memory as one vec4: a quarter of the load instructions per product,
// which is what a GPU's SGEMM is bound by with one load per value (25 of cuBLAS's 51 TFLOPS on
// an H200). Otherwise its outputs are TM rows and TN columns spaced BM/TM and BN/TN apart, read
// one value at a time. Either way neighbouring invocations read neighbouring shared words. Sums
// run in k order.
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint THREADS = 256;  // (BM / TM) * (BN / TN)
layout(constant_id = 1) const uint BM = 64;
layout(constant_id = 2) const uint BN = 64;
layout(constant_id = 3) const uint BK = 16;
layout(constant_id = 4) const uint TM = 4;
layout(constant_id = 5) const uint TN = 4;
layout(constant_id = 6) const uint BAND = 8;  // rows of tiles a band (gemm_tile.glsl)
layout(constant_id = 7) const uint UNROLL = 16;  // k steps an iteration within a slice
layout(constant_id = 8) const uint STAGES = 1;   // slices staged at once: 1, or 2 (see main)

// Row (column) of output i (j) of an invocation within its tile, in either layout.
const bool VEC = ((TM | TN) & 3u) == 0u;  // not &&: glslang 12 leaves spec constants' && undefined
uint tile_row(uint trow, uint i) {
  return VEC ? (i / 4u) * (4u * BM / TM) + trow * 4u + i % 4u : trow + i * (BM / TM);
}
uint tile_col(uint tcol, uint j) {
  return VEC ? (j / 4u) * (4u * BN / TN) + tcol * 4u + j % 4u : tcol + j * (BN / TN);
}

// Staged slices, as vec4s for the grouped reads: sa holds element k * BMP + row, sb k * BNP + col
// (BM and BN are multiples of 4, matmul.cpp). A row of a slice is padded by 4 floats: staging an
// operand that is contiguous along k puts neighbouring invocations' values a row apart, which
// without the padding fall on one or two of the 32 banks (16-way conflicts on A's stores; 2-way
// with it).
#include "gemm_tile.glsl"

const uint BMP = BM + 4u, BNP = BN + 4u;
shared vec4 sa[STAGES * BK * BMP / 4u];
shared vec4 sb[STAGES * BK * BNP / 4u];
uint a_stage = 0u, b_stage = 0u;  // where the slice being multiplied starts in sa and sb

// The next slice, read from memory into registers while the current one is multiplied, then
// stored to shared memory: memory latency hides behind the arithmetic.
const uint A_PER = (BM * BK + THREADS - 1u) / THREADS, B_PER = (BK * BN + THREADS - 1u) / THREADS;
float pa[A_PER], pb[B_PER];
bool along_k, along_n;  // consecutive invocations load along an operand's contiguous dimension

// Element e of a slice of A (of B): its row (column) in the tile and its k in the slice.
uvec2 a_element(uint e) { return along_k ? uvec2(e / BK, e % BK) : uvec2(e % BM, e / BM); }
uvec2 b_element(uint e) { return along_n ? uvec2(e % BN, e / BN) : uvec2(e / BK, e % BK); }

// 128-bit reads of A (B) where the includer offers them and each invocation's share of a slice
// is whole vectors: a quarter of the load instructions and their address arithmetic.
const uint A_VECS = ((BM * BK) % (4u * THREADS) | BK % 4u) == 0u ? A_PER / 4u : 0u;  // not &&
const uint B_VECS = (BK * BN) % (4u * THREADS) == 0u ? B_PER / 4u : 0u;
const uint BK4 = (BK + 3u) / 4u;  // A's vectors a row of a slice (never 0: none read where BK < 4)
// The includer's a_vec4() && along_k where A_VECS > 0, b_vec4() && along_n where B_VECS > 0.
bool vec_a = false, vec_b = false;

// Loops of a fixed count, which the compiler unrolls: llvmpipe caps the iterations of a loop in
// an invocation, and a loop from tid to the slice's end ran past it on long ks.
void fetch(uint batch, uint row0, uint col0, uint k0, uint k_end, uint m, uint n) {
  const uint tid = gl_LocalInvocationID.x;
#ifdef GEMM_VEC4
  if (vec_a) {  // vector v: row v / (BK / 4) of the tile, k from 4 (v % (BK / 4))
    [[unroll]] for (uint i = 0u; i < A_VECS; ++i) {
      const uint v = tid + i * THREADS, row = row0 + v / BK4, kk = k0 + (v % BK4) * 4u;
      const vec4 x = row < m && kk < k_end ? load_a4(batch, row, kk) : vec4(0.0);
      [[unroll]] for (uint c = 0u; c < 4u; ++c) pa[4u * i + c] = x[c];
    }
  } else
#endif
  {
    [[unroll]] for (uint i = 0u; i < A_PER; ++i) {
      const uint e = tid + i * THREADS;
      if (e >= BM * BK) break;
      const uvec2 at = a_element(e);
      const uint row = row0 + at.x, kk = k0 + at.y;
      pa[i] = (row < m && kk < k_end) ? load_a(batch, row, kk) : 0.0;
    }
  }
#ifdef GEMM_VEC4
  if (vec_b) {  // vector v: k v / (BN / 4) of the slice, columns from 4 (v % (BN / 4))
    [[unroll]] for (uint i = 0u; i < B_VECS; ++i) {
      const uint v = tid + i * THREADS, kk = k0 + v / (BN / 4u), col = col0 + (v % (BN / 4u)) * 4u;
      const vec4 x = col < n && kk < k_end ? load_b4(batch, kk, col) : vec4(0.0);
      [[unroll]] for (uint c = 0u; c < 4u; ++c) pb[4u * i + c] = x[c];
    }
    return;
  }
#endif
  [[unroll]] for (uint i = 0u; i < B_PER; ++i) {
    const uint e = tid + i * THREADS;
    if (e >= BK * BN) break;
    const uvec2 at = b_element(e);
    const uint col = col0 + at.x, kk = k0 + at.y;
    pb[i] = (col < n && kk < k_end) ? load_b(batch, kk, col) : 0.0;
  }
}

// Into stage `stage` of the staged slices.
void stash(uint stage) {
  const uint tid = gl_LocalInvocationID.x;
  if (A_VECS > 0u && vec_a) {  // a vector's 4 ks are 4 rows of the slice apart
    [[unroll]] for (uint i = 0u; i < A_VECS; ++i) {
      const uint v = tid + i * THREADS;
      const uint s = stage * BK * BMP + (v % BK4) * 4u * BMP + v / BK4;
      [[unroll]] for (uint c = 0u; c < 4u; ++c) {
        sa[(s + c * BMP) / 4u][(s + c * BMP) % 4u] = pa[4u * i + c];
      }
    }
  } else {
    [[unroll]] for (uint i = 0u; i < A_PER; ++i) {
      const uint e = tid + i * THREADS;
      if (e >= BM * BK) break;
      const uvec2 at = a_element(e);
      const uint s = stage * BK * BMP + at.y * BMP + at.x;
      sa[s / 4u][s % 4u] = pa[i];
    }
  }
  if (B_VECS > 0u && vec_b) {  // a vector's columns are neighbours: one vec4 of the slice
    [[unroll]] for (uint i = 0u; i < B_VECS; ++i) {
      const uint v = tid + i * THREADS;
      const uint s = stage * BK * BNP + (v / (BN / 4u)) * BNP + (v % (BN / 4u)) * 4u;
      sb[s / 4u] = vec4(pb[4u * i], pb[4u * i + 1u], pb[4u * i + 2u], pb[4u * i + 3u]);
    }
    return;
  }
  [[unroll]] for (uint i = 0u; i < B_PER; ++i) {
    const uint e = tid + i * THREADS;
    if (e >= BK * BN) break;
    const uvec2 at = b_element(e);
    const uint s = stage * BK * BNP + at.y * BNP + at.x;
    sb[s / 4u][s % 4u] = pb[i];
  }
}

float acc[TM][TN];  // this invocation's sums
uint trow, tcol;    // and its place in the tile

// Step kk of the staged slice into the sums.
void product(uint kk) {
  float ra[TM], rb[TN];
  if (VEC) {  // TM / 4 and TN / 4 vec4 reads (folded away when the constants say so)
    [[unroll]] for (uint g = 0u; g < TM / 4u; ++g) {
      const vec4 v = sa[(a_stage + kk * BMP + tile_row(trow, g * 4u)) / 4u];
      [[unroll]] for (uint i = 0u; i < 4u; ++i) ra[g * 4u + i] = v[i];
    }
    [[unroll]] for (uint g = 0u; g < TN / 4u; ++g) {
      const vec4 v = sb[(b_stage + kk * BNP + tile_col(tcol, g * 4u)) / 4u];
      [[unroll]] for (uint j = 0u; j < 4u; ++j) rb[g * 4u + j] = v[j];
    }
  } else {
    [[unroll]] for (uint i = 0u; i < TM; ++i) {
      const uint at = a_stage + kk * BMP + tile_row(trow, i);
      ra[i] = sa[at / 4u][at % 4u];
    }
    [[unroll]] for (uint j = 0u; j < TN; ++j) {
      const uint at = b_stage + kk * BNP + tile_col(tcol, j);
      rb[j] = sb[at / 4u][at % 4u];
    }
  }
  [[unroll]] for (uint i = 0u; i < TM; ++i) {
    [[unroll]] for (uint j = 0u; j < TN; ++j) acc[i][j] = fma(ra[i], rb[j], acc[i][j]);
  }
}

// The staged slice's k steps into the sums: UNROLL steps an iteration (k_unroll in
// matmul.cpp): unrolled whole, NVIDIA's compiler took 37 s to build a pipeline. A CPU device
// keeps the one loop (llvmpipe counts every loop step against its cap): the branch is on
// constants, so one side remains.
void multiply_slice() {
  if (UNROLL >= BK) {
    [[unroll]] for (uint kk = 0u; kk < BK; ++kk) product(kk);
  } else {
    [[dont_unroll]] for (uint k2 = 0u; k2 < BK; k2 += UNROLL) {
      [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
        if (BK % UNROLL == 0u || k2 + u < BK) product(k2 + u);  // folds when it divides
      }
    }
  }
}

void main() {
  gemm_setup();
  const uint m = gemm_m(), n = gemm_n(), k = gemm_k();
  const uint tid = gl_LocalInvocationID.x;
  const uint col_step = BN / TN;  // invocations along a row of the tile
  trow = tid / col_step;
  tcol = tid % col_step;
  along_k = a_along_k();
  along_n = b_along_n();
#ifdef GEMM_VEC4
  vec_a = A_VECS > 0u && along_k && a_vec4();
  vec_b = B_VECS > 0u && along_n && b_vec4();
#endif
  for (uint t = gl_WorkGroupID.x; t < gemm_tiles(); t += gl_NumWorkGroups.x) {
    const GemmTile g = gemm_tile(t, m, n, k, gemm_splits(), BM, BN, BK, BAND);
    const uint batch = g.batch, split = g.split, k_begin = g.k_begin, k_end = g.k_end;
    const uint row0 = g.row0, col0 = g.col0;
    [[unroll]] for (uint i = 0u; i < TM; ++i) {
      [[unroll]] for (uint j = 0u; j < TN; ++j) acc[i][j] = 0.0;
    }
    fetch(batch, row0, col0, k_begin, k_end, m, n);
    if (STAGES == 1u) {  // one staged slice: a barrier once it is stored, another once it is used
      for (uint k0 = k_begin; k0 < k_end; k0 += BK) {
        stash(0u);
        barrier();
        if (k0 + BK < k_end) fetch(batch, row0, col0, k0 + BK, k_end, m, n);
        multiply_slice();
        barrier();
      }
    } else {  // two: the next slice is stored beside the one in use, one barrier a slice
      stash(0u);
      barrier();
      uint stage = 0u;
      for (uint k0 = k_begin; k0 < k_end; k0 += BK) {
        const bool more = k0 + BK < k_end;
        if (more) fetch(batch, row0, col0, k0 + BK, k_end, m, n);
        a_stage = stage * BK * BMP;
        b_stage = stage * BK * BNP;
        multiply_slice();
        // The other stage was last read before the previous barrier: free to overwrite.
        if (more) stash(stage ^ 1u);
        barrier();
        stage ^= 1u;
      }
      a_stage = 0u;
      b_stage = 0u;
    }
    [[unroll]] for (uint i = 0u; i < TM; ++i) {
      const uint row = row0 + tile_row(trow, i);
      if (row >= m) continue;
      [[unroll]] for (uint j = 0u; j < TN; ++j) {
        const uint col = col0 + tile_col(tcol, j);
        if (col < n) store(batch, split, row, col, acc[i][j]);
      }
    }
  }
}
