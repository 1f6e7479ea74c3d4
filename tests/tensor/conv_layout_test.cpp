// Memory formats (docs/ARCHITECTURE.md, "Memory formats"): convolutions in every dtype and input
// layout against float64, values and gradients, with channels-last outputs where the backend
// runs them so (Cuda's 16-bit 2-d convolutions); and the elementwise ops keeping a dense layout
// (PyTorch's preserve_format), so that a channels-last activation stays so between convolutions.
#include <string>

#include "test_util.hpp"

namespace ember::test {
namespace {

struct LayoutCase {
  Shape x, w;
  int64_t stride = 1, padding = 0, groups = 1;
};

// A stem-like first layer (3 channels), channels in 16-byte packs, odd channels, a 1x1 output
// plane, a 1x1 kernel with stride 2 and two groups.
const std::vector<LayoutCase>& layout_cases() {
  static const std::vector<LayoutCase> cases = {
      {Shape{2, 3, 15, 13}, Shape{16, 3, 7, 7}, 2, 3},
      {Shape{3, 16, 9, 9}, Shape{32, 16, 3, 3}, 1, 1},
      {Shape{2, 5, 6, 7}, Shape{7, 5, 3, 3}, 1, 0},
      {Shape{4, 8, 3, 3}, Shape{16, 8, 3, 3}, 1, 0},
      {Shape{2, 32, 8, 8}, Shape{16, 32, 1, 1}, 2, 0},
      {Shape{2, 16, 7, 7}, Shape{16, 8, 3, 3}, 1, 1, 2},  // grouped: stays contiguous
  };
  return cases;
}

// The largest |a - b| over the largest |b|.
double relative_gap(const DynTensor& a, const DynTensor& b) {
  const std::vector<double> va = a.to_vector<double>(), vb = b.to_vector<double>();
  EXPECT_EQ(va.size(), vb.size());
  double worst = 0, scale = 1e-30;
  for (size_t i = 0; i < va.size() && i < vb.size(); ++i) {
    worst = std::max(worst, std::fabs(va[i] - vb[i]));
    scale = std::max(scale, std::fabs(vb[i]));
  }
  return worst / scale;
}

bool on_cuda_16bit(const DynTensor& t) {
  return t.device().type == DeviceType::Cuda &&
         (t.dtype() == DType::bf16 || t.dtype() == DType::f16);
}

}  // namespace

// y = conv2d(x, w, b) and its three gradients in f32, f16 and bf16, with x and the upstream
// gradient contiguous or channels-last, against the same computed in f64 from the same rounded
// values. Where Cuda runs the convolution channels-last (16-bit), y and dx come out so.
TEST(ConvLayout, ConvolutionMatchesFloat64InEveryLayout) {
  uint32_t seed = 900;
  for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    const double rel = dtype == DType::f32 ? 1e-4 : dtype == DType::f16 ? 4e-3 : 3e-2;
    for (const LayoutCase& c : layout_cases()) {
      for (Layout layout : {Layout::Contiguous, Layout::ChannelsLast}) {
        const std::string what = std::string(dtype_name(dtype)) + " " + layout_name(layout) +
                                 " x " + to_string(c.x) + " w " + to_string(c.w);
        const DynTensor x0 = make_input(c.x, dtype, layout, -2, 2, seed++);
        const DynTensor w0 = make_input(c.w, dtype, Layout::Contiguous, -1, 1, seed++);
        const DynTensor b0 = make_input(Shape{c.w[0]}, dtype, Layout::Contiguous, -1, 1, seed++);
        auto run = [&](DType dt) {
          const DynTensor x = require_grad(cast(x0, dt)), w = require_grad(cast(w0, dt)),
                          b = require_grad(cast(b0, dt));
          const DynTensor y = conv2d(x, w, b, {c.stride}, {c.padding}, {1}, c.groups);
          const DynTensor g = cast(make_input(y.shape(), dtype, layout, -1, 1, 77), dt);
          std::vector<DynTensor> out = grad(y, {x, w, b}, g);
          out.insert(out.begin(), y);
          return out;
        };
        const std::vector<DynTensor> got = run(dtype), want = run(DType::f64);
        const char* names[] = {"output", "grad input", "grad weight", "grad bias"};
        for (size_t i = 0; i < 4; ++i) {
          EXPECT_EQ(got[i].dtype(), dtype) << what << " " << names[i];
          EXPECT_LE(relative_gap(got[i], want[i]), rel) << what << " " << names[i];
        }
        if (on_cuda_16bit(got[0]) && c.groups == 1) {
          EXPECT_TRUE(got[0].raw().is_channels_last()) << what;
          EXPECT_TRUE(got[1].raw().is_channels_last()) << what;
        } else if (layout == Layout::Contiguous) {
          EXPECT_TRUE(got[0].is_contiguous()) << what;
        }
        EXPECT_TRUE(got[2].is_contiguous()) << what;  // a weight's gradient keeps its layout
      }
    }
  }
}

