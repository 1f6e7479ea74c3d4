// PLACEHOLDER: sort.cu
#include "common.cuh"
#include "cuda_backend.hpp"

namespace ember::cuda {

void CudaBackend::sort(const RawTensor& x, int dim, bool descending, const RawTensor& values,
                       const RawTensor& indices) {
  // PLACEHOLDER until its family lands (issue 13)
  no_kernel("sort", x.dtype);
  (void)dim;
  (void)descending;
  (void)values;
  (void)indices;
}

void CudaBackend::topk(const RawTensor& x, int64_t k, int dim, bool largest,
                       const RawTensor& values, const RawTensor& indices) {
  // PLACEHOLDER until its family lands (issue 13)
  no_kernel("topk", x.dtype);
  (void)k;
  (void)dim;
  (void)largest;
  (void)values;
  (void)indices;
}

}  // namespace ember::cuda
