// Float16 convolution on tensor cores: conv_tiled.comp's implicit GEMMs (the same modes, geometry
// and push constants) through gemm_coop.glsl, summing in float32 and rounding once to float16:
//   mode 0, forward:         y [n, oc, s] = w [oc, ci*tap] x unfold(x) [ci*tap, (n, s)] (+ bias,
//                            then relu with flags & 2)
//   mode 1, backward data:   gx [n, ci, r] = w^T [ci, oc*tap] x spread(grad_out) [oc*tap, (n, r)]
//   mode 2, backward weight: gw [oc, ci*tap] = grad_out [oc, (n, s)] x unfold(x)^T, its k in
//                            `splits` parts written apart in float32, out [splits, O, C/g*taps],
//                            which sum_parts.comp adds and rounds
// Operands are gathered element by element (16-bit elements, two a word); outputs of modes 0 and
// 1 are written a word (two neighbouring positions) at a time where positions come in pairs,
// else with atomic and/or on the word.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#ifndef EMULATE
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#endif

layout(std430, set = 0, binding = 0) readonly buffer X { uint x[]; };  // mode 1: grad_out
layout(std430, set = 0, binding = 1) readonly buffer W { uint w[]; };  // mode 2: grad_out
layout(std430, set = 0, binding = 2) readonly buffer Bias { uint bias[]; };
layout(std430, set = 0, binding = 3) buffer Out { uint o[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Parts { float parts[]; };  // mode 2
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

#include "half.glsl"

uvec4 pack8(uint h[8]);

// Half `i` (from the binding's start) of a word-addressed buffer.
uint half_at(uint word, uint i) { return (i & 1u) != 0u ? word >> 16u : word & 0xffffu; }
uint x_half(uint i) { return half_at(x[i >> 1u], i); }
uint w_half(uint i) { return half_at(w[i >> 1u], i); }

uint in_size() { return p.in_[0] * p.in_[1] * p.in_[2]; }
uint out_size() { return p.out_[0] * p.out_[1] * p.out_[2]; }
uint k_size() { return p.k[0] * p.k[1] * p.k[2]; }
uint cg() { return p.c / p.groups; }
uint og() { return p.oc / p.groups; }

// unfold(x) of group g: row ck = (input channel, tap), column ns = (sample, output position);
// zero where the tap falls in the padding.
uint unfolded(uint g, uint ck, uint ns) {
  const uint ci = ck / k_size(), tap = ck % k_size();
  const uint n = ns / out_size(), at = ns % out_size();
  const uint kw = tap % p.k[2], kh = (tap / p.k[2]) % p.k[1], kd = tap / (p.k[2] * p.k[1]);
  const uint ow = at % p.out_[2], oh = (at / p.out_[2]) % p.out_[1];
  const uint od = at / (p.out_[2] * p.out_[1]);
  const int id = int(od * p.s[0] + kd * p.d[0]) - p.pad[0];
  const int ih = int(oh * p.s[1] + kh * p.d[1]) - p.pad[1];
  const int iw = int(ow * p.s[2] + kw * p.d[2]) - p.pad[2];
  if (id < 0 || id >= int(p.in_[0]) || ih < 0 || ih >= int(p.in_[1]) || iw < 0 ||
      iw >= int(p.in_[2])) {
    return 0u;
  }
  return x_half(p.a_base + (n * p.c + g * cg() + ci) * in_size() +
                (uint(id) * p.in_[1] + uint(ih)) * p.in_[2] + uint(iw));
}

// spread(grad_out) of group g (binding 0 holding grad_out): row ok = (output channel, tap),
// column nr = (sample, input position): the output position that read it through that tap.
uint spread(uint g, uint ok, uint nr) {
  const uint oc = ok / k_size(), tap = ok % k_size();
  const uint n = nr / in_size(), at = nr % in_size();
  const uint kw = tap % p.k[2], kh = (tap / p.k[2]) % p.k[1], kd = tap / (p.k[2] * p.k[1]);
  const uint iw = at % p.in_[2], ih = (at / p.in_[2]) % p.in_[1];
  const uint id = at / (p.in_[2] * p.in_[1]);
  const int td = int(id) + p.pad[0] - int(kd * p.d[0]);
  const int th = int(ih) + p.pad[1] - int(kh * p.d[1]);
  const int tw = int(iw) + p.pad[2] - int(kw * p.d[2]);
  if (td < 0 || th < 0 || tw < 0) return 0u;
  const uint od = uint(td) / p.s[0], oh = uint(th) / p.s[1], ow = uint(tw) / p.s[2];
  if (od * p.s[0] != uint(td) || oh * p.s[1] != uint(th) || ow * p.s[2] != uint(tw) ||
      od >= p.out_[0] || oh >= p.out_[1] || ow >= p.out_[2]) {
    return 0u;
  }
  return x_half(p.a_base + (n * p.oc + g * og() + oc) * out_size() +
                (od * p.out_[1] + oh) * p.out_[2] + ow);
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

// A's element (row, k) of group g, in range.
uint a_half(uint g, uint row, uint k) {
  if (p.mode == 0u) return w_half(p.w_base + (g * og() + row) * cg() * k_size() + k);
  if (p.mode == 1u) {  // w^T: row an input channel, k = (output channel, tap)
    const uint oc = k / k_size(), tap = k % k_size();
    return w_half(p.w_base + ((g * og() + oc) * cg() + row) * k_size() + tap);
  }
  const uint n = k / out_size(), at = k % out_size();  // grad_out [n, oc, s]
  return w_half(p.w_base + (n * p.oc + g * og() + row) * out_size() + at);
}

uint b_half(uint g, uint k, uint col) {
  if (p.mode == 1u) return spread(g, k, col);
  return p.mode == 0u ? unfolded(g, k, col) : unfolded(g, col, k);
}

uvec4 fetch_a(uint g, uint row, uint kk, uint k_end) {
  uint h[8];
  [[unroll]] for (uint i = 0u; i < 8u; ++i) {
    h[i] = row < gemm_m() && kk + i < k_end ? a_half(g, row, kk + i) : 0u;
  }
  return pack8(h);
}

uvec4 fetch_b(uint g, uint kk, uint col, uint k_end) {
  uint h[8];
  [[unroll]] for (uint i = 0u; i < 8u; ++i) {
    h[i] = kk < k_end && col + i < gemm_n() ? b_half(g, kk, col + i) : 0u;
  }
  return pack8(h);
}

// Writes half `bits` as element `i` of out, sharing its word with another invocation's.
void put_half(uint i, uint bits) {
  const uint shift = (i & 1u) * 16u;
  atomicAnd(o[i >> 1u], ~(0xffffu << shift));
  atomicOr(o[i >> 1u], bits << shift);
}

void store8(uint g, uint split, uint row, uint col, float v[8]) {
  const uint n_cols = gemm_n();
  if (p.mode == 2u) {
    const uint at = (split * p.oc + g * og() + row) * cg() * k_size() + col;
    [[unroll]] for (uint i = 0u; i < 8u; ++i) {
      if (col + i < n_cols) parts[p.out_base + at + i] = v[i];
    }
    return;
  }
  // Modes 0 and 1: column (sample, position) of a [n, channels, positions] output.
  const uint size = p.mode == 0u ? out_size() : in_size();
  const uint channels = p.mode == 0u ? p.oc : p.c;
  const uint channel = g * (p.mode == 0u ? og() : cg()) + row;
  uint h[8];
  [[unroll]] for (uint i = 0u; i < 8u; ++i) {
    float r = v[i];
    if ((p.flags & 1u) != 0u) r += half_to_float(half_at(bias[(p.b_base + channel) >> 1u],
                                                         p.b_base + channel));
    if ((p.flags & 2u) != 0u && r < 0.0) r = 0.0;  // the fused relu (NaN stays, as relu())
    h[i] = to_f16(r);
  }
  // With an even plane, columns 2j and 2j + 1 (col is a multiple of 8) are one sample's
  // neighbours, an even element and the next: one word, no other invocation's.
  const bool pairs = (size & 1u) == 0u && (p.out_base & 1u) == 0u;
  [[unroll]] for (uint i = 0u; i < 8u; i += 2u) {
    if (col + i >= n_cols) break;
    const uint nb = (col + i) / size, at = (col + i) % size;
    const uint e = p.out_base + (nb * channels + channel) * size + at;
    if (pairs && col + i + 1u < n_cols) {
      o[e >> 1u] = h[i] | (h[i + 1u] << 16u);
      continue;
    }
    put_half(e, h[i]);
    if (col + i + 1u >= n_cols) break;
    const uint s1 = (col + i + 1u) / size, a1 = (col + i + 1u) % size;
    put_half(p.out_base + (s1 * channels + channel) * size + a1, h[i + 1u]);
  }
}

#include "gemm_coop.glsl"
