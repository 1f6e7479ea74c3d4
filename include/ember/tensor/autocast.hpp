// Automatic mixed precision (torch.autocast): inside the scope, ops that gain from 16-bit
// arithmetic (matmul, linear, convolution, attention) cast their float32 inputs down, and ops that
// need the range of float32 (softmax, norms, sums, losses) cast 16-bit inputs up. Parameters stay
// float32 (the optimizer's master weights); gradients flow back through the casts in float32.
//
//   auto guard = autocast(dev, DType::bf16);   // every device of dev's type, this thread
//   Tensor<2> logits = model(x);               // bf16 from the last Linear
//   Tensor<0> loss = nn::cross_entropy(logits, y);  // computed in f32
//   Gradients g = loss.backward();             // backward() runs with autocast off
//
// docs/TRAINING.md lists the ops on each side and what differs from PyTorch.
#pragma once

#include <optional>

#include "ember/core/device.hpp"
#include "ember/core/dtype.hpp"
#include "ember/tensor/dyn_tensor.hpp"

namespace ember {

/// Turns autocast on (or off) for `type`'s devices on this thread while it lives and restores
/// the previous state after; the casts of weights made in the outermost scope are reused
/// within it and dropped when it ends.
class AutocastGuard {
 public:
  AutocastGuard(DeviceType type, std::optional<DType> dtype);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  DeviceType type_;
  std::optional<DType> previous_;
};

/// Autocast to `dtype` (bf16 or f16) on every device of `device`'s type; `enabled = false`
/// turns it off inside an enclosing scope.
[[nodiscard]] AutocastGuard autocast(Device device, DType dtype = DType::bf16, bool enabled = true);
/// The type autocast runs matmul and convolution in on `type`'s devices, or nullopt when off.
std::optional<DType> autocast_dtype(DeviceType type);

namespace detail {
/// For ops on the lower-precision list: a float32 `t` cast to autocast's type when autocast is
/// on for its device (cached for leaves: a weight is cast once per scope); else `t` itself.
DynTensor autocast_lower(const DynTensor& t);
/// For ops on the lower-precision list: whether autocast is on for `a`'s device and any of the
/// operands is float32; such an op calls itself again on autocast_lower() of each.
bool autocast_lowers(const DynTensor& a, const DynTensor& b = {}, const DynTensor& c = {});
/// For ops on the float32 list: whether `t` is a 16-bit float that autocast (on for its device)
/// widens to float32 first; such an op calls itself again on cast(t, DType::f32).
bool autocast_widens(const DynTensor& t);
/// cast(t, DType::f32) when autocast_widens(t), else `t` itself.
DynTensor autocast_widen(const DynTensor& t);
/// Whether autocast is on for `t`'s device (cheap: one thread-local read).
bool autocast_on(const DynTensor& t);

/// What backward() holds while it runs: autocast off on every device type (gradient rules run
/// in the forward's types) and the cast weights dropped (the next forward may see new weights).
class AutocastSuspend {
 public:
  AutocastSuspend();
  ~AutocastSuspend();
  AutocastSuspend(const AutocastSuspend&) = delete;
  AutocastSuspend& operator=(const AutocastSuspend&) = delete;

 private:
  std::optional<DType> saved_[4];  // per DeviceType
};
}  // namespace detail

}  // namespace ember
