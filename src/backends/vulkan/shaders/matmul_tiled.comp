// Batched float32 matmul, out [B, M, N] = a [B, M, K] x b [B, K, N], over strided operands,
// written contiguous: a workgroup computes a BM x BN tile of out, each invocation TM x TN of it
// in registers, from BK-deep slices of a and b staged in shared memory. The tile sizes are
// specialisation constants chosen per device (matmul_tiles in vulkan_backend.cpp). An
// invocation's outputs are TM rows and TN columns spaced BM/TM and BN/TN apart, so neighbouring
// invocations read neighbouring shared words and write neighbouring outputs. Sums run in k
// order, as matmul.comp's.
#version 450
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint THREADS = 256;  // (BM / TM) * (BN / TN)
layout(constant_id = 1) const uint BM = 64;
layout(constant_id = 2) const uint BN = 64;
layout(constant_id = 3) const uint BK = 16;
layout(constant_id = 4) const uint TM = 4;
layout(constant_id = 5) const uint TN = 4;

layout(std430, set = 0, binding = 0) readonly buffer A { float a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { float b[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Out { float o[]; };
layout(push_constant) uniform Params {
  uint m, n, k, tiles;
  uint a_base, b_base, out_base, pad0;
  int a_batch, a_row, a_col, pad1;
  int b_batch, b_row, b_col, pad2;
} p;

shared float sa[BK * BM];  // sa[k * BM + row]
shared float sb[BK * BN];  // sb[k * BN + col]

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint row_step = BM / TM, col_step = BN / TN;
  const uint trow = tid / col_step, tcol = tid % col_step;
  const uint tiles_m = (p.m + BM - 1u) / BM, tiles_n = (p.n + BN - 1u) / BN;
  for (uint t = gl_WorkGroupID.x; t < p.tiles; t += gl_NumWorkGroups.x) {
    const uint batch = t / (tiles_m * tiles_n);
    const uint r = t - batch * tiles_m * tiles_n;
    const uint row0 = (r / tiles_n) * BM, col0 = (r % tiles_n) * BN;
    const int a0 = int(p.a_base) + int(batch) * p.a_batch;
    const int b0 = int(p.b_base) + int(batch) * p.b_batch;
    float acc[TM][TN];
    for (uint i = 0u; i < TM; ++i) {
      for (uint j = 0u; j < TN; ++j) acc[i][j] = 0.0;
    }
    for (uint k0 = 0u; k0 < p.k; k0 += BK) {
      // Consecutive invocations load along an operand's contiguous dimension where it has one.
      for (uint e = tid; e < BM * BK; e += THREADS) {
        const bool along_k = p.a_col == 1;
        const uint mi = along_k ? e / BK : e % BM, ki = along_k ? e % BK : e / BM;
        const uint row = row0 + mi, kk = k0 + ki;
        sa[ki * BM + mi] =
            (row < p.m && kk < p.k) ? a[a0 + int(row) * p.a_row + int(kk) * p.a_col] : 0.0;
      }
      for (uint e = tid; e < BK * BN; e += THREADS) {
        const bool along_n = p.b_col == 1 || p.b_row != 1;
        const uint ni = along_n ? e % BN : e / BK, ki = along_n ? e / BN : e % BK;
        const uint col = col0 + ni, kk = k0 + ki;
        sb[ki * BN + ni] =
            (col < p.n && kk < p.k) ? b[b0 + int(kk) * p.b_row + int(col) * p.b_col] : 0.0;
      }
      barrier();
      for (uint kk = 0u; kk < BK; ++kk) {
        float ra[TM], rb[TN];
        for (uint i = 0u; i < TM; ++i) ra[i] = sa[kk * BM + trow + i * row_step];
        for (uint j = 0u; j < TN; ++j) rb[j] = sb[kk * BN + tcol + j * col_step];
        for (uint i = 0u; i < TM; ++i) {
          for (uint j = 0u; j < TN; ++j) acc[i][j] = fma(ra[i], rb[j], acc[i][j]);
        }
      }
      barrier();
    }
    for (uint i = 0u; i < TM; ++i) {
      const uint row = row0 + trow + i * row_step;
      if (row >= p.m) break;
      for (uint j = 0u; j < TN; ++j) {
        const uint col = col0 + tcol + j * col_step;
        if (col < p.n) o[p.out_base + (batch * p.m + row) * p.n + col] = acc[i][j];
      }
    }
  }
}
