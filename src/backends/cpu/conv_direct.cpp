// Direct f32 convolutions for a few input channels, AVX2 + FMA (see conv_direct.hpp).
// Forward: a chunk of 8 (or 4) output columns in two rows for 3 output channels sums in 6
// registers; the inputs under the window are loaded into registers once and each weight is one
// broadcast for two FMAs. Weight gradient: B output channels times one kernel row of KW taps are
// held in B * KW accumulators, so B + KW loads feed B * KW FMAs. On the CNN's first layer both
// keep the FMA pipes about 75% busy while their data is in cache.
#include "conv_direct.hpp"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "cpu_backend.hpp"
#include "parallel.hpp"
#endif

namespace ember::cpu {

#if defined(__AVX2__) && defined(__FMA__)
namespace {

// 8 and 4 lanes: one kernel body for both, the narrow one for the columns after whole vectors.
struct V8 {
  using T = __m256;
  static constexpr int kLanes = 8;
  static T load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, T v) { _mm256_storeu_ps(p, v); }
  static T set1(float v) { return _mm256_set1_ps(v); }
  static T fma(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
  static T add(T a, T b) { return _mm256_add_ps(a, b); }
  // max(0, v) is `0 > v ? 0 : v`: NaN and -0 pass through, as relu() keeps them.
  static T relu(T v) { return _mm256_max_ps(_mm256_setzero_ps(), v); }
  // All-ones in the lanes from `skip` on, zero below.
  static T keep_from(int skip) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_castsi256_ps(_mm256_cmpgt_epi32(lane, _mm256_set1_epi32(skip - 1)));
  }
  static T mask(T v, T m) { return _mm256_and_ps(v, m); }
  // d where y > 0 (a NaN y keeps d), else 0: relu_backward(d, y).
  static T keep_positive(T d, T y) {
    return _mm256_andnot_ps(_mm256_cmp_ps(y, _mm256_setzero_ps(), _CMP_LE_OQ), d);
  }
};

struct V4 {
  using T = __m128;
  static constexpr int kLanes = 4;
  static T load(const float* p) { return _mm_loadu_ps(p); }
  static void store(float* p, T v) { _mm_storeu_ps(p, v); }
  static T set1(float v) { return _mm_set1_ps(v); }
  static T fma(T a, T b, T c) { return _mm_fmadd_ps(a, b, c); }
  static T add(T a, T b) { return _mm_add_ps(a, b); }
  static T relu(T v) { return _mm_max_ps(_mm_setzero_ps(), v); }
  static T keep_from(int skip) {
    const __m128i lane = _mm_setr_epi32(0, 1, 2, 3);
    return _mm_castsi128_ps(_mm_cmpgt_epi32(lane, _mm_set1_epi32(skip - 1)));
  }
  static T mask(T v, T m) { return _mm_and_ps(v, m); }
  static T keep_positive(T d, T y) { return _mm_andnot_ps(_mm_cmple_ps(y, _mm_setzero_ps()), d); }
};

// The geometry; h and w are the input's with its zero padding written out.
struct Geo {
  int64_t n, c, o, h, w, kh, kw, oh, ow;
};

bool direct_geometry(const RawTensor& x, const RawTensor& w, const RawTensor& y,
                     const ConvParams& p, Geo* g) {
  if (p.spatial != 2 || p.groups != 1 || x.dtype != DType::f32 || w.dtype != DType::f32 ||
      y.dtype != DType::f32) {
    return false;
  }
  for (int i = 0; i < 2; ++i) {
    if (p.stride[i] != 1 || p.dilation[i] != 1 || p.padding[i] < 0) return false;
  }
  *g = Geo{x.shape[0],
           x.shape[1],
           y.shape[1],
           x.shape[2] + 2 * p.padding[0],
           x.shape[3] + 2 * p.padding[1],
           w.shape[2],
           w.shape[3],
           y.shape[2],
           y.shape[3]};
  return g->c >= 1 && g->c <= 4 && w.shape[1] == g->c && g->kw >= 2 && g->kw <= 6 && g->kh >= 1 &&
         g->ow >= 4 && g->oh >= 1 && g->oh == g->h - g->kh + 1 && g->ow == g->w - g->kw + 1;
}

// x with its zero padding written out, so every window the kernels read lies in the buffer.
RawTensor pad_input(const RawTensor& x, const ConvParams& p, const Geo& g) {
  RawTensor padded = empty_raw(Shape{g.n * g.c, g.h, g.w}, DType::f32);
  const float* src = x.data_as<float>();
  float* dst = padded.data_as<float>();
  const int64_t ph = p.padding[0], pw = p.padding[1], in_h = x.shape[2], in_w = x.shape[3];
  parallel_for(0, g.n * g.c, std::max<int64_t>(1, kGrain / (g.h * g.w)),
               [&](int64_t lo, int64_t hi) {
                 for (int64_t plane = lo; plane < hi; ++plane) {
                   float* d = dst + plane * g.h * g.w;
                   std::fill(d, d + g.h * g.w, 0.0f);
                   for (int64_t r = 0; r < in_h; ++r) {
                     const float* s = src + (plane * in_h + r) * in_w;
                     std::copy(s, s + in_w, d + (r + ph) * g.w + pw);
                   }
                 }
               });
  return padded;
}

// ---- Forward ------------------------------------------------------------------------------

// One column chunk at `ow` of R output rows from `oh`, for OB output channels: every input
// channel and kernel row is summed in registers (OB * R accumulators), G kernel rows at a time
// whose inputs are loaded once for the OB channels. Starts from the bias; relu when asked.
template <class V, int G, int KW, int R, int OB, bool kOnePass>
void forward_chunk(const Geo& g, const float* x, const typename V::T* loaded, const float* w,
                   const float* bias, bool relu, float* y) {
  using T = typename V::T;
  const int64_t w_step = g.c * g.kh * KW, y_plane = g.oh * g.ow;
  T acc[OB][R];
  for (int j = 0; j < OB; ++j) {
    const T b = V::set1(bias ? bias[j] : 0.0f);
    for (int r = 0; r < R; ++r) acc[j][r] = b;
  }
  const int64_t channels = kOnePass ? 1 : g.c, rows = kOnePass ? G : g.kh;
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t kh0 = 0; kh0 < rows; kh0 += G) {
      const float* xc = x + (c * g.h + kh0) * g.w;
      const float* wc = w + (c * g.kh + kh0) * KW;
      T own[(G + R - 1) * KW];
      const T* in = loaded;
      if constexpr (!kOnePass) {
        for (int r = 0; r < G + R - 1; ++r) {
          for (int k = 0; k < KW; ++k) own[r * KW + k] = V::load(xc + r * g.w + k);
        }
        in = own;
      }
      for (int i = 0; i < G; ++i) {
        for (int k = 0; k < KW; ++k) {
          for (int j = 0; j < OB; ++j) {
            const T wv = V::set1(wc[j * w_step + i * KW + k]);
            for (int r = 0; r < R; ++r) acc[j][r] = V::fma(wv, in[(i + r) * KW + k], acc[j][r]);
          }
        }
      }
    }
  }
  for (int j = 0; j < OB; ++j) {
    for (int r = 0; r < R; ++r) {
      V::store(y + j * y_plane + r * g.ow, relu ? V::relu(acc[j][r]) : acc[j][r]);
    }
  }
}

