// linalg.svd / svdvals and the matrix norms built on them (2, -2, "nuc"), on the test device:
// matrices made with a known spectrum (random orthogonal factors around chosen singular values,
// repeated and zero ones included) give float64 references for the values and the norms; random
// matrices in every layout are checked for A = U diag(S) Vh with orthonormal factors (which
// makes S the singular values); finite-difference gradients; and the errors.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "autodiff/gradcheck.hpp"
#include "tensor/test_util.hpp"

namespace ember::test {
namespace {

uint32_t seed_counter = 500;

Tol tol_of(DType dt) { return dt == DType::f64 ? Tol{1e-10, 1e-11} : Tol{2e-5, 2e-5}; }

// A host matrix, row-major.
struct Mat {
  int64_t r = 0, c = 0;
  std::vector<double> v;
  double& at(int64_t i, int64_t j) { return v[size_t(i * c + j)]; }
  double at(int64_t i, int64_t j) const { return v[size_t(i * c + j)]; }
};

// A random orthogonal n x n matrix: Gram-Schmidt (twice) on random columns.
Mat random_orthogonal(int64_t n) {
  Mat q{n, n, random_values(n * n, -1.0, 1.0, false, ++seed_counter)};
  for (int64_t j = 0; j < n; ++j) {
    for (int pass = 0; pass < 2; ++pass) {
      for (int64_t l = 0; l < j; ++l) {
        double p = 0;
        for (int64_t i = 0; i < n; ++i) p += q.at(i, l) * q.at(i, j);
        for (int64_t i = 0; i < n; ++i) q.at(i, j) -= p * q.at(i, l);
      }
    }
    double len = 0;
    for (int64_t i = 0; i < n; ++i) len += q.at(i, j) * q.at(i, j);
    for (int64_t i = 0; i < n; ++i) q.at(i, j) /= std::sqrt(len);
  }
  return q;
}

// batch matrices m x n with singular values `sigma` (sorted descending by the caller; K long),
// each with its own random orthogonal factors: values [batch, m, n].
std::vector<double> with_spectrum(int64_t batch, int64_t m, int64_t n,
                                  const std::vector<double>& sigma) {
  std::vector<double> out;
  for (int64_t b = 0; b < batch; ++b) {
    const Mat p = random_orthogonal(m), q = random_orthogonal(n);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (size_t k = 0; k < sigma.size(); ++k) {
          acc += p.at(i, int64_t(k)) * sigma[k] * q.at(j, int64_t(k));
        }
        out.push_back(acc);
      }
    }
  }
  return out;
}

