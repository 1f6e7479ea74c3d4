// Batched matrix multiply. f32 goes to oneDNN's sgemm (or OpenBLAS), f64 to OpenBLAS, f16/bf16
// through f32; integers and builds without a GEMM library use the blocked kernel below.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__AVX__)
#include <immintrin.h>
#endif

#include "../../core/convert.hpp"
#include "cpu_backend.hpp"
#include "ember/backends/cpu/cpu.hpp"
#include "ember/core/error.hpp"
#include "parallel.hpp"

#if defined(EMBER_HAVE_DNNL)
#include <oneapi/dnnl/dnnl.h>
#endif
#if defined(EMBER_HAVE_OPENBLAS)
#include <cblas.h>
#endif

namespace ember::cpu {
namespace {

// One operand's matrix layout for BLAS: row-major with leading dim `ld`, or transposed.
struct MatView {
  const char* base;
  int64_t batch_stride;  // bytes
  bool trans;
  int64_t ld;
};

RawTensor contiguous_copy(Backend& be, const RawTensor& t, DType dtype) {
  RawTensor c = empty_raw(t.shape, dtype);
  be.copy(t, c);
  return c;
}

// C[M,N] = A[M,K] B[K,N] for one batch, i-k-j order so the inner loop runs along contiguous
// rows of B and C (vectorised), blocked over k and j to stay in cache.
template <class T, class Acc>
void gemm_blocked(const T* a, int64_t as0, int64_t as1, const T* b, int64_t bs0, int64_t bs1, T* c,
                  int64_t m, int64_t n, int64_t k) {
  constexpr int64_t kKB = 256, kNB = 256;
  Acc row[kNB];  // on the stack: this kernel runs once per output row
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j0 = 0; j0 < n; j0 += kNB) {
      const int64_t nj = std::min(kNB, n - j0);
      std::fill(row, row + nj, Acc(0));
      for (int64_t p0 = 0; p0 < k; p0 += kKB) {
        const int64_t pk = std::min(kKB, k - p0);
        for (int64_t p = p0; p < p0 + pk; ++p) {
          const Acc av = static_cast<Acc>(a[i * as0 + p * as1]);
          const T* brow = b + p * bs0 + j0 * bs1;
          if (bs1 == 1) {
            for (int64_t j = 0; j < nj; ++j) row[j] += av * static_cast<Acc>(brow[j]);
          } else {
            for (int64_t j = 0; j < nj; ++j) row[j] += av * static_cast<Acc>(brow[j * bs1]);
          }
        }
      }
      for (int64_t j = 0; j < nj; ++j) c[i * n + j0 + j] = static_cast<T>(row[j]);
    }
  }
}

template <class T, class Acc>
void matmul_blocked(const RawTensor& a, const RawTensor& b, const RawTensor& out) {
  const int64_t batch = out.shape[0], m = out.shape[1], n = out.shape[2], k = a.shape[2];
  const T* ap = a.data_as<T>();
  const T* bp = b.data_as<T>();
  T* cp = out.data_as<T>();
  // Parallel over (batch, row) pairs: each writes its own output row.
  parallel_for(0, batch * m, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, n * k)),
               [&](int64_t lo, int64_t hi) {
                 for (int64_t t = lo; t < hi; ++t) {
                   const int64_t bi = t / m, i = t % m;
                   gemm_blocked<T, Acc>(ap + bi * a.strides[0] + i * a.strides[1], a.strides[1],
                                        a.strides[2], bp + bi * b.strides[0], b.strides[1],
                                        b.strides[2], cp + bi * m * n + i * n, 1, n, k);
                 }
               });
}

// Stores n values v * b[j] to dst, with streaming stores where the target has them: they skip
// the read-for-ownership of each line, lifting write bandwidth about 1.4x on this machine.
void scaled_row_streaming(float v, const float* b, float* dst, int64_t n) {
  int64_t j = 0;
#if defined(__AVX__)
  for (; j < n && (reinterpret_cast<uintptr_t>(dst + j) % 32) != 0; ++j) dst[j] = v * b[j];
  const __m256 vv = _mm256_set1_ps(v);
  for (; j + 8 <= n; j += 8) _mm256_stream_ps(dst + j, _mm256_mul_ps(vv, _mm256_loadu_ps(b + j)));
#endif
  for (; j < n; ++j) dst[j] = v * b[j];
}

