// Pooling over 1 to 3 trailing spatial dims: max (with PyTorch's flat indices), average and
// adaptive average, forward and backward. Direct loops threaded over the (batch x channel)
// planes; pooling is memory bound, so there is no library path. f16 and bf16 accumulate in f32.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "../../core/convert.hpp"
#include "../../core/pool_geometry.hpp"
#include "cpu_backend.hpp"
#include "ember/core/error.hpp"
#include "loops.hpp"
#include "parallel.hpp"

namespace ember::cpu {
namespace {

using pool::avg_window;
using pool::Geo;
using pool::geometry;
using pool::Window;

// Calls f(plane) for every plane, threaded.
template <class F>
void for_planes(const Geo& g, int64_t work_per_plane, const F& f) {
  parallel_for(0, g.planes, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, work_per_plane)),
               [&](int64_t lo, int64_t hi) {
                 for (int64_t b = lo; b < hi; ++b) f(b);
               });
}

#if defined(__AVX2__)
// Eight outputs of a 2x2 / stride-2 max pool from input rows `a` and `b` (16 floats each, from
// the first window's column), flat input index of a[0] `base`, row length `w`. Same rule as the
// scalar loop: candidates in the order (0,0), (0,1), (1,0), (1,1), a later one wins when greater
// or NaN. Indices are written as I: int64_t (the API's) or int32_t (autodiff's own, half the
// memory traffic).
template <class I>
void pool2x2_avx2(const float* a, const float* b, int64_t base, int64_t w, float* y, I* idx) {
  // De-interleaves 16 consecutive floats into the even and the odd columns, in order.
  auto split = [](const float* p, __m256& even, __m256& odd) {
    const __m256 lo = _mm256_loadu_ps(p), hi = _mm256_loadu_ps(p + 8);
    const auto order = [](__m256 v) {  // 64-bit chunks 0, 2, 1, 3
      return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(v), 0xD8));
    };
    even = order(_mm256_shuffle_ps(lo, hi, 0x88));
    odd = order(_mm256_shuffle_ps(lo, hi, 0xDD));
  };
  __m256 a0, a1, b0, b1;
  split(a, a0, a1);
  split(b, b0, b1);
  __m256 best = a0;
  __m256i off = _mm256_setzero_si256();
  const auto visit = [&](__m256 v, int32_t at) {
    const __m256 take =
        _mm256_or_ps(_mm256_cmp_ps(v, best, _CMP_GT_OQ), _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    best = _mm256_blendv_ps(best, v, take);
    off = _mm256_blendv_epi8(off, _mm256_set1_epi32(at), _mm256_castps_si256(take));
  };
  visit(a1, 1);
  visit(b0, static_cast<int32_t>(w));
  visit(b1, static_cast<int32_t>(w + 1));
  _mm256_storeu_ps(y, best);
  if constexpr (std::is_same_v<I, int32_t>) {
    const __m256i start = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int32_t>(base)),
                                           _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(idx), _mm256_add_epi32(start, off));
    return;
  }
  const __m256i start = _mm256_add_epi64(_mm256_set1_epi64x(base), _mm256_setr_epi64x(0, 2, 4, 6));
  const __m256i lo = _mm256_cvtepi32_epi64(_mm256_castsi256_si128(off));
  const __m256i hi = _mm256_cvtepi32_epi64(_mm256_extracti128_si256(off, 1));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(idx), _mm256_add_epi64(start, lo));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(idx + 4),
                      _mm256_add_epi64(_mm256_add_epi64(start, _mm256_set1_epi64x(8)), hi));
}

// One output row of the 2x2 pool (rows r0 and r0 + w of `plane`, n outputs) as far as the vector
// loop can go; returns how many it did. A tail of under 8 outputs is computed from full 16-float
// loads (whatever follows the window in the input is read and dropped) while that stays inside
// the input, which ends at `end`: the CNN's 11 -> 5 rows stay on the vector path (the scalar loop
// takes ~36 cycles an output).
template <class I>
int64_t pool2x2_row_avx2(const float* plane, const float* end, int64_t r0, int64_t w, int64_t n,
                         float* y, I* idx) {
  int64_t ow = 0;
  for (; ow + 8 <= n; ow += 8) {
    pool2x2_avx2(plane + r0 + 2 * ow, plane + r0 + w + 2 * ow, r0 + 2 * ow, w, y + ow, idx + ow);
  }
  if (ow == n || plane + r0 + w + 2 * ow + 16 > end) return ow;
  float ty[8];
  I ti[8];
  pool2x2_avx2(plane + r0 + 2 * ow, plane + r0 + w + 2 * ow, r0 + 2 * ow, w, ty, ti);
  for (int64_t i = 0; ow + i < n; ++i) {
    y[ow + i] = ty[i];
    idx[ow + i] = ti[i];
  }
  return n;
}
#endif