// Checks A = U diag(S) Vh, U^T U = I, Vh Vh^T = I and S descending and non-negative, matrix by
// matrix, in float64 on the host.
void expect_decomposition(const DynTensor& a, const linalg::SVD& r, bool full, Tol tol,
                          const std::string& what) {
  const int rank = a.rank();
  const int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n);
  const int64_t ku = full ? m : k, kv = full ? n : k;
  Shape batch_shape(std::span<const int64_t>(a.shape().data(), size_t(rank - 2)));
  Shape su = batch_shape, ss = batch_shape, sv = batch_shape;
  su.push_back(m);
  su.push_back(ku);
  ss.push_back(k);
  sv.push_back(kv);
  sv.push_back(n);
  ASSERT_EQ(to_string(r.U.shape()), to_string(su)) << what;
  ASSERT_EQ(to_string(r.S.shape()), to_string(ss)) << what;
  ASSERT_EQ(to_string(r.Vh.shape()), to_string(sv)) << what;
  const std::vector<double> ha = a.to_vector<double>(), hu = r.U.to_vector<double>(),
                            hs = r.S.to_vector<double>(), hv = r.Vh.to_vector<double>();
  const int64_t batch = batch_shape.numel();
  double scale = 0;
  for (double x : ha) scale = std::max(scale, std::fabs(x));
  int failures = 0;
  auto check = [&](double got, double want, const char* part, int64_t b, int64_t i, int64_t j) {
    if (failures < 5 && !(std::fabs(got - want) <= tol.atol + tol.rtol * std::fabs(want))) {
      ++failures;
      ADD_FAILURE() << what << ": " << part << " of matrix " << b << " at (" << i << ", " << j
                    << ") is " << got << ", expected " << want;
    }
  };
  for (int64_t b = 0; b < batch; ++b) {
    const double* pa = ha.data() + b * m * n;
    const double* pu = hu.data() + b * m * ku;
    const double* ps = hs.data() + b * k;
    const double* pv = hv.data() + b * kv * n;
    for (int64_t i = 0; i < k; ++i) {
      check(ps[i] >= 0 ? 0.0 : ps[i], 0.0, "a negative S", b, i, i);
      if (i > 0) check(ps[i] > ps[i - 1] ? ps[i] - ps[i - 1] : 0.0, 0.0, "S order", b, i, i);
    }
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t l = 0; l < k; ++l) acc += pu[i * ku + l] * ps[l] * pv[l * n + j];
        check(acc / std::max(scale, 1e-300), pa[i * n + j] / std::max(scale, 1e-300),
              "U diag(S) Vh", b, i, j);
      }
    }
    for (int64_t i = 0; i < ku; ++i) {
      for (int64_t j = 0; j < ku; ++j) {
        double acc = 0;
        for (int64_t l = 0; l < m; ++l) acc += pu[l * ku + i] * pu[l * ku + j];
        check(acc, i == j ? 1.0 : 0.0, "U^T U", b, i, j);
      }
    }
    for (int64_t i = 0; i < kv; ++i) {
      for (int64_t j = 0; j < kv; ++j) {
        double acc = 0;
        for (int64_t l = 0; l < n; ++l) acc += pv[i * n + l] * pv[j * n + l];
        check(acc, i == j ? 1.0 : 0.0, "Vh Vh^T", b, i, j);
      }
    }
  }
}

TEST(SvdTable, RandomMatricesDecompose) {
  const std::vector<Shape> shapes = {{3, 3}, {5, 2},    {2, 5},       {1, 1},   {1, 4},
                                     {4, 1}, {2, 3, 4}, {3, 2, 7, 3}, {24, 17}, {9, 40}};
  for (const Shape& s : shapes) {
    for (DType dt : {DType::f32, DType::f64}) {
      for (Layout l : {Layout::Contiguous, Layout::Transposed, Layout::Strided}) {
        const DynTensor a = make_input(s, dt, l, -1.0, 1.0, ++seed_counter);
        for (bool full : {false, true}) {
          const std::string what = "svd " + to_string(s) + " " + std::string(dtype_name(dt)) + " " +
                                   layout_name(l) + (full ? " full" : "");
          const linalg::SVD r = linalg::svd(a, full);
          expect_decomposition(a, r, full, dt == DType::f64 ? Tol{1e-11, 1e-11} : Tol{0, 3e-5},
                               what);
          const DynTensor sv = linalg::svdvals(a);
          expect_close(sv, r.S.shape(), r.S.to_vector<double>(), tol_of(dt), what + " svdvals");
        }
      }
    }
  }
}

struct Spectrum {
  std::string name;
  std::vector<double> sigma;
};