// R output rows from `oh` of one image, output channels o0..o0+nb, 3 at a time (6 independent
// FMA chains hide their latency; one channel at a time ran 20% slower). With a single pass (one
// input channel, all kernel rows at once) the window is loaded once for all nb channels. The last
// column chunk may overlap the one before it: it recomputes the same values.
template <int G, int KW, int R, bool kOnePass>
void forward_rows(const Geo& g, const float* x, const float* w, const float* bias, bool relu,
                  float* y, int64_t oh, int64_t o0, int64_t nb) {
  constexpr int kOB = 3;
  auto chunk = [&]<class V>(int64_t ow) {
    const float* xr = x + oh * g.w + ow;
    typename V::T in[(G + R - 1) * KW];
    if constexpr (kOnePass) {
      for (int r = 0; r < G + R - 1; ++r) {
        for (int k = 0; k < KW; ++k) in[r * KW + k] = V::load(xr + r * g.w + k);
      }
    }
    for (int64_t o = o0; o < o0 + nb;) {
      const float* wo = w + o * g.c * g.kh * KW;
      const float* bo = bias ? bias + o : nullptr;
      float* yo = y + (o * g.oh + oh) * g.ow + ow;
      if (o + kOB <= o0 + nb) {
        forward_chunk<V, G, KW, R, kOB, kOnePass>(g, xr, in, wo, bo, relu, yo);
        o += kOB;
      } else {
        forward_chunk<V, G, KW, R, 1, kOnePass>(g, xr, in, wo, bo, relu, yo);
        o += 1;
      }
    }
  };
  int64_t ow = 0;
  for (; ow + 8 <= g.ow; ow += 8) chunk.template operator()<V8>(ow);
  if (ow + 4 <= g.ow) {
    chunk.template operator()<V4>(ow);
    ow += 4;
  }
  if (ow < g.ow) chunk.template operator()<V4>(g.ow - 4);
}

