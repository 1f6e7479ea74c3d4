// Gradients keyed by parameter (Burn's GradientsParams): what optimizers consume, what clipping
// rescales and what accumulation sums over several backward passes.
//
//   optim::GradientsAccumulator acc;
//   for (int i = 0; i < 4; ++i) acc.accumulate(model, loss_of(batch[i]).backward());
//   optim::ParamGrads g = acc.take();
//   Tensor<0> norm = optim::clip_grad_norm(g, 1.0);  // torch.nn.utils.clip_grad_norm_
//   opt.step(model, g);
#pragma once

#include <cstdint>
#include <unordered_map>

#include "ember/autodiff/autodiff.hpp"
#include "ember/nn/module.hpp"
#include "ember/tensor/tensor.hpp"

namespace ember::optim {

/// The gradients of a model's trainable Params, keyed by ParamId (stable across updates, unlike
/// the tensors' autodiff nodes, which every update replaces).
class ParamGrads {
 public:
  ParamGrads() = default;
  /// The gradients in `grads` of `model`'s trainable Params (those without one are left out).
  template <nn::detail::Module M>
  static ParamGrads from(const M& model, const Gradients& grads) {
    return from(nn::module_tree(model), grads);
  }
  static ParamGrads from(const nn::ModuleTree& tree, const Gradients& grads);

  /// The gradient of a parameter, or an undefined tensor.
  DynTensor find(nn::ParamId id) const;
  template <class P>
  requires requires(const P& p) { p.id(); }
  DynTensor find(const P& param) const { return find(param.id()); }
  void set(nn::ParamId id, const DynTensor& grad);
  DynTensor remove(nn::ParamId id);
  size_t size() const { return grads_.size(); }
  bool empty() const { return grads_.empty(); }
  const std::unordered_map<nn::ParamId, DynTensor>& map() const { return grads_; }

 private:
  std::unordered_map<nn::ParamId, DynTensor> grads_;
};

/// Sums the gradients of successive backward passes per parameter (as PyTorch's .grad
/// accumulates when zero_grad() is not called). Divide the loss by the number of passes for a
/// mean.
class GradientsAccumulator {
 public:
  template <nn::detail::Module M>
  void accumulate(const M& model, const Gradients& grads) {
    accumulate(nn::module_tree(model), grads);
  }
  void accumulate(const nn::ModuleTree& tree, const Gradients& grads);
  void accumulate(const ParamGrads& grads);
  /// Backward passes summed since the last take().
  int count() const { return count_; }
  /// The sums; the accumulator starts again from zero.
  ParamGrads take();

 private:
  ParamGrads sum_;
  int count_ = 0;
};

/// Rescales every gradient by min(1, max_norm / (total + 1e-6)), where total is the norm of all
/// gradients together (norm_type 2, 1, any p > 0, or infinity); returns total as a 0-d float64
/// tensor (torch.nn.utils.clip_grad_norm_), computed and applied without a host read (read it
/// with .item<double>()). error_if_nonfinite fails on a NaN or infinite total: at once on the
/// Cpu and LibTorch, at the next synchronisation on an asynchronous device.
Tensor<0> clip_grad_norm(ParamGrads& grads, double max_norm, double norm_type = 2.0,
                         bool error_if_nonfinite = false);
/// Clamps every gradient element to [-clip_value, clip_value] (clip_grad_value_).
void clip_grad_value(ParamGrads& grads, double clip_value);

}  // namespace ember::optim
