// linalg.svd: one-sided Jacobi (core/svd_jacobi.hpp) in double, one matrix per task. A wide
// matrix is decomposed as its transpose, so the rotated columns are always the short side.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "../../core/svd_jacobi.hpp"
#include "cpu_backend.hpp"
#include "ember/core/error.hpp"
#include "parallel.hpp"

namespace ember::cpu {
namespace {

double dot(const double* x, const double* y, int64_t n) {
  double acc = 0;
  for (int64_t i = 0; i < n; ++i) acc += x[i] * y[i];
  return acc;
}

void rotate(double* x, double* y, int64_t n, double c, double s) {
  for (int64_t i = 0; i < n; ++i) {
    const double a = x[i], b = y[i];
    x[i] = c * a - s * b;
    y[i] = s * a + c * b;
  }
}

// One matrix as `cols` columns of length `rows` (rows >= cols), column-major, and the
// accumulated rotations V (cols x cols, column-major; empty when only values are wanted).
struct Tall {
  int64_t rows = 0, cols = 0;
  std::vector<double> w, v;
  double* col(int64_t j) { return w.data() + j * rows; }
};

void orthogonalise(Tall& m) {
  const int64_t n = m.cols, pn = jacobi::padded(n);
  const double tol = jacobi::tolerance(m.rows);
  for (int sweep = 0; sweep < jacobi::kMaxSweeps; ++sweep) {
    bool rotated = false;
    for (int64_t t = 0; t + 1 < pn; ++t) {
      for (int64_t i = 0; i < pn / 2; ++i) {
        int64_t a = 0, b = 0;
        jacobi::pair(pn, t, i, &a, &b);
        if (b >= n) continue;
        double* wa = m.col(a);
        double* wb = m.col(b);
        double c = 0, s = 0;
        if (!jacobi::rotation(dot(wa, wa, m.rows), dot(wb, wb, m.rows), dot(wa, wb, m.rows), tol,
                              &c, &s)) {
          continue;
        }
        rotated = true;
        rotate(wa, wb, m.rows, c, s);
        if (!m.v.empty()) rotate(m.v.data() + a * n, m.v.data() + b * n, n, c, s);
      }
    }
    if (!rotated) break;
  }
}

// Columns [from, to) of `basis` (column-major, `rows` long, the first `from` orthonormal) made
// an orthonormal completion: each starts from the unit vector the others cover least, which
// keeps at least 1 / rows of its squared length, and is orthogonalised twice.
void complete(double* basis, int64_t rows, int64_t from, int64_t to) {
  std::vector<double> covered(static_cast<size_t>(rows));
  for (int64_t k = from; k < to; ++k) {
    std::fill(covered.begin(), covered.end(), 0.0);
    for (int64_t l = 0; l < k; ++l) {
      for (int64_t i = 0; i < rows; ++i) covered[i] += basis[l * rows + i] * basis[l * rows + i];
    }
    const int64_t c = std::min_element(covered.begin(), covered.end()) - covered.begin();
    double* v = basis + k * rows;
    std::fill(v, v + rows, 0.0);
    v[c] = 1;
    for (int pass = 0; pass < 2; ++pass) {
      for (int64_t l = 0; l < k; ++l) {
        const double* u = basis + l * rows;
        const double p = dot(u, v, rows);
        for (int64_t i = 0; i < rows; ++i) v[i] -= p * u[i];
      }
    }
    const double len = std::sqrt(dot(v, v, rows));
    for (int64_t i = 0; i < rows; ++i) v[i] /= len;
  }
}

template <class T>
void svd_one(const T* a, int64_t m_rows, int64_t n_cols, T* u, T* s, T* vh, int64_t ku,
             int64_t kv) {
  const bool tall = m_rows >= n_cols;
  Tall m;
  m.rows = tall ? m_rows : n_cols;
  m.cols = tall ? n_cols : m_rows;
  const int64_t k = m.cols;
  m.w.resize(static_cast<size_t>(m.rows * k));
  // Scaled to max |a| = 1, so that squared norms neither overflow nor underflow.
  double scale = 0;
  bool finite = true;
  for (int64_t i = 0; i < m_rows * n_cols; ++i) {
    const double x = static_cast<double>(a[i]);
    finite = finite && std::isfinite(x);
    scale = std::max(scale, std::fabs(x));
  }
  if (!finite) {  // NaN or inf anywhere: every output NaN, as no factor is meaningful
    const T nan = std::numeric_limits<T>::quiet_NaN();
    std::fill(s, s + k, nan);
    if (u != nullptr) {
      std::fill(u, u + m_rows * ku, nan);
      std::fill(vh, vh + kv * n_cols, nan);
    }
    return;
  }
  if (!(scale > 0)) scale = 1;
  for (int64_t i = 0; i < m_rows; ++i) {
    for (int64_t j = 0; j < n_cols; ++j) {
      const double x = static_cast<double>(a[i * n_cols + j]) / scale;
      m.w[static_cast<size_t>(tall ? j * m.rows + i : i * m.rows + j)] = x;
    }
  }
  const bool vectors = u != nullptr;
  if (vectors) {
    m.v.assign(static_cast<size_t>(k * k), 0.0);
    for (int64_t j = 0; j < k; ++j) m.v[static_cast<size_t>(j * k + j)] = 1;
  }
  orthogonalise(m);

  std::vector<double> norm2(static_cast<size_t>(k));
  for (int64_t j = 0; j < k; ++j) norm2[j] = dot(m.col(j), m.col(j), m.rows);
  // Descending, ties in column order.
  std::vector<int64_t> order(static_cast<size_t>(k));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t x, int64_t y) { return norm2[x] > norm2[y]; });
  for (int64_t r = 0; r < k; ++r) s[r] = static_cast<T>(std::sqrt(norm2[order[r]]) * scale);
  if (!vectors) return;

