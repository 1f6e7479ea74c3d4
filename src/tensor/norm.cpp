// The fused normalisation kernels' front end: validation, contiguous operands of one float
// dtype (f16 and bf16 computed in f32), and the calls into the backend's Norm family.
#include "ember/tensor/ops/norm.hpp"

#include "ember/autodiff/autodiff.hpp"
#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "internal.hpp"

namespace ember {
namespace {

// The dtype the kernel runs in: x's own, or f32 for the 16-bit floats.
DType compute_dtype(const DynTensor& x, const char* op) {
  detail::check_defined(x, op);
  EMBER_CHECK(is_floating(x.dtype()), "[", op, "] needs a floating tensor, got ", x.dtype());
  EMBER_CHECK(x.rank() >= 2, "[", op, "] expects [N, C, *], got ", x.shape());
  const DType dt = x.dtype() == DType::f64 ? DType::f64 : DType::f32;
  detail::check_supported(x, OpFamily::Norm, dt, op);
  return dt;
}

// An untracked contiguous operand in `dt`.
DynTensor operand(const DynTensor& t, DType dt) { return contiguous(cast(detach(t), dt)); }

// A per-channel operand: [C] on x's device.
DynTensor coefficient(const DynTensor& k, const DynTensor& x, DType dt, const char* op,
                      const char* what) {
  detail::check_defined(k, op, what);
  detail::check_same_device(x, k, op);
  EMBER_CHECK(k.rank() == 1 && k.numel() == x.size(1), "[", op, "] ", what, " of shape ", k.shape(),
              " does not match the ", x.size(1), " channels of ", x.shape());
  return operand(k, dt);
}

}  // namespace

bool has_channel_kernels(Device device, DType dtype) {
  return detail::backend_for(device).supports(OpFamily::Norm, dtype);
}

DynTensor channel_moments(const DynTensor& x) {
  const char* op = "channel_moments";
  const DType dt = compute_dtype(x, op);
  const DynTensor xc = operand(x, dt);
  DynTensor out = detail::make_empty(Shape{2, x.size(1)}, dt, x.device(), op);
  detail::backend_of(out).channel_moments(xc.raw(), out.raw());
  return cast(out, x.dtype());
}

DynTensor channel_dot(const DynTensor& a, const DynTensor& b, const DynTensor& center) {
  const char* op = "channel_dot";
  const DType dt = compute_dtype(a, op);
  detail::check_defined(b, op, "b");
  detail::check_same_device(a, b, op);
  EMBER_CHECK(a.shape() == b.shape(), "[", op, "] operands differ in shape: ", a.shape(), " and ",
              b.shape());
  const DynTensor ac = operand(a, dt), bc = operand(b, dt);
  const DynTensor cc = coefficient(center, a, dt, op, "center");
  DynTensor out = detail::make_empty(Shape{2, a.size(1)}, dt, a.device(), op);
  detail::backend_of(out).channel_dot(ac.raw(), bc.raw(), cc.raw(), out.raw());
  return cast(out, a.dtype());
}

DynTensor channel_fma(const DynTensor& a, const DynTensor& ka, const DynTensor& b,
                      const DynTensor& kb, const DynTensor& k0) {
  const char* op = "channel_fma";
  const DType dt = compute_dtype(a, op);
  const DynTensor ac = operand(a, dt);
  const DynTensor kac = coefficient(ka, a, dt, op, "ka"), k0c = coefficient(k0, a, dt, op, "k0");
  DynTensor bc, kbc;
  if (b.defined()) {
    detail::check_same_device(a, b, op);
    EMBER_CHECK(a.shape() == b.shape(), "[", op, "] operands differ in shape: ", a.shape(), " and ",
                b.shape());
    bc = operand(b, dt);
    kbc = coefficient(kb, a, dt, op, "kb");
  }
  DynTensor out = detail::make_empty(a.shape(), dt, a.device(), op);
  detail::backend_of(out).channel_fma(ac.raw(), kac.raw(), bc.raw(), kbc.raw(), k0c.raw(),
                                      out.raw());
  return cast(out, a.dtype());
}

}  // namespace ember
