// The register-blocked tile loop of matmul_tiled.comp and conv_tiled.comp: out [B, M, N] =
// A [B, M, K] x B [B, K, N] in float32, where the including shader says what A, B and out are:
//   uint gemm_m(), gemm_n(), gemm_k()                 the sizes
//   uint gemm_splits()                                parts of k summed apart (split-K), >= 1
//   uint gemm_tiles()                                 B * splits * tiles_m * tiles_n
//   float load_a(uint batch, uint row, uint k)        an element of A (in range)
//   float load_b(uint batch, uint k, uint col)        an element of B (in range)
//   void store(uint batch, uint split, uint row, uint col, float v)   part `split`'s sum
//   bool a_along_k(), b_along_n()                     the operands' contiguous directions
// A workgroup computes a BM x BN tile of out, each invocation TM x TN of it in registers, from
// BK-deep slices of A and B staged in shared memory. The tile sizes are specialisation constants
// chosen per device (matmul.cpp). An invocation's outputs are TM rows and TN columns spaced BM/TM
// and BN/TN apart, so neighbouring invocations read neighbouring shared words and write
// neighbouring outputs. Sums run in k order.
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint THREADS = 256;  // (BM / TM) * (BN / TN)
layout(constant_id = 1) const uint BM = 64;
layout(constant_id = 2) const uint BN = 64;
layout(constant_id = 3) const uint BK = 16;
layout(constant_id = 4) const uint TM = 4;
layout(constant_id = 5) const uint TN = 4;

shared float sa[BK * BM];  // sa[k * BM + row]
shared float sb[BK * BN];  // sb[k * BN + col]

void main() {
  const uint m = gemm_m(), n = gemm_n(), k = gemm_k();
  const uint tid = gl_LocalInvocationID.x;
  const uint row_step = BM / TM, col_step = BN / TN;
  const uint trow = tid / col_step, tcol = tid % col_step;
  const uint tiles_m = (m + BM - 1u) / BM, tiles_n = (n + BN - 1u) / BN;
  // Consecutive invocations load along an operand's contiguous dimension.
  const bool along_k = a_along_k(), along_n = b_along_n();
  for (uint t = gl_WorkGroupID.x; t < gemm_tiles(); t += gl_NumWorkGroups.x) {
    const uint part = t / (tiles_m * tiles_n);
    const uint r = t - part * tiles_m * tiles_n;
    // Split-K: part `split` of k, whole slices long, summed apart (the caller adds the parts).
    const uint batch = part / gemm_splits(), split = part % gemm_splits();
    const uint chunk = ((k + gemm_splits() - 1u) / gemm_splits() + BK - 1u) / BK * BK;
    const uint k_begin = min(k, split * chunk), k_end = min(k, k_begin + chunk);
    const uint row0 = (r / tiles_n) * BM, col0 = (r % tiles_n) * BN;
    float acc[TM][TN];
    [[unroll]] for (uint i = 0u; i < TM; ++i) {
      [[unroll]] for (uint j = 0u; j < TN; ++j) acc[i][j] = 0.0;
    }
    for (uint k0 = k_begin; k0 < k_end; k0 += BK) {
      // Loops of a fixed count, which the compiler unrolls: llvmpipe caps the iterations of a
      // loop in an invocation, and a loop from tid to the slice's end ran past it on long ks.
      [[unroll]] for (uint i = 0u; i < (BM * BK + THREADS - 1u) / THREADS; ++i) {
        const uint e = tid + i * THREADS;
        if (e >= BM * BK) break;
        const uint mi = along_k ? e / BK : e % BM, ki = along_k ? e % BK : e / BM;
        const uint row = row0 + mi, kk = k0 + ki;
        sa[ki * BM + mi] = (row < m && kk < k_end) ? load_a(batch, row, kk) : 0.0;
      }
      [[unroll]] for (uint i = 0u; i < (BK * BN + THREADS - 1u) / THREADS; ++i) {
        const uint e = tid + i * THREADS;
        if (e >= BK * BN) break;
        const uint ni = along_n ? e % BN : e / BK, ki = along_n ? e / BN : e % BK;
        const uint col = col0 + ni, kk = k0 + ki;
        sb[ki * BN + ni] = (col < n && kk < k_end) ? load_b(batch, kk, col) : 0.0;
      }
      barrier();
      [[unroll]] for (uint kk = 0u; kk < BK; ++kk) {
        float ra[TM], rb[TN];
        [[unroll]] for (uint i = 0u; i < TM; ++i) ra[i] = sa[kk * BM + trow + i * row_step];
        [[unroll]] for (uint j = 0u; j < TN; ++j) rb[j] = sb[kk * BN + tcol + j * col_step];
        [[unroll]] for (uint i = 0u; i < TM; ++i) {
          [[unroll]] for (uint j = 0u; j < TN; ++j) acc[i][j] = fma(ra[i], rb[j], acc[i][j]);
        }
      }
      barrier();
    }
    [[unroll]] for (uint i = 0u; i < TM; ++i) {
      const uint row = row0 + trow + i * row_step;
      if (row >= m) break;
      [[unroll]] for (uint j = 0u; j < TN; ++j) {
        const uint col = col0 + tcol + j * col_step;
        if (col < n) store(batch, split, row, col, acc[i][j]);
      }
    }
  }
}
