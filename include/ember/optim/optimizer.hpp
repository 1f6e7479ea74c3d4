// Optimizers (torch.optim): SGD, Adam, AdamW, RMSprop, Adagrad, Lion, with PyTorch's update
// rules and defaults, parameter groups selected by path, and state saved by parameter path.
//
//   optim::Optimizer opt(optim::AdamConfig().lr(1e-3).weight_decay(0.01));
//   opt.add_group("encoder", optim::GroupOptions().lr(1e-4));  // its own lr and decay
//   Gradients grads = loss.backward();
//   opt.step(model, grads);                         // new values through Param::set (same ids)
//
// One Optimizer type for every algorithm: the config picks it. docs/OPTIM.md has the design.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ember/nn/module.hpp"
#include "ember/optim/grads.hpp"

namespace ember::optim {

class Optimizer;

#define EMBER_OPTIM_SETTER(Config, type, name) \
  Config& name(type v) {                       \
    name##_ = v;                               \
    return *this;                              \
  }

/// torch.optim.SGD: momentum, dampening, Nesterov momentum, L2 weight decay.
struct SgdConfig {
  double lr_ = 1e-3, momentum_ = 0, dampening_ = 0, weight_decay_ = 0;
  bool nesterov_ = false;
  EMBER_OPTIM_SETTER(SgdConfig, double, lr)
  EMBER_OPTIM_SETTER(SgdConfig, double, momentum)
  EMBER_OPTIM_SETTER(SgdConfig, double, dampening)
  EMBER_OPTIM_SETTER(SgdConfig, double, weight_decay)
  EMBER_OPTIM_SETTER(SgdConfig, bool, nesterov)
  /// The optimizer (Burn's config.init()): `auto opt = optim::SgdConfig().lr(0.1).init();`
  Optimizer init() const;
};

/// torch.optim.Adam: weight decay added to the gradient (L2); amsgrad keeps the maximum of the
/// second moment.
struct AdamConfig {
  double lr_ = 1e-3, beta1_ = 0.9, beta2_ = 0.999, eps_ = 1e-8, weight_decay_ = 0;
  bool amsgrad_ = false;
  EMBER_OPTIM_SETTER(AdamConfig, double, lr)
  EMBER_OPTIM_SETTER(AdamConfig, double, eps)
  EMBER_OPTIM_SETTER(AdamConfig, double, weight_decay)
  EMBER_OPTIM_SETTER(AdamConfig, bool, amsgrad)
  AdamConfig& betas(double b1, double b2) {
    beta1_ = b1;
    beta2_ = b2;
    return *this;
  }
  Optimizer init() const;
};

/// torch.optim.AdamW: Adam with decoupled weight decay (param *= 1 - lr * weight_decay).
struct AdamWConfig {
  double lr_ = 1e-3, beta1_ = 0.9, beta2_ = 0.999, eps_ = 1e-8, weight_decay_ = 1e-2;
  bool amsgrad_ = false;
  EMBER_OPTIM_SETTER(AdamWConfig, double, lr)
  EMBER_OPTIM_SETTER(AdamWConfig, double, eps)
  EMBER_OPTIM_SETTER(AdamWConfig, double, weight_decay)
  EMBER_OPTIM_SETTER(AdamWConfig, bool, amsgrad)
  AdamWConfig& betas(double b1, double b2) {
    beta1_ = b1;
    beta2_ = b2;
    return *this;
  }
  Optimizer init() const;
};

/// torch.optim.RMSprop: centered (divides by an estimate of the variance), momentum.
struct RmspropConfig {
  double lr_ = 1e-2, alpha_ = 0.99, eps_ = 1e-8, weight_decay_ = 0, momentum_ = 0;
  bool centered_ = false;
  EMBER_OPTIM_SETTER(RmspropConfig, double, lr)
  EMBER_OPTIM_SETTER(RmspropConfig, double, alpha)
  EMBER_OPTIM_SETTER(RmspropConfig, double, eps)
  EMBER_OPTIM_SETTER(RmspropConfig, double, weight_decay)
  EMBER_OPTIM_SETTER(RmspropConfig, double, momentum)
  EMBER_OPTIM_SETTER(RmspropConfig, bool, centered)
  Optimizer init() const;
};

/// torch.optim.Adagrad: lr / (1 + (step - 1) lr_decay), accumulator starting at a value.
struct AdagradConfig {
  double lr_ = 1e-2, lr_decay_ = 0, weight_decay_ = 0, initial_accumulator_value_ = 0, eps_ = 1e-10;
  EMBER_OPTIM_SETTER(AdagradConfig, double, lr)
  EMBER_OPTIM_SETTER(AdagradConfig, double, lr_decay)
  EMBER_OPTIM_SETTER(AdagradConfig, double, weight_decay)
  EMBER_OPTIM_SETTER(AdagradConfig, double, initial_accumulator_value)
  EMBER_OPTIM_SETTER(AdagradConfig, double, eps)
  Optimizer init() const;
};

/// Lion (Chen et al. 2023): sign of an interpolation of momentum and gradient, decoupled weight
/// decay. Defaults of the paper's reference implementation (lr 1e-4, betas 0.9 / 0.99).
struct LionConfig {
  double lr_ = 1e-4, beta1_ = 0.9, beta2_ = 0.99, weight_decay_ = 0;
  EMBER_OPTIM_SETTER(LionConfig, double, lr)
  EMBER_OPTIM_SETTER(LionConfig, double, weight_decay)
  LionConfig& betas(double b1, double b2) {
    beta1_ = b1;
    beta2_ = b2;
    return *this;
  }
  Optimizer init() const;
};

#undef EMBER_OPTIM_SETTER

/// Options of a parameter group; unset ones come from the optimizer's config.
struct GroupOptions {
  std::optional<double> lr_;
  std::optional<double> weight_decay_;
  GroupOptions& lr(double v) {
    lr_ = v;
    return *this;
  }
  GroupOptions& weight_decay(double v) {
    weight_decay_ = v;
    return *this;
  }
};

/// An optimizer's state as named tensors (`<param path>.<buffer>`, e.g. `fc1.weight.exp_avg`)
/// and string metadata (step counts, group learning rates, the algorithm): what goes into a
/// checkpoint. Keyed by path, so it survives a restart, where parameter ids differ.
struct OptimizerState {
  std::vector<std::pair<std::string, DynTensor>> tensors;
  std::map<std::string, std::string> metadata;
};

class LrScheduler;
namespace detail {
class OptimizerImpl;
}

class Optimizer {
 public:
  explicit Optimizer(const SgdConfig& config);
  explicit Optimizer(const AdamConfig& config);
  explicit Optimizer(const AdamWConfig& config);
  explicit Optimizer(const RmspropConfig& config);
  explicit Optimizer(const AdagradConfig& config);
  explicit Optimizer(const LionConfig& config);
  ~Optimizer();
  Optimizer(Optimizer&&) noexcept;
  Optimizer& operator=(Optimizer&&) noexcept;

