// Float32 convolution as an implicit GEMM per group through gemm_tiled.glsl's tiles (or, with
// LANES, a CPU device's, gemm_lanes.glsl's), dividing by fastdiv.glsl's multiply-high on a CPU
// device and plainly on a GPU (PLAIN_DIVISION, below), on the geometry of conv.comp (contiguous
// NC + three right-aligned spatial slots, grouped, strided, padded, dilated). The columns of the
// unfolded input (every input value a kernel tap reads for one output position) are gathered as
// the tiles load them, never stored:
//   mode 0, forward:         y [n, oc, s] = w [oc, ci*tap] x unfold(x) [ci*tap, (n, s)] (+ bias)
//   mode 1, backward data:   gx [n, ci, r] = w^T [ci, oc*tap] x spread(grad_out) [oc*tap, (n, r)]
//   mode 2, backward weight: gw [oc, ci*tap] = grad_out [oc, (n, s)] x unfold(x)^T [(n, s), ci*tap]
// with s an output position, r an input position, tap a kernel position, and oc and ci the
// group's channels; spread(grad_out) holds, for input position r and tap, the output position
// that read r through that tap (zero where none did: strides skip it, or it is past an edge).
// Mode 1 binds grad_out as x (binding 0) and writes grad_in. Mode 2's
// k (every sample's every position) is long and its output small: it is split into `splits`
// parts written apart, out [splits, O, C/g * taps], which the caller sums.
#version 450
#extension GL_GOOGLE_include_directive : require
// On a CPU device (llvmpipe divides lane by lane), as the gathers divide six to nine times an
// element. A GPU takes the PLAIN_DIVISION variant (conv_pool.cpp's plain_division): the twelve
// divisors' registers cost it more than the divisions (some twenty instructions each) save.
#ifndef PLAIN_DIVISION
#define FAST_DIVISION
#endif
#include "fastdiv.glsl"
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer W { float w[]; };  // mode 2: grad_out
layout(std430, set = 0, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Out { float o[]; };
layout(push_constant) uniform Params {
  uint n, c, oc, groups;
  uint mode, flags, a_base, w_base;  // flags (mode 0): 1 add the bias, 2 then relu
  uint b_base, out_base, tiles, splits;
  uint in_[3];
  uint out_[3];
  uint k[3];
  uint s[3];
  int pad[3];
  uint d[3];
} p;

uint in_size() { return p.in_[0] * p.in_[1] * p.in_[2]; }
uint out_size() { return p.out_[0] * p.out_[1] * p.out_[2]; }
uint k_size() { return p.k[0] * p.k[1] * p.k[2]; }
uint CG, OG;  // a group's input and output channels (gemm_setup)
uint cg() { return CG; }
uint og() { return OG; }

// The divisors of the index arithmetic (fastdiv.glsl), set once an invocation. All of them,
// whatever the mode: setting some in a branch on the mode made lavapipe's training step 30%
// slower.
Divisor KS, K2, K1, OS, O2, O1, IS, I2, I1, S0, S1, S2;
void gemm_setup() {
  CG = p.c / p.groups;
  OG = p.oc / p.groups;
  KS = divisor(k_size());
  K2 = divisor(p.k[2]);
  K1 = divisor(p.k[1]);
  OS = divisor(out_size());
  O2 = divisor(p.out_[2]);
  O1 = divisor(p.out_[1]);
  IS = divisor(in_size());
  I2 = divisor(p.in_[2]);
  I1 = divisor(p.in_[1]);
  S0 = divisor(p.s[0]);
  S1 = divisor(p.s[1]);
  S2 = divisor(p.s[2]);
}

// unfold(x) of group g: row ck = (input channel, tap), column ns = (sample, output position);
// zero where the tap falls in the padding.
float unfolded(uint g, uint ck, uint ns) {
  const uint ci = quot(ck, KS), n = quot(ns, OS);
  const uvec3 kt = split3(ck - ci * KS.d, K2, K1), o = split3(ns - n * OS.d, O2, O1);
  const int id = int(o.x * p.s[0] + kt.x * p.d[0]) - p.pad[0];
  const int ih = int(o.y * p.s[1] + kt.y * p.d[1]) - p.pad[1];
  const int iw = int(o.z * p.s[2] + kt.z * p.d[2]) - p.pad[2];
  if (id < 0 || id >= int(p.in_[0]) || ih < 0 || ih >= int(p.in_[1]) || iw < 0 ||
      iw >= int(p.in_[2])) {
    return 0.0;
  }
  return x[p.a_base + (n * p.c + g * cg() + ci) * in_size() +
           (uint(id) * p.in_[1] + uint(ih)) * p.in_[2] + uint(iw)];
}

// spread(grad_out) of group g (mode 1, binding 0 holding grad_out): row ok = (output channel,
// tap), column nr = (sample, input position).
float spread(uint g, uint ok, uint nr) {
  const uint oc = quot(ok, KS), n = quot(nr, IS);
  const uvec3 kt = split3(ok - oc * KS.d, K2, K1), i = split3(nr - n * IS.d, I2, I1);
  // The output position o with o * s + tap * d - pad == i, where there is one.
  const int td = int(i.x) + p.pad[0] - int(kt.x * p.d[0]);
  const int th = int(i.y) + p.pad[1] - int(kt.y * p.d[1]);
  const int tw = int(i.z) + p.pad[2] - int(kt.z * p.d[2]);
  if (td < 0 || th < 0 || tw < 0) return 0.0;
  const uint od = quot(uint(td), S0), oh = quot(uint(th), S1), ow = quot(uint(tw), S2);
  if (od * p.s[0] != uint(td) || oh * p.s[1] != uint(th) || ow * p.s[2] != uint(tw) ||
      od >= p.out_[0] || oh >= p.out_[1] || ow >= p.out_[2]) {
    return 0.0;
  }
  return x[p.a_base + (n * p.oc + g * og() + oc) * out_size() + (od * p.out_[1] + oh) * p.out_[2] +
           ow];
}

uint gemm_m() { return p.mode == 1u ? cg() : og(); }
uint gemm_n() {
  return p.mode == 0u ? p.n * out_size() : p.mode == 1u ? p.n * in_size() : cg() * k_size();
}
uint gemm_k() {
  return p.mode == 0u ? cg() * k_size() : p.mode == 1u ? og() * k_size() : p.n * out_size();
}
uint gemm_splits() { return p.splits; }
uint gemm_tiles() { return p.tiles; }
bool a_along_k() { return true; }  // w's rows (taps, mode 1) and grad_out's planes are contiguous
bool b_along_n() { return p.mode != 2u; }  // along output (input, mode 1) positions
float load_a(uint g, uint row, uint k) {
  if (p.mode == 0u) return w[p.w_base + (g * og() + row) * cg() * k_size() + k];
  if (p.mode == 1u) {  // w^T: row an input channel, k = (output channel, tap)
    const uint oc = quot(k, KS), tap = k - oc * KS.d;
    return w[p.w_base + ((g * og() + oc) * cg() + row) * k_size() + tap];
  }
  const uint n = quot(k, OS), at = k - n * OS.d;
  return w[p.w_base + (n * p.oc + g * og() + row) * out_size() + at];
}
float load_b(uint g, uint k, uint col) {
  if (p.mode == 1u) return spread(g, k, col);
  return p.mode == 0u ? unfolded(g, k, col) : unfolded(g, col, k);
}
void store(uint g, uint split, uint row, uint col, float v) {
  if (p.mode == 1u) {
    const uint n = quot(col, IS), at = col - n * IS.d;
    o[p.out_base + (n * p.c + g * cg() + row) * in_size() + at] = v;
    return;
  }
  const uint oc = g * og() + row;
  if (p.mode == 0u) {
    const uint n = quot(col, OS), at = col - n * OS.d;
    if ((p.flags & 1u) != 0u) v += bias[p.b_base + oc];
    if ((p.flags & 2u) != 0u && v < 0.0) v = 0.0;  // the fused relu (NaN stays, as relu())
    o[p.out_base + (n * p.oc + oc) * out_size() + at] = v;
  } else {
    o[p.out_base + (split * p.oc + oc) * cg() * k_size() + col] = v;
  }
}

#ifdef LANES
#include "gemm_lanes.glsl"
#else
#include "gemm_tiled.glsl"
#endif
