// Vision and distance ops (normalize, cosine_similarity, pairwise_distance, cdist, pixel_shuffle,
// pad modes, unfold / fold, conv padding='same' / 'valid' and padding_mode) against float64 host
// references on random inputs in f32 and f64 and non-contiguous layouts; finite-difference
// gradient checks; PyTorch parity for the ops and layers (nn/fixtures/make_vision_fixtures.py);
// and the error paths.
#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <tuple>

#include "autodiff/fixture.hpp"
#include "autodiff/gradcheck.hpp"
#include "ember/nn/nn.hpp"

namespace ember::test {
namespace {

const std::vector<DType> kTypes = {DType::f32, DType::f64};
const std::vector<Layout> kLayoutsNc = {Layout::Contiguous, Layout::Transposed, Layout::Strided};

Tol loose(DType t) { return t == DType::f64 ? Tol{1e-10, 1e-12} : Tol{1e-4, 1e-5}; }

std::string what(const std::string& op, DType t, Layout l) {
  return op + " " + std::string(dtype_name(t)) + " " + layout_name(l);
}

// Visits every line of `shape` along `dim`: f(offset of the line's first element, stride).
void for_lines(const Shape& shape, int dim, const std::function<void(int64_t, int64_t)>& f) {
  int64_t inner = 1, outer = 1;
  for (int i = dim + 1; i < shape.rank(); ++i) inner *= shape[i];
  for (int i = 0; i < dim; ++i) outer *= shape[i];
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) f(o * shape[dim] * inner + i, inner);
  }
}

double pnorm(const std::vector<double>& v, double p) {
  double s = 0.0;
  if (std::isinf(p)) {
    for (double e : v) s = std::max(s, std::fabs(e));
    return s;
  }
  if (p == 0.0) {
    for (double e : v) s += e != 0.0;
    return s;
  }
  for (double e : v) s += std::pow(std::fabs(e), p);
  return std::pow(s, 1.0 / p);
}

// ---- Distances -------------------------------------------------------------------------------

TEST(VisionTable, Normalize) {
  struct Case {
    Shape shape;
    double p;
    int64_t dim;
  };
  const double inf = std::numeric_limits<double>::infinity();
  for (const Case& c : {Case{{3, 4, 5}, 2.0, 1}, Case{{3, 4, 5}, 1.0, -1}, Case{{6, 4}, 3.0, 0},
                        Case{{2, 3, 4}, inf, 2}, Case{{7}, 2.0, 0}}) {
    for (DType t : kTypes) {
      for (Layout l : kLayoutsNc) {
        const DynTensor x = make_input(c.shape, t, l, -2, 2, 11);
        const Host h = Host::of(x);
        const int d = static_cast<int>(c.dim < 0 ? c.dim + c.shape.rank() : c.dim);
        std::vector<double> want(h.v.size());
        for_lines(c.shape, d, [&](int64_t at, int64_t st) {
          std::vector<double> line;
          for (int64_t i = 0; i < c.shape[d]; ++i) line.push_back(h.v[size_t(at + i * st)]);
          const double n = std::max(pnorm(line, c.p), 1e-12);
          for (int64_t i = 0; i < c.shape[d]; ++i) want[size_t(at + i * st)] = line[size_t(i)] / n;
        });
        expect_close(normalize(x, c.p, c.dim), c.shape, want, loose(t), what("normalize", t, l));
      }
    }
  }
}

TEST(VisionTable, CosineSimilarityAndPairwiseDistance) {
  const double inf = std::numeric_limits<double>::infinity();
  for (const Shape& shape : {Shape{4, 6}, Shape{3, 5, 4}, Shape{2, 3, 7}}) {
    for (DType t : kTypes) {
      for (Layout l : kLayoutsNc) {
        const DynTensor a = make_input(shape, t, l, -1, 1, 21),
                        b = make_input(shape, t, l, -1, 1, 22);
        const Host ha = Host::of(a), hb = Host::of(b);
        // cosine_similarity over dim 1.
        Shape cs = shape;
        cs.erase(1);
        std::vector<double> want_cs;
        for_lines(shape, 1, [&](int64_t at, int64_t st) {
          double s1 = 0, s2 = 0, dot = 0;
          for (int64_t i = 0; i < shape[1]; ++i) {
            const double u = ha.v[size_t(at + i * st)], v = hb.v[size_t(at + i * st)];
            s1 += u * u;
            s2 += v * v;
            dot += u * v;
          }
          want_cs.push_back(dot / std::sqrt(std::max(s1, 1e-16)) / std::sqrt(std::max(s2, 1e-16)));
        });
        // for_lines visits lines in (outer, inner) order: the row-major order of the result.
        expect_close(cosine_similarity(a, b), cs, want_cs, loose(t),
                     what("cosine_similarity", t, l));
        // pairwise_distance over the last dim, for several p.
        for (double p : {2.0, 1.0, 3.0, inf}) {
          Shape ps = shape;
          ps.erase(shape.rank() - 1);
          std::vector<double> want;
          for_lines(shape, shape.rank() - 1, [&](int64_t at, int64_t st) {
            std::vector<double> diff;
            for (int64_t i = 0; i < shape[shape.rank() - 1]; ++i) {
              diff.push_back(ha.v[size_t(at + i * st)] - hb.v[size_t(at + i * st)] + 1e-6);
            }
            want.push_back(pnorm(diff, p));
          });
          expect_close(pairwise_distance(a, b, p), ps, want, loose(t),
                       what("pairwise_distance p" + std::to_string(p), t, l));
          Shape keep = ps;
          keep.push_back(1);
          expect_close(pairwise_distance(a, b, p, 1e-6, true), keep, want, loose(t),
                       what("pairwise_distance keepdim", t, l));
        }
      }
    }
  }
}

TEST(VisionTable, Cdist) {
  const double inf = std::numeric_limits<double>::infinity();
  struct Case {
    int64_t b, p, r, m;
  };
  // P or R over 25 takes the matmul path for p = 2.
  for (const Case& c : {Case{2, 3, 4, 5}, Case{1, 30, 6, 4}, Case{3, 1, 1, 1}, Case{2, 5, 27, 3}}) {
    for (double p : {2.0, 1.0, 0.5, 3.0, inf, 0.0}) {
      for (DType t : kTypes) {
        for (Layout l : kLayoutsNc) {
          const DynTensor x1 = make_input(Shape{c.b, c.p, c.m}, t, l, -1, 1, 31);
          const DynTensor x2 = make_input(Shape{c.b, c.r, c.m}, t, l, -1, 1, 32);
          const Host h1 = Host::of(x1), h2 = Host::of(x2);
          std::vector<double> want;
          for (int64_t b = 0; b < c.b; ++b) {
            for (int64_t i = 0; i < c.p; ++i) {
              for (int64_t j = 0; j < c.r; ++j) {
                std::vector<double> diff;
                for (int64_t k = 0; k < c.m; ++k) {
                  diff.push_back(h1.at({b, i, k}) - h2.at({b, j, k}));
                }
                want.push_back(pnorm(diff, p));
              }
            }
          }
          Tol tol = loose(t);
          if (p == 2.0 && (c.p > 25 || c.r > 25))
            tol = t == DType::f64 ? Tol{1e-7, 1e-7} : Tol{1e-3, 1e-3};
          expect_close(cdist(x1, x2, p), Shape{c.b, c.p, c.r}, want, tol,
                       what("cdist p" + std::to_string(p) + " P" + std::to_string(c.p), t, l));
        }
      }
    }
  }
  // Batch dims broadcast; rank 2 works; no columns gives zeros; equal rows give exactly 0.
  const DynTensor x1 = make_input(Shape{2, 1, 3, 4}, DType::f64, Layout::Contiguous, -1, 1, 1);
  const DynTensor x2 = make_input(Shape{5, 4}, DType::f64, Layout::Contiguous, -1, 1, 2);
  EXPECT_EQ(cdist(x1, x2).shape(), (Shape{2, 1, 3, 5}));
  EXPECT_EQ(
      cdist(zeros(Shape{3, 0}, DType::f32), zeros(Shape{2, 0}, DType::f32)).to_vector<float>(),
      std::vector<float>(6, 0.0f));
  const DynTensor rows = make_input(Shape{30, 3}, DType::f64, Layout::Contiguous, -1, 1, 3);
  const std::vector<double> self = cdist(rows, rows).to_vector<double>();
  for (int64_t i = 0; i < 30; ++i) EXPECT_LT(self[size_t(i * 31)], 1e-7);
}

// ---- Pixel shuffle, pads ---------------------------------------------------------------------

TEST(VisionTable, PixelShuffle) {
  struct Case {
    Shape shape;  // of the shuffled (input) tensor
    int64_t r;
  };
  for (const Case& c : {Case{{2, 8, 3, 4}, 2}, Case{{9, 2, 3}, 3}, Case{{2, 1, 4, 2, 2}, 2},
                        Case{{1, 1, 5, 7}, 1}}) {
    for (DType t : {DType::f32, DType::f64, DType::i64, DType::bf16}) {
      for (Layout l : kLayoutsNc) {
        const DynTensor x = make_input(c.shape, t, l, -50, 50, 41);
        const Host h = Host::of(x);
        const int k = c.shape.rank() - 3;
        const int64_t r = c.r, ch = c.shape[k] / (r * r), hh = c.shape[k + 1], ww = c.shape[k + 2];
        Shape os = c.shape;
        os[k] = ch;
        os[k + 1] = hh * r;
        os[k + 2] = ww * r;
        // The input offset each output element comes from.
        const Host o{os, {}};
        std::vector<int64_t> from(size_t(os.numel()));
        for (int64_t i = 0; i < os.numel(); ++i) {
          std::vector<int64_t> idx = o.index(i);
          const int64_t y = idx[size_t(k + 1)], xx = idx[size_t(k + 2)];
          idx[size_t(k)] = idx[size_t(k)] * r * r + (y % r) * r + xx % r;
          idx[size_t(k + 1)] = y / r;
          idx[size_t(k + 2)] = xx / r;
          from[size_t(i)] = h.offset(idx);
        }
        std::vector<double> want(h.v.size());
        for (size_t i = 0; i < from.size(); ++i) want[i] = h.v[size_t(from[i])];
        const std::string w = what("pixel_shuffle", t, l);
        expect_close(pixel_shuffle(x, r), os, want, tol_for(t), w);
        // unshuffle is the inverse mapping.
        const DynTensor u = make_input(os, t, l, -50, 50, 42);
        const Host hu = Host::of(u);
        std::vector<double> want_u(h.v.size());
        for (size_t i = 0; i < from.size(); ++i) want_u[size_t(from[i])] = hu.v[i];
        expect_close(pixel_unshuffle(u, r), c.shape, want_u, tol_for(t), "pixel_unshuffle " + w);
      }
    }
  }
}

// Source index along one dim of a padded position, for each pad mode.
int64_t pad_source(int64_t i, int64_t n, PadMode mode) {
  switch (mode) {
    case PadMode::Reflect:
      return i < 0 ? -i : (i >= n ? 2 * (n - 1) - i : i);
    case PadMode::Replicate:
      return std::clamp<int64_t>(i, 0, n - 1);
    case PadMode::Circular:
      return ((i % n) + n) % n;
    case PadMode::Constant:
      return i;
  }
  return i;
}

