// Convolution (1-d, 2-d, 3-d, transposed; stride, padding, dilation, groups, depthwise, bias)
// and pooling (max with indices, average, adaptive average) against naive float64 references
// on random inputs, in every float dtype and in non-contiguous layouts; then the error paths.
#include <algorithm>
#include <cmath>
#include <string>

#include "test_util.hpp"

namespace ember::test {
namespace {

// Spatial sizes right-aligned in three slots (leading slots 1), so one loop nest is N-d.
struct Sp {
  int64_t v[3] = {1, 1, 1};
  int64_t size() const { return v[0] * v[1] * v[2]; }
};
Sp sp_of(const Shape& s, int first, int spatial) {
  Sp r;
  for (int i = 0; i < spatial; ++i) r.v[3 - spatial + i] = s[first + i];
  return r;
}
Sp sp_args(const std::vector<int64_t>& a, int spatial, int64_t pad_value) {
  Sp r;
  for (int i = 0; i < 3; ++i) r.v[i] = pad_value;
  for (int i = 0; i < spatial; ++i) r.v[3 - spatial + i] = a.size() == 1 ? a[0] : a[size_t(i)];
  return r;
}

struct ConvCase {
  int spatial;
  int64_t n, c, o;
  std::vector<int64_t> in, k, stride = {1}, padding = {0}, dilation = {1};
  int64_t groups = 1;
  bool bias = true;
  bool transposed = false;
  std::vector<int64_t> output_padding = {0};
  Layout layout = Layout::Contiguous;  // of the input
  bool relu = false;                   // fused: conv2d(..., relu)
};

std::string describe(const ConvCase& c) {
  auto l = [](const std::vector<int64_t>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) s += ",";
      s += std::to_string(v[i]);
    }
    return s + "]";
  };
  return std::string(c.transposed ? "conv_transpose" : "conv") + std::to_string(c.spatial) + "d n" +
         std::to_string(c.n) + " c" + std::to_string(c.c) + " o" + std::to_string(c.o) + " in" +
         l(c.in) + " k" + l(c.k) + " s" + l(c.stride) + " p" + l(c.padding) + " d" + l(c.dilation) +
         " g" + std::to_string(c.groups) + (c.bias ? " bias" : "") +
         (c.transposed ? " op" + l(c.output_padding) : "") + " " + layout_name(c.layout) +
         (c.relu ? " relu" : "");
}

// Reference conv / transposed conv on host values; also the sum of |terms| per output (the
// scale rounding errors grow with).
void conv_ref(const ConvCase& c, const Host& x, const Host& w, const Host* b, const Shape& y_shape,
              std::vector<double>* out, std::vector<double>* scale) {
  const int sp = c.spatial;
  const Sp in = sp_of(x.shape, 2, sp), k = sp_of(w.shape, 2, sp), yo = sp_of(y_shape, 2, sp);
  const Sp s = sp_args(c.stride, sp, 1), p = sp_args(c.padding, sp, 0),
           d = sp_args(c.dilation, sp, 1);
  const int64_t g = c.groups, cg = c.c / g, og = c.o / g;
  out->assign(size_t(y_shape.numel()), 0.0);
  scale->assign(out->size(), 0.0);
  auto add = [&](int64_t n, int64_t o, const int64_t* pos, double v) {
    const int64_t at =
        ((n * c.o + o) * yo.v[0] + pos[0]) * yo.v[1] * yo.v[2] + pos[1] * yo.v[2] + pos[2];
    (*out)[size_t(at)] += v;
    (*scale)[size_t(at)] += std::fabs(v);
  };
  // Walk every (input position, kernel offset) pair; the output position follows from both.
  for (int64_t n = 0; n < c.n; ++n) {
    for (int64_t ci = 0; ci < c.c; ++ci) {
      const int64_t gi = ci / cg;
      for (int64_t oi = 0; oi < og; ++oi) {
        const int64_t o = gi * og + oi;
        for (int64_t kk = 0; kk < k.size(); ++kk) {
          const int64_t kp[3] = {kk / (k.v[1] * k.v[2]), (kk / k.v[2]) % k.v[1], kk % k.v[2]};
          const double wv = c.transposed ? w.v[size_t((ci * og + oi) * k.size() + kk)]
                                         : w.v[size_t((o * cg + ci % cg) * k.size() + kk)];
          if (!c.transposed) {
            for (int64_t yy = 0; yy < yo.size(); ++yy) {
              const int64_t op[3] = {yy / (yo.v[1] * yo.v[2]), (yy / yo.v[2]) % yo.v[1],
                                     yy % yo.v[2]};
              int64_t ip[3];
              bool inside = true;
              for (int i = 0; i < 3; ++i) {
                ip[i] = op[i] * s.v[i] - p.v[i] + kp[i] * d.v[i];
                inside = inside && ip[i] >= 0 && ip[i] < in.v[i];
              }
              if (!inside) continue;
              const double xv = x.v[size_t((n * c.c + ci) * in.size() +
                                           (ip[0] * in.v[1] + ip[1]) * in.v[2] + ip[2])];
              add(n, o, op, xv * wv);
            }
          } else {
            for (int64_t xx = 0; xx < in.size(); ++xx) {
              const int64_t ip[3] = {xx / (in.v[1] * in.v[2]), (xx / in.v[2]) % in.v[1],
                                     xx % in.v[2]};
              int64_t op[3];
              bool inside = true;
              for (int i = 0; i < 3; ++i) {
                op[i] = ip[i] * s.v[i] - p.v[i] + kp[i] * d.v[i];
                inside = inside && op[i] >= 0 && op[i] < yo.v[i];
              }
              if (!inside) continue;
              add(n, o, op, x.v[size_t((n * c.c + ci) * in.size() + xx)] * wv);
            }
          }
        }
      }
    }
  }
  if (b) {
    for (int64_t i = 0; i < y_shape.numel(); ++i) {
      const int64_t o = (i / yo.size()) % c.o;
      (*out)[size_t(i)] += b->v[size_t(o)];
      (*scale)[size_t(i)] += std::fabs(b->v[size_t(o)]);
    }
  }
  if (c.relu) {
    for (double& v : *out) v = v < 0 ? 0 : v;
  }
}

DynTensor conv_call(const ConvCase& c, const DynTensor& x, const DynTensor& w, const DynTensor& b) {
  if (c.transposed) {
    switch (c.spatial) {
      case 1:
        return conv_transpose1d(x, w, b, c.stride, c.padding, c.output_padding, c.groups,
                                c.dilation);
      case 2:
        return conv_transpose2d(x, w, b, c.stride, c.padding, c.output_padding, c.groups,
                                c.dilation);
      default:
        return conv_transpose3d(x, w, b, c.stride, c.padding, c.output_padding, c.groups,
                                c.dilation);
    }
  }
  switch (c.spatial) {
    case 1:
      return conv1d(x, w, b, c.stride, c.padding, c.dilation, c.groups, c.relu);
    case 2:
      return conv2d(x, w, b, c.stride, c.padding, c.dilation, c.groups, c.relu);
    default:
      return conv3d(x, w, b, c.stride, c.padding, c.dilation, c.groups, c.relu);
  }
}

