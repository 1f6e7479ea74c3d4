// linalg.svd: the Cpu's one-sided Jacobi (core/svd_jacobi.hpp) with one thread block per
// matrix, in double. The pairs of a round-robin step are disjoint, so the block's warps rotate
// them at once (a warp per pair, its lanes along the columns); the block synchronises between
// steps and stops after a sweep without a rotation, with no word to the host. The same rotations
// in the same order as the Cpu: the vectors agree with the Cpu's, signs included.
#include <math_constants.h>

#include <cfloat>

#include "../../core/svd_jacobi.hpp"
#include "common.cuh"
#include "cuda_backend.hpp"

namespace ember::cuda {
namespace {

constexpr unsigned kAll = 0xffffffffu;
constexpr int kWarps = kThreads / 32;

__device__ double warp_sum(double v) {
  for (int m = 16; m > 0; m /= 2) v += __shfl_xor_sync(kAll, v, m);
  return v;
}

// The block's sum (or max) of each thread's v, returned to every thread. `scratch`: kWarps
// doubles of shared memory.
template <bool kMax>
__device__ double block_reduce(double v, double* scratch) {
  for (int m = 16; m > 0; m /= 2) {
    const double o = __shfl_xor_sync(kAll, v, m);
    v = kMax ? fmax(v, o) : v + o;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // scratch may still be read from the previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  double r = scratch[0];
  for (int w = 1; w < kWarps; ++w) r = kMax ? fmax(r, scratch[w]) : r + scratch[w];
  return r;
}

// Per matrix, in global scratch: w (k columns of `rows`), v (k x k), left (kl columns of
// `rows`), norm2 and order (k), covered (rows) and proj (kl).
struct Work {
  double *w, *v, *left, *norm2, *covered, *proj;
  int* order;
};

__device__ double dot(const double* x, const double* y, int64_t n, int lane) {
  double acc = 0;
  for (int64_t i = lane; i < n; i += 32) acc += x[i] * y[i];
  return warp_sum(acc);
}

__device__ void rotate(double* x, double* y, int64_t n, double c, double s, int lane) {
  for (int64_t i = lane; i < n; i += 32) {
    const double a = x[i], b = y[i];
    x[i] = c * a - s * b;
    y[i] = s * a + c * b;
  }
}

__device__ void orthogonalise(double* w, double* v, int64_t rows, int64_t k, bool vectors) {
  __shared__ int rotated;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t pn = jacobi::padded(k);
  const double tol = jacobi::tolerance(rows);
  for (int sweep = 0; sweep < jacobi::kMaxSweeps; ++sweep) {
    if (threadIdx.x == 0) rotated = 0;
    __syncthreads();
    for (int64_t t = 0; t + 1 < pn; ++t) {
      for (int64_t i = warp; i < pn / 2; i += kWarps) {
        int64_t a = 0, b = 0;
        jacobi::pair(pn, t, i, &a, &b);
        if (b >= k) continue;
        double* wa = w + a * rows;
        double* wb = w + b * rows;
        const double alpha = dot(wa, wa, rows, lane), beta = dot(wb, wb, rows, lane);
        const double gamma = dot(wa, wb, rows, lane);
        double c = 0, s = 0;
        if (!jacobi::rotation(alpha, beta, gamma, tol, &c, &s)) continue;
        if (lane == 0) rotated = 1;
        rotate(wa, wb, rows, c, s, lane);
        if (vectors) rotate(v + a * k, v + b * k, k, c, s, lane);
      }
      __syncthreads();
    }
    const bool again = rotated != 0;
    __syncthreads();
    if (!again) break;
  }
}

// Columns [from, kl) of `left` made an orthonormal completion, as the Cpu's: each from the unit
// vector the others cover least, minus its projections, then orthogonalised once more.
__device__ void complete(double* left, double* covered, double* proj, int64_t rows, int64_t from,
                         int64_t kl, double* scratch) {
  __shared__ int64_t pick;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int64_t k = from; k < kl; ++k) {
    for (int64_t i = threadIdx.x; i < rows; i += blockDim.x) {
      double acc = 0;
      for (int64_t l = 0; l < k; ++l) acc += left[l * rows + i] * left[l * rows + i];
      covered[i] = acc;
    }
    __syncthreads();
    if (threadIdx.x == 0) {  // the first least covered, as std::min_element
      int64_t best = 0;
      for (int64_t i = 1; i < rows; ++i) {
        if (covered[i] < covered[best]) best = i;
      }
      pick = best;
    }
    __syncthreads();
    const int64_t c = pick;
    double* out = left + k * rows;
    for (int64_t i = threadIdx.x; i < rows; i += blockDim.x) {
      double x = i == c ? 1.0 : 0.0;
      for (int64_t l = 0; l < k; ++l) x -= left[l * rows + c] * left[l * rows + i];
      out[i] = x;
    }
    __syncthreads();
    for (int64_t l = warp; l < k; l += kWarps) {
      const double p = dot(left + l * rows, out, rows, lane);
      if (lane == 0) proj[l] = p;
    }
    __syncthreads();
    double len2 = 0;
    for (int64_t i = threadIdx.x; i < rows; i += blockDim.x) {
      double x = out[i];
      for (int64_t l = 0; l < k; ++l) x -= proj[l] * left[l * rows + i];
      out[i] = x;
      len2 += x * x;
    }
    const double inv = 1 / sqrt(block_reduce<false>(len2, scratch));
    for (int64_t i = threadIdx.x; i < rows; i += blockDim.x) out[i] *= inv;
    __syncthreads();
  }
}

template <class T>
__global__ void svd_kernel(const T* a_all, int64_t m_rows, int64_t n_cols, T* u_all, T* s_all,
                           T* vh_all, int64_t ku, int64_t kv, Work work) {
  __shared__ double scratch[kWarps];
  __shared__ int64_t first_bad;
  const int64_t b = blockIdx.x;
  const bool tall = m_rows >= n_cols, vectors = u_all != nullptr;
  const int64_t rows = tall ? m_rows : n_cols, k = tall ? n_cols : m_rows;
  const int64_t kl = vectors ? (tall ? ku : kv) : 0;
  const T* a = a_all + b * m_rows * n_cols;
  double* w = work.w + b * k * rows;
  double* v = work.v + b * k * k;
  double* left = work.left + b * kl * rows;
  double* norm2 = work.norm2 + b * k;
  int* order = work.order + b * k;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  // Scaled to max |a| = 1 (as the Cpu), the columns of the tall side, V = I. NaN or inf anywhere
  // (counted as inf) makes every output NaN.
  double big = 0;
  for (int64_t i = threadIdx.x; i < m_rows * n_cols; i += blockDim.x) {
    const double x = fabs(static_cast<double>(a[i]));
    big = isfinite(x) ? fmax(big, x) : CUDART_INF;
  }
  double scale = block_reduce<true>(big, scratch);
  if (isinf(scale)) {
    for (int64_t r = threadIdx.x; r < k; r += blockDim.x) s_all[b * k + r] = T(CUDART_NAN);
    if (!vectors) return;
    for (int64_t e = threadIdx.x; e < m_rows * ku; e += blockDim.x) {
      u_all[b * m_rows * ku + e] = T(CUDART_NAN);
    }
    for (int64_t e = threadIdx.x; e < kv * n_cols; e += blockDim.x) {
      vh_all[b * kv * n_cols + e] = T(CUDART_NAN);
    }
    return;
  }
  if (!(scale > 0)) scale = 1;
  for (int64_t e = threadIdx.x; e < m_rows * n_cols; e += blockDim.x) {
    const int64_t i = e / n_cols, j = e % n_cols;
    w[tall ? j * rows + i : i * rows + j] = static_cast<double>(a[e]) / scale;
  }
  if (vectors) {
    for (int64_t e = threadIdx.x; e < k * k; e += blockDim.x) v[e] = e / k == e % k ? 1.0 : 0.0;
  }
  __syncthreads();
  orthogonalise(w, v, rows, k, vectors);

  for (int64_t j = warp; j < k; j += kWarps) {
    const double n2 = dot(w + j * rows, w + j * rows, rows, lane);
    if (lane == 0) norm2[j] = n2;
  }
  __syncthreads();
  // Descending, ties in column order: each column's rank by counting.
  for (int64_t j = threadIdx.x; j < k; j += blockDim.x) {
    int64_t rank = 0;
    for (int64_t l = 0; l < k; ++l) rank += norm2[l] > norm2[j] || (norm2[l] == norm2[j] && l < j);
    order[rank] = static_cast<int>(j);
  }
  if (threadIdx.x == 0) first_bad = k;
  __syncthreads();
  T* s = s_all + b * k;
  for (int64_t r = threadIdx.x; r < k; r += blockDim.x) {
    const double n2 = norm2[order[r]];
    s[r] = static_cast<T>(sqrt(n2) * scale);
    if (!(n2 >= DBL_MIN)) {  // sorted last: the first such r ends the columns kept
      atomicMin(reinterpret_cast<unsigned long long*>(&first_bad),
                static_cast<unsigned long long>(r));
    }
  }
  if (!vectors) return;
  __syncthreads();

  const int64_t valid = first_bad;
  for (int64_t e = threadIdx.x; e < valid * rows; e += blockDim.x) {
    const int64_t r = e / rows, i = e % rows;
    const int64_t j = order[r];
    left[e] = w[j * rows + i] / sqrt(norm2[j]);
  }
  __syncthreads();
  complete(left, work.covered + b * rows, work.proj + b * kl, rows, valid, kl, scratch);

  T* u = u_all + b * m_rows * ku;
  T* vh = vh_all + b * kv * n_cols;
  for (int64_t e = threadIdx.x; e < kl * rows; e += blockDim.x) {
    const int64_t r = e / rows, i = e % rows;
    const T x = static_cast<T>(left[e]);
    if (tall) {
      u[i * ku + r] = x;
    } else {
      vh[r * n_cols + i] = x;
    }
  }
  for (int64_t e = threadIdx.x; e < k * k; e += blockDim.x) {
    const int64_t r = e / k, i = e % k;
    const T x = static_cast<T>(v[order[r] * k + i]);
    if (tall) {
      vh[r * n_cols + i] = x;
    } else {
      u[i * ku + r] = x;
    }
  }
}

template <class T>
void svd_typed(const RawTensor& a, const RawTensor& u, const RawTensor& s, const RawTensor& vh) {
  const int64_t batch = a.shape[0], m = a.shape[1], n = a.shape[2];
  const int64_t rows = m >= n ? m : n, k = m >= n ? n : m;
  const bool vectors = u.defined();
  const int64_t ku = vectors ? u.shape[2] : 0, kv = vectors ? vh.shape[1] : 0;
  const int64_t kl = vectors ? (m >= n ? ku : kv) : 0;
  const int64_t doubles = batch * (k * rows + (vectors ? k * k + kl * rows + rows + kl : 0) + k);
  const auto buffer = scratch(static_cast<size_t>(doubles + 1) * sizeof(double), a.device());
  const auto orders = scratch(static_cast<size_t>(batch * k + 1) * sizeof(int), a.device());
  double* p = static_cast<double*>(buffer->data());
  Work work{};
  auto take = [&p](int64_t count) {
    double* q = p;
    p += count;
    return q;
  };
  work.w = take(batch * k * rows);
  work.norm2 = take(batch * k);
  work.v = take(vectors ? batch * k * k : 0);
  work.left = take(vectors ? batch * kl * rows : 0);
  work.covered = take(vectors ? batch * rows : 0);
  work.proj = take(vectors ? batch * kl : 0);
  work.order = static_cast<int*>(orders->data());
  svd_kernel<T><<<static_cast<unsigned>(batch), kThreads, 0, stream_of(a)>>>(
      a.data_as<const T>(), m, n, vectors ? u.data_as<T>() : nullptr, s.data_as<T>(),
      vectors ? vh.data_as<T>() : nullptr, ku, kv, work);
  EMBER_CUDA_LAUNCHED("linalg.svd");
}

}  // namespace

void CudaBackend::svd(const RawTensor& a, const RawTensor& u, const RawTensor& s,
                      const RawTensor& vh) {
  if (a.dtype == DType::f32) return svd_typed<float>(a, u, s, vh);
  if (a.dtype == DType::f64) return svd_typed<double>(a, u, s, vh);
  no_kernel("linalg.svd", a.dtype);
}

}  // namespace ember::cuda