// Host pad of the last dims, pads in pad()'s order; Constant pads with 0.
Host host_pad(const Host& x, const std::vector<int64_t>& pads, PadMode mode) {
  Shape os = x.shape;
  const int np = static_cast<int>(pads.size()) / 2, rank = x.shape.rank();
  for (int i = 0; i < np; ++i) os[rank - 1 - i] += pads[size_t(2 * i)] + pads[size_t(2 * i + 1)];
  Host out{os, std::vector<double>(size_t(os.numel()), 0.0)};
  for (int64_t o = 0; o < os.numel(); ++o) {
    std::vector<int64_t> idx = out.index(o);
    bool inside = true;
    for (int i = 0; i < np; ++i) {
      const int d = rank - 1 - i;
      int64_t s = pad_source(idx[size_t(d)] - pads[size_t(2 * i)], x.shape[d], mode);
      inside = inside && s >= 0 && s < x.shape[d];
      idx[size_t(d)] = s;
    }
    if (inside) out.v[size_t(o)] = x.at(idx);
  }
  return out;
}

TEST(VisionTable, PadModes) {
  struct Case {
    Shape shape;
    std::vector<int64_t> pads;
  };
  for (const Case& c : {Case{{2, 3, 4, 5}, {2, 1, 0, 3}}, Case{{3, 4}, {4, 4}},
                        Case{{2, 2, 3}, {2, 2}}, Case{{2, 3, 4, 3, 2}, {1, 2, 2, 0, 1, 1}}}) {
    for (PadMode mode : {PadMode::Circular, PadMode::Reflect, PadMode::Replicate}) {
      bool fits = true;  // reflect pads must be smaller than their dim
      for (size_t i = 0; i < c.pads.size(); ++i) {
        fits = fits && c.pads[i] < c.shape[c.shape.rank() - 1 - static_cast<int>(i / 2)];
      }
      if (mode == PadMode::Reflect && !fits) continue;
      for (DType t : {DType::f32, DType::f64, DType::i32}) {
        for (Layout l : kLayoutsNc) {
          const DynTensor x = make_input(c.shape, t, l, -9, 9, 51);
          const Host want = host_pad(Host::of(x), c.pads, mode);
          expect_close(pad(x, c.pads, mode), want.shape, want.v, tol_for(t),
                       what("pad mode " + std::to_string(int(mode)), t, l));
        }
      }
    }
  }
}

// ---- Unfold / fold, and convolutions through them ----------------------------------------------

struct Im2Col {
  std::vector<int64_t> k, d, p, s;
};

// Host im2col of [N, C, H, W]: [N, C * kh * kw, L].
Host host_unfold(const Host& x, const Im2Col& a) {
  const int64_t n = x.shape[0], c = x.shape[1], h = x.shape[2], w = x.shape[3];
  const int64_t oh = (h + 2 * a.p[0] - a.d[0] * (a.k[0] - 1) - 1) / a.s[0] + 1;
  const int64_t ow = (w + 2 * a.p[1] - a.d[1] * (a.k[1] - 1) - 1) / a.s[1] + 1;
  Host out{Shape{n, c * a.k[0] * a.k[1], oh * ow}, {}};
  out.v.assign(size_t(out.numel()), 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t ki = 0; ki < a.k[0]; ++ki)
        for (int64_t kj = 0; kj < a.k[1]; ++kj)
          for (int64_t oi = 0; oi < oh; ++oi)
            for (int64_t oj = 0; oj < ow; ++oj) {
              const int64_t y = oi * a.s[0] - a.p[0] + ki * a.d[0];
              const int64_t xx = oj * a.s[1] - a.p[1] + kj * a.d[1];
              const int64_t row = (ci * a.k[0] + ki) * a.k[1] + kj;
              if (y >= 0 && y < h && xx >= 0 && xx < w) {
                out.v[size_t(out.offset({b, row, oi * ow + oj}))] = x.at({b, ci, y, xx});
              }
            }
  return out;
}

// Host col2im: the adjoint of host_unfold for an output of size `o`.
Host host_fold(const Host& cols, const std::vector<int64_t>& o, const Im2Col& a) {
  const int64_t n = cols.shape[0], kk = a.k[0] * a.k[1], c = cols.shape[1] / kk;
  const int64_t oh = (o[0] + 2 * a.p[0] - a.d[0] * (a.k[0] - 1) - 1) / a.s[0] + 1;
  const int64_t ow = (o[1] + 2 * a.p[1] - a.d[1] * (a.k[1] - 1) - 1) / a.s[1] + 1;
  Host out{Shape{n, c, o[0], o[1]}, {}};
  out.v.assign(size_t(out.numel()), 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t ki = 0; ki < a.k[0]; ++ki)
        for (int64_t kj = 0; kj < a.k[1]; ++kj)
          for (int64_t oi = 0; oi < oh; ++oi)
            for (int64_t oj = 0; oj < ow; ++oj) {
              const int64_t y = oi * a.s[0] - a.p[0] + ki * a.d[0];
              const int64_t xx = oj * a.s[1] - a.p[1] + kj * a.d[1];
              const int64_t row = (ci * a.k[0] + ki) * a.k[1] + kj;
              if (y >= 0 && y < o[0] && xx >= 0 && xx < o[1]) {
                out.v[size_t(out.offset({b, ci, y, xx}))] += cols.at({b, row, oi * ow + oj});
              }
            }
  return out;
}

const std::vector<Im2Col> kIm2Col = {{{2, 2}, {1, 1}, {0, 0}, {1, 1}},
                                     {{3, 2}, {1, 2}, {1, 0}, {2, 1}},
                                     {{1, 3}, {2, 1}, {2, 1}, {1, 3}},
                                     {{3, 3}, {1, 1}, {1, 1}, {2, 2}}};

TEST(VisionTable, UnfoldFold) {
  for (const Im2Col& a : kIm2Col) {
    for (const Shape& shape : {Shape{2, 3, 6, 7}, Shape{1, 2, 5, 5}}) {
      for (DType t : kTypes) {
        for (Layout l : kLayoutsNc) {
          const std::string w =
              what("unfold k" + std::to_string(a.k[0]) + std::to_string(a.k[1]), t, l);
          const DynTensor x = make_input(shape, t, l, -1, 1, 61);
          const Host want = host_unfold(Host::of(x), a);
          const DynTensor cols = unfold(x, a.k, a.d, a.p, a.s);
          expect_close(cols, want.shape, want.v, tol_for(t), w);
          // Unbatched input: the batch dim dropped.
          Shape ws = want.shape;
          ws.erase(0);
          if (shape[0] == 1)
            expect_close(unfold(select(x, 0, 0), a.k, a.d, a.p, a.s), ws, want.v, tol_for(t), w);
          const DynTensor c = make_input(want.shape, t, l, -1, 1, 62);
          const Host back = host_fold(Host::of(c), {shape[2], shape[3]}, a);
          expect_close(fold(c, {shape[2], shape[3]}, a.k, a.d, a.p, a.s), back.shape, back.v,
                       loose(t), "fold " + w);
        }
      }
    }
  }
}

// A host conv2d of [N, C, H, W] (already padded) with weight [O, C, kh, kw], bias [O]:
// weight rows times im2col columns.
Host host_conv2d(const Host& x, const Host& w, const Host& b, const std::vector<int64_t>& dil) {
  const Im2Col a{{w.shape[2], w.shape[3]}, dil, {0, 0}, {1, 1}};
  const Host cols = host_unfold(x, a);
  const int64_t n = x.shape[0], o = w.shape[0], ck = cols.shape[1], l = cols.shape[2];
  const int64_t oh = x.shape[2] - dil[0] * (w.shape[2] - 1), ow = l / oh;
  Host out{Shape{n, o, oh, ow}, std::vector<double>(size_t(n * o * l), 0.0)};
  for (int64_t bi = 0; bi < n; ++bi)
    for (int64_t oi = 0; oi < o; ++oi)
      for (int64_t j = 0; j < l; ++j) {
        double s = b.v[size_t(oi)];
        for (int64_t r = 0; r < ck; ++r) s += w.v[size_t(oi * ck + r)] * cols.at({bi, r, j});
        out.v[size_t((bi * o + oi) * l + j)] = s;
      }
  return out;
}

TEST(VisionTable, ConvSamePaddingAndPaddingModes) {
  for (const auto& [k, dil] : std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
           {{3, 3}, {1, 1}}, {{4, 2}, {1, 2}}, {{2, 5}, {3, 1}}}) {
    for (DType t : kTypes) {
      for (Layout l : kLayoutsNc) {
        const DynTensor x = make_input(Shape{2, 3, 7, 9}, t, l, -1, 1, 71);
        const DynTensor w = make_input(Shape{4, 3, k[0], k[1]}, t, Layout::Contiguous, -1, 1, 72);
        const DynTensor b = make_input(Shape{4}, t, Layout::Contiguous, -1, 1, 73);
        const Host hx = Host::of(x), hw = Host::of(w), hb = Host::of(b);
        const std::vector<int64_t> pads = same_padding(k, dil, "test");
        // PyTorch's rule: the extra one of an odd total goes right / bottom.
        for (size_t i = 0; i < 2; ++i) EXPECT_GE(pads[2 * i + 1], pads[2 * i]);
        const std::string w_name =
            what("conv2d same k" + std::to_string(k[0]) + std::to_string(k[1]), t, l);
        for (PadMode mode :
             {PadMode::Constant, PadMode::Reflect, PadMode::Replicate, PadMode::Circular}) {
          const Host want = host_conv2d(host_pad(hx, pads, mode), hw, hb, dil);
          EXPECT_EQ(want.shape, (Shape{2, 4, 7, 9}));
          nn::Conv2d conv(nn::Conv2dConfig(3, 4, k)
                              .padding(nn::Padding::Same)
                              .dilation(dil)
                              .padding_mode(mode)
                              .with_dtype(t));
          conv.weight.set_dyn(w);
          conv.bias->set_dyn(b);
          expect_close(conv.forward(x), want.shape, want.v, loose(t),
                       w_name + " mode " + std::to_string(int(mode)));
          if (mode == PadMode::Constant) {
            expect_close(conv2d(x, w, b, {1}, Padding::Same, dil), want.shape, want.v, loose(t),
                         w_name);
          }
        }
        // Explicit sizes with a mode, and padding='valid'.
        const std::vector<int64_t> ex = {2, 2, 1, 1};
        const Host want = host_conv2d(host_pad(hx, ex, PadMode::Circular), hw, hb, dil);
        nn::Conv2d conv(nn::Conv2dConfig(3, 4, k)
                            .padding({1, 2})
                            .dilation(dil)
                            .padding_mode(PadMode::Circular)
                            .with_dtype(t));
        conv.weight.set_dyn(w);
        conv.bias->set_dyn(b);
        expect_close(conv.forward(x), want.shape, want.v, loose(t), w_name + " circular explicit");
        const Host valid = host_conv2d(hx, hw, hb, dil);
        expect_close(conv2d(x, w, b, {1}, Padding::Valid, dil), valid.shape, valid.v, loose(t),
                     w_name + " valid");
      }
    }
  }
}

// ---- Interpolate and pooling -------------------------------------------------------------------