// C = A B with k == 1: an outer product (the weight gradient x^T g of a batch-1 layer). Pure
// stores, so a plain loop beats a GEMM library's packing; outputs larger than a core's L2 are
// streamed past the cache, since nothing reads them before the whole product is written.
void outer_product(const RawTensor& a, const RawTensor& b, const RawTensor& out) {
  const int64_t batch = out.shape[0], m = out.shape[1], n = out.shape[2];
  const bool stream = b.strides[2] == 1 && out.nbytes() >= (size_t{512} << 10);
  const float* ap = a.data_as<float>();
  const float* bp = b.data_as<float>();
  float* cp = out.data_as<float>();
  parallel_for(0, batch * m, std::max<int64_t>(1, kGrain / n), [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      const int64_t bi = t / m, i = t % m;
      const float v = ap[bi * a.strides[0] + i * a.strides[1]];
      const float* brow = bp + bi * b.strides[0];
      float* dst = cp + t * n;
      if (stream) {
        scaled_row_streaming(v, brow, dst, n);
      } else if (b.strides[2] == 1) {
        for (int64_t j = 0; j < n; ++j) dst[j] = v * brow[j];
      } else {
        for (int64_t j = 0; j < n; ++j) dst[j] = v * brow[j * b.strides[2]];
      }
    }
#if defined(__AVX__)
    if (stream) _mm_sfence();  // streaming stores are weakly ordered: each thread publishes its own
#endif
  });
}

#if defined(EMBER_HAVE_DNNL) || defined(EMBER_HAVE_OPENBLAS)
// BLAS needs one unit stride per matrix; anything else is copied to contiguous first.
bool blas_layout(const RawTensor& t, bool* trans, int64_t* ld) {
  const int64_t rows = t.shape[1], cols = t.shape[2];
  const int64_t rs = t.strides[1], cs = t.strides[2];
  if (cs == 1 && (rs >= std::max<int64_t>(cols, 1) || rows == 1)) {
    *trans = false;
    *ld = std::max<int64_t>(rows == 1 ? cols : rs, 1);
    return true;
  }
  if (rs == 1 && (cs >= std::max<int64_t>(rows, 1) || cols == 1)) {
    *trans = true;
    *ld = std::max<int64_t>(cols == 1 ? rows : cs, 1);
    return true;
  }
  return false;
}

// Runs fn(A, lda, transA, B, ldb, transB, C) per batch with BLAS-compatible operands.
template <class T, class Gemm>
void matmul_blas(Backend& be, const RawTensor& a_in, const RawTensor& b_in, const RawTensor& out,
                 Gemm gemm) {
  RawTensor a = a_in, b = b_in;
  bool ta = false, tb = false;
  int64_t lda = 0, ldb = 0;
  // A transposed A (x^T in a weight gradient x^T g) halved oneDNN's sgemm speed at m = 784,
  // k = 64; copying it costs m k, against the product's m n k. With a long k (k = 2048 tokens
  // in a Transformer's weight gradients) oneDNN handles it well and the copy only costs.
  if (!blas_layout(a, &ta, &lda) || (ta && out.shape[2] >= 64 && a.shape[2] < 512)) {
    a = contiguous_copy(be, a, a.dtype);
    blas_layout(a, &ta, &lda);
  }
  if (!blas_layout(b, &tb, &ldb)) {
    b = contiguous_copy(be, b, b.dtype);
    blas_layout(b, &tb, &ldb);
  }
  const int64_t batch = out.shape[0], m = out.shape[1], n = out.shape[2], k = a.shape[2];
  for (int64_t i = 0; i < batch; ++i) {
    gemm(ta, tb, m, n, k, a.data_as<T>() + i * a.strides[0], lda, b.data_as<T>() + i * b.strides[0],
         ldb, out.data_as<T>() + i * m * n, n);
  }
}
#endif

#if defined(EMBER_HAVE_OPENBLAS)
void cblas_sgemm_rm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* ap, int64_t lda,
                    const float* bp, int64_t ldb, float* cp, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.0f, ap,
              static_cast<int>(lda), bp, static_cast<int>(ldb), 0.0f, cp, static_cast<int>(ldc));
}
#endif

void sgemm(Backend& be, const RawTensor& a, const RawTensor& b, const RawTensor& out) {
#if defined(EMBER_HAVE_DNNL)
  matmul_blas<float>(be, a, b, out,
                     [](bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* ap,
                        int64_t lda, const float* bp, int64_t ldb, float* cp, int64_t ldc) {
#if defined(EMBER_HAVE_OPENBLAS)
                       // A transposed A with a long k (a Transformer's weight gradients, x^T g
                       // over 2048 tokens): oneDNN 27-34 GFLOP/s, OpenBLAS 36-37
                       // (bench_gemm's tgemm rows).
                       if (ta && k >= 512)
                         return cblas_sgemm_rm(ta, tb, m, n, k, ap, lda, bp, ldb, cp, ldc);
#endif
                       const dnnl_status_t st = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k,
                                                           1.0f, ap, lda, bp, ldb, 0.0f, cp, ldc);
                       EMBER_CHECK(st == dnnl_success, "[matmul] oneDNN sgemm failed with status ",
                                   static_cast<int>(st), " for m=", m, " n=", n, " k=", k);
                     });
