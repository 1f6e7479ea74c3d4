// Batched matrix multiply: the float dtypes through cuBLAS (cublasGemmStridedBatchedEx_64; f16 and
// bf16 accumulate in f32 on tensor cores, f32 uses TF32 only under allow_tf32()), the integer
// dtypes through the tiled kernel of matmul_int.cu.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <memory>

#include "check.hpp"
#include "cuda_backend.hpp"
#include "ember/backends/cuda/cuda.hpp"
#include "ember/core/device.hpp"
#include "ember/core/error.hpp"
#include "state.hpp"

namespace ember::cuda {

/// out = a @ b for the integer dtypes, wrapping as the Cpu's int64 accumulation (matmul_int.cu).
void matmul_int(const RawTensor& a, const RawTensor& b, const RawTensor& out);

namespace {

constexpr const char* kOp = "matmul";
// cuBLAS's recommended workspace on Hopper.
constexpr size_t kWorkspaceBytes = size_t{32} << 20;

void check_cublas(cublasStatus_t status) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    EMBER_FAIL("[", kOp, "] cublas: ", cublasGetStatusString(status));
  }
}

// One operand as cuBLAS reads it, column-major: `trans` when its memory is the row-major matrix
// itself (unit row stride), not its transpose; `ld` its leading dimension, `batch` its stride.
struct Operand {
  RawTensor t;
  std::shared_ptr<Storage> packed;  // keeps a contiguous copy alive until the GEMM is queued
  bool trans = false;
  int64_t ld = 1;
  int64_t batch = 0;
};

// Whether t [B, rows, cols] (rows, cols >= 1) has a layout cuBLAS takes: one unit stride per
// matrix and a leading dimension that covers the other (as the Cpu's blas_layout).
bool blas_layout(const RawTensor& t, Operand* op) {
  const int64_t rows = t.shape[1], cols = t.shape[2];
  const int64_t rs = t.strides[1], cs = t.strides[2];
  if (t.shape[0] > 1 && t.strides[0] < 0) return false;
  if (cs == 1 && (rs >= cols || rows == 1)) {
    op->trans = false;  // row-major [rows, cols] is column-major [cols, rows]: the transpose
    op->ld = rows == 1 ? cols : rs;
  } else if (rs == 1 && (cs >= rows || cols == 1)) {
    op->trans = true;
    op->ld = cols == 1 ? rows : cs;
  } else {
    return false;
  }
  op->batch = t.shape[0] > 1 ? t.strides[0] : 0;
  return true;
}

// The operand for cuBLAS, packed to contiguous first when its strides do not allow it. A
// broadcast batch (stride 0) packs one matrix and keeps stride 0.
Operand operand(const RawTensor& t) {
  Operand op;
  op.t = t;
  if (blas_layout(t, &op)) return op;
  const int64_t batch = t.strides[0] == 0 ? 1 : t.shape[0];
  const Shape shape{batch, t.shape[1], t.shape[2]};
  const RawTensor src = t.view(shape, Strides{t.strides[0], t.strides[1], t.strides[2]}, t.offset);
  op.packed =
      backend().allocate(static_cast<size_t>(shape.numel()) * dtype_size(t.dtype), t.device());
  op.t = RawTensor{op.packed, shape, contiguous_strides(shape), 0, t.dtype};
  backend().copy(src, op.t);
  blas_layout(op.t, &op);
  return op;
}

cudaDataType data_type(DType dtype) {
  switch (dtype) {
    case DType::f64:
      return CUDA_R_64F;
    case DType::f16:
      return CUDA_R_16F;
    case DType::bf16:
      return CUDA_R_16BF;
    default:
      return CUDA_R_32F;
  }
}

}  // namespace

void CudaBackend::matmul(const RawTensor& a, const RawTensor& b, const RawTensor& out) {
  if (out.numel() == 0) return;
  DeviceState& s = state_of(out);
  const int64_t batch = out.shape[0], m = out.shape[1], n = out.shape[2], k = a.shape[2];
  if (k == 0) {  // empty inner dimension: the product is all zeros (zero bits in every dtype)
    EMBER_CUDA_CHECK(cudaMemsetAsync(out.data(), 0, out.nbytes(), s.stream), kOp);
    return;
  }
  switch (out.dtype) {
    case DType::f32:
    case DType::f64:
    case DType::f16:
    case DType::bf16:
      break;
    case DType::boolean:
      no_kernel(kOp, out.dtype);
    default:
      return matmul_int(a, b, out);
  }

  // Row-major out [M, N] is column-major out^T [N, M] = b^T a^T: cuBLAS's A is b, its B is a.
  const Operand ob = operand(b), oa = operand(a);
  auto* handle = reinterpret_cast<cublasHandle_t>(s.cublas(kOp));
  // Reductions stay in the f32 accumulator for 16-bit outputs (the Cpu rounds once, at the end).
  check_cublas(cublasSetMathMode(
      handle, static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH |
                                        CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
  check_cublas(cublasSetWorkspace(handle, s.workspace(kWorkspaceBytes, kOp), kWorkspaceBytes));

  const cudaDataType type = data_type(out.dtype);
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  const float one_f = 1.0f, zero_f = 0.0f;
  const double one_d = 1.0, zero_d = 0.0;
  const void* alpha = &one_f;
  const void* beta = &zero_f;
  if (out.dtype == DType::f64) {
    compute = CUBLAS_COMPUTE_64F;
    alpha = &one_d;
    beta = &zero_d;
  } else if (out.dtype == DType::f32 && allow_tf32()) {
    compute = CUBLAS_COMPUTE_32F_FAST_TF32;
  }
  check_cublas(cublasGemmStridedBatchedEx_64(
      handle, ob.trans ? CUBLAS_OP_T : CUBLAS_OP_N, oa.trans ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k,
      alpha, ob.t.data(), type, ob.ld, ob.batch, oa.t.data(), type, oa.ld, oa.batch, beta,
      out.data(), type, n, m * n, batch, compute, CUBLAS_GEMM_DEFAULT));
}

}  // namespace ember::cuda