// Output channels a task: writing 12 planes of one image from top to bottom ran 10-20% faster
// than all 32 of the CNN's first layer two rows at a time (the output goes to memory).
constexpr int64_t kForwardBlock = 12;

template <int G, int KW>
void forward_all(const Geo& g, const float* x, const float* w, const float* bias, bool relu,
                 float* y) {
  const int64_t blocks = (g.o + kForwardBlock - 1) / kForwardBlock;
  const bool one_pass = g.c == 1 && g.kh == G;
  parallel_for(0, g.n * blocks, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      const int64_t n = t / blocks, o0 = (t % blocks) * kForwardBlock;
      const int64_t nb = std::min(kForwardBlock, g.o - o0);
      const float* xn = x + n * g.c * g.h * g.w;
      float* yn = y + n * g.o * g.oh * g.ow;
      auto rows = [&]<bool kOnePass>() {
        int64_t oh = 0;
        for (; oh + 2 <= g.oh; oh += 2) {
          forward_rows<G, KW, 2, kOnePass>(g, xn, w, bias, relu, yn, oh, o0, nb);
        }
        if (oh < g.oh) forward_rows<G, KW, 1, kOnePass>(g, xn, w, bias, relu, yn, oh, o0, nb);
      };
      if (one_pass) {
        rows.template operator()<true>();
      } else {
        rows.template operator()<false>();
      }
    }
  });
}

// G kernel rows a pass: all of them where the window of two output rows fits in 12 registers.
template <int KW>
void forward_kw(const Geo& g, const float* x, const float* w, const float* bias, bool relu,
                float* y) {
  if constexpr (KW <= 3) {
    if (g.kh == 3) return forward_all<3, KW>(g, x, w, bias, relu, y);
  }
  if constexpr (KW <= 4) {
    if (g.kh == 2) return forward_all<2, KW>(g, x, w, bias, relu, y);
  }
  forward_all<1, KW>(g, x, w, bias, relu, y);
}

// ---- Weight gradient ----------------------------------------------------------------------

// Images a partial sum covers: fixed, so the order of the sums never depends on the thread count.
constexpr int64_t kImagesPerPartial = 8;

// acc[b][k] += dy[o0 + b] * x shifted by k over `rows` output rows and `chunks` vectors a row,
// for one kernel row; with kBias also bias[b] += dy[o0 + b] (adds run beside the FMAs). The sums
// live in `part`: 8 floats a slot, the bias slot at `bias_at`, channels `part_b` apart. With
// kMask, lanes below `skip` (summed already by the chunk this one overlaps) count zero. With
// kRelu, dy is the gradient of a fused relu whose output y (laid out as dy) masks it: the
// relu_backward pass over the whole gradient is not needed.
template <class V, int KW, int B, bool kMask, bool kBias, bool kRelu>
void weight_pass(const float* x, int64_t x_row, const float* dy, const float* y, int64_t dy_plane,
                 int64_t dy_row, int64_t rows, int64_t chunks, int skip, float* part,
                 int64_t part_b, int64_t bias_at) {
  using T = typename V::T;
  T acc[B][KW], bacc[B];
  for (int b = 0; b < B; ++b) {
    for (int k = 0; k < KW; ++k) acc[b][k] = V::load(part + b * part_b + k * 8);
    if constexpr (kBias) bacc[b] = V::load(part + b * part_b + bias_at);
  }
  const T m = V::keep_from(skip);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < chunks; ++j) {
      const float* xr = x + r * x_row + j * V::kLanes;
      const float* dr = dy + r * dy_row + j * V::kLanes;
      T d[B];
      for (int b = 0; b < B; ++b) {
        d[b] = V::load(dr + b * dy_plane);
        if constexpr (kRelu) {
          d[b] = V::keep_positive(d[b], V::load(y + r * dy_row + j * V::kLanes + b * dy_plane));
        }
        if constexpr (kMask) d[b] = V::mask(d[b], m);
        if constexpr (kBias) bacc[b] = V::add(bacc[b], d[b]);
      }
      for (int k = 0; k < KW; ++k) {
        T xv = V::load(xr + k);
        if constexpr (kMask) xv = V::mask(xv, m);
        for (int b = 0; b < B; ++b) acc[b][k] = V::fma(d[b], xv, acc[b][k]);
      }
    }
  }
  for (int b = 0; b < B; ++b) {
    for (int k = 0; k < KW; ++k) V::store(part + b * part_b + k * 8, acc[b][k]);
    if constexpr (kBias) V::store(part + b * part_b + bias_at, bacc[b]);
  }
}

