// Dynamic loss scaling for float16 training (torch.amp.GradScaler): the loss is multiplied by a
// large scale so that small gradients survive float16's range, the gradients are divided by it
// before the step, and a step whose gradients hold an inf or NaN is skipped while the scale
// shrinks. bf16 has float32's range and needs none of this.
//
//   optim::GradScaler scaler;
//   for (auto& batch : loader.epoch(e)) {
//     Tensor<0> loss;
//     { auto amp = autocast(dev, DType::f16); loss = nn::cross_entropy(model(batch.images),
//     batch.labels); } scaler.step(opt, model, scaler.scale(loss).backward());   // skipped on
//     overflow scaler.update();
//   }
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "ember/optim/grads.hpp"
#include "ember/optim/optimizer.hpp"

namespace ember::optim {

/// PyTorch's defaults: start at 2^16, halve on overflow, double after 2000 clean steps.
struct GradScalerConfig {
  double init_scale_ = 65536.0, growth_factor_ = 2.0, backoff_factor_ = 0.5;
  int64_t growth_interval_ = 2000;
  bool enabled_ = true;
  GradScalerConfig& init_scale(double v) { return set(init_scale_, v); }
  GradScalerConfig& growth_factor(double v) { return set(growth_factor_, v); }
  GradScalerConfig& backoff_factor(double v) { return set(backoff_factor_, v); }
  GradScalerConfig& growth_interval(int64_t v) { return set(growth_interval_, v); }
  /// Disabled, every call passes its input through (and step() always steps).
  GradScalerConfig& enabled(bool v) { return set(enabled_, v); }

 private:
  template <class T>
  GradScalerConfig& set(T& field, T v) {
    field = v;
    return *this;
  }
};

class GradScaler {
 public:
  explicit GradScaler(GradScalerConfig config = {});

  /// loss * scale (loss itself when disabled).
  DynTensor scale(const DynTensor& loss) const;
  template <int D>
  Tensor<D> scale(const Tensor<D>& loss) const {
    return Tensor<D>(scale(loss.dyn()));
  }

  /// Divides every gradient by the scale (for clipping before step(); at most once per
  /// update()) and notes whether any is inf or NaN, without reading the device.
  void unscale(ParamGrads& grads);

  /// Unscales `grads` (unless unscale() did) and steps `opt` when all are finite. Reads one
  /// value from the device (the overflow flag), as PyTorch's does. Returns whether it stepped.
  template <nn::detail::Module M>
  bool step(Optimizer& opt, M& model, const Gradients& grads) {
    return step(opt, nn::module_tree(model), ParamGrads::from(model, grads));
  }
  template <nn::detail::Module M>
  bool step(Optimizer& opt, M& model, ParamGrads grads) {
    return step(opt, nn::module_tree(model), std::move(grads));
  }
  bool step(Optimizer& opt, const nn::ModuleTree& tree, ParamGrads grads);

  /// After each step(): the scale times backoff_factor after a skipped step, times
  /// growth_factor after growth_interval steps in a row without overflow.
  void update();

  double get_scale() const { return config_.enabled_ ? scale_ : 1.0; }
  int64_t growth_tracker() const { return growth_tracker_; }
  bool enabled() const { return config_.enabled_; }
  /// The scale and growth tracker as text (a checkpoint's metadata), and back.
  std::map<std::string, std::string> state() const;
  void load_state(const std::map<std::string, std::string>& state);

 private:
  GradScalerConfig config_;
  double scale_;
  int64_t growth_tracker_ = 0;
  DynTensor found_inf_;  // 0-d f32: NaN when an unscaled gradient was not finite
  bool unscaled_ = false;
  bool skipped_ = false;  // the last step()'s verdict, for update()
};

}  // namespace ember::optim
