// PLACEHOLDER: random.cu
#include "cuda_backend.hpp"
#include "common.cuh"

namespace ember::cuda {

void CudaBackend::random(RandomOp op, const RandomParams& params, const RawTensor& dst) {
  // PLACEHOLDER until its family lands (issue 13)
  no_kernel("random", dst.dtype); (void)op; (void)params;
}

}  // namespace ember::cuda