// PyTorch's taps along one dim: (source index, weight) pairs for output index i. `scale` is the
// user's factor, or 0 when the size was given.
std::vector<std::pair<int64_t, double>> taps(InterpolateMode mode, int64_t in, int64_t out,
                                             double scale, bool corners, int64_t i) {
  using M = InterpolateMode;
  if (mode == M::Area) {
    const int64_t a = (i * in) / out, b = ((i + 1) * in + out - 1) / out;
    std::vector<std::pair<int64_t, double>> t;
    for (int64_t j = a; j < b; ++j) t.push_back({j, 1.0 / double(b - a)});
    return t;
  }
  if (mode == M::Nearest || mode == M::NearestExact) {
    const float s = scale > 0 ? float(1.0 / scale) : float(in) / float(out);
    int64_t j = mode == M::NearestExact ? int64_t(std::floor((double(i) + 0.5) * s))
                : out == in             ? i
                : out == 2 * in         ? i / 2
                                        : int64_t(std::floor(float(i) * s));
    return {{std::min(j, in - 1), 1.0}};
  }
  const double ratio = corners ? (out > 1 ? double(in - 1) / double(out - 1) : 0.0)
                               : (scale > 0 ? 1.0 / scale : double(in) / double(out));
  double src = corners ? ratio * double(i) : ratio * (double(i) + 0.5) - 0.5;
  if (mode == M::Bicubic) {
    const int64_t j = int64_t(std::floor(src));
    const double t = src - double(j), a = -0.75;
    auto c1 = [a](double v) { return ((a + 2) * v - (a + 3)) * v * v + 1; };
    auto c2 = [a](double v) { return ((a * v - 5 * a) * v + 8 * a) * v - 4 * a; };
    const double w[4] = {c2(t + 1), c1(t), c1(1 - t), c2(2 - t)};
    std::vector<std::pair<int64_t, double>> r;
    for (int k = 0; k < 4; ++k) r.push_back({std::clamp<int64_t>(j - 1 + k, 0, in - 1), w[k]});
    return r;
  }
  src = std::max(src, 0.0);
  const int64_t j = std::min<int64_t>(int64_t(std::floor(src)), in - 1);
  const double l = src - double(j);
  return {{j, 1 - l}, {std::min(j + 1, in - 1), l}};
}

// Host interpolate of [N, C, *spatial]: the tensor product of every dim's taps.
Host host_interpolate(const Host& x, const std::vector<int64_t>& size,
                      const std::vector<double>& scales, InterpolateMode mode, bool corners) {
  const int sp = x.shape.rank() - 2;
  Shape os = x.shape;
  for (int d = 0; d < sp; ++d) os[2 + d] = size[size_t(d)];
  Host out{os, std::vector<double>(size_t(os.numel()), 0.0)};
  for (int64_t o = 0; o < os.numel(); ++o) {
    const std::vector<int64_t> idx = out.index(o);
    std::vector<std::vector<std::pair<int64_t, double>>> t;
    for (int d = 0; d < sp; ++d) {
      t.push_back(
          taps(mode, x.shape[2 + d], os[2 + d], scales[size_t(d)], corners, idx[size_t(2 + d)]));
    }
    // Every combination of one tap per dim.
    std::vector<size_t> k(size_t(sp), 0);
    double acc = 0;
    while (true) {
      std::vector<int64_t> src = idx;
      double w = 1;
      for (int d = 0; d < sp; ++d) {
        src[size_t(2 + d)] = t[size_t(d)][k[size_t(d)]].first;
        w *= t[size_t(d)][k[size_t(d)]].second;
      }
      acc += w * x.at(src);
      int d = sp - 1;
      while (d >= 0 && ++k[size_t(d)] == t[size_t(d)].size()) k[size_t(d--)] = 0;
      if (d < 0) break;
    }
    out.v[size_t(o)] = acc;
  }
  return out;
}

TEST(VisionTable, Interpolate) {
  using M = InterpolateMode;
  struct Case {
    Shape shape;
    M mode;
    std::vector<int64_t> size;  // or
    std::vector<double> scale;  // one of the two
    bool corners = false;
  };
  const std::vector<Case> cases = {
      {{2, 3, 5}, M::Nearest, {8}, {}},
      {{2, 3, 6}, M::Nearest, {}, {0.5}},
      {{1, 2, 4, 5}, M::Nearest, {}, {1.7, 2.0}},
      {{1, 2, 3, 4, 2}, M::Nearest, {5, 2, 3}, {}},
      {{2, 2, 5, 6}, M::NearestExact, {7, 4}, {}},
      {{2, 3, 5}, M::NearestExact, {}, {2.5}},
      {{2, 3, 5}, M::Linear, {9}, {}, true},
      {{2, 3, 5}, M::Linear, {}, {1.6}},
      {{1, 2, 5, 6}, M::Bilinear, {3, 8}, {}},
      {{1, 2, 5, 6}, M::Bilinear, {}, {1.5, 0.7}, true},
      {{1, 2, 5, 6}, M::Bicubic, {9, 11}, {}},
      {{1, 2, 5, 6}, M::Bicubic, {4, 8}, {}, true},
      {{1, 2, 5, 6}, M::Bicubic, {}, {1.5, 0.7}},
      {{1, 2, 3, 4, 5}, M::Trilinear, {5, 6, 4}, {}},
      {{1, 2, 3, 4, 5}, M::Trilinear, {}, {1.5}, true},
      {{2, 3, 10}, M::Area, {3}, {}},
      {{1, 2, 7, 9}, M::Area, {3, 4}, {}},
      {{1, 2, 3, 4, 5}, M::Area, {4, 5, 2}, {}},
      {{1, 2, 6, 8}, M::Area, {}, {0.5}},
  };
  for (const Case& c : cases) {
    for (DType t : kTypes) {
      for (Layout l : kLayoutsNc) {
        const DynTensor x = make_input(c.shape, t, l, -1, 1, 81);
        const Host h = Host::of(x);
        const int sp = c.shape.rank() - 2;
        std::vector<int64_t> size;
        std::vector<double> scales;
        for (int d = 0; d < sp; ++d) {
          if (c.size.empty()) {
            const double f = c.scale[c.scale.size() == 1 ? 0 : size_t(d)];
            scales.push_back(f);
            size.push_back(int64_t(std::floor(double(c.shape[2 + d]) * f)));
          } else {
            scales.push_back(0.0);
            size.push_back(c.size[c.size.size() == 1 ? 0 : size_t(d)]);
          }
        }
        const Host want = host_interpolate(h, size, scales, c.mode, c.corners);
        const DynTensor got = c.size.empty() ? interpolate(x, c.scale, c.mode, c.corners)
                                             : interpolate(x, c.size, c.mode, c.corners);
        expect_close(got, want.shape, want.v, loose(t),
                     what("interpolate mode " + std::to_string(int(c.mode)), t, l));
      }
    }
  }
}

TEST(VisionTable, MaxPool3dAndAdaptiveMax) {
  // Adaptive max: PyTorch's windows, the first maximum's flat index within the plane.
  for (const auto& [shape, outs] :
       std::vector<std::pair<Shape, std::vector<int64_t>>>{{{2, 3, 10}, {4}},
                                                           {{2, 2, 7, 9}, {3, 5}},
                                                           {{1, 2, 3, 3}, {5, 4}},
                                                           {{1, 2, 5, 4, 3}, {2, 3, 2}},
                                                           {{3, 7, 5}, {2, 2}}}) {
    for (DType t : kTypes) {
      for (Layout l : kLayoutsNc) {
        const DynTensor x = make_input(shape, t, l, -1, 1, 91);
        const Host h = Host::of(x);
        const int sp = static_cast<int>(outs.size());
        Shape os = shape;
        for (int d = 0; d < sp; ++d) os[shape.rank() - sp + d] = outs[size_t(d)];
        const Host o{os, {}};
        std::vector<double> want_v, want_i;
        for (int64_t e = 0; e < os.numel(); ++e) {
          const std::vector<int64_t> idx = o.index(e);
          int64_t lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1}, in[3] = {1, 1, 1};
          for (int d = 0; d < sp; ++d) {
            const int dim = shape.rank() - sp + d;
            const int64_t i = idx[size_t(dim)], n = shape[dim], m = os[dim];
            in[d] = n;
            lo[d] = (i * n) / m;
            hi[d] = ((i + 1) * n + m - 1) / m;
          }
          double best = -INFINITY;
          int64_t arg = -1;
          for (int64_t a = lo[0]; a < hi[0]; ++a)
            for (int64_t b = lo[1]; b < hi[1]; ++b)
              for (int64_t c = lo[2]; c < hi[2]; ++c) {
                std::vector<int64_t> src = idx;
                const int64_t pos[3] = {a, b, c};
                for (int d = 0; d < sp; ++d) src[size_t(shape.rank() - sp + d)] = pos[d];
                const double v = h.at(src);
                if (v > best) {
                  best = v;
                  arg = (a * in[1] + b) * in[2] + c;
                }
              }
          want_v.push_back(best);
          want_i.push_back(double(arg));
        }
        ValuesIndices r = sp == 1   ? adaptive_max_pool1d_with_indices(x, outs)
                          : sp == 2 ? adaptive_max_pool2d_with_indices(x, outs)
                                    : adaptive_max_pool3d_with_indices(x, outs);
        const std::string w = what("adaptive_max_pool" + std::to_string(sp) + "d", t, l);
        expect_close(r.values, os, want_v, tol_for(t), w);
        expect_close(r.indices, os, want_i, {0, 0}, w + " indices");
        const DynTensor v = sp == 1   ? adaptive_max_pool1d(x, outs)
                            : sp == 2 ? adaptive_max_pool2d(x, outs)
                                      : adaptive_max_pool3d(x, outs);
        expect_close(v, os, want_v, tol_for(t), w + " values only");
      }
    }
  }
  // max_pool3d: its windows on the host, with padding as -inf.
  const Shape shape{2, 2, 4, 6, 7};
  for (DType t : kTypes) {
    for (Layout l : kLayoutsNc) {
      const DynTensor x = make_input(shape, t, l, -1, 1, 92);
      const Host h = Host::of(x);
      const int64_t k[3] = {2, 3, 2}, s[3] = {1, 2, 2}, p[3] = {1, 1, 0}, dl[3] = {1, 1, 2};
      Shape os = shape;
      for (int d = 0; d < 3; ++d)
        os[2 + d] = (shape[2 + d] + 2 * p[d] - dl[d] * (k[d] - 1) - 1) / s[d] + 1;
      const Host o{os, {}};
      std::vector<double> want;
      for (int64_t e = 0; e < os.numel(); ++e) {
        const std::vector<int64_t> idx = o.index(e);
        double best = -INFINITY;
        for (int64_t a = 0; a < k[0]; ++a)
          for (int64_t b = 0; b < k[1]; ++b)
            for (int64_t c = 0; c < k[2]; ++c) {
              const int64_t pos[3] = {a, b, c};
              std::vector<int64_t> src = idx;
              bool inside = true;
              for (int d = 0; d < 3; ++d) {
                const int64_t v = idx[size_t(2 + d)] * s[d] - p[d] + pos[d] * dl[d];
                inside = inside && v >= 0 && v < shape[2 + d];
                src[size_t(2 + d)] = v;
              }
              if (inside) best = std::max(best, h.at(src));
            }
        want.push_back(best);
      }
      expect_close(max_pool3d(x, {2, 3, 2}, {1, 2, 2}, {1, 1, 0}, {1, 1, 2}), os, want, tol_for(t),
                   what("max_pool3d", t, l));
      nn::MaxPool3d pool{{2, 3, 2}, {1, 2, 2}, {1, 1, 0}, {1, 1, 2}};
      expect_close(pool.forward(x), os, want, tol_for(t), what("MaxPool3d", t, l));
    }
  }
}