TEST(SvdTable, KnownSpectrum) {
  const std::vector<Spectrum> spectra = {{"distinct", {3.5, 2.0, 0.75, 0.1}},
                                         {"repeated", {2.0, 2.0, 2.0, 0.5}},
                                         {"rank 2", {4.0, 1.0, 0.0, 0.0}},
                                         {"zero", {0.0, 0.0, 0.0, 0.0}},
                                         {"graded", {1.0, 1e-3, 1e-6, 1e-9}}};
  const std::vector<std::pair<int64_t, int64_t>> sizes = {{4, 4}, {7, 4}, {4, 6}};
  for (const Spectrum& sp : spectra) {
    for (const auto& [m, n] : sizes) {
      const std::vector<double> values = with_spectrum(2, m, n, sp.sigma);
      for (DType dt : {DType::f32, DType::f64}) {
        const DynTensor a = cast(from_data(TensorData::from(values, Shape{2, m, n})), dt);
        const std::string what = "svd " + sp.name + " " + std::to_string(m) + "x" +
                                 std::to_string(n) + " " + std::string(dtype_name(dt));
        std::vector<double> want;
        for (int b = 0; b < 2; ++b) want.insert(want.end(), sp.sigma.begin(), sp.sigma.end());
        // Absolute accuracy relative to the largest value: what rounding A allows any method.
        const Tol tol = dt == DType::f64 ? Tol{0, 1e-12 * 4} : Tol{0, 3e-6 * 4};
        expect_close(linalg::svdvals(a), Shape{2, 4}, want, tol, what + " svdvals");
        for (bool full : {false, true}) {
          const linalg::SVD r = linalg::svd(a, full);
          expect_close(r.S, Shape{2, 4}, want, tol, what + " S");
          // Zero and repeated values leave the vectors free: they must still be orthonormal.
          expect_decomposition(a, r, full, dt == DType::f64 ? Tol{1e-11, 1e-11} : Tol{0, 3e-5},
                               what + (full ? " full" : ""));
        }
      }
    }
  }
}

// Cpu and Cuda run the same Jacobi rotations: their vectors agree, signs included.
TEST(SvdTable, VectorsMatchTheCpu) {
  if (default_device().type != DeviceType::Cuda && default_device().type != DeviceType::Vulkan) {
    GTEST_SKIP()
        << "compares the Cuda and Vulkan kernels with the Cpu's (LibTorch's LAPACK has its "
           "own signs)";
  }
  const DynTensor a = make_input(Shape{3, 6, 4}, DType::f64, Layout::Contiguous, -1, 1, 77);
  const linalg::SVD here = linalg::svd(a, false);
  const linalg::SVD cpu = linalg::svd(to_device(a, Device{}), false);
  expect_close(here.U, cpu.U.shape(), cpu.U.to_vector<double>(), Tol{1e-10, 1e-10}, "U");
  expect_close(here.Vh, cpu.Vh.shape(), cpu.Vh.to_vector<double>(), Tol{1e-10, 1e-10}, "Vh");
}

TEST(SvdTable, EmptyAndNonFinite) {
  for (const Shape& s : {Shape{0, 3}, Shape{3, 0}, Shape{0, 2, 2}, Shape{2, 0, 0}}) {
    const DynTensor a = zeros(s, DType::f32);
    const linalg::SVD r = linalg::svd(a, true);
    expect_decomposition(a, r, true, Tol{0, 1e-6}, "svd empty " + to_string(s));
    const linalg::SVD rr = linalg::svd(a, false);
    EXPECT_EQ(rr.S.numel(), 0) << to_string(s);
    const DynTensor nuc = linalg::matrix_norm(a, "nuc");
    EXPECT_EQ(nuc.rank(), s.rank() - 2) << to_string(s);
    for (double v : nuc.to_vector<double>()) EXPECT_EQ(v, 0.0) << to_string(s);
  }
  // NaN in, NaN out: no error, no host synchronisation.
  const DynTensor n = from_data(TensorData::from(std::vector<double>{1, NAN, 2, 3}, Shape{2, 2}));
  for (double v : linalg::svdvals(n).to_vector<double>()) EXPECT_TRUE(std::isnan(v));
}

// --- matrix norms of orders 2, -2 and "nuc" ----------------------------------------------------

