// PLACEHOLDER: reduce.cu
#include "common.cuh"
#include "cuda_backend.hpp"

namespace ember::cuda {

void CudaBackend::reduce(ReduceOp op, const RawTensor& x, uint32_t dims_mask,
                         const RawTensor& out) {
  // PLACEHOLDER until its family lands (issue 13)
  no_kernel(op_name(op), x.dtype);
  (void)dims_mask;
  (void)out;
}

void CudaBackend::arg_reduce(ArgReduceOp op, const RawTensor& x, int dim, const RawTensor& values,
                             const RawTensor& indices) {
  // PLACEHOLDER until its family lands (issue 13)
  no_kernel(op_name(op), x.dtype);
  (void)dim;
  (void)values;
  (void)indices;
}

void CudaBackend::scan(ScanOp op, const RawTensor& x, int dim, const RawTensor& out) {
  // PLACEHOLDER until its family lands (issue 13)
  no_kernel(op_name(op), x.dtype);
  (void)dim;
  (void)out;
}

}  // namespace ember::cuda
