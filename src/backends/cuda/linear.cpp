// nn::linear through cuBLASLt (OpFamily::Linear): the forward y = x w^T + bias is one GEMM with the
// bias added in its epilogue (BIAS), the weight's gradient one GEMM whose epilogue also sums the
// output gradient's rows into the bias gradient (BGRADB, TransformerEngine's wgrad). f16 and bf16
// accumulate in f32; f32 uses TF32 only under allow_tf32(), as matmul.cpp. Descriptors and the
// heuristic's algorithm are cached per GEMM; where cuBLASLt offers no algorithm for an epilogue,
// the plain GEMM (matmul.cpp) and a separate bias add or row sum run instead.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <array>
#include <atomic>
#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "cuda_backend.hpp"
#include "ember/backends/cuda/cuda.hpp"
#include "ember/core/device.hpp"
#include "ember/core/error.hpp"
#include "state.hpp"

namespace ember::cuda {
namespace {

// matmul.cpp gives cuBLAS the same: DeviceState's one workspace then never grows between them.
constexpr size_t kWorkspaceBytes = size_t{32} << 20;

void check_lt(cublasStatus_t status, const char* op, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    EMBER_FAIL("[", op, "] cublasLt ", what, ": ", cublasLtGetStatusString(status));
  }
}

// One column-major GEMM as cuBLASLt sees it: D [m, n] = op(A) op(B), k the inner dimension, with
// `epilogue` reading (BIAS) or writing (BGRADB) the vector at `bias`.
struct Gemm {
  cublasOperation_t trans_a = CUBLAS_OP_N, trans_b = CUBLAS_OP_N;
  int64_t m = 0, n = 0, k = 0;
  const void* a = nullptr;
  int64_t lda = 0;
  const void* b = nullptr;
  int64_t ldb = 0;
  void* d = nullptr;
  int64_t ldd = 0;
  void* bias = nullptr;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  DType dtype = DType::f32;
};

// The descriptors of one GEMM shape and the heuristic's algorithm for them (none: `found` false).
struct Plan {
  std::mutex mu;  // the descriptor's bias pointer is set per call
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  std::atomic<bool> found{false};  // cleared if cublasLtMatmul turns the algorithm down
};

// Everything the heuristic's choice depends on: the pointers' alignments too (cuBLASLt picks
// vectorised kernels for aligned operands), and the TF32 setting of the moment.
struct Key {
  DType dtype;
  cublasLtEpilogue_t epilogue;
  cublasComputeType_t compute;
  cublasOperation_t trans_a, trans_b;
  std::array<int64_t, 6> geometry{};    // m, n, k, lda, ldb, ldd
  std::array<int64_t, 4> alignments{};  // a, b, d, bias (0: none)
  auto operator<=>(const Key&) const = default;
};

struct Cache {
  std::mutex mu;
  cublasLtHandle_t handle = nullptr;
  std::map<Key, std::unique_ptr<Plan>> plans;
};

// Per device, made on first use and never destroyed (as DeviceState: work may outlive main).
Cache& cache_for(int device) {
  static std::mutex mu;
  static auto* caches = new std::map<int, std::unique_ptr<Cache>>();
  std::lock_guard lock(mu);
  auto& c = (*caches)[device];
  if (!c) c = std::make_unique<Cache>();
  return *c;
}

int64_t alignment(const void* p) {
  const auto address = reinterpret_cast<uintptr_t>(p);
  int64_t a = 1;
  while (a < 256 && address % static_cast<uintptr_t>(2 * a) == 0) a *= 2;
  return a;
}

cudaDataType data_type(DType dtype) {
  return dtype == DType::f16 ? CUDA_R_16F : dtype == DType::bf16 ? CUDA_R_16BF : CUDA_R_32F;
}

cublasComputeType_t compute_type(DType dtype) {
  return dtype == DType::f32 && allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

template <class T>
void set(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const T& value,
         const char* op) {
  check_lt(cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof(value)), op,
           "descriptor attribute");
}
template <class T>
void set(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const T& value,
         const char* op) {
  check_lt(cublasLtMatmulPreferenceSetAttribute(pref, attr, &value, sizeof(value)), op,
           "preference attribute");
}

std::unique_ptr<Plan> make_plan(cublasLtHandle_t handle, const Gemm& g, const char* op) {
  auto p = std::make_unique<Plan>();
  const cudaDataType type = data_type(g.dtype);
  check_lt(cublasLtMatmulDescCreate(&p->desc, compute_type(g.dtype), CUDA_R_32F), op, "descriptor");
  set(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, static_cast<int32_t>(g.trans_a), op);
  set(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, static_cast<int32_t>(g.trans_b), op);
  set(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, static_cast<uint32_t>(g.epilogue), op);
  if (g.bias) {
    // The bias (or its gradient) has the operands' type; the heuristic reads the pointer's
    // alignment from here.
    set(p->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, static_cast<int32_t>(type), op);
    set(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, g.bias, op);
  }
  const bool na = g.trans_a == CUBLAS_OP_N, nb = g.trans_b == CUBLAS_OP_N;
  auto layout = [&](cublasLtMatrixLayout_t* l, int64_t rows, int64_t cols, int64_t ld) {
    check_lt(cublasLtMatrixLayoutCreate(l, type, static_cast<uint64_t>(rows),
                                        static_cast<uint64_t>(cols), ld),
             op, "layout");
  };
  layout(&p->a, na ? g.m : g.k, na ? g.k : g.m, g.lda);
  layout(&p->b, nb ? g.k : g.n, nb ? g.n : g.k, g.ldb);
  layout(&p->d, g.m, g.n, g.ldd);

  cublasLtMatmulPreference_t pref = nullptr;
  check_lt(cublasLtMatmulPreferenceCreate(&pref), op, "preference");
  set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, static_cast<uint64_t>(kWorkspaceBytes), op);
  if (g.dtype != DType::f32) {
    // Split-k partial sums stay in f32, as matmul.cpp's DISALLOW_REDUCED_PRECISION_REDUCTION.
    set(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
        static_cast<uint32_t>(CUBLASLT_REDUCTION_SCHEME_NONE |
                              CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE),
        op);
  }
  set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, static_cast<uint32_t>(alignment(g.a)), op);
  set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, static_cast<uint32_t>(alignment(g.b)), op);
  set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, static_cast<uint32_t>(alignment(g.d)), op);
  set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, static_cast<uint32_t>(alignment(g.d)), op);
  cublasLtMatmulHeuristicResult_t result{};
  int count = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(handle, p->desc, p->a, p->b, p->d,
                                                               p->d, pref, 1, &result, &count);
  (void)cublasLtMatmulPreferenceDestroy(pref);
  if (status == CUBLAS_STATUS_SUCCESS && count > 0 && result.state == CUBLAS_STATUS_SUCCESS) {
    p->algo = result.algo;
    p->found = true;
  }
  return p;
}