// Slots of a channel's partial: c * kh * kw weight taps, then the bias.
int64_t slots(const Geo& g) { return g.c * g.kh * g.kw + 1; }

// Images [n0, n1) and output channels o0..o0+B into `part` (this block's slots, zeroed).
// Columns: whole vectors of 8, then at most one of 4, then one of 4 overlapping the one before.
template <int KW, int B>
void weight_block(const Geo& g, const float* x, const float* dy, const float* y, int64_t n0,
                  int64_t n1, int64_t o0, bool with_bias, float* part) {
  const int64_t part_b = slots(g) * 8, plane = g.oh * g.ow, full = g.ow / 8;
  const bool has4 = full * 8 + 4 <= g.ow;
  const int64_t tail_at = g.ow - 4, done = full * 8 + (has4 ? 4 : 0);
  const int skip = static_cast<int>(done - tail_at);  // lanes of the overlapping tail already done
  for (int64_t n = n0; n < n1; ++n) {
    const float* dn = dy + (n * g.o + o0) * plane;
    const float* yn = y ? y + (n * g.o + o0) * plane : nullptr;
    for (int64_t c = 0; c < g.c; ++c) {
      for (int64_t kh = 0; kh < g.kh; ++kh) {
        const float* xr = x + ((n * g.c + c) * g.h + kh) * g.w;
        float* pp = part + (c * g.kh + kh) * KW * 8;
        const int64_t bias_at = (slots(g) - 1 - (c * g.kh + kh) * KW) * 8;
        auto pass = [&]<class V, bool kMask, bool kBias>(int64_t ow, int64_t chunks, int masked) {
          if (yn) {
            weight_pass<V, KW, B, kMask, kBias, true>(xr + ow, g.w, dn + ow, yn + ow, plane, g.ow,
                                                      g.oh, chunks, masked, pp, part_b, bias_at);
          } else {
            weight_pass<V, KW, B, kMask, kBias, false>(xr + ow, g.w, dn + ow, nullptr, plane, g.ow,
                                                       g.oh, chunks, masked, pp, part_b, bias_at);
          }
        };
        // The bias rides along the first kernel row's pass.
        auto passes = [&]<bool kBias>() {
          pass.template operator()<V8, false, kBias>(0, full, 0);
          if (has4) pass.template operator()<V4, false, kBias>(full * 8, 1, 0);
          if (done < g.ow) pass.template operator()<V4, true, kBias>(tail_at, 1, skip);
        };
        if (with_bias && c == 0 && kh == 0) {
          passes.template operator()<true>();
        } else {
          passes.template operator()<false>();
        }
      }
    }
  }
}

// Output channels a block: B * KW accumulators, B gradient rows and one input vector in 16
// registers.
template <int KW>
constexpr int kBlock = KW == 2 ? 4 : (KW == 3 ? 3 : 2);

template <int KW, int B = kBlock<KW>>
void weight_block_of(int b, const Geo& g, const float* x, const float* dy, const float* y,
                     int64_t n0, int64_t n1, int64_t o0, bool with_bias, float* part) {
  if (b == B) return weight_block<KW, B>(g, x, dy, y, n0, n1, o0, with_bias, part);
  if constexpr (B > 1) weight_block_of<KW, B - 1>(b, g, x, dy, y, n0, n1, o0, with_bias, part);
}