// Unary, binary, where and cast on channels-last tensors give a channels-last result (broadcast
// operands do not count), with the values of the contiguous computation; a transposed matrix
// keeps its layout too, while operands of mixed layouts give a contiguous result.
TEST(ConvLayout, ElementwiseOpsKeepADenseLayout) {
  const Shape s{2, 6, 4, 5};
  const DynTensor x = make_input(s, DType::f32, Layout::ChannelsLast, -2, 2, 11);
  const DynTensor y = make_input(s, DType::f32, Layout::ChannelsLast, -2, 2, 12);
  const DynTensor xc = contiguous(x), yc = contiguous(y);
  ASSERT_TRUE(x.raw().is_channels_last());
  ASSERT_FALSE(x.is_contiguous());
  const DynTensor bias = make_input(Shape{6, 1, 1}, DType::f32, Layout::Contiguous, -1, 1, 13);
  struct Case {
    const char* name;
    DynTensor got, want;
  };
  const std::vector<Case> cases = {
      {"relu", relu(x), relu(xc)},
      {"exp", exp(x), exp(xc)},
      {"add", add(x, y), add(xc, yc)},
      {"mul scalar", mul(x, 3.0), mul(xc, 3.0)},
      {"add broadcast", add(x, bias), add(xc, bias)},
      {"where", where(gt(x, 0.0), y, 0.0), where(gt(xc, 0.0), yc, 0.0)},
      {"gt", gt(x, y), gt(xc, yc)},
      {"cast", cast(x, DType::bf16), cast(xc, DType::bf16)},
  };
  for (const Case& c : cases) {
    EXPECT_TRUE(c.got.raw().is_channels_last()) << c.name;
    EXPECT_FALSE(c.got.is_contiguous()) << c.name;
    EXPECT_EQ(c.got.to_vector<double>(), c.want.to_vector<double>()) << c.name;
  }
  // Mixed layouts give a contiguous result, whichever comes first.
  for (const DynTensor& mixed : {add(xc, y), add(y, xc)}) {
    EXPECT_TRUE(mixed.is_contiguous());
    EXPECT_EQ(mixed.to_vector<double>(), add(xc, yc).to_vector<double>());
  }
  // A transposed matrix: a dense permutation of another kind.
  const DynTensor m = make_input(Shape{5, 7}, DType::f32, Layout::Transposed, -1, 1, 14);
  const DynTensor mm = add(m, m);
  EXPECT_EQ(mm.strides(), m.strides());
  EXPECT_EQ(mm.to_vector<double>(), add(contiguous(m), contiguous(m)).to_vector<double>());
  // Gradients through a recorded op keep working on the permuted output.
  const DynTensor xr = require_grad(x);
  const std::vector<DynTensor> gx = grad(sum(mul(exp(xr), y)), {xr});
  EXPECT_LE(relative_gap(gx[0], mul(exp(xc), yc)), 1e-6);
}

// Pooling keeps a channels-last input's layout in its output and its input gradient (the
// kernels run contiguous), with the contiguous computation's values.
TEST(ConvLayout, PoolingKeepsChannelsLast) {
  const DynTensor x = make_input(Shape{2, 8, 9, 10}, DType::f32, Layout::ChannelsLast, -2, 2, 21);
  const DynTensor xc = contiguous(x);
  for (const bool max : {true, false}) {
    const char* what = max ? "max_pool2d" : "avg_pool2d";
    auto pool = [&](const DynTensor& t) {
      return max ? max_pool2d(t, {3}, {2}, {1}) : avg_pool2d(t, {3}, {2}, {1});
    };
    const DynTensor a = require_grad(x), b = require_grad(xc);
    const DynTensor ya = pool(a), yb = pool(b);
    EXPECT_TRUE(ya.raw().is_channels_last()) << what;
    EXPECT_FALSE(ya.is_contiguous()) << what;
    EXPECT_EQ(ya.to_vector<double>(), yb.to_vector<double>()) << what;
    const DynTensor g = make_input(ya.shape(), DType::f32, Layout::ChannelsLast, -1, 1, 22);
    const DynTensor ga = grad(ya, {a}, g)[0], gb = grad(yb, {b}, g)[0];
    EXPECT_TRUE(ga.raw().is_channels_last()) << what;
    EXPECT_LE(relative_gap(ga, gb), 1e-6) << what;
  }
}

}  // namespace ember::test