Key key_of(const Gemm& g) {
  Key key{g.dtype, g.epilogue, compute_type(g.dtype), g.trans_a, g.trans_b};
  key.geometry = {g.m, g.n, g.k, g.lda, g.ldb, g.ldd};
  key.alignments = {alignment(g.a), alignment(g.b), alignment(g.d), g.bias ? alignment(g.bias) : 0};
  return key;
}

// Queues g on s's stream; false (nothing queued) when cuBLASLt has no algorithm for it.
bool run(const Gemm& g, DeviceState& s, const char* op) {
  const Key key = key_of(g);
  Cache& c = cache_for(s.index);
  Plan* plan = nullptr;
  {
    // The heuristic query (tens of microseconds) runs once per key, under the lock.
    std::lock_guard lock(c.mu);
    if (!c.handle) check_lt(cublasLtCreate(&c.handle), op, "handle");
    auto& slot = c.plans[key];
    if (!slot) slot = make_plan(c.handle, g, op);
    plan = slot.get();
  }
  if (!plan->found) return false;
  void* workspace = s.workspace(kWorkspaceBytes, op);
  const float one = 1.0f, zero = 0.0f;
  std::lock_guard lock(plan->mu);
  if (g.bias) set(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, g.bias, op);
  const cublasStatus_t status =
      cublasLtMatmul(c.handle, plan->desc, &one, g.a, plan->a, g.b, plan->b, &zero, g.d, plan->d,
                     g.d, plan->d, &plan->algo, workspace, kWorkspaceBytes, s.stream);
  if (status == CUBLAS_STATUS_NOT_SUPPORTED) {  // nothing was queued: the unfused path runs
    plan->found = false;
    return false;
  }
  check_lt(status, op, "matmul");
  return true;
}

// The leading dimension of a row-major matrix t [rows, cols] (unit column stride): its row
// stride, which is free when it has one row.
int64_t leading(const RawTensor& t) { return t.shape[0] == 1 ? t.shape[1] : t.strides[0]; }

// Whether t [rows, cols] is column-major (unit row stride; Backend::linear's alternative for the
// weight and its gradient), and its leading dimension then: the column stride.
bool column_major(const RawTensor& t) {
  return !(t.strides[1] == 1 && (t.shape[0] == 1 || t.strides[0] >= t.shape[1])) &&
         t.strides[0] == 1;
}
int64_t leading_column(const RawTensor& t) { return t.shape[1] == 1 ? t.shape[0] : t.strides[1]; }

// t [rows, cols] as matmul's [1, rows, cols] operand, or its transpose [1, cols, rows].
RawTensor batch_of_one(const RawTensor& t, bool transposed) {
  const int64_t rows = t.shape[0], cols = t.shape[1], ld = leading(t);
  return transposed ? t.view(Shape{1, cols, rows}, Strides{0, 1, ld}, t.offset)
                    : t.view(Shape{1, rows, cols}, Strides{0, ld, 1}, t.offset);
}

}  // namespace