Shape conv_out_shape(const ConvCase& c, const Shape& wshape) {
  Shape s{c.n, c.o};
  const Sp st = sp_args(c.stride, c.spatial, 1), p = sp_args(c.padding, c.spatial, 0),
           d = sp_args(c.dilation, c.spatial, 1), op = sp_args(c.output_padding, c.spatial, 0);
  for (int i = 0; i < c.spatial; ++i) {
    const int j = 3 - c.spatial + i;
    const int64_t eff = d.v[j] * (wshape[2 + i] - 1) + 1, in = c.in[size_t(i)];
    s.push_back(c.transposed ? (in - 1) * st.v[j] - 2 * p.v[j] + eff + op.v[j]
                             : (in + 2 * p.v[j] - eff) / st.v[j] + 1);
  }
  return s;
}

const std::vector<ConvCase>& conv_cases() {
  using L = Layout;
  static const std::vector<ConvCase> cases = {
      // 2-d: the common layers.
      {2, 2, 3, 4, {7, 6}, {3, 3}},
      {2, 2, 3, 4, {7, 6}, {3, 3}, {1}, {1}},
      {2, 1, 4, 6, {9, 8}, {3, 2}, {2, 1}, {1, 0}, {1}, 1, false},
      {2, 2, 4, 6, {9, 9}, {3, 3}, {2}, {2}, {2}, 2},  // groups 2, dilation
      {2, 2, 4, 4, {8, 7}, {3, 3}, {1}, {1}, {1}, 4},  // depthwise
      {2, 1, 4, 8, {6, 6}, {3, 3}, {2}, {1}, {1}, 4, true, false, {0}, Layout::Strided},
      {2, 3, 5, 3, {5, 4}, {1, 1}},  // pointwise
      {2, 2, 3, 5, {6, 5}, {1, 1}, {2}, {0}, {1}, 1, true, false, {0}, Layout::Transposed},
      {2, 2, 3, 4, {5, 5}, {5, 5}, {1}, {2}},                  // kernel as large as input
      {2, 1, 2, 3, {10, 11}, {2, 3}, {3, 2}, {0, 1}, {2, 3}},  // stride not dividing
      {2, 1, 16, 16, {12, 12}, {3, 3}, {1}, {1}},              // wider channels
      {2, 2, 3, 4, {7, 6}, {3, 3}, {1}, {1}, {1}, 1, true, false, {0}, Layout::Transposed},
      // 2-d, 1 to 4 input channels, stride 1: the direct kernels (conv_direct.cpp). Output
      // widths 26, 11 and 9 (vectors of 8 + a 4 overlapping them), 28 (24 + 4), 14 (8 + 4 + an
      // overlapping 4), 5 and 7 (4 + an overlapping 4); odd row counts; output channels that
      // are not a multiple of the blocks; then too narrow (3) and too many channels (8).
      {2, 10, 1, 32, {28, 28}, {3, 3}, {1}, {0}, {1}, 1, true, false, {0}, L::Contiguous, true},
      {2, 2, 1, 7, {11, 13}, {3, 3}, {1}, {0}, {1}, 1, false},
      {2, 2, 1, 7, {11, 13}, {3, 3}, {1}, {0}, {1}, 1, false, false, {0}, L::Contiguous, true},
      {2, 2, 2, 5, {9, 30}, {3, 3}, {1}, {0}, {1}, 1, true, false, {0}, L::Contiguous, true},
      {2, 2, 3, 4, {8, 14}, {3, 3}, {1}, {1}, {1}, 1, true, false, {0}, L::Transposed, true},
      {2, 1, 4, 6, {7, 9}, {5, 5}, {1}, {2}},      // kernel rows one pass each
      {2, 3, 1, 5, {6, 7}, {2, 3}},                // 2-row kernel, output 5 x 5
      {2, 1, 2, 9, {10, 8}, {4, 2}, {1}, {1, 0}},  // 4 x 2: 9 outputs = 4 + 4 + 1
      {2, 2, 3, 4, {5, 10}, {3, 6}, {1}, {0}, {1}, 1, false},
      {2, 2, 1, 3, {5, 5}, {3, 3}, {1}, {0}, {1}, 1, true, false, {0}, L::Contiguous, true},
      {2, 2, 8, 6, {9, 9}, {3, 3}, {1}, {1}, {1}, 1, true, false, {0}, L::Contiguous, true},
      // 1-d and 3-d.
      {1, 2, 3, 4, {11}, {3}},
      {1, 2, 4, 6, {13}, {4}, {3}, {2}, {2}, 2},
      {1, 1, 6, 6, {9}, {5}, {1}, {2}, {1}, 6, true, false, {0}, Layout::Strided},
      {3, 1, 2, 3, {5, 4, 6}, {2, 3, 3}, {1}, {1}},
      {3, 2, 4, 4, {5, 5, 5}, {3, 3, 3}, {2, 1, 2}, {1, 0, 1}, {1, 2, 1}, 2},
      // Transposed.
      {2, 2, 3, 4, {4, 5}, {3, 3}, {1}, {0}, {1}, 1, true, true},
      {2, 2, 4, 6, {4, 3}, {3, 2}, {2}, {1}, {1}, 2, true, true, {1}},
      {2, 1, 4, 4, {3, 4}, {3, 3}, {2, 3}, {1, 0}, {2, 1}, 4, false, true, {1, 2}},
      {2, 2, 3, 2, {5, 5}, {2, 2}, {1}, {0}, {3}, 1, true, true, {2}},  // output_padding < dil
      {2, 1, 3, 5, {4, 4}, {3, 3}, {2}, {1}, {1}, 1, true, true, {1}, Layout::Transposed},
      {1, 2, 4, 6, {7}, {3}, {2}, {1}, {1}, 2, true, true, {1}},
      {1, 1, 3, 2, {5}, {4}, {3}, {0}, {2}, 1, false, true, {0}, Layout::Strided},
      // Transposed 3-d: plain; stride, padding, output_padding per dim, groups, dilation;
      // output_padding below the dilation only; a non-contiguous input.
      {3, 2, 3, 4, {3, 4, 3}, {2, 3, 2}, {1}, {0}, {1}, 1, true, true},
      {3, 1, 4, 6, {3, 3, 4}, {3, 2, 3}, {2, 1, 3}, {1, 0, 1}, {1, 2, 1}, 2, true, true, {1, 0, 2}},
      {3, 2, 2, 3, {3, 2, 3}, {2, 2, 2}, {1}, {1}, {3}, 1, false, true, {2}},
      {3, 1, 3, 2, {2, 3, 3}, {3, 2, 2}, {2}, {0}, {1}, 1, true, true, {1}, Layout::Transposed},
  };
  return cases;
}

