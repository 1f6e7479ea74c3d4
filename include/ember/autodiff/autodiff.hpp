// Reverse-mode autodiff, a layer over every backend: tensors that require grad record the ops
// applied to them, and backward() walks that record from an output to its leaves. Code that
// never asks for gradients records nothing (docs/AUTODIFF.md has the design).
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "ember/tensor/dyn_tensor.hpp"

namespace ember {

/// Whether ops on tracked tensors are recorded on this thread (true by default).
bool grad_enabled();
void set_grad_enabled(bool enabled);

/// Sets the grad mode for its lifetime and restores the previous one after.
class GradModeGuard {
 public:
  explicit GradModeGuard(bool enabled) : previous_(grad_enabled()) { set_grad_enabled(enabled); }
  ~GradModeGuard() { set_grad_enabled(previous_); }
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  bool previous_;
};

/// Nothing is recorded while the returned guard lives: `auto guard = no_grad();`.
[[nodiscard]] inline GradModeGuard no_grad() { return GradModeGuard(false); }
/// Recording on again inside a no_grad scope.
[[nodiscard]] inline GradModeGuard enable_grad() { return GradModeGuard(true); }

/// The gradients one backward() computed, keyed by tensor (as Burn's Gradients). Holds the
/// gradient of every leaf the output depends on, and of tracked non-leaves marked retain_grad().
class Gradients {
 public:
  /// The gradient of `t`; fails when `t` is untracked or has none here.
  DynTensor get(const DynTensor& t) const;
  /// The gradient of `t`, or an undefined tensor.
  DynTensor find(const DynTensor& t) const;
  bool contains(const DynTensor& t) const { return find(t).defined(); }
  /// Takes the gradient of `t` out of the container (undefined when absent).
  DynTensor remove(const DynTensor& t);
  size_t size() const { return grads_.size(); }
  bool empty() const { return grads_.empty(); }

  // Typed forms: grads.get(w) and grads.remove(w) give back w's own type.
  template <class T>
  requires requires(const T& t) { t.dyn(); }
  T get(const T& t) const { return T(get(t.dyn())); }
  template <class T>
  requires requires(const T& t) { t.dyn(); }
  T remove(const T& t) { return T(remove(t.dyn())); }

  /// Replaces the gradient of `t` (a tracked tensor): what DistributedDataParallel does with
  /// the all-reduced gradients.
  void set(const DynTensor& t, const DynTensor& g);
  /// Adds `g` to the gradient kept for node `id` and returns the sum (the backward engine).
  const DynTensor& accumulate(uint64_t id, const DynTensor& g);

 private:
  std::unordered_map<uint64_t, DynTensor> grads_;
};

/// Options of backward(). create_graph records the backward pass itself, so the gradients it
/// returns can be differentiated again; it implies retain_graph (as in PyTorch).
struct BackwardOptions {
  bool retain_graph = false;  // keep saved tensors for another backward through the same graph
  bool create_graph = false;
};

/// Called on this thread by backward() each time a leaf's gradient is complete (every use of the
/// leaf has passed its part on), with the leaf's node id and its gradient so far: the walk
/// finishes leaves in reverse order of use, so DistributedDataParallel starts each bucket's
/// all-reduce from here while the rest of the backward pass runs. A leaf reached again later
/// (one used both inside and outside a checkpoint() segment) is reported again with the new
/// sum. grad() reports nothing.
using LeafGradHook = std::function<void(uint64_t leaf_id, const DynTensor& grad)>;
/// Installs `hook` for its lifetime (restoring the previous one after).
class LeafGradHookGuard {
 public:
  explicit LeafGradHookGuard(LeafGradHook hook);
  ~LeafGradHookGuard();
  LeafGradHookGuard(const LeafGradHookGuard&) = delete;
  LeafGradHookGuard& operator=(const LeafGradHookGuard&) = delete;

 private:
  LeafGradHook previous_;
};

/// A leaf that records the ops applied to it (Float tensors only). Shares x's storage.
DynTensor require_grad(const DynTensor& x);
/// The same values, untracked (shares storage).
DynTensor detach(const DynTensor& x);
/// Asks backward() to keep the gradient of this non-leaf too (returns it, still tracked).
DynTensor retain_grad(const DynTensor& x);

/// Gradients of `output` (a one-element tensor) with respect to every leaf it depends on.
Gradients backward(const DynTensor& output, const BackwardOptions& options = {});
/// As above for any output: `seed` is d(something)/d(output), of output's shape.
Gradients backward(const DynTensor& output, const DynTensor& seed,
                   const BackwardOptions& options = {});
/// d(output)/d(input) for each of `inputs` (torch.autograd.grad): the walk stops at them, and
/// an input the output does not depend on gets an undefined tensor.
std::vector<DynTensor> grad(const DynTensor& output, const std::vector<DynTensor>& inputs,
                            const DynTensor& seed = {}, const BackwardOptions& options = {});

/// Runs fn(inputs) without keeping its intermediate tensors, and runs it again during backward
/// to get them (torch.utils.checkpoint): less memory for one more forward of the segment.
/// Random ops inside fn must use the default generator, whose position is restored for the
/// recomputation.
using CheckpointFn = std::function<DynTensor(const std::vector<DynTensor>&)>;
DynTensor checkpoint(const CheckpointFn& fn, const std::vector<DynTensor>& inputs);

}  // namespace ember