// PyTorch's grid_sample on the host, 2-D, for one output point of one plane.
double host_grid_tap(const Host& x, int64_t n, int64_t c, double gx, double gy, GridMode mode,
                     GridPadding pad, bool corners) {
  const int64_t h = x.shape[2], w = x.shape[3];
  auto source = [&](double v, int64_t size) {
    v = corners ? (v + 1) / 2 * double(size - 1) : ((v + 1) * double(size) - 1) / 2;
    if (pad == GridPadding::Reflection) {
      const double lo = corners ? 0 : -0.5, span = corners ? double(size - 1) : double(size);
      if (span > 0) {
        const double a = std::fabs(v - lo), extra = std::fmod(a, span);
        v = int64_t(std::floor(a / span)) % 2 == 0 ? extra + lo : span - extra + lo;
      } else {
        v = 0;
      }
    }
    if (pad != GridPadding::Zeros) v = std::clamp(v, 0.0, double(size - 1));
    return v;
  };
  const double ix = source(gx, w), iy = source(gy, h);
  auto at = [&](int64_t yy, int64_t xx) {
    return yy >= 0 && yy < h && xx >= 0 && xx < w ? x.at({n, c, yy, xx}) : 0.0;
  };
  if (mode == GridMode::Nearest)
    return at(int64_t(std::nearbyint(iy)), int64_t(std::nearbyint(ix)));
  const int64_t x0 = int64_t(std::floor(ix)), y0 = int64_t(std::floor(iy));
  const double fx = ix - double(x0), fy = iy - double(y0);
  return at(y0, x0) * (1 - fx) * (1 - fy) + at(y0, x0 + 1) * fx * (1 - fy) +
         at(y0 + 1, x0) * (1 - fx) * fy + at(y0 + 1, x0 + 1) * fx * fy;
}

TEST(VisionTable, GridSample) {
  for (GridMode mode : {GridMode::Bilinear, GridMode::Nearest}) {
    for (GridPadding pad : {GridPadding::Zeros, GridPadding::Border, GridPadding::Reflection}) {
      for (bool corners : {false, true}) {
        for (DType t : kTypes) {
          for (Layout l : kLayoutsNc) {
            const DynTensor x = make_input(Shape{2, 3, 4, 5}, t, l, -1, 1, 101);
            const DynTensor g = make_input(Shape{2, 3, 7, 2}, t, l, -1.4, 1.4, 102);
            const Host hx = Host::of(x), hg = Host::of(g);
            std::vector<double> want;
            for (int64_t n = 0; n < 2; ++n)
              for (int64_t c = 0; c < 3; ++c)
                for (int64_t i = 0; i < 3; ++i)
                  for (int64_t j = 0; j < 7; ++j) {
                    want.push_back(host_grid_tap(hx, n, c, hg.at({n, i, j, 0}), hg.at({n, i, j, 1}),
                                                 mode, pad, corners));
                  }
            expect_close(grid_sample(x, g, mode, pad, corners), Shape{2, 3, 3, 7}, want, loose(t),
                         what("grid_sample " + std::to_string(int(mode)) +
                                  std::to_string(int(pad)) + std::to_string(int(corners)),
                              t, l));
          }
        }
      }
    }
  }
  // The identity theta samples the input back (align_corners: exactly the pixel centres).
  const DynTensor x = make_input(Shape{1, 2, 3, 4}, DType::f64, Layout::Contiguous, -1, 1, 103);
  const DynTensor theta = reshape(
      from_data(TensorData::from(std::vector<double>{1, 0, 0, 0, 1, 0}, Shape{6})), Shape{1, 2, 3});
  for (bool corners : {false, true}) {
    const DynTensor back = grid_sample(x, affine_grid(theta, x.shape(), corners),
                                       GridMode::Bilinear, GridPadding::Zeros, corners);
    expect_close(back, x.shape(), x.to_vector<double>(), {1e-12, 1e-12}, "affine identity");
  }
}

// f16 and bf16: each op against itself in f64 on the same (rounded) inputs, which the tables above
// check against the host references.
TEST(VisionTable, HalfPrecision) {
  using Fn = std::function<DynTensor(const DynTensor&)>;
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<std::pair<std::string, Fn>> ops = {
      {"normalize", [](const DynTensor& x) { return normalize(x); }},
      {"cosine_similarity", [](const DynTensor& x) { return cosine_similarity(x, flip(x, {3})); }},
      {"pairwise_distance", [](const DynTensor& x) { return pairwise_distance(x, flip(x, {2})); }},
      {"cdist", [](const DynTensor& x) { return cdist(x, flip(x, {2})); }},
      {"cdist inf", [inf](const DynTensor& x) { return cdist(x, x, inf); }},
      {"pixel_unshuffle", [](const DynTensor& x) { return pixel_unshuffle(x, 2); }},
      {"unfold",
       [](const DynTensor& x) {
         return unfold(x, {3, 2}, {1}, {1}, {2, 1});
       }},
      {"fold",
       [](const DynTensor& x) {
         return fold(unfold(x, {2}), {4, 6}, {2});
       }},
      {"pad circular",
       [](const DynTensor& x) {
         return pad(x, {2, 3, 1, 1}, PadMode::Circular);
       }},
      {"interpolate bicubic",
       [](const DynTensor& x) {
         return interpolate(x, std::vector<int64_t>{7, 9}, InterpolateMode::Bicubic);
       }},
      {"interpolate bilinear",
       [](const DynTensor& x) {
         return interpolate(x, std::vector<double>{1.5}, InterpolateMode::Bilinear, true);
       }},
      {"interpolate area",
       [](const DynTensor& x) {
         return interpolate(x, std::vector<int64_t>{3, 4}, InterpolateMode::Area);
       }},
      {"adaptive_max_pool2d",
       [](const DynTensor& x) {
         return adaptive_max_pool2d(x, {3, 4});
       }},
      {"grid_sample",
       [](const DynTensor& x) {
         const DynTensor g = mul(narrow(permute(x, {0, 2, 3, 1}), 3, 0, 2), 1.2);
         return grid_sample(x, g, GridMode::Bilinear, GridPadding::Reflection);
       }},
  };
  for (DType t : {DType::f16, DType::bf16}) {
    const Tol tol = t == DType::f16 ? Tol{5e-3, 5e-3} : Tol{4e-2, 4e-2};
    for (Layout l : kLayoutsNc) {
      const DynTensor x = make_input(Shape{2, 4, 4, 6}, t, l, -1, 1, 111);
      for (const auto& [name, f] : ops) {
        const DynTensor want = f(cast(x, DType::f64));
        const DynTensor got = f(x);
        EXPECT_EQ(got.dtype(), t) << name;
        expect_close(got, want.shape(), want.to_vector<double>(), tol, what(name, t, l));
      }
    }
  }
}

// ---- Gradients -------------------------------------------------------------------------------

GradInput gin(const Shape& shape, Layout layout, uint32_t seed, double lo = -1, double hi = 1) {
  return {shape, layout, random_values(shape.numel(), lo, hi, false, seed)};
}

TEST(VisionGradcheck, Distances) {
  const double inf = std::numeric_limits<double>::infinity();
  for (Layout l : kLayoutsNc) {
    EXPECT_TRUE(
        gradcheck("normalize", [](auto& x) { return normalize(x[0]); }, {gin({3, 4, 2}, l, 1)}));
    EXPECT_TRUE(gradcheck("normalize p3", [](auto& x) { return normalize(x[0], 3.0, -1); },
                          {gin({3, 4}, l, 2)}));
    EXPECT_TRUE(gradcheck("cosine_similarity",
                          [](auto& x) { return cosine_similarity(x[0], x[1]); },
                          {gin({3, 4, 2}, l, 3), gin({3, 4, 2}, l, 4)}));
    EXPECT_TRUE(gradcheck("pairwise_distance",
                          [](auto& x) { return pairwise_distance(x[0], x[1]); },
                          {gin({3, 4}, l, 5), gin({3, 4}, l, 6)}));
    for (double p : {2.0, 1.0, 3.0, inf}) {
      EXPECT_TRUE(gradcheck("cdist p" + std::to_string(p),
                            [p](auto& x) { return cdist(x[0], x[1], p); },
                            {gin({2, 3, 4}, l, 7), gin({2, 5, 4}, l, 8)}));
    }
    EXPECT_TRUE(gradcheck("cdist mm", [](auto& x) { return cdist(x[0], x[1]); },
                          {gin({26, 3}, l, 9), gin({4, 3}, l, 10)}));
  }
  EXPECT_TRUE(
      gradgradcheck("cosine_similarity", [](auto& x) { return cosine_similarity(x[0], x[1]); },
                    {gin({3, 4}, Layout::Contiguous, 3), gin({3, 4}, Layout::Contiguous, 4)}));
  // Equal rows: PyTorch's p = 2 gradient at a zero distance is 0, on both paths.
  for (int64_t rows : {3, 30}) {
    const DynTensor a =
        require_grad(make_input(Shape{rows, 3}, DType::f64, Layout::Contiguous, -1, 1, 5));
    const std::vector<double> g = grad(sum(cdist(a, a)), {a})[0].to_vector<double>();
    for (double v : g) EXPECT_TRUE(std::isfinite(v));
  }
}

