// PLACEHOLDER: pool.cu
#include "common.cuh"
#include "cuda_backend.hpp"

namespace ember::cuda {

void CudaBackend::max_pool(const RawTensor& x, const PoolParams& p, const RawTensor& out,
                           const RawTensor& indices) {
  // PLACEHOLDER until its family lands (issue 13)
  no_kernel("max_pool", x.dtype);
  (void)p;
  (void)out;
  (void)indices;
}

void CudaBackend::max_pool_backward(const RawTensor& grad_out, const RawTensor& indices,
                                    const PoolParams& p, const RawTensor& grad_in) {
  // PLACEHOLDER until its family lands (issue 13)
  no_kernel("max_pool_backward", grad_out.dtype);
  (void)indices;
  (void)p;
  (void)grad_in;
}

void CudaBackend::avg_pool(const RawTensor& x, const PoolParams& p, const RawTensor& out) {
  // PLACEHOLDER until its family lands (issue 13)
  no_kernel("avg_pool", x.dtype);
  (void)p;
  (void)out;
}

void CudaBackend::avg_pool_backward(const RawTensor& grad_out, const PoolParams& p,
                                    const RawTensor& grad_in) {
  // PLACEHOLDER until its family lands (issue 13)
  no_kernel("avg_pool_backward", grad_out.dtype);
  (void)p;
  (void)grad_in;
}

}  // namespace ember::cuda