// The CNN pool: 2-D, 2x2, stride 2, no padding or dilation, every window inside the input.
bool two_by_two(const Geo& g) {
  return g.in[0] == 1 && g.k[0] == 1 && g.d[1] == 1 && g.d[2] == 1 && g.k[1] == 2 && g.k[2] == 2 &&
         g.s[1] == 2 && g.s[2] == 2 && g.p[1] == 0 && g.p[2] == 0 && 2 * g.out[1] <= g.in[1] &&
         2 * g.out[2] <= g.in[2];
}

#if defined(__AVX2__)
// The backward of eight 2x2 windows whose argmax offsets (flat, within the plane) are `idx`: the
// two input rows under them, `a` and `b` (16 floats each, from the first window's column), get
// gy at each argmax and 0 elsewhere; a[0]'s flat index is `base`, the row length `w`.
template <class I>
__m256i window_offsets(const I* idx, int64_t base) {
  if constexpr (std::is_same_v<I, int32_t>) {
    return _mm256_sub_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(idx)),
                            _mm256_add_epi32(_mm256_set1_epi32(static_cast<int32_t>(base)),
                                             _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14)));
  }
  const __m256i start = _mm256_add_epi64(_mm256_set1_epi64x(base), _mm256_setr_epi64x(0, 2, 4, 6));
  const __m256i lo =
      _mm256_sub_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(idx)), start);
  const __m256i hi = _mm256_sub_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(idx + 4)),
                                      _mm256_add_epi64(start, _mm256_set1_epi64x(8)));
  // The offsets within each window (0, 1, w or w + 1) fit 32 bits: keep the low halves.
  const __m256i even = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
  return _mm256_set_m128i(_mm256_castsi256_si128(_mm256_permutevar8x32_epi32(hi, even)),
                          _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(lo, even)));
}

template <class I>
void unpool2x2_avx2(const float* gy, const I* idx, int64_t base, int64_t w, float* a, float* b) {
  const __m256i off = window_offsets(idx, base);
  // + 0 as the scatter's 0 + g: a -0 gradient lands as +0, the same bits as the general loop.
  const __m256 g = _mm256_add_ps(_mm256_loadu_ps(gy), _mm256_setzero_ps());
  const auto at = [&](int64_t k) {
    return _mm256_and_ps(g, _mm256_castsi256_ps(_mm256_cmpeq_epi32(
                                off, _mm256_set1_epi32(static_cast<int32_t>(k)))));
  };
  // Interleaves the even and the odd columns back into 16 consecutive floats.
  const auto store_row = [](float* row, __m256 even_cols, __m256 odd_cols) {
    const __m256 l = _mm256_unpacklo_ps(even_cols, odd_cols),
                 h = _mm256_unpackhi_ps(even_cols, odd_cols);
    _mm256_storeu_ps(row, _mm256_permute2f128_ps(l, h, 0x20));
    _mm256_storeu_ps(row + 8, _mm256_permute2f128_ps(l, h, 0x31));
  };
  store_row(a, at(0), at(1));
  store_row(b, at(w), at(w + 1));
}
#endif

