// Convolution of contiguous NC + spatial tensors (1 to 3 spatial dims, right-aligned in
// three slots whose leading ones have size 1), grouped, strided, padded and dilated, as PyTorch:
//   mode 0, forward:         out [N, O, *out] = conv(a = x [N, C, *in], w [O, C/g, *k]) + bias
//   mode 1, backward data:   out [N, C, *in] = the transposed convolution of a = grad_out by w
//   mode 2, backward weight: out [O, C/g, *k] = sum over N and *out of x * grad_out (w = grad_out),
//                            and the bias gradient (grad_out summed) into `bias` when flags & 1
// Modes 0 and 1 take an invocation per output element and gather (no atomics, so run-to-run
// identical); mode 2 takes a workgroup per weight (then per bias) element: each invocation folds
// every 256th row of products, then a tree in shared memory in a fixed order; with flags & 2
// (many elements) an invocation per element sums them all, in the same row order. Sums are
// float32 fmas in the default variant; the ANY variant takes every float dtype (elements.glsl)
// and sums in double.
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#ifdef ANY  // every float dtype (elements.glsl), summed in double
#include "elements.glsl"
layout(std430, set = 0, binding = 0) readonly buffer A { uint a[]; };
layout(std430, set = 0, binding = 1) readonly buffer W { uint w[]; };
layout(std430, set = 0, binding = 2) buffer Bias { uint bias[]; };
layout(std430, set = 0, binding = 3) buffer Out { uint o[]; };
#define VALUE double
#define LOAD(buf, at) float_value(p.type, LOAD_BITS(buf, p.type, (at)))
#define STORE(buf, at, v) STORE_BITS(buf, p.type, (at), float_bits(p.type, (v)))
#else
layout(std430, set = 0, binding = 0) readonly buffer A { float a[]; };
layout(std430, set = 0, binding = 1) readonly buffer W { float w[]; };
layout(std430, set = 0, binding = 2) buffer Bias { float bias[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Out { float o[]; };
#define VALUE float
#define LOAD(buf, at) buf[at]
#define STORE(buf, at, v) buf[at] = (v)
#endif
layout(push_constant) uniform Params {
  uint n, c, oc, groups;
  uint mode, flags, a_base, w_base;  // flags: 1 bias (read in mode 0, written in mode 2), 2 above
  uint b_base, out_base, count, type;  // type (ANY): the dtype of all operands
  uint in_[3];
  uint out_[3];
  uint k[3];
  uint s[3];
  int pad[3];
  uint d[3];
} p;

shared VALUE part[256];

uint in_size() { return p.in_[0] * p.in_[1] * p.in_[2]; }
uint out_size() { return p.out_[0] * p.out_[1] * p.out_[2]; }
uint k_size() { return p.k[0] * p.k[1] * p.k[2]; }

// Output element i of the forward convolution: the kernel taps outside, so that their bounds are
// checked once for all input channels.
VALUE forward(uint i) {
  uint r = i;
  const uint ow = r % p.out_[2]; r /= p.out_[2];
  const uint oh = r % p.out_[1]; r /= p.out_[1];
  const uint od = r % p.out_[0]; r /= p.out_[0];
  const uint oc = r % p.oc;
  const uint n = r / p.oc;
  const uint cg = p.c / p.groups, og = p.oc / p.groups;
  const uint x0 = p.a_base + (n * p.c + (oc / og) * cg) * in_size();
  const uint w0 = p.w_base + oc * cg * k_size();
  VALUE acc = 0.0;
  for (uint kd = 0u; kd < p.k[0]; ++kd) {
    const int id = int(od * p.s[0] + kd * p.d[0]) - p.pad[0];
    if (id < 0 || id >= int(p.in_[0])) continue;
    for (uint kh = 0u; kh < p.k[1]; ++kh) {
      const int ih = int(oh * p.s[1] + kh * p.d[1]) - p.pad[1];
      if (ih < 0 || ih >= int(p.in_[1])) continue;
      for (uint kw = 0u; kw < p.k[2]; ++kw) {
        const int iw = int(ow * p.s[2] + kw * p.d[2]) - p.pad[2];
        if (iw < 0 || iw >= int(p.in_[2])) continue;
        uint xa = x0 + (uint(id) * p.in_[1] + uint(ih)) * p.in_[2] + uint(iw);
        uint wa = w0 + (kd * p.k[1] + kh) * p.k[2] + kw;
        for (uint ci = 0u; ci < cg; ++ci, xa += in_size(), wa += k_size()) {
          acc = fma(LOAD(a, xa), LOAD(w, wa), acc);
        }
      }
    }
  }
  if ((p.flags & 1u) != 0u) acc += LOAD(bias, p.b_base + oc);
  return acc;
}

// The output position along slot j reached from input position i through kernel tap kk; -1
// where none is (between strides, or outside the output).
int out_pos(int j, uint i, uint kk) {
  const int t = int(i) + p.pad[j] - int(kk * p.d[j]);
  if (t < 0 || t % int(p.s[j]) != 0) return -1;
  const int o = t / int(p.s[j]);
  return o < int(p.out_[j]) ? o : -1;
}

// Element i of the data gradient [N, C, *in]: every output that read it, times its weight; the
// taps outside, so that each output position is found once for all output channels.
VALUE backward_data(uint i) {
  uint r = i;
  const uint iw = r % p.in_[2]; r /= p.in_[2];
  const uint ih = r % p.in_[1]; r /= p.in_[1];
  const uint id = r % p.in_[0]; r /= p.in_[0];
  const uint c = r % p.c;
  const uint n = r / p.c;
  const uint cg = p.c / p.groups, og = p.oc / p.groups;
  const uint g = c / cg, ci = c % cg;
  const uint y0 = p.a_base + (n * p.oc + g * og) * out_size();
  const uint w0 = p.w_base + (g * og * cg + ci) * k_size();
  VALUE acc = 0.0;
  for (uint kd = 0u; kd < p.k[0]; ++kd) {
    const int od = out_pos(0, id, kd);
    if (od < 0) continue;
    for (uint kh = 0u; kh < p.k[1]; ++kh) {
      const int oh = out_pos(1, ih, kh);
      if (oh < 0) continue;
      for (uint kw = 0u; kw < p.k[2]; ++kw) {
        const int ow = out_pos(2, iw, kw);
        if (ow < 0) continue;
        uint ya = y0 + (uint(od) * p.out_[1] + uint(oh)) * p.out_[2] + uint(ow);
        uint wa = w0 + (kd * p.k[1] + kh) * p.k[2] + kw;
        for (uint oc = 0u; oc < og; ++oc, ya += out_size(), wa += cg * k_size()) {
          acc = fma(LOAD(a, ya), LOAD(w, wa), acc);
        }
      }
    }
  }
  return acc;
}

// The outputs along slot j whose tap kk reads inside the input: [first, last] (empty when
// first > last).
ivec2 valid_outputs(int j, uint kk) {
  const int shift = p.pad[j] - int(kk * p.d[j]);  // input = o * s - shift
  const int s = int(p.s[j]);
  const int first = shift <= 0 ? 0 : (shift + s - 1) / s;
  const int hi = int(p.in_[j]) - 1 + shift;  // o * s <= hi
  const int last = hi < 0 ? -1 : min(hi / s, int(p.out_[j]) - 1);
  return ivec2(first, last);
}

// Invocation t of `threads`' share of weight element e's gradient (e past the weights: a bias
// element): the rows (n, od, oh) of the output are dealt to the invocations, and each walks a
// row's valid span of ow without bounds checks.
VALUE weight_part(uint e, uint t, uint threads) {
  const uint cg = p.c / p.groups, og = p.oc / p.groups;
  const uint weights = p.oc * cg * k_size();
  const uint rows = p.n * p.out_[0] * p.out_[1];
  VALUE acc = 0.0;
  if (e >= weights) {  // the bias gradient of channel e - weights
    const uint oc = e - weights;
    for (uint row = t; row < rows; row += threads) {
      const uint n = row / (p.out_[0] * p.out_[1]), rest = row % (p.out_[0] * p.out_[1]);
      const uint y0 = p.w_base + (n * p.oc + oc) * out_size() + rest * p.out_[2];
      for (uint ow = 0u; ow < p.out_[2]; ++ow) acc += LOAD(w, y0 + ow);
    }
    return acc;
  }
  uint r = e;
  const uint kw = r % p.k[2]; r /= p.k[2];
  const uint kh = r % p.k[1]; r /= p.k[1];
  const uint kd = r % p.k[0]; r /= p.k[0];
  const uint ci = r % cg;
  const uint oc = r / cg;
  const uint c = (oc / og) * cg + ci;
  const ivec2 span = valid_outputs(2, kw);
  for (uint row = t; row < rows; row += threads) {
    const uint oh = row % p.out_[1], od = row / p.out_[1] % p.out_[0];
    const uint n = row / (p.out_[1] * p.out_[0]);
    const int id = int(od * p.s[0] + kd * p.d[0]) - p.pad[0];
    const int ih = int(oh * p.s[1] + kh * p.d[1]) - p.pad[1];
    if (id < 0 || id >= int(p.in_[0]) || ih < 0 || ih >= int(p.in_[1])) continue;
    const uint x0 =
        p.a_base + (n * p.c + c) * in_size() + (uint(id) * p.in_[1] + uint(ih)) * p.in_[2];
    const uint y0 = p.w_base + (n * p.oc + oc) * out_size() + (od * p.out_[1] + oh) * p.out_[2];
    for (int ow = span.x; ow <= span.y; ++ow) {
      const int iw = ow * int(p.s[2]) + int(kw * p.d[2]) - p.pad[2];
      acc = fma(LOAD(a, x0 + uint(iw)), LOAD(w, y0 + uint(ow)), acc);
    }
  }
  return acc;
}

void main() {
  if (p.mode == 2u && (p.flags & 2u) != 0u) {  // many elements: an invocation each, no barriers
    const uint step = gl_NumWorkGroups.x * 256u;
    const uint weights = p.oc * (p.c / p.groups) * k_size();
    for (uint e = gl_GlobalInvocationID.x; e < p.count; e += step) {
      const VALUE v = weight_part(e, 0u, 1u);
      if (e < weights) {
        STORE(o, p.out_base + e, v);
      } else {
        STORE(bias, p.b_base + e - weights, v);
      }
    }
    return;
  }
  if (p.mode == 2u) {
    const uint t = gl_LocalInvocationID.x;
    const uint weights = p.oc * (p.c / p.groups) * k_size();
    for (uint e = gl_WorkGroupID.x; e < p.count; e += gl_NumWorkGroups.x) {
      part[t] = weight_part(e, t, 256u);
      barrier();
      for (uint width = 128u; width > 0u; width >>= 1) {
        if (t < width) part[t] += part[t + width];
        barrier();
      }
      if (t == 0u) {
        if (e < weights) {
          STORE(o, p.out_base + e, part[0]);
        } else {
          STORE(bias, p.b_base + e - weights, part[0]);
        }
      }
      barrier();  // part[] is reused by the next element
    }
    return;
  }
  const uint stride = gl_NumWorkGroups.x * 256u;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) {
    STORE(o, p.out_base + i, p.mode == 0u ? forward(i) : backward_data(i));
  }
}