void CudaBackend::linear(const RawTensor& x, const RawTensor& w, const RawTensor& bias,
                         const RawTensor& out) {
  constexpr const char* op = "linear";
  DeviceState& s = state_of(out);
  const int64_t m = x.shape[0], k = x.shape[1], n = w.shape[0];
  // Row-major y [M, N] is column-major [N, M] = op(A) B with A = w's memory (column-major
  // [K, N], transposed) and B = x's (column-major [K, M]): the bias runs along D's N rows.
  // A column-major w is A's memory as it is (column-major [N, K]), not transposed.
  const bool w_columns = column_major(w);
  Gemm g;
  g.trans_a = w_columns ? CUBLAS_OP_N : CUBLAS_OP_T;
  g.trans_b = CUBLAS_OP_N;
  g.m = n;
  g.n = m;
  g.k = k;
  g.a = w.data();
  g.lda = w_columns ? leading_column(w) : leading(w);
  g.b = x.data();
  g.ldb = leading(x);
  g.d = out.data();
  g.ldd = n;
  g.bias = bias.defined() ? bias.data() : nullptr;
  g.epilogue = bias.defined() ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
  g.dtype = out.dtype;
  if (run(g, s, op)) return;

  // No algorithm for the epilogue: x w^T by the plain GEMM, then the bias added (broadcast).
  const RawTensor out3 = out.view(Shape{1, m, n}, Strides{m * n, n, 1}, out.offset);
  const RawTensor wt = w_columns
                           ? w.view(Shape{1, k, n}, Strides{0, leading_column(w), 1}, w.offset)
                           : batch_of_one(w, true);
  if (!bias.defined()) return matmul(batch_of_one(x, false), wt, out3);
  const std::shared_ptr<Storage> tmp = scratch(out.nbytes(), out.device());
  const RawTensor xw{tmp, Shape{m, n}, Strides{n, 1}, 0, out.dtype};
  matmul(batch_of_one(x, false), wt, xw.view(out3.shape, out3.strides, 0));
  binary(BinaryOp::Add, xw, bias.view(Shape{m, n}, Strides{0, 1}, bias.offset), out);
  // tmp is released here: the allocator's frees are ordered on the stream after the add.
}

void CudaBackend::linear_backward_weight(const RawTensor& grad, const RawTensor& x,
                                         const RawTensor& dw, const RawTensor& dbias) {
  constexpr const char* op = "linear_backward";
  DeviceState& s = state_of(dw);
  const int64_t m = x.shape[0], k = x.shape[1], n = grad.shape[1];
  // Row-major dw [N, K] is column-major [K, N] = A op(B) with A = x's memory (column-major
  // [K, M]) and B = grad's (column-major [N, M], transposed), k = M; BGRADB sums op(B) over that
  // same k: dbias, one entry per column of D.
  // A column-major dw is column-major [N, K] = grad's memory (column-major [N, M]) times x's
  // transposed, k = M again; the bias gradient then sums A (BGRADA), one entry per row of D.
  const bool dw_columns = column_major(dw);
  Gemm g;
  g.trans_a = CUBLAS_OP_N;
  g.trans_b = CUBLAS_OP_T;
  g.m = dw_columns ? n : k;
  g.n = dw_columns ? k : n;
  g.k = m;
  g.a = dw_columns ? grad.data() : x.data();
  g.lda = dw_columns ? leading(grad) : leading(x);
  g.b = dw_columns ? x.data() : grad.data();
  g.ldb = dw_columns ? leading(x) : leading(grad);
  g.d = dw.data();
  g.ldd = dw_columns ? n : k;
  g.bias = dbias.defined() ? dbias.data() : nullptr;
  g.epilogue = !dbias.defined() ? CUBLASLT_EPILOGUE_DEFAULT
               : dw_columns     ? CUBLASLT_EPILOGUE_BGRADA
                                : CUBLASLT_EPILOGUE_BGRADB;
  g.dtype = dw.dtype;
  if (run(g, s, op)) return;

  // No algorithm for the epilogue: grad^T x by the plain GEMM (into scratch, then laid out as dw
  // when dw is column-major), then grad's column sums.
  if (dw_columns) {
    const std::shared_ptr<Storage> tmp = scratch(dw.nbytes(), dw.device());
    const RawTensor rows{tmp, Shape{n, k}, Strides{k, 1}, 0, dw.dtype};
    matmul(batch_of_one(grad, true), batch_of_one(x, false),
           rows.view(Shape{1, n, k}, Strides{n * k, k, 1}, 0));
    copy(rows, dw);
  } else {
    matmul(batch_of_one(grad, true), batch_of_one(x, false),
           dw.view(Shape{1, n, k}, Strides{n * k, k, 1}, dw.offset));
  }
  if (dbias.defined()) {
    const RawTensor g2 = grad.view(Shape{m, n}, Strides{leading(grad), 1}, grad.offset);
    reduce(ReduceOp::Sum, g2, 1u, dbias.view(Shape{1, n}, Strides{n, 1}, dbias.offset));
  }
}

}  // namespace ember::cuda