template <class T, class I>
void max_pool_kernel(const RawTensor& x, const Geo& g, const RawTensor& out,
                     const RawTensor& indices) {
  using C = Compute<T>;
  const T* xp = x.data_as<T>();
  T* yp = out.data_as<T>();
  I* ip = indices.defined() ? indices.data_as<I>() : nullptr;  // null: the values only
  const bool flat2d = g.in[0] == 1 && g.k[0] == 1 && g.d[1] == 1 && g.d[2] == 1;
  const bool pool2x2 = two_by_two(g) && ip != nullptr;
  for_planes(g, g.out_size * g.k[0] * g.k[1] * g.k[2], [&](int64_t b) {
    const T* plane = xp + b * g.in_size;
    int64_t o = b * g.out_size;
    if (pool2x2) {
      // The CNN pool (2x2, stride 2, every window inside): a fixed four-way compare per output
      // that the compiler unrolls (the general loop below costs ~4x more per output).
      const int64_t w = g.in[2];
      for (int64_t oh = 0; oh < g.out[1]; ++oh) {
        const int64_t r0 = 2 * oh * w, r1 = r0 + w;
        int64_t ow = 0;
#if defined(__AVX2__)
        if constexpr (std::is_same_v<T, float>) {
          ow = pool2x2_row_avx2(plane, xp + g.planes * g.in_size, r0, w, g.out[2], yp + o, ip + o);
          o += ow;
        }
#endif
        for (; ow < g.out[2]; ++ow, ++o) {
          const int64_t at[4] = {r0 + 2 * ow, r0 + 2 * ow + 1, r1 + 2 * ow, r1 + 2 * ow + 1};
          C best = static_cast<C>(plane[at[0]]);
          int64_t arg = at[0];
          for (int k = 1; k < 4; ++k) {
            const C v = static_cast<C>(plane[at[k]]);
            const bool take = (v > best) | (v != v);  // NaN wins, as below
            best = select_bits(take, v, best);
            arg = select_bits(take, at[k], arg);
          }
          yp[o] = static_cast<T>(best);
          ip[o] = static_cast<I>(arg);
        }
      }
      return;
    }
    for (int64_t od = 0; od < g.out[0]; ++od) {
      for (int64_t oh = 0; oh < g.out[1]; ++oh) {
        for (int64_t ow = 0; ow < g.out[2]; ++ow, ++o) {
          C best = -INFINITY;
          int64_t arg = -1;
          // NaN wins (a later NaN replaces an earlier one), as in PyTorch; the first in-range
          // element seeds the max, so an all -inf window points at it.
          auto visit = [&](int64_t at) {
            const C v = static_cast<C>(plane[at]);
            if (arg < 0 || v > best || v != v) {
              best = v;
              arg = at;
            }
          };
          if (g.adaptive) {
            // adaptive_max_pool: PyTorch's windows [floor(o * in / out), ceil((o + 1) * in / out)).
            const Window wd = avg_window(g, 0, od), wh = avg_window(g, 1, oh),
                         ww = avg_window(g, 2, ow);
            for (int64_t id = wd.lo; id < wd.hi; ++id) {
              for (int64_t ih = wh.lo; ih < wh.hi; ++ih) {
                const int64_t row = (id * g.in[1] + ih) * g.in[2];
                for (int64_t iw = ww.lo; iw < ww.hi; ++iw) visit(row + iw);
              }
            }
            yp[o] = static_cast<T>(best);
            if (ip) ip[o] = static_cast<I>(arg);
            continue;
          }
          const int64_t d0 = od * g.s[0] - g.p[0], h0 = oh * g.s[1] - g.p[1],
                        w0 = ow * g.s[2] - g.p[2];
          const bool inside =
              d0 >= 0 && h0 >= 0 && w0 >= 0 && d0 + (g.k[0] - 1) * g.d[0] < g.in[0] &&
              h0 + (g.k[1] - 1) * g.d[1] < g.in[1] && w0 + (g.k[2] - 1) * g.d[2] < g.in[2];
          if (inside && flat2d) {
            // The common case (2-D, dense kernel, window inside): branch-free selects, since a
            // compare-and-branch per element mispredicts on real data (19% of a small CNN's
            // training step went here).
            const int64_t first = h0 * g.in[2] + w0;
            best = static_cast<C>(plane[first]);
            arg = first;
            for (int64_t kh = 0; kh < g.k[1]; ++kh) {
              const int64_t row = (h0 + kh) * g.in[2] + w0;
              for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                const C v = static_cast<C>(plane[row + kw]);
                const bool take = (v > best) | (v != v);
                best = select_bits(take, v, best);
                arg = select_bits(take, row + kw, arg);
              }
            }
          } else if (inside) {  // no bounds checks
            for (int64_t kd = 0; kd < g.k[0]; ++kd) {
              for (int64_t kh = 0; kh < g.k[1]; ++kh) {
                const int64_t row = ((d0 + kd * g.d[0]) * g.in[1] + h0 + kh * g.d[1]) * g.in[2];
                for (int64_t kw = 0; kw < g.k[2]; ++kw) visit(row + w0 + kw * g.d[2]);
              }
            }
          } else {
            for (int64_t kd = 0; kd < g.k[0]; ++kd) {
              const int64_t id = d0 + kd * g.d[0];
              if (id < 0 || id >= g.in[0]) continue;
              for (int64_t kh = 0; kh < g.k[1]; ++kh) {
                const int64_t ih = h0 + kh * g.d[1];
                if (ih < 0 || ih >= g.in[1]) continue;
                for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                  const int64_t iw = w0 + kw * g.d[2];
                  if (iw >= 0 && iw < g.in[2]) visit((id * g.in[1] + ih) * g.in[2] + iw);
                }
              }
            }
          }
          yp[o] = static_cast<T>(best);
          if (ip) ip[o] = static_cast<I>(arg);
        }
      }
    }
  });
}

