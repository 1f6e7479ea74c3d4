// PLACEHOLDER: matmul.cpp
#include "check.hpp"
#include "cuda_backend.hpp"
#include "state.hpp"

namespace ember::cuda {

void CudaBackend::matmul(const RawTensor& a, const RawTensor& b, const RawTensor& out) {
  // PLACEHOLDER until its family lands (issue 13)
  no_kernel("matmul", a.dtype);
  (void)b;
  (void)out;
}

}  // namespace ember::cuda
