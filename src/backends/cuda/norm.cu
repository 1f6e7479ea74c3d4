// PLACEHOLDER: norm.cu
#include "common.cuh"
#include "cuda_backend.hpp"

namespace ember::cuda {

void CudaBackend::channel_moments(const RawTensor& x, const RawTensor& out) {
  // PLACEHOLDER until its family lands (issue 13)
  no_kernel("batch_norm", x.dtype);
  (void)out;
}

void CudaBackend::channel_dot(const RawTensor& a, const RawTensor& b, const RawTensor& center,
                              const RawTensor& out) {
  // PLACEHOLDER until its family lands (issue 13)
  no_kernel("batch_norm", a.dtype);
  (void)b;
  (void)center;
  (void)out;
}

void CudaBackend::channel_fma(const RawTensor& a, const RawTensor& ka, const RawTensor& b,
                              const RawTensor& kb, const RawTensor& k0, const RawTensor& out) {
  // PLACEHOLDER until its family lands (issue 13)
  no_kernel("batch_norm", a.dtype);
  (void)ka;
  (void)b;
  (void)kb;
  (void)k0;
  (void)out;
}

}  // namespace ember::cuda