// The larger of best and v, NaN winning (either one's): the same value as the indexed loops.
template <class C>
C max_nan(C best, C v) {
  return ((v > best) | (v != v)) ? v : best;
}

#if defined(__AVX2__)
__m256 max_nan(__m256 best, __m256 v) {
  // max_ps returns its second operand when either is NaN: v's NaN passes, best's is blended back.
  return _mm256_blendv_ps(_mm256_max_ps(best, v), best, _mm256_cmp_ps(best, best, _CMP_UNORD_Q));
}
// The even-indexed floats of 16 consecutive ones, in order: a stride-2 window's column.
__m256 even_floats(const float* p) {
  const __m256 lo = _mm256_loadu_ps(p), hi = _mm256_loadu_ps(p + 8);
  return _mm256_castpd_ps(
      _mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo, hi, 0x88)), 0xD8));
}
#endif

// Max pooling's values alone (no indices: nothing records the op), in two separable passes per
// output row: the max over the window's rows into a row padded with -inf (what the indexed loops
// give an empty window, and no match for any input), then the max over each window's columns.
// f32 takes 8 columns a vector, at stride 1 and 2.
template <class T>
void max_pool_values_kernel(const RawTensor& x, const Geo& g, const RawTensor& out) {
  using C = Compute<T>;
  const T* xp = x.data_as<T>();
  T* yp = out.data_as<T>();
  const int64_t in_w = g.in[2], out_w = g.out[2], s = g.s[2], d = g.d[2], pad = g.p[2];
  // The padded row: room for whole vectors of outputs past out_w and their 16-float loads at
  // stride 1 or 2; a wider stride runs the scalar loop, whose last window starts at
  // (out_w - 1) * s (no product when out_w is 1: a stride near 2^63 takes one window).
  const int64_t last = out_w > 1 ? (out_w - 1) * s : 0;
  const int64_t span = (s <= 2 ? (out_w + 8) * s + 16 : last + 1) + (g.k[2] - 1) * d;
  const int64_t width = std::max(span, pad + in_w);
  const int64_t rows = g.planes * g.out[0] * g.out[1];
  const int64_t work = g.k[0] * g.k[1] * in_w + g.k[2] * out_w;
  parallel_for(0, rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, work)),
               [&](int64_t lo, int64_t hi) {
                 std::vector<C> buf(static_cast<size_t>(width), static_cast<C>(-INFINITY));
                 C* row = buf.data();
                 C* in_row = row + pad;
                 for (int64_t r = lo; r < hi; ++r) {
                   const int64_t b = r / (g.out[0] * g.out[1]);
                   const int64_t od = r / g.out[1] % g.out[0], oh = r % g.out[1];
                   const T* plane = xp + b * g.in_size;
                   bool first = true;
                   for (int64_t kd = 0; kd < g.k[0]; ++kd) {
                     const int64_t id = od * g.s[0] - g.p[0] + kd * g.d[0];
                     if (id < 0 || id >= g.in[0]) continue;
                     for (int64_t kh = 0; kh < g.k[1]; ++kh) {
                       const int64_t ih = oh * g.s[1] - g.p[1] + kh * g.d[1];
                       if (ih < 0 || ih >= g.in[1]) continue;
                       const T* src = plane + (id * g.in[1] + ih) * in_w;
                       int64_t i = 0;
#if defined(__AVX2__)
                       if constexpr (std::is_same_v<T, float>) {
                         for (; i + 8 <= in_w; i += 8) {
                           const __m256 v = _mm256_loadu_ps(src + i);
                           _mm256_storeu_ps(in_row + i,
                                            first ? v : max_nan(_mm256_loadu_ps(in_row + i), v));
                         }
                       }
#endif
                       for (; i < in_w; ++i) {
                         const C v = static_cast<C>(src[i]);
                         in_row[i] = first ? v : max_nan(in_row[i], v);
                       }
                       first = false;
                     }
                   }
                   if (first)
                     std::fill(in_row, in_row + in_w, static_cast<C>(-INFINITY));  // no row inside
                   T* y = yp + r * out_w;
                   int64_t ow = 0;
#if defined(__AVX2__)
                   if constexpr (std::is_same_v<T, float>) {
                     if (s <= 2) {
                       for (; ow < out_w; ow += 8) {
                         const float* at = row + ow * s;
                         __m256 best = s == 1 ? _mm256_loadu_ps(at) : even_floats(at);
                         for (int64_t kw = 1; kw < g.k[2]; ++kw) {
                           at += d;
                           best = max_nan(best, s == 1 ? _mm256_loadu_ps(at) : even_floats(at));
                         }
                         if (ow + 8 <= out_w) {
                           _mm256_storeu_ps(y + ow, best);
                         } else {
                           float tail[8];
                           _mm256_storeu_ps(tail, best);
                           std::copy(tail, tail + (out_w - ow), y + ow);
                         }
                       }
                     }
                   }
#endif
                   for (; ow < out_w; ++ow) {
                     const C* at = row + ow * s;
                     C best = at[0];
                     for (int64_t kw = 1; kw < g.k[2]; ++kw) best = max_nan(best, at[kw * d]);
                     y[ow] = static_cast<T>(best);
                   }
                 }
               });
}

