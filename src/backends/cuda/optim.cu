// PLACEHOLDER: optim.cu
#include "common.cuh"
#include "cuda_backend.hpp"

namespace ember::cuda {

void CudaBackend::adam_step(const RawTensor& param, const RawTensor& grad, const RawTensor& exp_avg,
                            const RawTensor& exp_avg_sq, const RawTensor& max_exp_avg_sq,
                            const AdamParams& p, const RawTensor& param_out,
                            const RawTensor& exp_avg_out, const RawTensor& exp_avg_sq_out,
                            const RawTensor& max_exp_avg_sq_out) {
  // PLACEHOLDER until its family lands (issue 13)
  no_kernel("adam", param.dtype);
  (void)grad;
  (void)exp_avg;
  (void)exp_avg_sq;
  (void)max_exp_avg_sq;
  (void)p;
  (void)param_out;
  (void)exp_avg_out;
  (void)exp_avg_sq_out;
  (void)max_exp_avg_sq_out;
}

}  // namespace ember::cuda
