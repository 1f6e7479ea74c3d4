// Which tile of out a workgroup's t-th turn computes, shared by gemm_tiled.glsl, gemm_lanes.glsl
// and gemm_coop.glsl: tiles run over batches (groups), split-K parts, then bands of `band` rows of
// bm x bn tiles, column by column within a band, so that the workgroups running at once read a
// few rows of A and columns of B, which stay in the GPU's cache, rather than all of B (a band of
// 1 is row by row). Part `split` of k is whole slices of bk long and summed apart (the caller
// adds the parts).
struct GemmTile {
  uint batch, split, k_begin, k_end, row0, col0;
};

GemmTile gemm_tile(uint t, uint m, uint n, uint k, uint splits, uint bm, uint bn, uint bk,
                   uint band) {
  const uint tiles_m = (m + bm - 1u) / bm, tiles_n = (n + bn - 1u) / bn;
  const uint part = t / (tiles_m * tiles_n);
  const uint r = t - part * tiles_m * tiles_n;
  const uint chunk = ((k + splits - 1u) / splits + bk - 1u) / bk * bk;
  const uint b = min(band, tiles_m);  // so that b * tiles_n cannot wrap
  const uint first = r / (b * tiles_n) * b, rows = min(b, tiles_m - first);
  const uint within = r - first * tiles_n;
  GemmTile g;
  g.batch = part / splits;
  g.split = part % splits;
  g.k_begin = min(k, g.split * chunk);
  g.k_end = min(k, g.k_begin + chunk);
  g.row0 = (first + within % rows) * bm;
  g.col0 = (within / rows) * bn;
  return g;
}