template <class T, class I>
void max_pool_backward_kernel(const RawTensor& gy, const RawTensor& indices, const Geo& g,
                              const RawTensor& gx) {
  using C = Compute<T>;
  const T* gyp = gy.data_as<T>();
  const I* ip = indices.data_as<I>();
  T* gxp = gx.data_as<T>();
  [[maybe_unused]] const bool pool2x2 = two_by_two(g);
  for_planes(g, g.in_size + g.out_size, [&](int64_t b) {
    T* plane = gxp + b * g.in_size;
    if constexpr (is_half_v<T>) {
      // Accumulate in f32 so overlapping windows round once.
      std::vector<float> acc(static_cast<size_t>(g.in_size), 0.0f);
      for (int64_t o = b * g.out_size; o < (b + 1) * g.out_size; ++o) {
        if (ip[o] >= 0) acc[static_cast<size_t>(ip[o])] += static_cast<C>(gyp[o]);
      }
      for (int64_t i = 0; i < g.in_size; ++i) plane[i] = T(acc[static_cast<size_t>(i)]);
    } else {
#if defined(__AVX2__)
      if constexpr (std::is_same_v<T, float>) {
        if (pool2x2 && g.out[2] >= 8) {
          // Each input element lies in at most one window: the rows under the windows are
          // written once, 8 windows at a time, instead of zeroed and then scattered into
          // (1.8 -> 0.6 ms for the CNN's first pool on 1 thread).
          const int64_t w = g.in[2], n = g.out[2];
          const float* gp = gyp + b * g.out_size;
          const I* at = ip + b * g.out_size;
          for (int64_t oh = 0; oh < g.out[1]; ++oh, gp += n, at += n) {
            const int64_t r0 = 2 * oh * w;
            float* ra = plane + r0;
            float* rb = ra + w;
            int64_t ow = 0;
            for (; ow + 8 <= n; ow += 8) {
              unpool2x2_avx2(gp + ow, at + ow, r0 + 2 * ow, w, ra + 2 * ow, rb + 2 * ow);
            }
            // The windows left, and an odd width's last column (in no window).
            std::fill(ra + 2 * ow, ra + w, 0.0f);
            std::fill(rb + 2 * ow, rb + w, 0.0f);
            for (; ow < n; ++ow) plane[at[ow]] += gp[ow];
          }
          std::fill(plane + 2 * g.out[1] * w, plane + g.in_size, 0.0f);  // rows in no window
          return;
        }
      }
#endif
      std::fill(plane, plane + g.in_size, T(0));
      for (int64_t o = b * g.out_size; o < (b + 1) * g.out_size; ++o) {
        if (ip[o] >= 0) plane[ip[o]] += gyp[o];  // -1: a window with no input element
      }
    }
  });
}

template <class T>
void avg_pool_kernel(const RawTensor& x, const Geo& g, const RawTensor& out) {
  using C = Compute<T>;
  const T* xp = x.data_as<T>();
  T* yp = out.data_as<T>();
  for_planes(g, g.out_size * g.k[0] * g.k[1] * g.k[2], [&](int64_t b) {
    const T* plane = xp + b * g.in_size;
    int64_t o = b * g.out_size;
    for (int64_t od = 0; od < g.out[0]; ++od) {
      const Window wd = avg_window(g, 0, od);
      for (int64_t oh = 0; oh < g.out[1]; ++oh) {
        const Window wh = avg_window(g, 1, oh);
        for (int64_t ow = 0; ow < g.out[2]; ++ow, ++o) {
          const Window ww = avg_window(g, 2, ow);
          yp[o] = pool::window_average<C>(plane, g, wd, wh, ww);
        }
      }
    }
  });
}

