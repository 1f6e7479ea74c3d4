// PLACEHOLDER: range.cu
#include "common.cuh"
#include "cuda_backend.hpp"

namespace ember::cuda {

RangeError CudaBackend::check_range(const RawTensor& x, const RangeCheck& check) {
  // PLACEHOLDER until its family lands (issue 13)
  no_kernel(check.op, x.dtype);
}

RangeError CudaBackend::synchronize(Device device) {
  // PLACEHOLDER until its family lands (issue 13)
  EMBER_CUDA_CHECK(cudaStreamSynchronize(device_state(device.index).stream), "synchronize");
  return {};
}

}  // namespace ember::cuda