TEST(SvdTable, SingularValueNorms) {
  const std::vector<double> sigma = {2.5, 1.25, 0.5};
  const int64_t batch = 2;
  const std::vector<double> values = with_spectrum(batch, 3, 5, sigma);
  const double nuc = std::accumulate(sigma.begin(), sigma.end(), 0.0);
  for (DType dt : {DType::f32, DType::f64}) {
    const Tol tol = dt == DType::f64 ? Tol{1e-11, 1e-11} : Tol{1e-5, 1e-5};
    const DynTensor a = cast(from_data(TensorData::from(values, Shape{batch, 3, 5})), dt);
    const std::string d(dtype_name(dt));
    expect_close(linalg::matrix_norm(a, 2.0), Shape{2}, {2.5, 2.5}, tol, "ord 2 " + d);
    expect_close(linalg::matrix_norm(a, -2.0), Shape{2}, {0.5, 0.5}, tol, "ord -2 " + d);
    expect_close(linalg::matrix_norm(a, "nuc"), Shape{2}, {nuc, nuc}, tol, "nuc " + d);
    // Other dims, transposed (same singular values), keepdim.
    const DynTensor t = permute(a, {2, 0, 1});  // [5, 2, 3]: matrices at dims (2, 0)
    expect_close(linalg::matrix_norm(t, 2.0, {2, 0}), Shape{2}, {2.5, 2.5}, tol, "dims " + d);
    expect_close(linalg::matrix_norm(t, "nuc", {0, 2}, true), Shape{1, 2, 1}, {nuc, nuc}, tol,
                 "nuc keepdim " + d);
    expect_close(linalg::matrix_norm(t, -2.0, {-1, 0}, true), Shape{1, 2, 1}, {0.5, 0.5}, tol,
                 "-2 keepdim " + d);
    const DynTensor m = select(a, 0, 1);
    expect_close(linalg::norm(m, 2.0), Shape{}, {2.5}, tol, "linalg.norm 2 " + d);
    expect_close(linalg::norm(m, "nuc"), Shape{}, {nuc}, tol, "linalg.norm nuc " + d);
    expect_close(linalg::norm(a, -2.0, std::vector<int64_t>{1, 2}), Shape{2}, {0.5, 0.5}, tol,
                 "linalg.norm -2 dims " + d);
  }
}

// --- gradients ----------------------------------------------------------------------------------

GradInput gin(const Shape& s, Layout l = Layout::Contiguous) {
  return {s, l, random_values(s.numel(), -1.0, 1.0, false, ++seed_counter)};
}

// Functions of U and Vh that a column's sign does not change (as every use of them must be).
DynTensor uses_vectors(const linalg::SVD& r, uint32_t seed) {
  const DynTensor w =
      from_data(TensorData::from(random_values(r.S.numel(), 0.5, 1.5, false, seed), r.S.shape()));
  const DynTensor low_rank = matmul(mul(r.U, unsqueeze(w, -2)), r.Vh);  // U diag(w) Vh
  const DynTensor wu = from_data(
      TensorData::from(random_values(r.U.numel(), -1.0, 1.0, false, seed + 1), r.U.shape()));
  const DynTensor wv = from_data(
      TensorData::from(random_values(r.Vh.numel(), -1.0, 1.0, false, seed + 2), r.Vh.shape()));
  return add(add(sum(mul(low_rank, low_rank)), sum(mul(mul(r.U, r.U), wu))),
             sum(mul(mul(r.Vh, r.Vh), wv)));
}