#elif defined(EMBER_HAVE_OPENBLAS)
  matmul_blas<float>(be, a, b, out, cblas_sgemm_rm);
#else
  (void)be;
  matmul_blocked<float, float>(a, b, out);
#endif
}

void dgemm(Backend& be, const RawTensor& a, const RawTensor& b, const RawTensor& out) {
#if defined(EMBER_HAVE_OPENBLAS)
  matmul_blas<double>(be, a, b, out,
                      [](bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double* ap,
                         int64_t lda, const double* bp, int64_t ldb, double* cp, int64_t ldc) {
                        cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                                    tb ? CblasTrans : CblasNoTrans, static_cast<int>(m),
                                    static_cast<int>(n), static_cast<int>(k), 1.0, ap,
                                    static_cast<int>(lda), bp, static_cast<int>(ldb), 0.0, cp,
                                    static_cast<int>(ldc));
                      });
#else
  (void)be;
  matmul_blocked<double, double>(a, b, out);
#endif
}

// out[B, M, N] (i32) = a[B, M, K] b[B, K, N] (i8), every product summed in int32. With both
// operands contiguous along k (x times a Linear's w^T, the unfolded input of a convolution) each
// output is one dot product of two contiguous runs; otherwise rows of b are scaled and added.
void matmul_int8_kernel(const RawTensor& a, const RawTensor& b, const RawTensor& out) {
  const int64_t batch = out.shape[0], m = out.shape[1], n = out.shape[2], k = a.shape[2];
  const bool dots = a.strides[2] == 1 && b.strides[1] == 1;
  parallel_for(0, batch * m, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, n * k)),
               [&](int64_t lo, int64_t hi) {
                 for (int64_t t = lo; t < hi; ++t) {
                   const int64_t bi = t / m, i = t % m;
                   const int8_t* arow = a.data_as<int8_t>() + bi * a.strides[0] + i * a.strides[1];
                   const int8_t* bmat = b.data_as<int8_t>() + bi * b.strides[0];
                   int32_t* c = out.data_as<int32_t>() + t * n;
                   if (dots) {
                     for (int64_t j = 0; j < n; ++j) {
                       const int8_t* bcol = bmat + j * b.strides[2];
                       int32_t acc = 0;
                       for (int64_t p = 0; p < k; ++p) acc += int32_t{arow[p]} * int32_t{bcol[p]};
                       c[j] = acc;
                     }
                     continue;
                   }
                   std::fill(c, c + n, 0);  // the caller made b's rows contiguous
                   for (int64_t p = 0; p < k; ++p) {
                     const int32_t av = arow[p * a.strides[2]];
                     const int8_t* brow = bmat + p * b.strides[1];
                     for (int64_t j = 0; j < n; ++j) c[j] += av * int32_t{brow[j]};
                   }
                 }
               });
}

}  // namespace

void CpuBackend::matmul_int8(const RawTensor& a, const RawTensor& b, const RawTensor& out) {
  if (out.numel() == 0) return;
  if (a.shape[2] == 0) {
    fill(out, Scalar(0));
    return;
  }
  const bool dots = a.strides[2] == 1 && b.strides[1] == 1;
  if (!dots && b.strides[2] != 1) {
    return matmul_int8_kernel(a, contiguous_copy(*this, b, DType::i8), out);
  }
  matmul_int8_kernel(a, b, out);
}

void CpuBackend::matmul(const RawTensor& a, const RawTensor& b, const RawTensor& out) {
  if (out.numel() == 0) return;
  num_threads();          // settles the thread count before a GEMM library reads it
  if (a.shape[2] == 0) {  // empty inner dimension: the product is all zeros
    fill(out, Scalar(0));
    return;
  }
  switch (out.dtype) {
    case DType::f32:
      if (a.shape[2] == 1) return outer_product(a, b, out);
      return sgemm(*this, a, b, out);
    case DType::f64:
      return dgemm(*this, a, b, out);
    case DType::f16:
    case DType::bf16: {
      // Computed in f32 and rounded once on store, as PyTorch's CPU kernels do.
      const RawTensor a32 = contiguous_copy(*this, a, DType::f32);
      const RawTensor b32 = contiguous_copy(*this, b, DType::f32);
      const RawTensor c32 = empty_raw(out.shape, DType::f32);
      sgemm(*this, a32, b32, c32);
      copy(c32, out);
      return;
    }
    case DType::i64:
      return matmul_blocked<int64_t, int64_t>(a, b, out);
    case DType::i32:
      return matmul_blocked<int32_t, int64_t>(a, b, out);
    case DType::i8:
      return matmul_blocked<int8_t, int64_t>(a, b, out);
    case DType::u8:
      return matmul_blocked<uint8_t, int64_t>(a, b, out);
    case DType::boolean:
      break;
  }
  EMBER_FAIL("[matmul] has no Cpu kernel for ", out.dtype);
}

}  // namespace ember::cpu