TEST(VisionGradcheck, ShuffleFoldPadConv) {
  for (Layout l : kLayoutsNc) {
    EXPECT_TRUE(gradcheck("pixel_shuffle", [](auto& x) { return pixel_shuffle(x[0], 2); },
                          {gin({2, 8, 2, 3}, l, 11)}));
    EXPECT_TRUE(gradcheck("pixel_unshuffle", [](auto& x) { return pixel_unshuffle(x[0], 2); },
                          {gin({1, 2, 4, 2}, l, 12)}));
    EXPECT_TRUE(gradcheck("unfold",
                          [](auto& x) {
                            return unfold(x[0], {2, 3}, {1, 2}, {1, 0}, {2, 1});
                          },
                          {gin({2, 2, 5, 6}, l, 13)}));
    EXPECT_TRUE(gradcheck("fold",
                          [](auto& x) {
                            return fold(x[0], {4, 5}, {2, 2}, {1}, {1}, {2});
                          },
                          {gin({2, 8, 9}, l, 14)}));
    EXPECT_TRUE(gradcheck("pad circular",
                          [](auto& x) {
                            return pad(x[0], {2, 1, 3, 0}, PadMode::Circular);
                          },
                          {gin({2, 3, 4}, l, 15)}));
    EXPECT_TRUE(gradcheck("conv2d same",
                          [](auto& x) { return conv2d(x[0], x[1], {}, {1}, Padding::Same); },
                          {gin({1, 2, 5, 4}, l, 16), gin({3, 2, 2, 3}, Layout::Contiguous, 17)}));
  }
  using M = InterpolateMode;
  for (const auto& [mode, shape, size, corners] :
       std::vector<std::tuple<M, Shape, std::vector<int64_t>, bool>>{
           {M::Nearest, {1, 2, 3, 4}, {5, 7}, false},
           {M::NearestExact, {1, 2, 5}, {3}, false},
           {M::Linear, {1, 2, 5}, {8}, true},
           {M::Bilinear, {1, 2, 3, 4}, {5, 3}, false},
           {M::Bicubic, {1, 1, 4, 5}, {6, 3}, false},
           {M::Bicubic, {1, 1, 4, 5}, {3, 7}, true},
           {M::Trilinear, {1, 1, 3, 2, 4}, {4, 3, 3}, false},
           {M::Area, {1, 2, 7, 5}, {3, 2}, false}}) {
    EXPECT_TRUE(gradcheck(
        "interpolate mode " + std::to_string(int(mode)),
        [&, m = mode, sz = size, c = corners](auto& x) { return interpolate(x[0], sz, m, c); },
        {gin(shape, Layout::Strided, 19)}));
  }
  EXPECT_TRUE(gradcheck("max_pool3d", [](auto& x) { return max_pool3d(x[0], {2}, {1}, {1}); },
                        {gin({1, 2, 3, 4, 3}, Layout::Transposed, 20)}));
  EXPECT_TRUE(gradcheck("adaptive_max_pool2d",
                        [](auto& x) {
                          return adaptive_max_pool2d(x[0], {2, 3});
                        },
                        {gin({2, 2, 5, 7}, Layout::Strided, 21)}));
  EXPECT_TRUE(gradcheck("adaptive_max_pool1d",
                        [](auto& x) { return adaptive_max_pool1d(x[0], {4}); },
                        {gin({2, 3, 9}, Layout::Contiguous, 22)}));
  for (GridPadding pad : {GridPadding::Zeros, GridPadding::Border, GridPadding::Reflection}) {
    for (bool corners : {false, true}) {
      EXPECT_TRUE(gradcheck(
          "grid_sample " + std::to_string(int(pad)) + std::to_string(corners),
          [&](auto& x) { return grid_sample(x[0], x[1], GridMode::Bilinear, pad, corners); },
          {gin({1, 2, 3, 4}, Layout::Strided, 23),
           gin({1, 2, 3, 2}, Layout::Contiguous, 24, -1.3, 1.3)}));
    }
  }
  EXPECT_TRUE(gradcheck("grid_sample 3d", [](auto& x) { return grid_sample(x[0], x[1]); },
                        {gin({1, 1, 2, 3, 2}, Layout::Contiguous, 25),
                         gin({1, 2, 1, 2, 3}, Layout::Transposed, 26, -0.9, 0.9)}));
  EXPECT_TRUE(gradcheck("affine_grid",
                        [](auto& x) {
                          return affine_grid(x[0], Shape{2, 1, 3, 4});
                        },
                        {gin({2, 2, 3}, Layout::Strided, 27)}));
  nn::Conv1d conv(nn::Conv1dConfig(2, 2, {3})
                      .padding({2})
                      .padding_mode(PadMode::Reflect)
                      .with_dtype(DType::f64));
  EXPECT_TRUE(gradcheck("Conv1d reflect", [&](auto& x) { return conv.forward(x[0]); },
                        {gin({2, 2, 5}, Layout::Strided, 18)}));
}

// ---- PyTorch parity --------------------------------------------------------------------------

const Fixture& fixture() {
  static const Fixture f(EMBER_NN_FIXTURES "/vision.txt");
  return f;
}

// Runs `f` on the case's inputs (x, or x1 and x2), compares y and the inputs' and parameters'
// gradients of sum(y * seed) with PyTorch's.
void check_case(const std::string& name,
                const std::function<DynTensor(const std::vector<DynTensor>&)>& f,
                const std::vector<std::pair<std::string, DynTensor>>& params = {}) {
  SCOPED_TRACE(name);
  const Fixture& fx = fixture();
  std::vector<std::string> keys =
      fx.has(name + ".x") ? std::vector<std::string>{"x"} : std::vector<std::string>{"x1", "x2"};
  std::vector<DynTensor> xs;
  for (const std::string& k : keys) xs.push_back(require_grad(fx.get(name + "." + k)));
  const DynTensor y = f(xs);
  fx.expect_close(y, name + ".y", 1e-9, 1e-11);
  std::vector<DynTensor> wrt = xs;
  for (const auto& p : params) wrt.push_back(p.second);
  const std::vector<DynTensor> g = grad(y, wrt, fx.get(name + ".seed"));
  // An input the output does not depend on (nearest grid_sample's grid) has a zero gradient.
  for (size_t i = 0; i < keys.size(); ++i)
    fx.expect_close(g[i].defined() ? g[i] : zeros_like(xs[i]), name + ".grad_" + keys[i], 1e-9,
                    1e-11);
  for (size_t i = 0; i < params.size(); ++i) {
    fx.expect_close(g[keys.size() + i], name + ".grad_" + params[i].first, 1e-9, 1e-11);
  }
}

TEST(VisionParity, Distances) {
  const double inf = std::numeric_limits<double>::infinity();
  check_case("normalize", [](auto& x) { return normalize(x[0]); });
  check_case("normalize_p3", [](auto& x) { return normalize(x[0], 3.0, -1, 1e-3); });
  check_case("cosine_similarity", [](auto& x) { return cosine_similarity(x[0], x[1]); });
  check_case("cosine_similarity_bcast",
             [](auto& x) { return cosine_similarity(x[0], x[1], -1, 1e-6); });
  check_case("cosine_similarity_tiny", [](auto& x) { return cosine_similarity(x[0], x[1]); });
  check_case("pairwise_distance", [](auto& x) { return pairwise_distance(x[0], x[1]); });
  check_case("pairwise_distance_p1_keep",
             [](auto& x) { return pairwise_distance(x[0], x[1], 1.0, 1e-3, true); });
  check_case("cdist", [](auto& x) { return cdist(x[0], x[1]); });
  check_case("cdist_mm", [](auto& x) { return cdist(x[0], x[1]); });
  check_case("cdist_p1", [](auto& x) { return cdist(x[0], x[1], 1.0); });
  check_case("cdist_p3", [](auto& x) { return cdist(x[0], x[1], 3.0); });
  check_case("cdist_pinf", [inf](auto& x) { return cdist(x[0], x[1], inf); });
}

TEST(VisionParity, Layers) {
  check_case("pixel_shuffle", [](auto& x) { return nn::PixelShuffle{2}.forward(x[0]); });
  check_case("pixel_shuffle_unbatched", [](auto& x) { return nn::PixelShuffle{3}.forward(x[0]); });
  check_case("pixel_unshuffle", [](auto& x) { return nn::PixelUnshuffle{2}.forward(x[0]); });
  check_case("unfold", [](auto& x) {
    return nn::Unfold{{2, 3}, {1, 2}, {1, 0}, {2, 1}}.forward(x[0]);
  });
  check_case("unfold_unbatched", [](auto& x) { return nn::Unfold{{2}}.forward(x[0]); });
  check_case("fold", [](auto& x) {
    return nn::Fold{{5, 6}, {2, 3}, {2, 1}, {1, 1}, {1, 2}}.forward(x[0]);
  });
  check_case("fold_unbatched", [](auto& x) { return nn::Fold{{3, 4}, {2}}.forward(x[0]); });
  check_case("pad_circular", [](auto& x) { return pad(x[0], {2, 1, 0, 3}, PadMode::Circular); });
  check_case("pad_circular_1d", [](auto& x) { return pad(x[0], {3, 3}, PadMode::Circular); });
  const DynTensor w2 = fixture().get("conv2d_same_functional.w");
  check_case("conv2d_same_functional", [&](auto& x) {
    return conv2d(x[0], w2, {}, {1}, Padding::Same, {1, 2});
  });
  const DynTensor w1 = fixture().get("conv1d_valid_functional.w");
  check_case("conv1d_valid_functional",
             [&](auto& x) { return conv1d(x[0], w1, {}, {1}, Padding::Valid); });
}

// A conv layer with the fixture's weight (and bias) for `name`, checked end to end.
template <class ConvT>
void check_conv(const std::string& name, const nn::ConvConfig& config) {
  ConvT conv(nn::ConvConfig(config).with_dtype(DType::f64));
  conv.weight.set_dyn(fixture().get(name + ".weight"));
  std::vector<std::pair<std::string, DynTensor>> params{{"weight", conv.weight.dyn()}};
  if (conv.bias) {
    conv.bias->set_dyn(fixture().get(name + ".bias"));
    params.emplace_back("bias", conv.bias->dyn());
  }
  // dyn() is the trainable leaf that set_dyn made.
  params[0].second = conv.weight.dyn();
  if (conv.bias) params[1].second = conv.bias->dyn();
  check_case(
      name, [&](auto& x) { return conv.forward(x[0]); }, params);
}

TEST(VisionParity, ConvPaddingModes) {
  check_conv<nn::Conv1d>("conv1d_reflect",
                         nn::Conv1dConfig(2, 3, {3}).padding({2}).padding_mode(PadMode::Reflect));
  check_conv<nn::Conv2d>(
      "conv2d_circular",
      nn::Conv2dConfig(2, 3, {3, 2}).padding({1, 2}).padding_mode(PadMode::Circular));
  check_conv<nn::Conv2d>("conv2d_replicate_same", nn::Conv2dConfig(2, 2, {4, 3})
                                                      .padding(nn::Padding::Same)
                                                      .padding_mode(PadMode::Replicate)
                                                      .bias(false));
  check_conv<nn::Conv3d>(
      "conv3d_circular_same",
      nn::Conv3dConfig(1, 2, {2, 3, 2}).padding(nn::Padding::Same).padding_mode(PadMode::Circular));
  check_conv<nn::Conv3d>("conv3d_replicate",
                         nn::Conv3dConfig(2, 2, {2}).padding({1}).padding_mode(PadMode::Replicate));
}

TEST(VisionParity, Interpolate) {
  using M = InterpolateMode;
  struct Case {
    const char* name;
    M mode;
    std::vector<int64_t> size;
    std::vector<double> scale;
    bool corners = false;
  };
  for (const Case& c : std::vector<Case>{{"nearest_1d", M::Nearest, {8}, {}},
                                         {"nearest_2d_scale", M::Nearest, {}, {1.7, 0.6}},
                                         {"nearest_3d", M::Nearest, {5, 3, 7}, {}},
                                         {"nearest_exact_2d", M::NearestExact, {7, 4}, {}},
                                         {"nearest_exact_1d_scale", M::NearestExact, {}, {2.5}},
                                         {"linear_scale", M::Linear, {}, {1.6}},
                                         {"linear_corners", M::Linear, {9}, {}, true},
                                         {"bilinear_down", M::Bilinear, {3, 4}, {}},
                                         {"bicubic", M::Bicubic, {9, 11}, {}},
                                         {"bicubic_corners", M::Bicubic, {4, 8}, {}, true},
                                         {"bicubic_scale", M::Bicubic, {}, {1.5, 0.7}},
                                         {"trilinear", M::Trilinear, {5, 6, 4}, {}},
                                         {"trilinear_corners", M::Trilinear, {}, {1.5}, true},
                                         {"area_1d", M::Area, {3}, {}},
                                         {"area_2d", M::Area, {3, 4}, {}},
                                         {"area_3d_up", M::Area, {4, 5, 2}, {}},
                                         {"area_2d_scale", M::Area, {}, {0.5}}}) {
    check_case(std::string("interp_") + c.name, [&](auto& x) {
      return c.size.empty() ? interpolate(x[0], c.scale, c.mode, c.corners)
                            : interpolate(x[0], c.size, c.mode, c.corners);
    });
  }
  check_case("upsample_bilinear", [](auto& x) {
    return nn::Upsample{{}, {2.0}, InterpolateMode::Bilinear, true}.forward(x[0]);
  });
  check_case("upsample_nearest", [](auto& x) { return nn::Upsample{{4, 9}}.forward(x[0]); });
}