template <int KW>
void weight_all(const Geo& g, const float* x, const float* dy, const float* y, float* gw,
                float* gb) {
  constexpr int64_t kB = kBlock<KW>;
  const int64_t parts = (g.n + kImagesPerPartial - 1) / kImagesPerPartial;
  const int64_t blocks = (g.o + kB - 1) / kB, s = slots(g);
  const RawTensor buf = empty_raw(Shape{parts * g.o * s * 8}, DType::f32);
  float* part = buf.data_as<float>();
  parallel_for(0, parts * blocks, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      const int64_t pi = t / blocks, o0 = (t % blocks) * kB, nb = std::min(kB, g.o - o0);
      float* pp = part + (pi * g.o + o0) * s * 8;
      std::fill(pp, pp + nb * s * 8, 0.0f);
      const int64_t n0 = pi * kImagesPerPartial, n1 = std::min(g.n, n0 + kImagesPerPartial);
      weight_block_of<KW>(static_cast<int>(nb), g, x, dy, y, n0, n1, o0, gb != nullptr, pp);
    }
  });
  // Lanes, then partials, in a fixed order, in double.
  for (int64_t o = 0; o < g.o; ++o) {
    for (int64_t i = 0; i < s; ++i) {
      if (i == s - 1 && !gb) break;
      double sum = 0;
      for (int64_t pi = 0; pi < parts; ++pi) {
        const float* v = part + ((pi * g.o + o) * s + i) * 8;
        sum += ((double(v[0]) + v[1]) + (double(v[2]) + v[3])) +
               ((double(v[4]) + v[5]) + (double(v[6]) + v[7]));
      }
      if (i < s - 1) {
        gw[o * (s - 1) + i] = static_cast<float>(sum);
      } else {
        gb[o] = static_cast<float>(sum);
      }
    }
  }
}

}  // namespace

bool conv_direct(const RawTensor& x, const RawTensor& w, const RawTensor& bias, const ConvParams& p,
                 const RawTensor& out) {
  Geo g;
  if (!direct_geometry(x, w, out, p, &g)) return false;
  if (bias.defined() && bias.dtype != DType::f32) return false;
  const RawTensor xp = p.padding[0] || p.padding[1] ? pad_input(x, p, g) : x;
  const float* xd = xp.data_as<float>();
  const float* wd = w.data_as<float>();
  const float* bd = bias.defined() ? bias.data_as<float>() : nullptr;
  float* yd = out.data_as<float>();
  switch (g.kw) {
    case 2:
      forward_kw<2>(g, xd, wd, bd, p.relu, yd);
      return true;
    case 3:
      forward_kw<3>(g, xd, wd, bd, p.relu, yd);
      return true;
    case 4:
      forward_kw<4>(g, xd, wd, bd, p.relu, yd);
      return true;
    case 5:
      forward_kw<5>(g, xd, wd, bd, p.relu, yd);
      return true;
    case 6:
      forward_kw<6>(g, xd, wd, bd, p.relu, yd);
      return true;
    default:
      return false;
  }
}

bool conv_direct_backward_weight(const RawTensor& x, const RawTensor& grad_out, const ConvParams& p,
                                 const RawTensor& grad_w, const RawTensor& grad_bias,
                                 const RawTensor& y) {
  Geo g;
  if (!direct_geometry(x, grad_w, grad_out, p, &g)) return false;
  if (grad_bias.defined() && grad_bias.dtype != DType::f32) return false;
  const RawTensor xp = p.padding[0] || p.padding[1] ? pad_input(x, p, g) : x;
  const float* xd = xp.data_as<float>();
  const float* dy = grad_out.data_as<float>();
  float* gw = grad_w.data_as<float>();
  float* gb = grad_bias.defined() ? grad_bias.data_as<float>() : nullptr;
  const float* yd = y.defined() ? y.data_as<float>() : nullptr;
  switch (g.kw) {
    case 2:
      weight_all<2>(g, xd, dy, yd, gw, gb);
      return true;
    case 3:
      weight_all<3>(g, xd, dy, yd, gw, gb);
      return true;
    case 4:
      weight_all<4>(g, xd, dy, yd, gw, gb);
      return true;
    case 5:
      weight_all<5>(g, xd, dy, yd, gw, gb);
      return true;
    case 6:
      weight_all<6>(g, xd, dy, yd, gw, gb);
      return true;
    default:
      return false;
  }
}

#else  // no AVX2 + FMA: the callers' general paths

bool conv_direct(const RawTensor&, const RawTensor&, const RawTensor&, const ConvParams&,
                 const RawTensor&) {
  return false;
}
bool conv_direct_backward_weight(const RawTensor&, const RawTensor&, const ConvParams&,
                                 const RawTensor&, const RawTensor&, const RawTensor&) {
  return false;
}

#endif

}  // namespace ember::cpu
