// PLACEHOLDER: elementwise.cu
#include "cuda_backend.hpp"
#include "common.cuh"

namespace ember::cuda {

void CudaBackend::copy(const RawTensor& src, const RawTensor& dst) {
  // PLACEHOLDER until its family lands (issue 13)
  no_kernel("copy", dst.dtype); (void)src;
}

void CudaBackend::fill(const RawTensor& dst, const Scalar& value) {
  // PLACEHOLDER until its family lands (issue 13)
  no_kernel("fill", dst.dtype); (void)value;
}

void CudaBackend::iota(const RawTensor& dst, double start, double step) {
  // PLACEHOLDER until its family lands (issue 13)
  no_kernel("arange", dst.dtype); (void)start; (void)step;
}

void CudaBackend::unary(UnaryOp op, const UnaryParams& params, const RawTensor& x, const RawTensor& out) {
  // PLACEHOLDER until its family lands (issue 13)
  no_kernel(op_name(op), x.dtype); (void)params; (void)out;
}

void CudaBackend::binary(BinaryOp op, const RawTensor& a, const RawTensor& b, const RawTensor& out) {
  // PLACEHOLDER until its family lands (issue 13)
  no_kernel(op_name(op), a.dtype); (void)b; (void)out;
}

void CudaBackend::where(const RawTensor& cond, const RawTensor& a, const RawTensor& b, const RawTensor& out) {
  // PLACEHOLDER until its family lands (issue 13)
  no_kernel("where", a.dtype); (void)cond; (void)b; (void)out;
}

}  // namespace ember::cuda
