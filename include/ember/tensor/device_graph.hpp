// Graph replay: record the device work of a step once and queue it again with one call (PyTorch's
// torch.cuda.CUDAGraph). On Cuda the capture becomes a CUDA graph, so a replay costs one launch
// instead of one per kernel; on backends that cannot capture, replay() runs the function again,
// so the same program runs everywhere.
//
//   DynTensor x = ...;                      // a static input: made before the capture
//   DynTensor loss; Gradients grads;        // static outputs: set by the captured function
//   step();                                 // warm up eagerly first (algorithm searches, checks)
//   DeviceGraph g(dev);
//   g.capture([&] { loss = model_loss(x); grads = backward(loss); });
//   for (...) { copy_into(x, next_batch); g.replay(); optimizer.step(model, grads); }
//
// The contract (docs/PERFORMANCE.md, "Graph replay"): a replay reads the inputs and writes the
// outputs at the captured addresses, so inputs made before the capture must stay alive and get
// new data through copy_into, and outputs hold the latest replay's values (clone to keep one);
// parameters updated between replays must be updated in place (optimizers with fused(true)).
// Inside a capture, work that cannot be replayed raises an error: random numbers (the seed is a
// kernel argument), host transfers and waits. Range checks of indices run in the warm-up only.
#pragma once

#include <functional>
#include <memory>

#include "ember/core/device.hpp"
#include "ember/tensor/background_work.hpp"
#include "ember/tensor/dyn_tensor.hpp"

namespace ember {

class DeviceGraph {
 public:
  explicit DeviceGraph(Device device);
  ~DeviceGraph();
  DeviceGraph(DeviceGraph&&) noexcept;
  DeviceGraph& operator=(DeviceGraph&&) noexcept;
  DeviceGraph(const DeviceGraph&) = delete;
  DeviceGraph& operator=(const DeviceGraph&) = delete;

  /// Runs fn once, recording the work it queues on the device (replacing an earlier capture).
  /// Work from other threads would be recorded too (a device has one queue): the capture waits
  /// for every BackgroundWork scope to end and holds new ones off until it ends. If fn throws,
  /// nothing is kept.
  void capture(std::function<void()> fn);
  /// Queues the recorded work again (Cuda: one graph launch, no host wait); where the backend
  /// cannot record, calls fn again.
  void replay();
  bool captured() const;
  /// Whether replay() replays recorded work rather than calling fn again.
  bool recorded() const;
  Device device() const { return device_; }

 private:
  struct Impl;
  Device device_;
  std::unique_ptr<Impl> impl_;
};

/// Whether a DeviceGraph capture is under way on `device` (ops that cannot be replayed refuse).
bool capture_under_way(Device device);

/// Writes src's elements into dst's own storage (same shape; cast to dst's dtype): how new data
/// reaches the static inputs of a captured graph. dst must not need a gradient.
void copy_into(const DynTensor& dst, const DynTensor& src);

}  // namespace ember