TEST(ConvTable, Conv) {
  uint32_t seed = 700;
  int checked = 0;
  for (DType dtype : kFloatTypes) {
    for (const ConvCase& c : conv_cases()) {
      Shape xs{c.n, c.c};
      for (int64_t v : c.in) xs.push_back(v);
      Shape ws = c.transposed ? Shape{c.c, c.o / c.groups} : Shape{c.o, c.c / c.groups};
      for (int64_t v : c.k) ws.push_back(v);
      const DynTensor x = make_input(xs, dtype, c.layout, -2, 2, seed++);
      const DynTensor w = make_input(ws, dtype, Layout::Contiguous, -1, 1, seed++);
      const DynTensor b =
          c.bias ? make_input(Shape{c.o}, dtype, Layout::Contiguous, -1, 1, seed++) : DynTensor();
      const std::string what = std::string(dtype_name(dtype)) + " " + describe(c);
      const Shape ys = conv_out_shape(c, ws);
      const Host hb = c.bias ? Host::of(b) : Host{};
      std::vector<double> want, scale;
      conv_ref(c, Host::of(x), Host::of(w), c.bias ? &hb : nullptr, ys, &want, &scale);
      DynTensor y;
      try {
        y = conv_call(c, x, w, b);
      } catch (const Error& e) {
        ADD_FAILURE() << what << ": threw " << e.what();
        continue;
      }
      ASSERT_EQ(to_string(y.shape()), to_string(ys)) << what;
      ASSERT_EQ(y.dtype(), dtype) << what;
      const std::vector<double> got = y.to_vector<double>();
      const Tol tol = tol_for(dtype);
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_LE(std::fabs(got[i] - want[i]),
                  tol.atol + tol.rtol * (std::fabs(want[i]) + scale[i]))
            << what << " element " << i << ": got " << got[i] << ", expected " << want[i];
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, int(conv_cases().size() * kFloatTypes.size()));
}

// Large enough for the library paths (oneDNN's blocked layouts, BLAS) and several threads: f32
// forward and both backward kernels (through autodiff) against the same in f64.
TEST(ConvTable, LargeMatchesFloat64) {
  struct Big {
    Shape x, w;
    SpatialArg stride, padding, dilation;
    int64_t groups;
    bool transposed;
  };
  const std::vector<Big> bigs = {
      {Shape{3, 32, 20, 18}, Shape{48, 16, 3, 3}, {2}, {1}, {1}, 2, false},
      {Shape{2, 64, 14, 14}, Shape{64, 64, 3, 3}, {1}, {1}, {1}, 1, false},
      {Shape{2, 32, 15, 16}, Shape{32, 1, 3, 3}, {1}, {2}, {2}, 32, false},
      {Shape{2, 24, 40}, Shape{40, 24, 5}, {2}, {2}, {1}, 1, false},
      {Shape{1, 8, 6, 9, 7}, Shape{16, 8, 3, 3, 3}, {1, 2, 1}, {1}, {1}, 1, false},
      {Shape{2, 32, 9, 10}, Shape{32, 16, 4, 4}, {2}, {1}, {1}, 1, true},
      {Shape{2, 64, 12, 12}, Shape{32, 64, 1, 1}, {1}, {0}, {1}, 1, false},
  };
  uint32_t seed = 1;
  for (const Big& b : bigs) {
    const DynTensor x64 = make_input(b.x, DType::f64, Layout::Contiguous, -1, 1, seed++);
    const DynTensor w64 = make_input(b.w, DType::f64, Layout::Contiguous, -1, 1, seed++);
    ConvParams p;
    p.spatial = b.x.rank() - 2;
    for (int i = 0; i < p.spatial; ++i) {
      p.stride[i] = b.stride.size() == 1 ? b.stride[0] : b.stride[size_t(i)];
      p.padding[i] = b.padding[0];
      p.dilation[i] = b.dilation[0];
    }
    p.groups = b.groups;
    auto run = [&](DType dt) {
      const DynTensor x = require_grad(cast(x64, dt)), w = require_grad(cast(w64, dt));
      const DynTensor y = convolution(x, w, {}, p, b.transposed);
      const DynTensor g =
          cast(make_input(y.shape(), DType::f64, Layout::Contiguous, -1, 1, 99), dt);
      const std::vector<DynTensor> gs = grad(y, {x, w}, g);
      return std::vector<DynTensor>{y, gs[0], gs[1]};
    };
    const auto ref = run(DType::f64);
    const auto f32 = run(DType::f32);
    const char* names[] = {"forward", "grad input", "grad weight"};
    for (size_t i = 0; i < 3; ++i) {
      const std::vector<double> a = f32[i].to_vector<double>(), r = ref[i].to_vector<double>();
      double worst = 0, big = 0;
      for (size_t j = 0; j < a.size(); ++j) {
        worst = std::max(worst, std::fabs(a[j] - r[j]));
        big = std::max(big, std::fabs(r[j]));
      }
      EXPECT_LT(worst, 1e-5 * (1 + big)) << names[i] << " x " << to_string(b.x) << " w "
                                         << to_string(b.w) << (b.transposed ? " transposed" : "");
    }
  }
}

// Input, weight and bias gradients of the table's convolutions (relu off) in every float dtype
// against float64, each element within tolerance of its reference plus the same gradient taken
// over absolute values (the scale rounding grows with); then the weight gradient alone, with
// no bias gradient asked beside it.
TEST(ConvTable, GradientsMatchFloat64) {
  uint32_t seed = 900;
  for (ConvCase c : conv_cases()) {
    if (c.transposed) continue;
    c.relu = false;
    Shape xs{c.n, c.c}, ws{c.o, c.c / c.groups};
    for (int64_t v : c.in) xs.push_back(v);
    for (int64_t v : c.k) ws.push_back(v);
    const DynTensor x0 = make_input(xs, DType::f64, c.layout, -2, 2, seed++);
    const DynTensor w0 = make_input(ws, DType::f64, Layout::Contiguous, -1, 1, seed++);
    const DynTensor b0 = make_input(Shape{c.o}, DType::f64, Layout::Contiguous, -1, 1, seed++);
    const DynTensor g0 =
        make_input(conv_out_shape(c, ws), DType::f64, Layout::Contiguous, -1, 1, seed++);
    for (DType dtype : kFloatTypes) {
      const std::string what = std::string(dtype_name(dtype)) + " " + describe(c);
      // Inputs rounded to dtype once, so the reference sees the same values.
      auto in = [&](const DynTensor& t) { return cast(cast(t, dtype), DType::f64); };
      auto grads = [&](const DynTensor& x, const DynTensor& w, const DynTensor& b,
                       const DynTensor& g) {
        const DynTensor xr = require_grad(x), wr = require_grad(w), br = require_grad(b);
        return grad(conv_call(c, xr, wr, c.bias ? br : DynTensor()), {xr, wr, br}, g);
      };
      const auto want = grads(in(x0), in(w0), in(b0), in(g0));
      const auto scale = grads(abs(in(x0)), abs(in(w0)), abs(in(b0)), abs(in(g0)));
      const DynTensor x = cast(x0, dtype), w = cast(w0, dtype), g = cast(g0, dtype);
      const auto got = grads(x, w, cast(b0, dtype), g);
      const char* names[] = {"grad input", "grad weight", "grad bias"};
      const Tol tol = tol_for(dtype);
      for (size_t i = 0; i < 3; ++i) {
        if (i == 2 && !c.bias) continue;
        ASSERT_EQ(got[i].dtype(), dtype) << what << " " << names[i];
        const std::vector<double> a = got[i].to_vector<double>(), r = want[i].to_vector<double>(),
                                  sc = scale[i].to_vector<double>();
        ASSERT_EQ(a.size(), r.size()) << what << " " << names[i];
        for (size_t j = 0; j < a.size(); ++j) {
          ASSERT_LE(std::fabs(a[j] - r[j]), tol.atol + tol.rtol * (std::fabs(r[j]) + sc[j]))
              << what << " " << names[i] << " element " << j << ": got " << a[j] << ", expected "
              << r[j];
        }
      }
      // The weight gradient without a bias gradient beside it.
      const DynTensor wr = require_grad(w);
      const std::vector<double> alone =
          grad(conv_call(c, x, wr, DynTensor()), {wr}, g)[0].to_vector<double>();
      const std::vector<double> r = want[1].to_vector<double>(), sc = scale[1].to_vector<double>();
      for (size_t j = 0; j < alone.size(); ++j) {
        ASSERT_LE(std::fabs(alone[j] - r[j]), tol.atol + tol.rtol * (std::fabs(r[j]) + sc[j]))
            << what << " grad weight alone, element " << j;
      }
    }
  }
}

// The direct kernels sum the weight and bias gradients in partials of a fixed size, so any
// thread count gives the same bits (as it does for the forward).
TEST(ConvTable, DirectKernelsIndependentOfThreadCount) {
  // Elsewhere (Cuda, LibTorch) the claim is run-to-run repeatability at one thread count, which
  // cuDNN's gradients give under deterministic algorithms (as PyTorch's); ATen's Cpu convolution
  // sums in an order that depends on its thread count, so the count is left alone there.
  const bool cpu = default_device().is_cpu();
  if (!cpu) use_deterministic_algorithms(true);
  const int threads = cpu::num_threads();
  const DynTensor x = make_input(Shape{20, 2, 17, 21}, DType::f32, Layout::Contiguous, -2, 2, 3);
  const DynTensor w = make_input(Shape{11, 2, 3, 3}, DType::f32, Layout::Contiguous, -1, 1, 4);
  const DynTensor b = make_input(Shape{11}, DType::f32, Layout::Contiguous, -1, 1, 5);
  auto run = [&](int n) {
    if (cpu) cpu::set_num_threads(n);
    const DynTensor xr = require_grad(x), wr = require_grad(w), br = require_grad(b);
    const DynTensor y = conv2d(xr, wr, br, {1}, {1}, {1}, 1, true);
    const DynTensor g = make_input(y.shape(), DType::f32, Layout::Contiguous, -1, 1, 6);
    std::vector<DynTensor> out = grad(y, {wr, br}, g);
    out.insert(out.begin(), y);
    return out;
  };
  const auto one = run(1);
  for (int n : {2, 3}) {
    const auto many = run(n);
    for (size_t i = 0; i < one.size(); ++i) {
      EXPECT_EQ(one[i].to_vector<float>(), many[i].to_vector<float>()) << n << " threads, " << i;
    }
  }
  cpu::set_num_threads(threads);
  use_deterministic_algorithms(false);
}

// An infinite input under the columns where the weight gradient's last vector overlaps the one
// before: the lanes it masks off must not turn the infinite sums into NaN (0 * inf).
TEST(ConvTable, WeightGradientWithInfinity) {
  for (const int64_t w : {13, 19}) {  // output widths 11 and 17: 8 (+ 8) + 4 overlapping
    const Shape xs{1, 2, 5, w};
    std::vector<double> xv = random_values(xs.numel(), 0.5, 1, false, 8);
    xv[size_t(2 * w + w - 5)] = INFINITY;  // channel 0, row 2, in the last vector's first lanes
    const DynTensor x64 = from_data(TensorData::from(xv, xs));
    const DynTensor g64 =
        make_input(Shape{1, 3, 3, w - 2}, DType::f64, Layout::Contiguous, 0.5, 1, 9);
    ConvParams p;
    p.spatial = 2;
    const std::vector<double> want =
        conv_backward_weight(x64, g64, Shape{3, 2, 3, 3}, p).to_vector<double>();
    const std::vector<double> got =
        conv_backward_weight(cast(x64, DType::f32), cast(g64, DType::f32), Shape{3, 2, 3, 3}, p)
            .to_vector<double>();
    int infinite = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      infinite += std::isinf(want[i]);
      EXPECT_TRUE(std::isinf(want[i]) ? got[i] == want[i]
                                      : std::fabs(got[i] - want[i]) <= 1e-4 * std::fabs(want[i]))
          << "width " << w << " element " << i << ": got " << got[i] << ", expected " << want[i];
    }
    EXPECT_GT(infinite, 0);
  }
}

