// Float32 batched matmul, out [B, M, N] = a [B, M, K] x b [B, K, N], over strided operands (a
// transposed view, a batch broadcast with stride 0, negative strides), written contiguous. A
// workgroup computes 16x16 outputs through 16x16 tiles of a and b in shared memory, looping over
// tiles when there are more than workgroups (the dispatch is one-dimensional). Sums are in f32 in
// k order within a tile.
#version 450
layout(local_size_x = 16, local_size_y = 16) in;
layout(std430, set = 0, binding = 0) readonly buffer A { float a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { float b[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Out { float o[]; };
layout(push_constant) uniform Params {
  uint m, n, k, tiles;
  uint a_base, b_base, out_base, pad0;
  int a_batch, a_row, a_col, pad1;
  int b_batch, b_row, b_col, pad2;
} p;

shared float ta[16][16];
shared float tb[16][16];

void main() {
  const uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
  const uint tiles_n = (p.n + 15u) / 16u, tiles_m = (p.m + 15u) / 16u;
  for (uint t = gl_WorkGroupID.x; t < p.tiles; t += gl_NumWorkGroups.x) {
    const uint batch = t / (tiles_m * tiles_n);
    const uint r = t - batch * tiles_m * tiles_n;
    const uint row = (r / tiles_n) * 16u + ty, col = (r % tiles_n) * 16u + tx;
    const int a0 = int(p.a_base) + int(batch) * p.a_batch + int(row) * p.a_row;
    const int b0 = int(p.b_base) + int(batch) * p.b_batch + int(col) * p.b_col;
    float acc = 0.0;
    for (uint k0 = 0u; k0 < p.k; k0 += 16u) {
      ta[ty][tx] = (row < p.m && k0 + tx < p.k) ? a[a0 + int(k0 + tx) * p.a_col] : 0.0;
      tb[ty][tx] = (k0 + ty < p.k && col < p.n) ? b[b0 + int(k0 + ty) * p.b_row] : 0.0;
      barrier();
      for (uint kk = 0u; kk < 16u; ++kk) acc = fma(ta[ty][kk], tb[kk][tx], acc);
      barrier();
    }
    if (row < p.m && col < p.n) o[p.out_base + (batch * p.m + row) * p.n + col] = acc;
  }
}
