// matmul (1-D, 2-D, batched with broadcasting, transposed operands, every numeric dtype), dot,
// outer and the softmax family against float64 references.
#include <cmath>

#include "test_util.hpp"

namespace ember::test {
namespace {

struct MatmulCase {
  Shape a, b;
  bool transpose_a = false, transpose_b = false;
};

// torch.matmul on host data: returns values and the bound on |error| scale (sum of |a*b|).
void matmul_ref(const Host& a, const Host& b, Shape* out_shape, std::vector<double>* out,
                std::vector<double>* scale) {
  Shape as = a.shape, bs = b.shape;
  if (as.rank() == 1) as.insert(0, 1);
  if (bs.rank() == 1) bs.push_back(1);
  const int64_t m = as[as.rank() - 2], k = as[as.rank() - 1], n = bs[bs.rank() - 1];
  const Shape ab(std::span<const int64_t>(as.data(), size_t(as.rank() - 2)));
  const Shape bb(std::span<const int64_t>(bs.data(), size_t(bs.rank() - 2)));
  const Shape batch = broadcast_shapes(ab, bb, "ref");
  const int64_t nb = batch.numel();
  out->assign(size_t(nb * m * n), 0.0);
  scale->assign(out->size(), 0.0);
  Host hb{batch, {}};
  for (int64_t bi = 0; bi < nb; ++bi) {
    const std::vector<int64_t> bidx = hb.index(bi);
    // Offsets of this batch in a and b, honouring broadcast (size-1 or missing dims).
    auto batch_off = [&](const Shape& s) {
      int64_t off = 0;
      const int lead = batch.rank() - (s.rank() - 2);
      for (int d = 0; d < s.rank() - 2; ++d) {
        off = off * s[d] + (s[d] == 1 ? 0 : bidx[size_t(d + lead)]);
      }
      return off;
    };
    const int64_t ao = batch_off(as) * m * k, bo = batch_off(bs) * k * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0, sc = 0;
        for (int64_t p = 0; p < k; ++p) {
          const double t = a.v[size_t(ao + i * k + p)] * b.v[size_t(bo + p * n + j)];
          acc += t;
          sc += std::fabs(t);
        }
        (*out)[size_t((bi * m + i) * n + j)] = acc;
        (*scale)[size_t((bi * m + i) * n + j)] = sc;
      }
    }
  }
  *out_shape = batch;
  if (a.shape.rank() > 1) out_shape->push_back(m);
  if (b.shape.rank() > 1) out_shape->push_back(n);
}