  /// "SGD", "Adam", "AdamW", "RMSprop", "Adagrad" or "Lion".
  const char* name() const;

  /// A new parameter group: the Params whose path matches `pattern` (as nn::set_trainable: the
  /// exact path, a module prefix, or an ECMAScript regex over the whole path). A parameter
  /// belongs to the first added group it matches, else to group 0 (the config's options).
  /// Returns the group's index. A pattern that matches no parameter fails at the next step.
  int add_group(std::string pattern, const GroupOptions& options = {});
  int num_groups() const;

  /// One update of every trainable Param of `model` that has a gradient in `grads` (others,
  /// frozen ones and Buffers are skipped, as PyTorch skips parameters whose grad is None).
  template <nn::detail::Module M>
  void step(M& model, const Gradients& grads) {
    step(nn::module_tree(model), grads);
  }
  template <nn::detail::Module M>
  void step(M& model, const ParamGrads& grads) {
    step(nn::module_tree(model), grads);
  }
  void step(const nn::ModuleTree& tree, const Gradients& grads);
  void step(const nn::ModuleTree& tree, const ParamGrads& grads);

  /// The learning rate of a group (what schedules read and write).
  double lr(int group = 0) const;
  void set_lr(double lr, int group);
  /// Sets every group's learning rate.
  void set_lr(double lr);
  double weight_decay(int group = 0) const;
  /// Momentum (SGD, RMSprop) or beta1 (Adam, AdamW, Lion) of a group: what OneCycleLR cycles.
  bool has_momentum() const;
  double momentum(int group = 0) const;
  void set_momentum(double momentum, int group);
  /// The learning rate a schedule starts from (PyTorch's group["initial_lr"]); set by the first
  /// schedule attached to this optimizer.
  std::optional<double> initial_lr(int group) const;
  void set_initial_lr(double lr, int group);

  /// Steps taken (by the parameter updated most often).
  int64_t steps() const;

  /// The state, named by the paths of `model`'s parameters.
  template <nn::detail::Module M>
  OptimizerState state(const M& model) const {
    return state(nn::module_tree(model));
  }
  OptimizerState state(const nn::ModuleTree& tree) const;
  /// Restores a state into an optimizer of the same algorithm and groups; the parameters are
  /// found by path in `model`. Strict: unknown paths and shape mismatches are errors.
  template <nn::detail::Module M>
  void load_state(const M& model, const OptimizerState& state) {
    load_state(nn::module_tree(model), state);
  }
  void load_state(const nn::ModuleTree& tree, const OptimizerState& state);

  /// The state in a safetensors file of its own (written atomically), and back.
  template <nn::detail::Module M>
  void save(const M& model, const std::string& path) const {
    save(nn::module_tree(model), path);
  }
  template <nn::detail::Module M>
  void load(const M& model, const std::string& path) {
    load(nn::module_tree(model), path);
  }
  void save(const nn::ModuleTree& tree, const std::string& path) const;
  void load(const nn::ModuleTree& tree, const std::string& path);

 private:
  friend class LrScheduler;
  explicit Optimizer(std::shared_ptr<detail::OptimizerImpl> impl) : impl_(std::move(impl)) {}
  // Another handle on the same state: what a schedule keeps, so that moving the optimizer (into
  // a Learner, a struct) leaves its schedules working.
  Optimizer share() const { return Optimizer(impl_); }
  // Schedules write what PyTorch's would, unchecked: OneCycleLR's linear anneal ends just below
  // zero after its last step (an lr no step uses in a run of total_steps steps).
  void set_scheduled_lr(double lr, int group);

  std::shared_ptr<detail::OptimizerImpl> impl_;
};

}  // namespace ember::optim