TEST(VisionParity, MaxPool3dAndAdaptiveMax) {
  auto run = [](const std::string& name, const std::function<ValuesIndices(const DynTensor&)>& f) {
    check_case(name, [&](auto& x) { return f(x[0]).values; });
    const ValuesIndices r = f(fixture().get(name + ".x"));
    fixture().expect_close(r.indices, name + ".indices", 0, 0);
  };
  run("max_pool3d", [](const DynTensor& x) {
    return max_pool3d_with_indices(x, {2, 3, 2}, {1, 2, 2}, {1, 1, 0}, {1, 1, 2});
  });
  run("max_pool3d_ceil",
      [](const DynTensor& x) { return max_pool3d_with_indices(x, {2}, {}, {0}, {1}, true); });
  run("adaptive_max_pool1d",
      [](const DynTensor& x) { return nn::AdaptiveMaxPool1d{{4}}.with_indices(x); });
  run("adaptive_max_pool2d", [](const DynTensor& x) {
    return nn::AdaptiveMaxPool2d{{3, 5}}.with_indices(x);
  });
  run("adaptive_max_pool2d_up", [](const DynTensor& x) {
    return adaptive_max_pool2d_with_indices(x, {5, 4});
  });
  run("adaptive_max_pool3d", [](const DynTensor& x) {
    return nn::AdaptiveMaxPool3d{{2, 3, 2}}.with_indices(x);
  });
}

TEST(VisionParity, GridSampleAndAffineGrid) {
  for (GridMode mode : {GridMode::Bilinear, GridMode::Nearest}) {
    for (GridPadding pad : {GridPadding::Zeros, GridPadding::Border, GridPadding::Reflection}) {
      for (bool corners : {false, true}) {
        const std::string name = std::string("grid_sample_") +
                                 (mode == GridMode::Bilinear ? "bilinear" : "nearest") +
                                 (pad == GridPadding::Zeros    ? "_zeros"
                                  : pad == GridPadding::Border ? "_border"
                                                               : "_reflection") +
                                 "_" + std::to_string(int(corners));
        check_case(name, [&](auto& x) { return grid_sample(x[0], x[1], mode, pad, corners); });
      }
    }
  }
  check_case("grid_sample_3d", [](auto& x) {
    return grid_sample(x[0], x[1], GridMode::Bilinear, GridPadding::Reflection, false);
  });
  check_case("grid_sample_3d_nearest_border", [](auto& x) {
    return grid_sample(x[0], x[1], GridMode::Nearest, GridPadding::Border, true);
  });
  check_case("affine_grid", [](auto& x) { return affine_grid(x[0], Shape{2, 3, 4, 5}); });
  check_case("affine_grid_corners_3d", [](auto& x) {
    return affine_grid(x[0], Shape{1, 2, 3, 4, 2}, true);
  });
}

TEST(VisionParity, ModuleConfigsRoundTrip) {
  const nn::Unfold u{{2, 3}, {1, 2}, {1, 0}, {2, 1}};
  EXPECT_EQ(nn::Unfold::from_json(u.to_json()).to_json(), u.to_json());
  const nn::Fold f{{5, 6}, {2, 3}, {2, 1}, {1, 1}, {1, 2}};
  EXPECT_EQ(nn::Fold::from_json(f.to_json()).stride, f.stride);
  EXPECT_EQ(nn::PixelShuffle::from_json(nn::PixelShuffle{3}.to_json()).upscale_factor, 3);
  EXPECT_EQ(nn::PixelUnshuffle::from_json(nn::PixelUnshuffle{2}.to_json()).downscale_factor, 2);
  const nn::ConvConfig c = nn::ConvConfig::from_json(
      nn::Conv2dConfig(2, 3, {3}).padding_mode(PadMode::Circular).to_json());
  EXPECT_EQ(c.pad_mode_, PadMode::Circular);
  EXPECT_EQ(nn::ConvConfig::from_json(nn::Conv2dConfig(2, 3, {3}).to_json()).pad_mode_,
            PadMode::Constant);
  const nn::Upsample up{{}, {1.5, 2.0}, InterpolateMode::NearestExact, false};
  const nn::Upsample back = nn::Upsample::from_json(up.to_json());
  EXPECT_EQ(back.scale_factor, up.scale_factor);
  EXPECT_EQ(back.mode, InterpolateMode::NearestExact);
  EXPECT_EQ(nn::AdaptiveMaxPool2d::from_json(nn::AdaptiveMaxPool2d{{3, 4}}.to_json()).output_size,
            (SpatialArg{3, 4}));
  // Typed forwards.
  const Tensor<4> img = Tensor<4>::randn({1, 4, 2, 3});
  EXPECT_EQ(pixel_shuffle(img, 2).dims(), (std::array<int64_t, 4>{1, 1, 4, 6}));
  EXPECT_EQ(unfold(img, {2}).dims(), (std::array<int64_t, 3>{1, 16, 2}));
  EXPECT_EQ(fold(unfold(img, {2}), {2, 3}, {2}).dims(), (std::array<int64_t, 4>{1, 4, 2, 3}));
  EXPECT_EQ(nn::Unfold{{2}}(img).dims(), (std::array<int64_t, 3>{1, 16, 2}));
  EXPECT_EQ(cosine_similarity(img, img).dims(), (std::array<int64_t, 3>{1, 2, 3}));
  EXPECT_EQ(interpolate(img, std::vector<int64_t>{4, 5}, InterpolateMode::Bicubic).dims(),
            (std::array<int64_t, 4>{1, 4, 4, 5}));
  EXPECT_EQ(affine_grid<4>(Tensor<3>::zeros({1, 2, 3}), Shape{1, 4, 2, 3}).dims(),
            (std::array<int64_t, 4>{1, 2, 3, 2}));
  EXPECT_EQ(grid_sample(img, Tensor<4>::zeros({1, 5, 6, 2})).dims(),
            (std::array<int64_t, 4>{1, 4, 5, 6}));
  EXPECT_EQ(adaptive_max_pool2d(img, {1}).dims(), (std::array<int64_t, 4>{1, 4, 1, 1}));
  EXPECT_EQ((nn::Upsample{{}, {2.0}}(img).dims()), (std::array<int64_t, 4>{1, 4, 4, 6}));
  EXPECT_EQ(cdist(Tensor<2>::randn({3, 2}), Tensor<2>::randn({4, 2})).dims(),
            (std::array<int64_t, 2>{3, 4}));
}

// ---- Errors ----------------------------------------------------------------------------------

TEST(VisionTable, Errors) {
  const DynTensor x = zeros(Shape{2, 3, 4, 5}, DType::f32);
  const DynTensor ints = zeros(Shape{2, 3}, DType::i64);
  expect_error_containing([&] { normalize(ints); }, "[normalize] needs a Float input, got int64");
  expect_error_containing([&] { normalize(x, 2.0, 4); }, "normalize");
  expect_error_containing(
      [&] {
        cosine_similarity(x, zeros(Shape{2, 3}, DType::f32));
      },
      "[cosine_similarity]");
  expect_error_containing([&] { pairwise_distance(x, ints); },
                          "[pairwise_distance] needs a Float x2");
  expect_error_containing(
      [&] {
        cdist(zeros(Shape{3, 4}, DType::f32), zeros(Shape{3, 5}, DType::f32));
      },
      "[cdist] x1 and x2 must have the same number of columns, got [3, 4] and [3, 5]");
  expect_error_containing([&] { cdist(zeros(Shape{3}, DType::f32), zeros(Shape{3}, DType::f32)); },
                          "[cdist] needs x1 [..., P, M]");
  expect_error_containing([&] { cdist(x, x, -1.0); }, "[cdist] p must be non-negative, got -1");
  expect_error_containing([&] { pixel_shuffle(x, 2); },
                          "[pixel_shuffle] channels 3 are not divisible by upscale_factor^2 = 4");
  expect_error_containing(
      [&] {
        pixel_shuffle(zeros(Shape{4, 4}, DType::f32), 2);
      },
      "[pixel_shuffle] expects");
  expect_error_containing(
      [&] { pixel_unshuffle(x, 2); },
      "[pixel_unshuffle] height 4 and width 5 must be divisible by downscale_factor 2");
  expect_error_containing([&] { pixel_shuffle(x, 0); }, "upscale_factor must be positive, got 0");
  expect_error_containing(
      [&] {
        pad(x, {6, 0}, PadMode::Circular);
      },
      "[pad] circular padding (6, 0) wraps around more than once");
  expect_error_containing(
      [&] {
        pad(x, {-1, 0}, PadMode::Circular);
      },
      "must be non-negative, got -1, 0");
  expect_error_containing(
      [&] {
        unfold(zeros(Shape{4, 5}, DType::f32), {2});
      },
      "[unfold] expects [N, C, H, W]");
  expect_error_containing([&] { unfold(x, {6}); },
                          "[unfold] kernel 6 (dilation 1) does not fit in size 4");
  expect_error_containing([&] { unfold(x, {2}, {1}, {-1}); },
                          "[unfold] padding must be at least 0, got [-1]");
  expect_error_containing(
      [&] {
        unfold(x, {2, 2, 2});
      },
      "[unfold] kernel_size needs 1 or 2 values");
  expect_error_containing(
      [&] {
        fold(zeros(Shape{2, 7, 4}, DType::f32), {3, 3}, {2});
      },
      "[fold] dim 1 of [2, 7, 4] must be divisible by the kernel's 4 elements");
  expect_error_containing(
      [&] {
        fold(zeros(Shape{2, 8, 5}, DType::f32), {3, 3}, {2});
      },
      "[fold] input [2, 8, 5] has 5 blocks, but output_size [3, 3] with kernel [2, 2] makes 4");
  const DynTensor w = zeros(Shape{2, 3, 3, 3}, DType::f32);
  expect_error_containing([&] { conv2d(x, w, {}, {2}, Padding::Same); },
                          "[conv2d] padding='same' needs stride 1 (as in PyTorch), got stride [2]");
  expect_error_containing([&] { conv2d(x, w, {}, {1}, Padding::Explicit); },
                          "[conv2d] takes Padding::Same");
  expect_error_containing(
      [&] {
        nn::ConvTranspose2d(nn::ConvTranspose2dConfig(1, 1, {3}).padding_mode(PadMode::Reflect));
      },
      "[ConvTranspose2d] supports padding_mode zeros only");
  expect_error_containing(
      [&] {
        nn::ConvConfig::from_json(
            R"({"in_channels": 1, "out_channels": 1, "kernel_size": [3], "padding_mode": "mirror"})");
      },
      "padding_mode must be \"zeros\", \"reflect\", \"replicate\" or \"circular\", got \"mirror\"");
  expect_error_containing(
      [&] { interpolate(x, std::vector<int64_t>{3}, InterpolateMode::Trilinear); },
      "[interpolate] trilinear mode needs a 5-D input, got [2, 3, 4, 5]");
  expect_error_containing(
      [&] { interpolate(x, std::vector<int64_t>{3}, InterpolateMode::Area, true); },
      "align_corners applies to the linear, bilinear, bicubic and trilinear modes only");
  expect_error_containing(
      [&] {
        interpolate(x, std::vector<int64_t>{3, 4, 5});
      },
      "[interpolate] needs one size per spatial dim of [2, 3, 4, 5]");
  expect_error_containing([&] { interpolate(x, std::vector<double>{0.1}); },
                          "[interpolate] output sizes must be positive, got 0");
  expect_error_containing([&] { interpolate(ints, std::vector<int64_t>{3}); },
                          "[interpolate] expects");
  expect_error_containing([&] { nn::Upsample{}.forward(x); },
                          "[Upsample] needs exactly one of size and scale_factor");
  expect_error_containing(
      [&] {
        adaptive_max_pool2d(x, {0, 2});
      },
      "[adaptive_max_pool2d] output_size must be at least 1, got [0, 2]");
  expect_error_containing([&] { adaptive_max_pool1d(x, {2}); }, "[adaptive_max_pool1d]");
  expect_error_containing(
      [&] {
        max_pool3d(zeros(Shape{4, 5}, DType::f32), {2});
      },
      "[max_pool3d] expects a 5-D input");
  const DynTensor grid = zeros(Shape{2, 3, 3, 2}, DType::f32);
  expect_error_containing(
      [&] {
        grid_sample(zeros(Shape{2, 3, 4}, DType::f32), grid);
      },
      "[grid_sample] expects an input [N, C, H, W]");
  expect_error_containing(
      [&] {
        grid_sample(x, zeros(Shape{2, 3, 3, 3}, DType::f32));
      },
      "[grid_sample] expects a grid [N, H_out, W_out, 2] for input [2, 3, 4, 5], got [2, 3, 3, 3]");
  expect_error_containing([&] { grid_sample(x, cast(grid, DType::f64)); },
                          "input and grid of one dtype");
  expect_error_containing(
      [&] {
        affine_grid(zeros(Shape{2, 3, 3}, DType::f32), Shape{2, 1, 4, 4});
      },
      "[affine_grid] expects a Float theta [2, 2, 3] for size [2, 1, 4, 4], got [2, 3, 3]");
  expect_error_containing(
      [&] {
        affine_grid(zeros(Shape{2, 2, 3}, DType::f32), Shape{2, 4, 4});
      },
      "[affine_grid] size must be [N, C, H, W] or [N, C, D, H, W], got [2, 4, 4]");
  nn::Conv2d reflect(nn::Conv2dConfig(3, 2, {3}).padding({4}).padding_mode(PadMode::Reflect));
  expect_error_containing([&] { reflect.forward(x); },
                          "[Conv2d] reflect padding (4, 4) must be smaller than dimension 2");
}