TEST(OpTableLinalg, Matmul) {
  const std::vector<MatmulCase> cases = {{Shape{5}, Shape{5}},
                                         {Shape{3, 5}, Shape{5}},
                                         {Shape{5}, Shape{5, 4}},
                                         {Shape{3, 5}, Shape{5, 4}},
                                         {Shape{3, 5}, Shape{5, 4}, true, false},
                                         {Shape{3, 5}, Shape{5, 4}, false, true},
                                         {Shape{3, 5}, Shape{5, 4}, true, true},
                                         {Shape{2, 3, 5}, Shape{5, 4}},
                                         // a stack times a matrix folds into one product
                                         {Shape{2, 3, 4, 5}, Shape{5, 4}, true, true},
                                         // transposed A with a long k (OpenBLAS's sgemm)
                                         {Shape{7, 600}, Shape{600, 70}, true, false},
                                         {Shape{3, 5}, Shape{2, 5, 4}},
                                         {Shape{2, 1, 3, 5}, Shape{4, 5, 2}},
                                         {Shape{0, 5}, Shape{5, 4}},
                                         {Shape{3, 0}, Shape{0, 4}},
                                         {Shape{1, 1}, Shape{1, 1}},
                                         {Shape{67, 130}, Shape{130, 45}},
                                         {Shape{67, 130}, Shape{130, 45}, true, true},
                                         {Shape{3, 33, 17}, Shape{3, 17, 29}, false, true},
                                         // k = 1: outer products (f32 has its own kernel), the
                                         // big ones written with streaming stores.
                                         {Shape{4, 1}, Shape{1, 6}},
                                         {Shape{4, 1}, Shape{1, 6}, true, true},
                                         {Shape{2, 3, 1}, Shape{2, 1, 5}},
                                         {Shape{784, 1}, Shape{1, 256}, true, false},
                                         {Shape{700, 1}, Shape{1, 203}}};
  const Tol tols[] = {tol_for(DType::f32)};
  (void)tols;
  uint32_t seed = 5000;
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i64, DType::i32,
                      DType::i8, DType::u8}) {
    for (const MatmulCase& c : cases) {
      const bool big = c.a.numel() > 1000;
      if (big && (dtype == DType::i8 || dtype == DType::u8)) continue;  // would overflow
      const double lo = dtype == DType::u8 ? 0 : -3, hi = dtype == DType::i8 ? 3 : 4;
      auto make = [&](const Shape& s, bool t) {
        const Layout layout = t && s.rank() >= 2 ? Layout::Transposed : Layout::Contiguous;
        if (layout == Layout::Transposed) {
          // transpose of the last two dims, made from a [.., n, m] tensor
          Shape st = s;
          std::swap(st[st.rank() - 1], st[st.rank() - 2]);
          return transpose(make_input(st, dtype, Layout::Contiguous, lo, hi, seed++), -1, -2);
        }
        return make_input(s, dtype, layout, lo, hi, seed++);
      };
      const DynTensor a = make(c.a, c.transpose_a), b = make(c.b, c.transpose_b);
      Shape shape;
      std::vector<double> want, scale;
      matmul_ref(Host::of(a), Host::of(b), &shape, &want, &scale);
      const std::string what = "matmul " + std::string(dtype_name(dtype)) + " " + to_string(c.a) +
                               (c.transpose_a ? "T" : "") + " x " + to_string(c.b) +
                               (c.transpose_b ? "T" : "");
      const DynTensor y = matmul(a, b);
      ASSERT_EQ(to_string(y.shape()), to_string(shape)) << what;
      EXPECT_EQ(y.dtype(), dtype) << what;
      const std::vector<double> got = y.to_vector<double>();
      const Tol tol = tol_for(dtype);
      for (size_t i = 0; i < got.size(); ++i) {
        double w = want[i];
        if (dtype == DType::i8) w = double(int8_t(uint8_t(int64_t(w))));
        if (dtype == DType::u8) w = double(uint8_t(int64_t(w)));
        // Error grows with the sum of |terms|, not with the (possibly cancelled) result.
        ASSERT_LE(std::fabs(got[i] - w), tol.atol + tol.rtol * (std::fabs(w) + scale[i]))
            << what << " element " << i;
      }
    }
  }
}

// int8 x int8 summed in int32, exactly: values over the whole int8 range, operands laid out as
// quantized layers pass them (w^T, unfolded inputs), k long enough that int16 sums would overflow.
TEST(OpTableLinalg, MatmulInt8) {
  const std::vector<MatmulCase> cases = {{Shape{3, 5}, Shape{5, 4}},
                                         {Shape{3, 5}, Shape{5, 4}, false, true},
                                         {Shape{3, 5}, Shape{5, 4}, true, false},
                                         {Shape{3, 5}, Shape{5, 4}, true, true},
                                         {Shape{2, 3, 5}, Shape{5, 4}, false, true},
                                         {Shape{3, 5}, Shape{2, 5, 4}},
                                         {Shape{2, 6, 33}, Shape{2, 33, 7}, false, true},
                                         {Shape{7, 3000}, Shape{3000, 9}, false, true},
                                         {Shape{0, 5}, Shape{5, 4}},
                                         {Shape{3, 0}, Shape{0, 4}}};
  uint32_t seed = 7000;
  for (const MatmulCase& c : cases) {
    auto make = [&](const Shape& s, bool t) {
      if (!t) return make_input(s, DType::i8, Layout::Contiguous, -128, 128, seed++);
      Shape st = s;
      std::swap(st[st.rank() - 1], st[st.rank() - 2]);
      return transpose(make_input(st, DType::i8, Layout::Contiguous, -128, 128, seed++), -1, -2);
    };
    const DynTensor a = make(c.a, c.transpose_a), b = make(c.b, c.transpose_b);
    Shape shape;
    std::vector<double> want, scale;
    matmul_ref(Host::of(a), Host::of(b), &shape, &want, &scale);
    const std::string what = "matmul_int8 " + to_string(c.a) + (c.transpose_a ? "T" : "") + " x " +
                             to_string(c.b) + (c.transpose_b ? "T" : "");
    const DynTensor y = matmul_int8(a, b);
    ASSERT_EQ(to_string(y.shape()), to_string(shape)) << what;
    EXPECT_EQ(y.dtype(), DType::i32) << what;
    EXPECT_EQ(y.to_vector<double>(), want) << what;
  }
  const DynTensor a = make_input(Shape{2, 3}, DType::i8, Layout::Contiguous, -128, 128, 1);
  expect_error_containing([&] { matmul_int8(a, cast(a, DType::f32)); }, "takes int8 operands");
  expect_error_containing([&] { matmul_int8(a, a); }, "inner dimensions differ");
  const DynTensor long_k = zeros(Shape{1, 131072}, DType::i8);
  expect_error_containing([&] { matmul_int8(long_k, transpose(long_k, 0, 1)); },
                          "could overflow the int32 sums");
}