template <class T>
void avg_pool_backward_kernel(const RawTensor& gy, const Geo& g, const RawTensor& gx) {
  using C = Compute<T>;
  const T* gyp = gy.data_as<T>();
  T* gxp = gx.data_as<T>();
  for_planes(g, g.in_size + g.out_size * g.k[0] * g.k[1] * g.k[2], [&](int64_t b) {
    std::vector<C> acc(static_cast<size_t>(g.in_size), C(0));
    int64_t o = b * g.out_size;
    for (int64_t od = 0; od < g.out[0]; ++od) {
      const Window wd = avg_window(g, 0, od);
      for (int64_t oh = 0; oh < g.out[1]; ++oh) {
        const Window wh = avg_window(g, 1, oh);
        for (int64_t ow = 0; ow < g.out[2]; ++ow, ++o) {
          const Window ww = avg_window(g, 2, ow);
          const int64_t count = wd.count * wh.count * ww.count;
          if (count <= 0) continue;
          const C v = static_cast<C>(gyp[o]) / static_cast<C>(count);
          for (int64_t id = wd.lo; id < wd.hi; ++id) {
            for (int64_t ih = wh.lo; ih < wh.hi; ++ih) {
              C* row = acc.data() + (id * g.in[1] + ih) * g.in[2];
              for (int64_t iw = ww.lo; iw < ww.hi; ++iw) row[iw] += v;
            }
          }
        }
      }
    }
    T* plane = gxp + b * g.in_size;
    for (int64_t i = 0; i < g.in_size; ++i) plane[i] = static_cast<T>(acc[static_cast<size_t>(i)]);
  });
}

// Calls fn<T>() for the floating dtypes.
template <class F>
void dispatch_float(DType dtype, const char* op, const F& fn) {
  switch (dtype) {
    case DType::f32:
      return fn(float{});
    case DType::f64:
      return fn(double{});
    case DType::f16:
      return fn(Half{});
    case DType::bf16:
      return fn(BFloat16{});
    default:
      break;
  }
  EMBER_FAIL("[", op, "] has no Cpu kernel for ", dtype);
}

}  // namespace

void CpuBackend::max_pool(const RawTensor& x, const PoolParams& p, const RawTensor& out,
                          const RawTensor& indices) {
  if (out.numel() == 0) return;
  const Geo g = geometry(x.shape, out.shape, p);
  dispatch_float(x.dtype, "max_pool", [&](auto t) {
    if (!indices.defined() && !p.adaptive) {
      return max_pool_values_kernel<decltype(t)>(x, g, out);
    }
    if (indices.dtype == DType::i32) {
      return max_pool_kernel<decltype(t), int32_t>(x, g, out, indices);
    }
    max_pool_kernel<decltype(t), int64_t>(x, g, out, indices);
  });
}

void CpuBackend::max_pool_backward(const RawTensor& grad_out, const RawTensor& indices,
                                   const PoolParams& p, const RawTensor& grad_in) {
  if (grad_in.numel() == 0) return;
  const Geo g = geometry(grad_in.shape, grad_out.shape, p);
  dispatch_float(grad_in.dtype, "max_pool_backward", [&](auto t) {
    if (indices.dtype == DType::i32) {
      return max_pool_backward_kernel<decltype(t), int32_t>(grad_out, indices, g, grad_in);
    }
    max_pool_backward_kernel<decltype(t), int64_t>(grad_out, indices, g, grad_in);
  });
}

void CpuBackend::avg_pool(const RawTensor& x, const PoolParams& p, const RawTensor& out) {
  if (out.numel() == 0) return;
  const Geo g = geometry(x.shape, out.shape, p);
  dispatch_float(x.dtype, "avg_pool", [&](auto t) { avg_pool_kernel<decltype(t)>(x, g, out); });
}

void CpuBackend::avg_pool_backward(const RawTensor& grad_out, const PoolParams& p,
                                   const RawTensor& grad_in) {
  if (grad_in.numel() == 0) return;
  const Geo g = geometry(grad_in.shape, grad_out.shape, p);
  dispatch_float(grad_in.dtype, "avg_pool_backward",
                 [&](auto t) { avg_pool_backward_kernel<decltype(t)>(grad_out, g, grad_in); });
}

}  // namespace ember::cpu