// The parameterless modules over cosine_similarity / pairwise_distance: the same values as the
// functions (whose rows above check them against float64 references), options, names, JSON.
TEST(VisionModules, CosineSimilarityAndPairwiseDistance) {
  const DynTensor a = make_input(Shape{3, 4, 5}, DType::f64, Layout::Contiguous, -2, 2, 11);
  const DynTensor b = make_input(Shape{3, 4, 5}, DType::f64, Layout::Transposed, -2, 2, 12);
  const nn::CosineSimilarity cos{2, 1e-6};
  const DynTensor c = cos.forward(a, b);
  EXPECT_EQ(c.shape(), (Shape{3, 4}));
  expect_close(c, c.shape(), cosine_similarity(a, b, 2, 1e-6).to_vector<double>(), {0, 0},
               "CosineSimilarity");
  const nn::CosineSimilarity cos_default;
  expect_close(cos_default.forward(a, b), Shape{3, 5}, cosine_similarity(a, b).to_vector<double>(),
               {0, 0}, "CosineSimilarity default dim 1");
  const nn::PairwiseDistance dist{1.5, 1e-4, true};
  const DynTensor d = dist.forward(a, b);
  expect_close(d, Shape{3, 4, 1}, pairwise_distance(a, b, 1.5, 1e-4, true).to_vector<double>(),
               {0, 0}, "PairwiseDistance keepdim");
  EXPECT_EQ(nn::PairwiseDistance{}.forward(a, b).shape(), (Shape{3, 4}));
  // Typed calls.
  const Tensor<3> ta(a), tb(b);
  EXPECT_EQ(cos(ta, tb).dims(), (std::array<int64_t, 2>{3, 4}));
  EXPECT_EQ(dist(ta, tb).shape(), (Shape{3, 4, 1}));
  // Names, no parameters, JSON round trips.
  EXPECT_STREQ(nn::CosineSimilarity::ember_module_name(), "CosineSimilarity");
  EXPECT_STREQ(nn::PairwiseDistance::ember_module_name(), "PairwiseDistance");
  EXPECT_EQ(cos.num_params(), 0);
  EXPECT_EQ(dist.num_params(), 0);
  EXPECT_NE(cos.summary().find("CosineSimilarity"), std::string::npos) << cos.summary();
  EXPECT_NE(dist.summary().find("PairwiseDistance"), std::string::npos) << dist.summary();
  const nn::CosineSimilarity cos_back = nn::CosineSimilarity::from_json(cos.to_json());
  EXPECT_EQ(cos_back.dim, 2);
  EXPECT_EQ(cos_back.eps, 1e-6);
  const nn::PairwiseDistance dist_back = nn::PairwiseDistance::from_json(dist.to_json());
  EXPECT_EQ(dist_back.p, 1.5);
  EXPECT_EQ(dist_back.eps, 1e-4);
  EXPECT_TRUE(dist_back.keepdim);
  // Bad input names the op.
  EXPECT_THROW(
      cos.forward(a, make_input(Shape{3, 4, 6}, DType::f64, Layout::Contiguous, -1, 1, 13)), Error);
}

// ---- deform_conv2d ---------------------------------------------------------------------------

struct DeformCase {
  int64_t n, cin, h, w, cout, kh, kw;
  std::array<int64_t, 2> stride, pad, dil;
  int64_t groups, offset_groups;
  bool mask, bias;
};

int64_t deform_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

// torchvision's deform_conv2d in float64, loop by loop (its bilinear_interpolate included).
std::vector<double> deform_reference(const DeformCase& c, const std::vector<double>& x,
                                     const std::vector<double>& off, const std::vector<double>& m,
                                     const std::vector<double>& wt, const std::vector<double>& b) {
  const int64_t ho = deform_out(c.h, c.kh, c.stride[0], c.pad[0], c.dil[0]);
  const int64_t wo = deform_out(c.w, c.kw, c.stride[1], c.pad[1], c.dil[1]);
  const int64_t k = c.kh * c.kw, cin_g = c.cin / c.groups, cout_g = c.cout / c.groups;
  const int64_t per_og = c.cin / c.offset_groups;
  auto at = [](const std::vector<double>& v, std::initializer_list<int64_t> idx,
               std::initializer_list<int64_t> dims) {
    int64_t o = 0;
    auto d = dims.begin();
    for (int64_t i : idx) o = o * *d++ + i;
    return v[static_cast<size_t>(o)];
  };
  auto pixel = [&](int64_t n, int64_t ch, int64_t yy, int64_t xx) {
    if (yy < 0 || yy >= c.h || xx < 0 || xx >= c.w) return 0.0;
    return at(x, {n, ch, yy, xx}, {c.n, c.cin, c.h, c.w});
  };
  auto bilinear = [&](int64_t n, int64_t ch, double y, double xp) {
    if (y <= -1 || y >= static_cast<double>(c.h) || xp <= -1 || xp >= static_cast<double>(c.w))
      return 0.0;
    const double y0 = std::floor(y), x0 = std::floor(xp), ly = y - y0, lx = xp - x0;
    const auto yi = static_cast<int64_t>(y0), xi = static_cast<int64_t>(x0);
    return (1 - ly) * (1 - lx) * pixel(n, ch, yi, xi) + (1 - ly) * lx * pixel(n, ch, yi, xi + 1) +
           ly * (1 - lx) * pixel(n, ch, yi + 1, xi) + ly * lx * pixel(n, ch, yi + 1, xi + 1);
  };
  std::vector<double> out;
  for (int64_t n = 0; n < c.n; ++n) {
    for (int64_t co = 0; co < c.cout; ++co) {
      for (int64_t oy = 0; oy < ho; ++oy) {
        for (int64_t ox = 0; ox < wo; ++ox) {
          double acc = c.bias ? b[static_cast<size_t>(co)] : 0.0;
          for (int64_t cl = 0; cl < cin_g; ++cl) {
            const int64_t ch = co / cout_g * cin_g + cl, g = ch / per_og;
            for (int64_t i = 0; i < c.kh; ++i) {
              for (int64_t j = 0; j < c.kw; ++j) {
                const int64_t tap = g * k + i * c.kw + j;
                const Shape od{c.n, 2 * c.offset_groups * k, ho, wo};
                const double dy = at(off, {n, 2 * tap, oy, ox}, {od[0], od[1], od[2], od[3]});
                const double dx = at(off, {n, 2 * tap + 1, oy, ox}, {od[0], od[1], od[2], od[3]});
                double v = bilinear(
                    n, ch, static_cast<double>(oy * c.stride[0] - c.pad[0] + i * c.dil[0]) + dy,
                    static_cast<double>(ox * c.stride[1] - c.pad[1] + j * c.dil[1]) + dx);
                if (c.mask) v *= at(m, {n, tap, oy, ox}, {c.n, c.offset_groups * k, ho, wo});
                acc += v * at(wt, {co, cl, i, j}, {c.cout, cin_g, c.kh, c.kw});
              }
            }
          }
          out.push_back(acc);
        }
      }
    }
  }
  return out;
}

const std::vector<DeformCase> kDeformCases = {
    {2, 4, 5, 6, 4, 3, 3, {2, 2}, {1, 1}, {1, 1}, 2, 2, false, true},
    {2, 4, 5, 6, 4, 3, 3, {2, 2}, {1, 1}, {1, 1}, 2, 2, true, true},
    {2, 2, 6, 5, 3, 2, 3, {1, 2}, {2, 1}, {2, 1}, 1, 1, true, false},
    {2, 6, 4, 7, 4, 3, 2, {1, 1}, {0, 1}, {1, 2}, 2, 3, true, true},
};