// The fused relu on NaN, infinities and signed zeros: bit for bit relu() after the unfused
// convolution (NaN stays NaN, -0 stays -0). Channel 0 sums a -0 bias and negative weights
// times +0 inputs, which is -0; the infinities meet zero weights in channel 1 (NaN).
TEST(ConvTable, FusedReluSpecialValues) {
  const int64_t h = 6, w = 13;
  std::vector<double> xv(size_t(2 * h * w), 0.0);
  for (size_t i = 0; i < xv.size(); ++i) {
    const int r = int((i * 37) % 17);
    xv[i] = r == 0 ? NAN : r == 1 ? INFINITY : r == 2 ? -INFINITY : r < 9 ? 0.0 : (r % 5) - 2.5;
  }
  std::fill(xv.begin(), xv.begin() + 3 * w, 0.0);  // image 0's first output row: all zero terms
  std::vector<double> wv(size_t(4 * 9));
  for (size_t i = 0; i < wv.size(); ++i) {
    wv[i] = i < 9 ? -0.5 : i < 18 ? (i % 2 ? 0.0 : 1.0) : double(int(i % 7) - 3);
  }
  for (DType dtype : {DType::f32, DType::f64}) {
    const DynTensor x = cast(from_data(TensorData::from(xv, Shape{2, 1, h, w})), dtype);
    const DynTensor wt = cast(from_data(TensorData::from(wv, Shape{4, 1, 3, 3})), dtype);
    const DynTensor b = cast(
        from_data(TensorData::from(std::vector<double>{-0.0, 0.5, -0.0, 1.0}, Shape{4})), dtype);
    const std::vector<double> fused = conv2d(x, wt, b, {1}, {0}, {1}, 1, true).to_vector<double>();
    const std::vector<double> plain = relu(conv2d(x, wt, b)).to_vector<double>();
    ASSERT_EQ(fused.size(), plain.size());
    int nans = 0, negative_zeros = 0;
    for (size_t i = 0; i < fused.size(); ++i) {
      const bool same = std::isnan(plain[i]) ? std::isnan(fused[i])
                                             : fused[i] == plain[i] &&
                                                   std::signbit(fused[i]) == std::signbit(plain[i]);
      EXPECT_TRUE(same) << dtype_name(dtype) << " element " << i << ": fused " << fused[i]
                        << ", relu after " << plain[i];
      nans += std::isnan(fused[i]);
      negative_zeros += fused[i] == 0 && std::signbit(fused[i]);
    }
    EXPECT_GT(nans, 0) << dtype_name(dtype);
    // The Cpu's direct kernel (f32) starts each sum from the bias, so it makes -0 there; the
    // GEMM path (f64) adds the bias to a +0 sum.
    if (dtype == DType::f32 && default_device().is_cpu()) {
      EXPECT_GT(negative_zeros, 0);
    }
  }
}