TEST(SvdGrad, FiniteDifferences) {
  using Xs = std::vector<DynTensor>;
  struct Row {
    std::string name;
    GradFn fn;
    std::vector<std::vector<GradInput>> cases;
  };
  const std::vector<Row> rows = {
      {"svdvals",
       [](const Xs& x) { return linalg::svdvals(x[0]); },
       {{gin({3, 3})}, {gin({4, 2}, Layout::Transposed)}, {gin({2, 2, 5}, Layout::Strided)}}},
      {"svd S", [](const Xs& x) { return linalg::svd(x[0], false).S; }, {{gin({3, 4})}}},
      {"svd U only",
       [](const Xs& x) {
         const linalg::SVD r = linalg::svd(x[0], false);
         return mul(r.U, r.U);
       },
       {{gin({3, 3})}, {gin({5, 3})}, {gin({2, 4})}}},
      {"svd Vh only",
       [](const Xs& x) {
         const linalg::SVD r = linalg::svd(x[0], false);
         return mul(r.Vh, r.Vh);
       },
       {{gin({3, 3})}, {gin({3, 5})}, {gin({4, 2})}}},
      {"svd vectors",
       [](const Xs& x) { return uses_vectors(linalg::svd(x[0], false), 31); },
       {{gin({4, 4})}, {gin({2, 5, 3}, Layout::Transposed)}, {gin({3, 6})}}},
      {"svd full",
       [](const Xs& x) {
         const linalg::SVD r = linalg::svd(x[0], true);
         return uses_vectors({narrow(r.U, -1, 0, 3), r.S, narrow(r.Vh, -2, 0, 3)}, 41);
       },
       {{gin({5, 3})}, {gin({3, 4})}}},
      {"matrix_norm nuc",
       [](const Xs& x) { return linalg::matrix_norm(x[0], "nuc"); },
       {{gin({3, 4})}, {gin({2, 3, 3}, Layout::Strided)}}},
      {"matrix_norm 2",
       [](const Xs& x) { return linalg::matrix_norm(x[0], 2.0); },
       {{gin({4, 3})}}},
      {"matrix_norm -2",
       [](const Xs& x) {
         return linalg::matrix_norm(x[0], -2.0, {0, 2});
       },
       {{gin({3, 2, 3})}}},
  };
  for (const Row& row : rows) {
    for (const auto& inputs : row.cases) {
      EXPECT_TRUE(gradcheck(row.name, row.fn, inputs)) << row.name;
      EXPECT_TRUE(gradgradcheck(row.name, row.fn, inputs)) << row.name;
    }
  }
}

// Repeated singular values: the values' gradient stays finite (the identity's nuclear norm has
// gradient U Vh = I), as in PyTorch; only U's and Vh's gradients are undefined there.
TEST(SvdGrad, RepeatedValuesGiveFiniteValueGradients) {
  const DynTensor x = require_grad(eye(3, 3, DType::f64));
  const Gradients g = backward(linalg::matrix_norm(x, "nuc"));
  expect_close(g.get(x), Shape{3, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1}, Tol{1e-12, 1e-12}, "nuc of I");
  const DynTensor y = require_grad(eye(3, 3, DType::f64));
  const Gradients gs = backward(sum(linalg::svd(y).S));
  expect_close(gs.get(y), Shape{3, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1}, Tol{1e-12, 1e-12},
               "sum(S) of I through svd");
}

// --- errors -------------------------------------------------------------------------------------

TEST(SvdErrors, ClearMessages) {
  expect_error_prefix("[linalg.svd] expects a tensor with at least 2 dims, got shape [3]",
                      [] { linalg::svd(zeros(Shape{3}, DType::f32)); });
  expect_error_prefix("[linalg.svdvals] supports float32 and float64 tensors, got float16", [] {
    linalg::svdvals(zeros(Shape{2, 2}, DType::f16));
  });
  expect_error_prefix("[linalg.svd] supports float32 and float64 tensors, got int64", [] {
    linalg::svd(zeros(Shape{2, 2}, DType::i64));
  });
  expect_error_prefix(
      "[linalg.matrix_norm] cannot compute the 2 norm of empty matrices (shape [0, 3])", [] {
        linalg::matrix_norm(zeros(Shape{0, 3}, DType::f32), 2.0);
      });
  expect_error_prefix(
      "[linalg.matrix_norm] cannot compute the -2 norm of empty matrices (shape [2, 0])", [] {
        linalg::matrix_norm(zeros(Shape{2, 0}, DType::f32), -2.0);
      });
}

}  // namespace
}  // namespace ember::test
