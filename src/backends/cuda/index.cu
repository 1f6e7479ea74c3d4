// PLACEHOLDER: index.cu
#include "common.cuh"
#include "cuda_backend.hpp"

namespace ember::cuda {

void CudaBackend::gather(const RawTensor& x, int dim, const RawTensor& index,
                         const RawTensor& out) {
  // PLACEHOLDER until its family lands (issue 13)
  no_kernel("gather", x.dtype);
  (void)dim;
  (void)index;
  (void)out;
}

void CudaBackend::scatter(ScatterReduce reduce, const RawTensor& dst, int dim,
                          const RawTensor& index, const RawTensor& src) {
  // PLACEHOLDER until its family lands (issue 13)
  no_kernel("scatter", dst.dtype);
  (void)reduce;
  (void)dim;
  (void)index;
  (void)src;
}

void CudaBackend::index_select(const RawTensor& x, int dim, const RawTensor& index,
                               const RawTensor& out) {
  // PLACEHOLDER until its family lands (issue 13)
  no_kernel("index_select", x.dtype);
  (void)dim;
  (void)index;
  (void)out;
}

RawTensor CudaBackend::nonzero(const RawTensor& x) {
  // PLACEHOLDER until its family lands (issue 13)
  no_kernel("nonzero", x.dtype);
}

}  // namespace ember::cuda