// ---- Pooling --------------------------------------------------------------------------------

enum class PoolKind { Max, Avg, Adaptive };

struct PoolCase {
  PoolKind kind;
  int spatial;
  Shape x;
  std::vector<int64_t> k, stride = {}, padding = {0}, dilation = {1};
  bool ceil_mode = false, count_include_pad = true;
  Layout layout = Layout::Contiguous;
};

std::string describe(const PoolCase& c) {
  auto l = [](const std::vector<int64_t>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) s += ",";
      s += std::to_string(v[i]);
    }
    return s + "]";
  };
  const char* kind = c.kind == PoolKind::Max   ? "max_pool"
                     : c.kind == PoolKind::Avg ? "avg_pool"
                                               : "adaptive_avg_pool";
  return std::string(kind) + std::to_string(c.spatial) + "d x" + to_string(c.x) + " k" + l(c.k) +
         " s" + l(c.stride) + " p" + l(c.padding) + " d" + l(c.dilation) +
         (c.ceil_mode ? " ceil" : "") + (c.count_include_pad ? "" : " exclude_pad") + " " +
         layout_name(c.layout);
}

int64_t pool_out_ref(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  const double v = double(in + 2 * p - d * (k - 1) - 1) / double(s);
  int64_t out = int64_t(ceil_mode ? std::ceil(v) : std::floor(v)) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

// Reference pooling: values and (max) flat indices per output, output shape in `shape`.
void pool_ref(const PoolCase& c, const Host& x, Shape* shape, std::vector<double>* vals,
              std::vector<int64_t>* idx) {
  const int sp = c.spatial, lead = x.shape.rank() - sp;
  const Sp in = sp_of(x.shape, lead, sp);
  Sp k = sp_args(c.k, sp, 1), s = sp_args(c.stride.empty() ? c.k : c.stride, sp, 1),
     p = sp_args(c.padding, sp, 0), d = sp_args(c.dilation, sp, 1), out;
  *shape = x.shape;
  for (int i = 0; i < 3; ++i) {
    if (i < 3 - sp) continue;
    out.v[i] = c.kind == PoolKind::Adaptive
                   ? k.v[i]
                   : pool_out_ref(in.v[i], k.v[i], s.v[i], p.v[i], d.v[i], c.ceil_mode);
    (*shape)[lead + i - (3 - sp)] = out.v[i];
  }
  int64_t planes = 1;
  for (int i = 0; i < lead; ++i) planes *= x.shape[i];
  vals->clear();
  idx->clear();
  for (int64_t b = 0; b < planes; ++b) {
    for (int64_t oo = 0; oo < out.size(); ++oo) {
      const int64_t op[3] = {oo / (out.v[1] * out.v[2]), (oo / out.v[2]) % out.v[1], oo % out.v[2]};
      int64_t lo[3], hi[3], cnt = 1, step[3];
      for (int i = 0; i < 3; ++i) {
        if (c.kind == PoolKind::Adaptive) {
          lo[i] = int64_t(std::floor(double(op[i] * in.v[i]) / double(out.v[i])));
          hi[i] = int64_t(std::ceil(double((op[i] + 1) * in.v[i]) / double(out.v[i])));
          step[i] = 1;
          cnt *= hi[i] - lo[i];
        } else {
          lo[i] = op[i] * s.v[i] - p.v[i];
          hi[i] = lo[i] + (k.v[i] - 1) * d.v[i] + 1;
          step[i] = d.v[i];
          const int64_t padded_hi = std::min(hi[i], in.v[i] + p.v[i]);
          cnt *= c.count_include_pad ? padded_hi - lo[i]
                                     : std::min(hi[i], in.v[i]) - std::max<int64_t>(lo[i], 0);
        }
      }
      double best = -INFINITY, sum = 0;
      int64_t arg = -1;
      for (int64_t a0 = lo[0]; a0 < hi[0]; a0 += step[0]) {
        for (int64_t a1 = lo[1]; a1 < hi[1]; a1 += step[1]) {
          for (int64_t a2 = lo[2]; a2 < hi[2]; a2 += step[2]) {
            if (a0 < 0 || a1 < 0 || a2 < 0 || a0 >= in.v[0] || a1 >= in.v[1] || a2 >= in.v[2]) {
              continue;
            }
            const int64_t at = (a0 * in.v[1] + a1) * in.v[2] + a2;
            const double v = x.v[size_t(b * in.size() + at)];
            sum += v;
            if (arg < 0 || v > best) best = v, arg = at;
          }
        }
      }
      vals->push_back(c.kind == PoolKind::Max ? best : sum / double(cnt));
      idx->push_back(arg);
    }
  }
}

const std::vector<PoolCase>& pool_cases() {
  using K = PoolKind;
  static const std::vector<PoolCase> cases = {
      {K::Max, 2, Shape{2, 3, 8, 7}, {2}},
      {K::Max, 2, Shape{2, 3, 7, 9}, {2}, {2}},     // 2x2 / 2: the CNN's pool (own loop)
      {K::Max, 2, Shape{2, 3, 6, 21}, {2}, {2}},    // ... 8 outputs a vector, 2 in the tail
      {K::Max, 2, Shape{3, 4, 11, 11}, {2}, {2}},   // ... rows of 5: the tail from full loads
      {K::Max, 2, Shape{1, 2, 6, 7}, {3, 2}, {1}},  // inside windows, dense kernel
      {K::Max, 2, Shape{2, 3, 9, 8}, {3}, {2}, {1}},
      {K::Max, 2, Shape{1, 2, 9, 10}, {3, 2}, {2, 3}, {1, 0}, {2, 1}},
      {K::Max, 2, Shape{2, 2, 8, 8}, {3}, {2}, {1}, {1}, true, true, Layout::Transposed},
      {K::Max, 2, Shape{2, 7, 7}, {3}, {2}, {0}, {1}, true},  // unbatched, ceil_mode
      {K::Max, 2, Shape{1, 3, 5, 6}, {2}, {1}, {1}, {2}, false, true, Layout::Strided},
      // ResNet's stem pool, 3x3 / 2 / pad 1: rows of 19 outputs (two vectors and a tail of 3)
      {K::Max, 2, Shape{2, 3, 13, 37}, {3}, {2}, {1}},
      {K::Max, 2, Shape{1, 2, 9, 21}, {3}, {1}, {1}},                // stride 1: 21 = 16 + 5
      {K::Max, 2, Shape{1, 3, 11, 40}, {3}, {2}, {1}, {2}},          // stride 2, dilated
      {K::Max, 2, Shape{1, 2, 10, 30}, {3}, {3}, {1}, {1}, true},    // stride 3: the scalar loop
      {K::Max, 2, Shape{2, 1, 9, 34}, {2, 3}, {2}, {1}, {1}, true},  // ceil_mode past the end
      {K::Max, 1, Shape{2, 3, 11}, {3}, {2}, {1}},
      {K::Max, 1, Shape{3, 12}, {4}, {3}, {2}, {1}, true},
      {K::Max, 1, Shape{2, 2, 10}, {2}, {1}, {0}, {3}, false, true, Layout::Strided},
      {K::Avg, 2, Shape{2, 3, 8, 7}, {2}},
      {K::Avg, 2, Shape{2, 3, 9, 8}, {3}, {2}, {1}},
      {K::Avg, 2, Shape{2, 3, 9, 8}, {3}, {2}, {1}, {1}, false, false},
      {K::Avg, 2, Shape{1, 2, 7, 7}, {3}, {2}, {1}, {1}, true, true, Layout::Transposed},
      {K::Avg, 2, Shape{1, 2, 7, 7}, {3}, {2}, {1}, {1}, true, false},
      {K::Avg, 2, Shape{3, 6, 5}, {2, 3}, {1, 2}, {1, 1}},
      {K::Avg, 1, Shape{2, 3, 11}, {3}, {2}, {1}},
      {K::Avg, 1, Shape{2, 3, 10}, {4}, {3}, {2}, {1}, true, false, Layout::Strided},
      {K::Adaptive, 2, Shape{2, 3, 8, 8}, {1, 1}},
      {K::Adaptive, 2, Shape{2, 3, 10, 7}, {3, 4}},
      {K::Adaptive, 2, Shape{1, 2, 5, 5}, {7, 6}, {}, {0}, {1}, false, true, Layout::Transposed},
      {K::Adaptive, 2, Shape{3, 9, 9}, {4}},
      {K::Adaptive, 1, Shape{2, 3, 13}, {5}},
      {K::Adaptive, 1, Shape{2, 3, 4}, {4}, {}, {0}, {1}, false, true, Layout::Strided},
  };
  return cases;
}

TEST(PoolTable, Pool) {
  uint32_t seed = 900;
  int checked = 0;
  for (DType dtype : kFloatTypes) {
    for (const PoolCase& c : pool_cases()) {
      const DynTensor x = make_input(c.x, dtype, c.layout, -3, 3, seed++);
      const std::string what = std::string(dtype_name(dtype)) + " " + describe(c);
      Shape shape;
      std::vector<double> want;
      std::vector<int64_t> want_idx;
      pool_ref(c, Host::of(x), &shape, &want, &want_idx);
      DynTensor y, idx;
      try {
        if (c.kind == PoolKind::Max) {
          ValuesIndices r =
              c.spatial == 1
                  ? max_pool1d_with_indices(x, c.k, c.stride, c.padding, c.dilation, c.ceil_mode)
                  : max_pool2d_with_indices(x, c.k, c.stride, c.padding, c.dilation, c.ceil_mode);
          y = r.values;
          idx = r.indices;
        } else if (c.kind == PoolKind::Avg) {
          y = c.spatial == 1
                  ? avg_pool1d(x, c.k, c.stride, c.padding, c.ceil_mode, c.count_include_pad)
                  : avg_pool2d(x, c.k, c.stride, c.padding, c.ceil_mode, c.count_include_pad);
        } else {
          y = c.spatial == 1 ? adaptive_avg_pool1d(x, c.k) : adaptive_avg_pool2d(x, c.k);
        }
      } catch (const Error& e) {
        ADD_FAILURE() << what << ": threw " << e.what();
        continue;
      }
      expect_close(y, shape, want, tol_for(dtype), what);
      if (c.kind == PoolKind::Max) {  // the values alone: no indices (nothing records)
        const DynTensor v = c.spatial == 1
                                ? max_pool1d(x, c.k, c.stride, c.padding, c.dilation, c.ceil_mode)
                                : max_pool2d(x, c.k, c.stride, c.padding, c.dilation, c.ceil_mode);
        expect_close(v, shape, want, tol_for(dtype), what + " values only");
      }
      if (idx.defined()) {
        // Random values have no ties, so the argmax is unique (also after rounding, mostly:
        // compare the values there instead of the positions).
        const std::vector<int64_t> got = idx.to_vector<int64_t>();
        const Host hx = Host::of(x);
        const int sp = c.spatial;
        int64_t in_size = 1, out_size = 1;
        for (int i = 0; i < sp; ++i) {
          in_size *= c.x[c.x.rank() - sp + i];
          out_size *= shape[shape.rank() - sp + i];
        }
        ASSERT_EQ(got.size(), want_idx.size()) << what;
        for (size_t i = 0; i < got.size(); ++i) {
          const int64_t b = int64_t(i) / out_size;
          ASSERT_GE(got[i], 0) << what;
          ASSERT_LT(got[i], in_size) << what;
          EXPECT_EQ(hx.v[size_t(b * in_size + got[i])], hx.v[size_t(b * in_size + want_idx[i])])
              << what << " index " << i;
        }
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, int(pool_cases().size() * kFloatTypes.size()));
}

// The 2x2 / stride-2 vector loop on NaNs, infinities and ties: a later candidate wins when
// greater or NaN (so the last NaN of a window wins), ties keep the first; checked against that
// rule written out here. Widths: whole vectors with a tail, rows of 13 (8 + a tail of 5 from full
// loads) and rows of 5 (the tail alone); the last row pair of the input takes the scalar loop.
TEST(PoolTable, MaxPool2x2SpecialValues) {
  for (const int64_t w : {36, 26, 11}) {
    const int64_t h = 6;
    std::vector<double> v(static_cast<size_t>(h * w));
    for (size_t i = 0; i < v.size(); ++i) {
      const int r = static_cast<int>((i * 7919 + (i * i) % 13) % 11);
      v[i] = r == 0 ? NAN : r == 1 ? INFINITY : r == 2 ? -INFINITY : r == 3 ? 1.0 : (r % 4) - 1.5;
    }
    const ValuesIndices got = max_pool2d_with_indices(
        cast(from_data(TensorData::from(v, Shape{1, 1, h, w})), DType::f32), {2});
    const std::vector<double> gv = got.values.to_vector<double>();
    const std::vector<int64_t> gi = got.indices.to_vector<int64_t>();
    for (int64_t oh = 0; oh < h / 2; ++oh) {
      for (int64_t ow = 0; ow < w / 2; ++ow) {
        const int64_t at[4] = {2 * oh * w + 2 * ow, 2 * oh * w + 2 * ow + 1,
                               (2 * oh + 1) * w + 2 * ow, (2 * oh + 1) * w + 2 * ow + 1};
        int64_t arg = at[0];
        for (int k = 1; k < 4; ++k) {
          const double c = v[static_cast<size_t>(at[k])], b = v[static_cast<size_t>(arg)];
          if (c > b || std::isnan(c)) arg = at[k];
        }
        const size_t o = static_cast<size_t>(oh * (w / 2) + ow);
        EXPECT_EQ(gi[o], arg) << "width " << w << ", window " << oh << ", " << ow;
        const double want = v[static_cast<size_t>(arg)];
        EXPECT_TRUE(gv[o] == want || (std::isnan(gv[o]) && std::isnan(want))) << w << " " << o;
      }
    }
  }
}

// The values-only max pool (no indices) on NaNs, infinities and signed zeros: the same values as
// the indexed loops' (NaN wins), in vectors of 8 with tails, at strides 1, 2 and 3, with padding,
// dilation and ceil_mode.
TEST(PoolTable, MaxPoolValuesSpecialValues) {
  struct Case {
    int64_t h, w, k, s, p, d;
    bool ceil_mode;
  };
  const std::vector<Case> cases = {{9, 37, 3, 2, 1, 1, false}, {7, 21, 3, 1, 1, 1, false},
                                   {8, 26, 2, 2, 0, 1, false}, {9, 30, 3, 2, 1, 2, true},
                                   {6, 13, 3, 3, 1, 1, true},  {5, 5, 3, 2, 1, 1, false}};
  for (const Case& c : cases) {
    std::vector<double> v(static_cast<size_t>(2 * c.h * c.w));
    for (size_t i = 0; i < v.size(); ++i) {
      const int r = static_cast<int>((i * 7919 + (i * i) % 13) % 17);
      v[i] = r == 0   ? NAN
             : r == 1 ? INFINITY
             : r < 5  ? -INFINITY
             : r == 5 ? -0.0
             : r == 6 ? 0.0
                      : (r % 4) - 2.5;
    }
    const DynTensor x = cast(from_data(TensorData::from(v, Shape{1, 2, c.h, c.w})), DType::f32);
    std::string what = "h";  // appended (GCC 12 flags "h" + to_string as a bad memcpy)
    for (const int64_t n : {c.h, c.w, c.k, c.s}) what += std::to_string(n) + " ";
    const std::vector<double> got =
        max_pool2d(x, {c.k}, {c.s}, {c.p}, {c.d}, c.ceil_mode).to_vector<double>();
    const std::vector<double> want =
        max_pool2d_with_indices(x, {c.k}, {c.s}, {c.p}, {c.d}, c.ceil_mode)
            .values.to_vector<double>();
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_TRUE(got[i] == want[i] || (std::isnan(got[i]) && std::isnan(want[i])))
          << what << " output " << i << ": " << got[i] << " vs " << want[i];
    }
  }
}

TEST(PoolTable, MaxPoolNanAndInfinity) {
  const DynTensor x = from_data(TensorData::from(
      std::vector<double>{1, NAN, 3, 4, -INFINITY, -INFINITY, 2, 5}, Shape{1, 1, 2, 4}));
  ValuesIndices r = max_pool2d_with_indices(x, {2});
  const std::vector<double> v = r.values.to_vector<double>();
  ASSERT_EQ(v.size(), 2u);
  EXPECT_TRUE(std::isnan(v[0]));  // NaN wins, as in PyTorch
  EXPECT_EQ(v[1], 5.0);
  EXPECT_EQ(r.indices.to_vector<int64_t>(), (std::vector<int64_t>{1, 7}));
  // A window of only -inf points at its first element.
  const DynTensor m = full(Shape{1, 1, 2, 2}, -INFINITY, DType::f32);
  EXPECT_EQ(max_pool2d_with_indices(m, {2}).indices.to_vector<int64_t>(),
            (std::vector<int64_t>{0}));
}

TEST(ConvTable, TypedApi) {
  const auto x = Tensor<4>::ones({1, 2, 4, 4});
  const auto w = Tensor<4>::ones({3, 2, 3, 3});
  const auto b = Tensor<1>::from_vector<float>({0, 1, 2}, {3});
  const Tensor<4> y = conv2d(x, w, b, {1}, {1});
  EXPECT_EQ(y.dims(), (std::array<int64_t, 4>{1, 3, 4, 4}));
  EXPECT_EQ(y.to_vector<float>()[0], 8.0f);  // a corner: 2 channels x 2 x 2
  const Tensor<3> unbatched = conv2d(Tensor<3>::ones({2, 4, 4}), w);
  EXPECT_EQ(unbatched.dims(), (std::array<int64_t, 3>{3, 2, 2}));
  EXPECT_EQ(conv_transpose2d(y, Tensor<4>::ones({3, 2, 2, 2}), {}, {2}).dims(),
            (std::array<int64_t, 4>{1, 2, 8, 8}));
  EXPECT_EQ(max_pool2d(y, {2}).dims(), (std::array<int64_t, 4>{1, 3, 2, 2}));
  EXPECT_EQ(avg_pool1d(Tensor<3>::ones({1, 2, 6}), {3}).to_vector<float>(),
            std::vector<float>(4, 1.0f));
  EXPECT_EQ(adaptive_avg_pool2d(y, {1}).dims(), (std::array<int64_t, 4>{1, 3, 1, 1}));
  const auto [v, i] =
      max_pool1d_with_indices(Tensor<2>::from_vector<float>({1, 3, 2, 0}, {1, 4}), {2});
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(
      conv3d(Tensor<5>::ones({1, 1, 3, 3, 3}), Tensor<5>::ones({1, 1, 3, 3, 3})).item<float>(),
      27.0f);
  EXPECT_EQ(conv1d(Tensor<3>::ones({1, 1, 5}), Tensor<3>::ones({1, 1, 2})).dims(),
            (std::array<int64_t, 3>{1, 1, 4}));
}

// ---- Errors -----------------------------------------------------------------------------------

TEST(ConvTable, Errors) {
  const DynTensor x = zeros(Shape{2, 3, 8, 8}, DType::f32);
  const DynTensor w = zeros(Shape{5, 4, 3, 3}, DType::f32);
  const DynTensor w3 = zeros(Shape{6, 3, 3, 3}, DType::f32);
  expect_error_containing(
      [&] { conv2d(x, w); },
      "[conv2d] input has 3 channels but weight expects 4 (groups 1): input [2, 3, 8, 8], "
      "weight [5, 4, 3, 3]");
  expect_error_containing(
      [&] {
        conv2d(zeros(Shape{3, 8}, DType::f32), w3);
      },
      "[conv2d] expects a 4-D input [N, C, H, W] or a 3-D unbatched one, got [3, 8]");
  expect_error_containing(
      [&] {
        conv2d(zeros(Shape{2, 3, 8}, DType::f32), w3);
      },
      "[conv2d] input has 2 channels but weight expects 3 (groups 1): input [2, 3, 8], "
      "weight [6, 3, 3, 3]");
  expect_error_containing(
      [&] {
        conv2d(x, zeros(Shape{6, 3, 3}, DType::f32));
      },
      "[conv2d] expects a 4-D weight, got [6, 3, 3]");
  expect_error_containing(
      [&] {
        convolution(x, zeros(Shape{6, 3, 3}, DType::f32), {}, ConvParams{}, false);
      },
      "[conv2d] expects a 4-D input and weight, got input [2, 3, 8, 8], weight [6, 3, 3]");
  expect_error_containing(
      [&] {
        conv2d(x, zeros(Shape{5, 1, 3, 3}, DType::f32), {}, {1}, {0}, {1}, 3);
      },
      "[conv2d] weight has 5 output channels, not divisible by groups 3");
  expect_error_containing([&] { conv2d(x, w3, zeros(Shape{5}, DType::f32)); },
                          "[conv2d] bias must have shape [6], got [5]");
  expect_error_containing([&] { conv2d(x, w3, {}, {0}); },
                          "[conv2d] stride must be at least 1, got [0]");
  expect_error_containing(
      [&] {
        conv2d(x, w3, {}, {1, 1, 1});
      },
      "[conv2d] stride needs 1 or 2 values, got [1, 1, 1]");
  expect_error_containing([&] { conv2d(x, w3, {}, {1}, {-1}); },
                          "[conv2d] padding must be at least 0");
  expect_error_containing(
      [&] { conv2d(x, w3, {}, {1}, {0}, {5}); },
      "[conv2d] the kernel (11 wide after dilation) is larger than the padded input: "
      "input [2, 3, 8, 8], weight [6, 3, 3, 3]");
  expect_error_containing([&] { conv2d(x, w3, {}, {1}, {0}, {1}, 0); },
                          "[conv2d] groups must be at least 1, got 0");
  expect_error_containing([&] { conv2d(x, cast(w3, DType::f64)); },
                          "[conv2d] input (float32) and weight (float64) must have the same dtype");
  expect_error_containing([&] { conv2d(cast(x, DType::i64), cast(w3, DType::i64)); },
                          "[conv2d] input must be floating, got int64");
  expect_error_containing(
      [&] {
        conv1d(zeros(Shape{1, 2, 2}, DType::f32), zeros(Shape{1, 2, 3}, DType::f32));
      },
      "[conv1d] the kernel (3 wide after dilation) is larger than the padded input");
  expect_error_containing(
      [&] {
        conv3d(zeros(Shape{2, 3, 8}, DType::f32), zeros(Shape{6, 3, 3, 3, 3}, DType::f32));
      },
      "[conv3d] expects a 5-D input [N, C, D, H, W] or a 4-D unbatched one, got [2, 3, 8]");
  expect_error_containing(
      [&] { conv_transpose2d(x, w3); },
      "[conv_transpose2d] input has 3 channels but weight expects 6: input [2, 3, 8, 8], "
      "weight [6, 3, 3, 3]");
  expect_error_containing(
      [&] {
        conv_transpose2d(x, zeros(Shape{3, 2, 3, 3}, DType::f32), {}, {2}, {0}, {2});
      },
      "[conv_transpose2d] output_padding [2, 2] must be smaller than either stride [2, 2] or "
      "dilation [1, 1]");
  expect_error_containing(
      [&] {
        conv_transpose1d(zeros(Shape{1, 4, 5}, DType::f32), zeros(Shape{4, 1, 3}, DType::f32), {},
                         {1}, {0}, {0}, 3);
      },
      "[conv_transpose1d] input channels 4 are not divisible by groups 3");
  const DynTensor x3 = zeros(Shape{1, 2, 3, 3, 3}, DType::f32);
  expect_error_containing(
      [&] {
        conv_transpose3d(x3, zeros(Shape{2, 2, 3, 3}, DType::f32));
      },
      "[conv_transpose3d] expects a 5-D weight, got [2, 2, 3, 3]");
  expect_error_containing(
      [&] {
        conv_transpose3d(x3, zeros(Shape{2, 1, 2, 2, 2}, DType::f32), {}, {1, 2}, {0}, {0});
      },
      "[conv_transpose3d] stride needs 1 or 3 values, got [1, 2]");
  expect_error_containing(
      [&] {
        conv_transpose3d(x3, zeros(Shape{2, 1, 2, 2, 2}, DType::f32), {}, {2, 1, 2}, {0},
                         {0, 1, 0});
      },
      "[conv_transpose3d] output_padding [0, 1, 0] must be smaller than either stride [2, 1, 2] "
      "or dilation [1, 1, 1]");
}

TEST(PoolTable, Errors) {
  const DynTensor x = zeros(Shape{2, 3, 8, 8}, DType::f32);
  expect_error_containing(
      [&] {
        max_pool2d(zeros(Shape{8, 8}, DType::f32), {2});
      },
      "[max_pool2d] expects a 4-D input [N, C, H, W] or a 3-D unbatched one, got [8, 8]");
  expect_error_containing(
      [&] { max_pool2d(x, {3}, {1}, {2}); },
      "[max_pool2d] padding [2, 2] must be at most half the kernel size [3, 3]");
  expect_error_containing([&] { max_pool2d(x, {0}); },
                          "[max_pool2d] kernel_size must be at least 1, got [0]");
  expect_error_containing(
      [&] { max_pool2d(x, {9}); },
      "[max_pool2d] the output would be empty: input [2, 3, 8, 8], kernel [9, 9]");
  expect_error_containing(
      [&] {
        max_pool1d(zeros(Shape{2, 3, 8}, DType::f32), {2}, {0});
      },
      "[max_pool1d] stride must be at least 1, got [0]");
  expect_error_containing([&] { max_pool2d(cast(x, DType::i32), {2}); },
                          "[max_pool2d] input must be floating, got int32");
  expect_error_containing(
      [&] {
        avg_pool2d(x, {2, 2, 2});
      },
      "[avg_pool2d] kernel_size needs 1 or 2 values, got [2, 2, 2]");
  expect_error_containing(
      [&] {
        avg_pool1d(zeros(Shape{2, 3, 8}, DType::f32), {2}, {}, {2});
      },
      "[avg_pool1d] padding [2] must be at most half the kernel size [2]");
  expect_error_containing([&] { adaptive_avg_pool2d(x, {0}); },
                          "[adaptive_avg_pool2d] output_size must be at least 1, got [0]");
  expect_error_containing(
      [&] {
        adaptive_avg_pool1d(zeros(Shape{2, 3, 0}, DType::f32), {2});
      },
      "[adaptive_avg_pool1d] spatial dims must be non-empty, got input [2, 3, 0]");
}

}  // namespace
}  // namespace ember::test