TEST(VisionTable, DeformConv2d) {
  uint32_t seed = 700;
  for (const DeformCase& c : kDeformCases) {
    const int64_t ho = deform_out(c.h, c.kh, c.stride[0], c.pad[0], c.dil[0]);
    const int64_t wo = deform_out(c.w, c.kw, c.stride[1], c.pad[1], c.dil[1]);
    const int64_t k = c.kh * c.kw;
    for (DType t : kTypes) {
      for (Layout l : {Layout::Contiguous, Layout::Transposed}) {
        const DynTensor x = make_input(Shape{c.n, c.cin, c.h, c.w}, t, l, -1, 1, ++seed);
        // Offsets of magnitude ~2: points between pixels and past the border.
        const DynTensor off = make_input(Shape{c.n, 2 * c.offset_groups * k, ho, wo}, t,
                                         Layout::Contiguous, -2.5, 2.5, ++seed);
        const DynTensor m =
            c.mask ? make_input(Shape{c.n, c.offset_groups * k, ho, wo}, t, l, 0, 1, ++seed)
                   : DynTensor();
        const DynTensor wt = make_input(Shape{c.cout, c.cin / c.groups, c.kh, c.kw}, t,
                                        Layout::Contiguous, -1, 1, ++seed);
        const DynTensor b =
            c.bias ? make_input(Shape{c.cout}, t, Layout::Contiguous, -1, 1, ++seed) : DynTensor();
        auto host = [](const DynTensor& v) {
          return v.defined() ? cast(v, DType::f64).to_vector<double>() : std::vector<double>{};
        };
        const std::vector<double> want =
            deform_reference(c, host(x), host(off), host(m), host(wt), host(b));
        const DynTensor got = deform_conv2d(x, off, wt, b, {c.stride[0], c.stride[1]},
                                            {c.pad[0], c.pad[1]}, {c.dil[0], c.dil[1]}, m);
        EXPECT_EQ(got.dtype(), t);
        expect_close(
            got, Shape{c.n, c.cout, ho, wo}, want, loose(t),
            what("deform_conv2d og" + std::to_string(c.offset_groups) + (c.mask ? " mask" : ""), t,
                 l));
      }
    }
  }
  // Zero offsets and no mask: the plain convolution.
  const DynTensor x = make_input(Shape{2, 4, 5, 6}, DType::f64, Layout::Contiguous, -1, 1, 1);
  const DynTensor wt = make_input(Shape{6, 2, 3, 3}, DType::f64, Layout::Contiguous, -1, 1, 2);
  const DynTensor b = make_input(Shape{6}, DType::f64, Layout::Contiguous, -1, 1, 3);
  const DynTensor zero = zeros(Shape{2, 18, 3, 3}, DType::f64, x.device());
  expect_close(deform_conv2d(x, zero, wt, b, {2}, {1}), Shape{2, 6, 3, 3},
               conv2d(x, wt, b, {2}, {1}, {1}, 2).to_vector<double>(), {1e-12, 1e-12},
               "deform_conv2d zero offset");
}

// Offsets whose fractional part stays in [0.2, 0.8]: the bilinear weights and the border
// validity have kinks at integer positions, where finite differences do not apply.
GradInput deform_offsets(const Shape& shape, uint32_t seed) {
  std::vector<double> v = random_values(shape.numel(), -2.5, 2.5, false, seed);
  for (double& e : v) e = std::floor(e) + 0.2 + 0.6 * (e - std::floor(e));
  return {shape, Layout::Contiguous, v};
}

TEST(VisionGradcheck, DeformConv2d) {
  // groups 2, offset_groups 2, stride 2, padding 1, dilation 2 x 1, with a mask.
  EXPECT_TRUE(
      gradcheck("deform_conv2d mask",
                [](auto& v) {
                  return deform_conv2d(v[0], v[1], v[2], v[3], {2, 1}, {1}, {2, 1}, v[4]);
                },
                {gin({2, 4, 4, 5}, Layout::Transposed, 31), deform_offsets({2, 16, 2, 6}, 32),
                 gin({4, 2, 2, 2}, Layout::Strided, 33), gin({4}, Layout::Contiguous, 34),
                 gin({2, 8, 2, 6}, Layout::Contiguous, 35, 0, 1)}));
  EXPECT_TRUE(gradcheck(
      "deform_conv2d", [](auto& v) { return deform_conv2d(v[0], v[1], v[2], v[3], {1}, {1}); },
      {gin({1, 2, 3, 4}, Layout::Contiguous, 36), deform_offsets({1, 8, 4, 5}, 37),
       gin({3, 2, 2, 2}, Layout::Contiguous, 38), gin({3}, Layout::Contiguous, 39)}));
}

TEST(VisionTable, DeformConv2dErrors) {
  const DynTensor x = zeros(Shape{2, 4, 5, 6}, DType::f32);
  const DynTensor w = zeros(Shape{6, 2, 3, 3}, DType::f32);
  const DynTensor off = zeros(Shape{2, 36, 3, 4}, DType::f32);
  EXPECT_EQ(deform_conv2d(x, off, w, {}, {1}, {0}).shape(), (Shape{2, 6, 3, 4}));
  expect_error_containing(
      [&] {
        deform_conv2d(zeros(Shape{4, 5, 6}, DType::f32), off, w);
      },
      "[deform_conv2d] expects a Float input [N, C, H, W], got [4, 5, 6]");
  expect_error_containing(
      [&] {
        deform_conv2d(x, off, zeros(Shape{6, 3, 3, 3}, DType::f32));
      },
      "[deform_conv2d] weight [6, 3, 3, 3] does not fit input channels 4");
  expect_error_containing(
      [&] {
        deform_conv2d(x, zeros(Shape{2, 17, 3, 4}, DType::f32), w);
      },
      "[deform_conv2d] expects an offset [2, 2 * offset_groups * 9, 3, 4]");
  expect_error_containing(
      [&] {
        deform_conv2d(x, zeros(Shape{2, 54, 3, 4}, DType::f32), w);
      },
      "[deform_conv2d] input channels 4 must be a multiple of offset_groups 3");
  expect_error_containing(
      [&] {
        deform_conv2d(x, off, w, {}, {1}, {0}, {1}, zeros(Shape{2, 9, 3, 4}, DType::f32));
      },
      "[deform_conv2d] expects a mask [2, 18, 3, 4]");
  expect_error_containing([&] { deform_conv2d(x, off, w, zeros(Shape{5}, DType::f32)); },
                          "[deform_conv2d] expects a bias [6]");
  expect_error_containing([&] { deform_conv2d(x, off, w, {}, {0}); },
                          "[deform_conv2d] stride must be >= 1");
  expect_error_containing(
      [&] {
        deform_conv2d(x, off, zeros(Shape{6, 2, 7, 3}, DType::f32));
      },
      "[deform_conv2d] output size");
}

TEST(VisionTable, DeformConv2dModule) {
  nn::DeformConv2d m(
      nn::Conv2dConfig(4, 6, {3, 2}).stride({2}).padding({1}).groups(2).with_dtype(DType::f64));
  std::vector<std::string> names;
  std::vector<Shape> shapes;
  for (const auto& p : nn::named_params(nn::module_tree(m))) {
    names.push_back(p.path);
    shapes.push_back(p.slot->dyn().shape());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"weight", "bias"}));
  ASSERT_EQ(shapes.size(), 2u);
  EXPECT_EQ(shapes[0], (Shape{6, 2, 3, 2}));
  EXPECT_EQ(shapes[1], (Shape{6}));
  // PyTorch's Conv2d bound: 1 / sqrt(in / groups * kh * kw).
  const double bound = 1.0 / std::sqrt(12.0);
  for (double v : m.weight.dyn().to_vector<double>()) EXPECT_LE(std::fabs(v), bound);
  EXPECT_STREQ(nn::DeformConv2d::ember_module_name(), "DeformConv2d");
  const DynTensor x = make_input(Shape{2, 4, 5, 6}, DType::f64, Layout::Contiguous, -1, 1, 41);
  const DynTensor off =
      make_input(Shape{2, 2 * 2 * 6, 3, 4}, DType::f64, Layout::Contiguous, -2, 2, 42);
  const DynTensor mask = make_input(Shape{2, 12, 3, 4}, DType::f64, Layout::Contiguous, 0, 1, 43);
  const DynTensor want = deform_conv2d(x, off, m.weight.dyn(), m.bias->dyn(), {2}, {1}, {1}, mask);
  expect_close(m.forward(x, off, mask), want.shape(), want.to_vector<double>(), {0, 0},
               "DeformConv2d");
  const Tensor<4> y = m(Tensor<4>(x), Tensor<4>(off));
  expect_close(y.dyn(), want.shape(),
               deform_conv2d(x, off, m.weight.dyn(), m.bias->dyn(), {2}, {1}).to_vector<double>(),
               {0, 0}, "DeformConv2d no mask");
  const nn::DeformConv2d nb(nn::Conv2dConfig(2, 2, {2}).bias(false));
  EXPECT_FALSE(nb.bias.has_value());
  expect_error_containing(
      [&] {
        m.forward(zeros(Shape{2, 3, 5, 6}, DType::f64), off);
      },
      "[DeformConv2d] expects an input [N, 4, H, W], got [2, 3, 5, 6]");
}

// torchvision 0.14's deform_conv2d and DeformConv2d (tests/nn/fixtures/make_deform_fixtures.py).
void check_deform(const std::string& name, const SpatialArg& stride, const SpatialArg& padding,
                  const SpatialArg& dilation) {
  SCOPED_TRACE(name);
  static const Fixture fx(EMBER_NN_FIXTURES "/deform.txt");
  std::vector<std::string> keys{"x", "offset", "weight"};
  for (const char* k : {"bias", "mask"}) {
    if (fx.has(name + "." + k)) keys.emplace_back(k);
  }
  std::vector<DynTensor> in;
  for (const std::string& k : keys) in.push_back(require_grad(fx.get(name + "." + k)));
  const DynTensor bias = fx.has(name + ".bias") ? in[3] : DynTensor();
  const DynTensor mask = fx.has(name + ".mask") ? in.back() : DynTensor();
  DynTensor y;
  if (name == "deform_module") {
    nn::DeformConv2d m(nn::Conv2dConfig(4, 6, {3, 2})
                           .stride(stride)
                           .padding(padding)
                           .groups(2)
                           .with_dtype(DType::f64));
    m.weight.set_dyn(in[2]);
    m.bias->set_dyn(in[3]);
    in[2] = m.weight.dyn();
    in[3] = m.bias->dyn();
    y = m.forward(in[0], in[1], mask);
  } else {
    y = deform_conv2d(in[0], in[1], in[2], bias, stride, padding, dilation, mask);
  }
  fx.expect_close(y, name + ".y", 1e-9, 1e-11);
  const std::vector<DynTensor> g = grad(y, in, fx.get(name + ".seed"));
  for (size_t i = 0; i < keys.size(); ++i) {
    fx.expect_close(g[i], name + ".grad_" + keys[i], 1e-9, 1e-11);
  }
}

TEST(VisionParity, DeformConv2d) {
  check_deform("deform_mask", {2}, {1}, {1});
  check_deform("deform_nomask", {1, 2}, {2, 1}, {2, 1});
  check_deform("deform_og3_nobias", {1}, {0, 1}, {1, 2});
  check_deform("deform_module", {2}, {1}, {1});
}

}  // namespace
}  // namespace ember::test
