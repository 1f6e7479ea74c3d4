// PLACEHOLDER: conv.cpp
#include "check.hpp"
#include "cuda_backend.hpp"
#include "state.hpp"

namespace ember::cuda {

void CudaBackend::conv(const RawTensor& x, const RawTensor& w, const RawTensor& bias,
                       const ConvParams& p, const RawTensor& out) {
  // PLACEHOLDER until its family lands (issue 13)
  no_kernel("conv", x.dtype);
  (void)w;
  (void)bias;
  (void)p;
  (void)out;
}

void CudaBackend::conv_backward_data(const RawTensor& grad_out, const RawTensor& w,
                                     const ConvParams& p, const RawTensor& grad_in) {
  // PLACEHOLDER until its family lands (issue 13)
  no_kernel("conv_backward", grad_out.dtype);
  (void)w;
  (void)p;
  (void)grad_in;
}

void CudaBackend::conv_backward(const RawTensor& x, const RawTensor& w, const RawTensor& y,
                                const RawTensor& grad_out, const ConvParams& p,
                                const RawTensor& grad_in, const RawTensor& grad_w,
                                const RawTensor& grad_bias) {
  // PLACEHOLDER until its family lands (issue 13)
  no_kernel("conv_backward", x.dtype);
  (void)w;
  (void)y;
  (void)grad_out;
  (void)p;
  (void)grad_in;
  (void)grad_w;
  (void)grad_bias;
}

void CudaBackend::conv_backward_weight(const RawTensor& x, const RawTensor& grad_out,
                                       const ConvParams& p, const RawTensor& grad_w,
                                       const RawTensor& grad_bias) {
  // PLACEHOLDER until its family lands (issue 13)
  no_kernel("conv_backward", x.dtype);
  (void)grad_out;
  (void)p;
  (void)grad_w;
  (void)grad_bias;
}

}  // namespace ember::cuda