TEST(OpTableLinalg, DotOuter) {
  for (DType dtype : {DType::f32, DType::f64, DType::i64}) {
    const DynTensor a = make_input(Shape{7}, dtype, Layout::Strided, -3, 3, 61);
    const DynTensor b = make_input(Shape{7}, dtype, Layout::Contiguous, -3, 3, 62);
    const Host ha = Host::of(a), hb = Host::of(b);
    double d = 0;
    std::vector<double> o;
    for (int i = 0; i < 7; ++i) d += ha.v[i] * hb.v[i];
    for (int i = 0; i < 7; ++i) {
      for (int j = 0; j < 7; ++j) o.push_back(ha.v[i] * hb.v[j]);
    }
    expect_close(dot(a, b), Shape{}, {d}, {1e-5, 1e-5}, "dot");
    expect_close(outer(a, b), Shape{7, 7}, o, tol_for(dtype), "outer");
  }
}

TEST(OpTableLinalg, SoftmaxLogSoftmax) {
  for (DType dtype : kFloatTypes) {
    for (int64_t dim : {0, 1, -1}) {
      const DynTensor x = make_input(Shape{4, 6}, dtype, Layout::Transposed, -5, 5, 71);
      const Host h = Host::of(x);
      const int d = dim == 0 ? 0 : 1;
      std::vector<double> sm(h.v.size()), lsm(h.v.size());
      for (int64_t o = 0; o < (d == 0 ? 6 : 4); ++o) {
        double mx = -INFINITY, s = 0;
        auto at = [&](int64_t k) { return d == 0 ? k * 6 + o : o * 6 + k; };
        const int64_t n = d == 0 ? 4 : 6;
        for (int64_t k = 0; k < n; ++k) mx = std::max(mx, h.v[size_t(at(k))]);
        for (int64_t k = 0; k < n; ++k) s += std::exp(h.v[size_t(at(k))] - mx);
        for (int64_t k = 0; k < n; ++k) {
          sm[size_t(at(k))] = std::exp(h.v[size_t(at(k))] - mx) / s;
          lsm[size_t(at(k))] = h.v[size_t(at(k))] - mx - std::log(s);
        }
      }
      const std::string what = std::string(dtype_name(dtype)) + " dim " + std::to_string(dim);
      expect_close(softmax(x, dim), x.shape(), sm, tol_for(dtype), "softmax " + what);
      expect_close(log_softmax(x, dim), x.shape(), lsm,
                   {tol_for(dtype).rtol, 4 * tol_for(dtype).atol}, "log_softmax " + what);
    }
  }
}

TEST(OpTableLinalg, TypedApi) {
  const auto a = Tensor<2>::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  const auto v = Tensor<1>::from_vector<float>({1, 0, -1});
  const Tensor<1> mv = matmul(a, v);  // rank deduced at compile time
  EXPECT_EQ(mv.to_vector<float>(), (std::vector<float>{-2, -2}));
  const Tensor<0> d = dot(v, v);
  EXPECT_EQ(d.item<float>(), 2.0f);
  const Tensor<2> aat = matmul(a, a.t());
  EXPECT_EQ(aat.to_vector<float>(), (std::vector<float>{14, 32, 32, 77}));
}

}  // namespace
}  // namespace ember::test
