// Pooling over the trailing 1 to 3 spatial dims of contiguous [planes, *in] tensors (the sizes
// right-aligned in three slots, leading slots of size 1), with PyTorch's windows for padding,
// dilation, ceil mode and adaptive pooling (core/pool_geometry.hpp, which the Cpu uses), in
// float32, or every float dtype in double in the ANY variant (elements.glsl):
//   mode 0: max pool, out = the window's max (NaN wins, the first max on ties), and when
//           flags & 12 its flat index within the input plane into idx (4: int32, 8: int64)
//   mode 1: average pool
//   mode 2: max pool backward, out [planes, *in] = the sum of a = grad_out at the outputs whose
//           index is this element
//   mode 3: average pool backward, out = the sum of grad_out / count over the windows holding it
// An invocation per output element (16 in the FAST_DIVISION variant for a CPU device,
// pool_cpu, whose fastdiv.glsl divisors each invocation sets up first); the backward modes gather
// from the outputs that can reach an input element (no atomics, so run-to-run identical).
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#ifdef ANY  // every float dtype (elements.glsl), in double
#include "elements.glsl"
layout(std430, set = 0, binding = 0) readonly buffer A { uint a[]; };
layout(std430, set = 0, binding = 2) buffer Out { uint o[]; };
#define VALUE double
#define LOAD(at) float_value(p.type, LOAD_BITS(a, p.type, (at)))
#define STORE(at, v) STORE_BITS(o, p.type, (at), float_bits(p.type, (v)))
#else
layout(std430, set = 0, binding = 0) readonly buffer A { float a[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Out { float o[]; };
#define VALUE float
#define LOAD(at) a[at]
#define STORE(at, v) o[at] = (v)
#endif
layout(std430, set = 0, binding = 1) buffer Idx { uint idx[]; };
layout(push_constant) uniform Params {
  uint planes, mode, flags, count;  // flags: 1 adaptive, 2 count_include_pad, 4/8 indices
  uint a_base, out_base, i_word, type;  // i_word: idx's first element, in 32-bit words
  uint in_[3];
  uint out_[3];
  uint k[3];
  uint s[3];
  int pad[3];
  uint d[3];
} p;

bool adaptive() { return (p.flags & 1u) != 0u; }
uint in_size() { return p.in_[0] * p.in_[1] * p.in_[2]; }
uint out_size() { return p.out_[0] * p.out_[1] * p.out_[2]; }

#include "fastdiv.glsl"

// The divisors of the index arithmetic (fastdiv.glsl), per slot, set once an invocation.
Divisor IN[3], OUT[3], S[3], D[3], IS, OS;
void setup() {
  for (int j = 0; j < 3; ++j) {
    IN[j] = divisor(p.in_[j]);
    OUT[j] = divisor(p.out_[j]);
    S[j] = divisor(p.s[j]);
    D[j] = divisor(p.d[j]);
  }
  IS = divisor(in_size());
  OS = divisor(out_size());
}

// The average window of output position o along slot j: [lo, hi) clipped to the input, and
// the count it divides by (avg_window in core/pool_geometry.hpp).
ivec3 window(int j, int o) {
  if (adaptive()) {
    const int n = int(p.in_[j]), m = int(p.out_[j]);
    const int lo = int(quot(uint(o * n), OUT[j]));
    const int hi = int(quot(uint((o + 1) * n + m - 1), OUT[j]));
    return ivec3(lo, hi, hi - lo);
  }
  int lo = o * int(p.s[j]) - p.pad[j];
  int hi = min(lo + int(p.k[j]), int(p.in_[j]) + p.pad[j]);
  const int padded = hi - lo;
  lo = max(lo, 0);
  hi = min(hi, int(p.in_[j]));
  return ivec3(lo, hi, (p.flags & 2u) != 0u ? padded : hi - lo);
}

// The max of output element i of `plane`'s windows, and its flat index within the plane.
void max_of(uint plane_at, uint od, uint oh, uint ow, out VALUE best, out int arg) {
  best = 0.0;
  arg = -1;
  for (uint kd = 0u; kd < (adaptive() ? 1u : p.k[0]); ++kd) {
    for (uint kh = 0u; kh < (adaptive() ? 1u : p.k[1]); ++kh) {
      for (uint kw = 0u; kw < (adaptive() ? 1u : p.k[2]); ++kw) {
        ivec3 wd, wh, ww;
        if (adaptive()) {
          wd = window(0, int(od));
          wh = window(1, int(oh));
          ww = window(2, int(ow));
        } else {  // one tap: a window of one element, empty outside the input
          const int id = int(od * p.s[0] + kd * p.d[0]) - p.pad[0];
          const int ih = int(oh * p.s[1] + kh * p.d[1]) - p.pad[1];
          const int iw = int(ow * p.s[2] + kw * p.d[2]) - p.pad[2];
          wd = ivec3(id, id < 0 || id >= int(p.in_[0]) ? id : id + 1, 0);
          wh = ivec3(ih, ih < 0 || ih >= int(p.in_[1]) ? ih : ih + 1, 0);
          ww = ivec3(iw, iw < 0 || iw >= int(p.in_[2]) ? iw : iw + 1, 0);
        }
        for (int id = wd.x; id < wd.y; ++id) {
          for (int ih = wh.x; ih < wh.y; ++ih) {
            for (int iw = ww.x; iw < ww.y; ++iw) {
              const int at = (id * int(p.in_[1]) + ih) * int(p.in_[2]) + iw;
              const VALUE v = LOAD(p.a_base + plane_at + uint(at));
              if (arg < 0 || v > best || isnan(v)) {  // NaN wins, a later one replaces it
                best = v;
                arg = at;
              }
            }
          }
        }
      }
    }
  }
  if (arg < 0) best = -VALUE(uintBitsToFloat(0x7f800000u));
}

VALUE average_of(uint plane_at, uint od, uint oh, uint ow) {
  const ivec3 wd = window(0, int(od)), wh = window(1, int(oh)), ww = window(2, int(ow));
  VALUE sum = 0.0;
  for (int id = wd.x; id < wd.y; ++id) {
    for (int ih = wh.x; ih < wh.y; ++ih) {
      for (int iw = ww.x; iw < ww.y; ++iw) {
        sum += LOAD(p.a_base + plane_at + uint((id * int(p.in_[1]) + ih) * int(p.in_[2]) + iw));
      }
    }
  }
  const int count = wd.z * wh.z * ww.z;
  return count > 0 ? sum / VALUE(count) : 0.0;
}

// The outputs along slot j whose windows may hold input position i: [x, y), checked by the
// caller against the window itself.
ivec2 candidates(int j, int i) {
  const int n = int(p.in_[j]), m = int(p.out_[j]);
  if (adaptive()) {
    return ivec2(max(int(quot(uint(i * m), IN[j])) - 1, 0),
                 min(int(quot(uint((i + 1) * m), IN[j])) + 1, m - 1) + 1);
  }
  // o * s - pad <= i + (k - 1) * d, and o * s - pad >= i - (k - 1) * d - ... : the span of
  // starts that reach i with any tap.
  const int reach = (int(p.k[j]) - 1) * int(p.d[j]);
  const int lo = i + p.pad[j] - reach;
  const int first = lo <= 0 ? 0 : int(quot(uint(lo) + p.s[j] - 1u, S[j]));
  const int last = min(int(quot(uint(i + p.pad[j]), S[j])), m - 1);
  return ivec2(first, last + 1);
}

// Whether output position o along slot j reads input position i.
bool reads(int j, int o, int i) {
  if (adaptive() || p.mode == 3u) {
    const ivec3 w = window(j, o);
    return w.x <= i && i < w.y;
  }
  const int t = i + p.pad[j] - o * int(p.s[j]);
  if (t < 0) return false;
  const uint q = quot(uint(t), D[j]);
  return q * p.d[j] == uint(t) && q < p.k[j];
}

int index_at(uint e) {
  return int(idx[p.i_word + ((p.flags & 8u) != 0u ? 2u * e : e)]);
}

VALUE backward(uint i) {
  const uint plane = quot(i, IS), at = i - plane * IS.d;
  const ivec3 pos = ivec3(split3(at, IN[2], IN[1]));
  const int id = pos.x, ih = pos.y, iw = pos.z;
  const ivec2 cd = candidates(0, id), ch = candidates(1, ih), cw = candidates(2, iw);
  VALUE sum = 0.0;
  for (int od = cd.x; od < cd.y; ++od) {
    if (!reads(0, od, id)) continue;
    for (int oh = ch.x; oh < ch.y; ++oh) {
      if (!reads(1, oh, ih)) continue;
      for (int ow = cw.x; ow < cw.y; ++ow) {
        if (!reads(2, ow, iw)) continue;
        const uint e = plane * out_size() + uint((od * int(p.out_[1]) + oh) * int(p.out_[2]) + ow);
        if (p.mode == 2u) {
          if (index_at(e) == int(at)) sum += LOAD(p.a_base + e);
        } else {
          const int count =
              window(0, od).z * window(1, oh).z * window(2, ow).z;
          if (count > 0) sum += LOAD(p.a_base + e) / VALUE(count);
        }
      }
    }
  }
  return sum;
}

void main() {
  setup();
  const uint stride = gl_NumWorkGroups.x * 256u;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) {
    if (p.mode >= 2u) {
      STORE(p.out_base + i, backward(i));
      continue;
    }
    const uint plane = quot(i, OS), at = i - plane * OS.d;
    const uvec3 pos = split3(at, OUT[2], OUT[1]);
    const uint od = pos.x, oh = pos.y, ow = pos.z;
    if (p.mode == 1u) {
      STORE(p.out_base + i, average_of(plane * in_size(), od, oh, ow));
      continue;
    }
    VALUE best;
    int arg;
    max_of(plane * in_size(), od, oh, ow, best, arg);
    STORE(p.out_base + i, best);
    if ((p.flags & 4u) != 0u) idx[p.i_word + i] = uint(arg);
    if ((p.flags & 8u) != 0u) {
      idx[p.i_word + 2u * i] = uint(arg);
      idx[p.i_word + 2u * i + 1u] = arg < 0 ? 0xffffffffu : 0u;
    }
  }
}