  // The long side's vectors: the normalised columns, then a completion for the columns of zero
  // length (sorted last) and, for full matrices, up to a square basis.
  const int64_t kl = tall ? ku : kv;
  std::vector<double> left(static_cast<size_t>(m.rows * kl));
  int64_t valid = 0;
  for (; valid < k; ++valid) {
    const double n2 = norm2[order[valid]];
    if (!(n2 >= std::numeric_limits<double>::min())) break;
    const double inv = 1 / std::sqrt(n2);
    const double* w = m.col(order[valid]);
    for (int64_t i = 0; i < m.rows; ++i) left[valid * m.rows + i] = w[i] * inv;
  }
  complete(left.data(), m.rows, valid, kl);
  const int64_t short_len = k;
  for (int64_t r = 0; r < kl; ++r) {
    for (int64_t i = 0; i < m.rows; ++i) {
      const T x = static_cast<T>(left[r * m.rows + i]);
      if (tall) {
        u[i * ku + r] = x;
      } else {
        vh[r * n_cols + i] = x;
      }
    }
  }
  for (int64_t r = 0; r < k; ++r) {
    const double* v = m.v.data() + order[r] * short_len;
    for (int64_t i = 0; i < short_len; ++i) {
      if (tall) {
        vh[r * n_cols + i] = static_cast<T>(v[i]);
      } else {
        u[i * ku + r] = static_cast<T>(v[i]);
      }
    }
  }
}

template <class T>
void svd_typed(const RawTensor& a, const RawTensor& u, const RawTensor& s, const RawTensor& vh) {
  const int64_t batch = a.shape[0], m = a.shape[1], n = a.shape[2], k = std::min(m, n);
  const bool vectors = u.defined();
  const int64_t ku = vectors ? u.shape[2] : 0, kv = vectors ? vh.shape[1] : 0;
  const T* pa = a.data_as<const T>();
  T* ps = s.data_as<T>();
  T* pu = vectors ? u.data_as<T>() : nullptr;
  T* pv = vectors ? vh.data_as<T>() : nullptr;
  parallel_for(0, batch, 1, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      svd_one<T>(pa + b * m * n, m, n, vectors ? pu + b * m * ku : nullptr, ps + b * k,
                 vectors ? pv + b * kv * n : nullptr, ku, kv);
    }
  });
}

}  // namespace

void CpuBackend::svd(const RawTensor& a, const RawTensor& u, const RawTensor& s,
                     const RawTensor& vh) {
  if (a.dtype == DType::f32) return svd_typed<float>(a, u, s, vh);
  if (a.dtype == DType::f64) return svd_typed<double>(a, u, s, vh);
  no_kernel("linalg.svd", a.dtype);
}

}  // namespace ember::cpu
