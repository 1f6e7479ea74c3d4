// Optimizers (torch.optim): SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam,
// Rprop, ASGD, and Lion, Adan, Muon, with PyTorch's update rules and defaults (maximize on all),
// parameter groups selected by path, and state saved by parameter path.
//
//   optim::Optimizer opt(optim::AdamConfig().lr(1e-3).weight_decay(0.01));
//   opt.add_group("encoder", optim::GroupOptions().lr(1e-4));  // its own lr and decay
//   Gradients grads = loss.backward();
//   opt.step(model, grads);                         // new values through Param::set (same ids)
//
// One Optimizer type for every algorithm: the config picks it. docs/OPTIM.md has the design.
#pragma once

#include <functional>
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
// Every optimizer: maximize the objective (PyTorch's maximize=True: the gradient is negated
// before the rule sees it, weight decay included).
#define EMBER_OPTIM_MAXIMIZE(Config) \
  bool maximize_ = false;            \
  EMBER_OPTIM_SETTER(Config, bool, maximize)

/// torch.optim.SGD: momentum, dampening, Nesterov momentum, L2 weight decay.
struct SgdConfig {
  double lr_ = 1e-3, momentum_ = 0, dampening_ = 0, weight_decay_ = 0;
  bool nesterov_ = false;
  // fused(true): every parameter (and momentum buffer) updated in place, in one multi-tensor
  // launch per 48 parameters on Cuda (PyTorch's foreach/fused SGD; tensor ops per parameter
  // elsewhere). The parameters keep their storage, as a replayed DeviceGraph needs.
  bool fused_ = false;
  EMBER_OPTIM_SETTER(SgdConfig, bool, fused)
  EMBER_OPTIM_SETTER(SgdConfig, double, lr)
  EMBER_OPTIM_SETTER(SgdConfig, double, momentum)
  EMBER_OPTIM_SETTER(SgdConfig, double, dampening)
  EMBER_OPTIM_SETTER(SgdConfig, double, weight_decay)
  EMBER_OPTIM_SETTER(SgdConfig, bool, nesterov)
  /// The optimizer (Burn's config.init()): `auto opt = optim::SgdConfig().lr(0.1).init();`
  EMBER_OPTIM_MAXIMIZE(SgdConfig)
  Optimizer init() const;
};

/// torch.optim.Adam: weight decay added to the gradient (L2); amsgrad keeps the maximum of the
/// second moment.
struct AdamConfig {
  double lr_ = 1e-3, beta1_ = 0.9, beta2_ = 0.999, eps_ = 1e-8, weight_decay_ = 0;
  bool amsgrad_ = false;
  // fused(true), PyTorch's fused=True: every parameter updated in place, in one multi-tensor
  // launch per 24 parameters on Cuda (one per parameter elsewhere). The parameters keep their
  // storage, which a replayed DeviceGraph needs; a handle to a parameter sees the new values.
  bool fused_ = false;
  EMBER_OPTIM_SETTER(AdamConfig, double, lr)
  EMBER_OPTIM_SETTER(AdamConfig, double, eps)
  EMBER_OPTIM_SETTER(AdamConfig, double, weight_decay)
  EMBER_OPTIM_SETTER(AdamConfig, bool, amsgrad)
  EMBER_OPTIM_SETTER(AdamConfig, bool, fused)
  AdamConfig& betas(double b1, double b2) {
    beta1_ = b1;
    beta2_ = b2;
    return *this;
  }
  EMBER_OPTIM_MAXIMIZE(AdamConfig)
  Optimizer init() const;
};

/// torch.optim.AdamW: Adam with decoupled weight decay (param *= 1 - lr * weight_decay).
struct AdamWConfig {
  double lr_ = 1e-3, beta1_ = 0.9, beta2_ = 0.999, eps_ = 1e-8, weight_decay_ = 1e-2;
  bool amsgrad_ = false;
  // fused(true), PyTorch's fused=True: every parameter updated in place, in one multi-tensor
  // launch per 24 parameters on Cuda (one per parameter elsewhere). The parameters keep their
  // storage, which a replayed DeviceGraph needs; a handle to a parameter sees the new values.
  bool fused_ = false;
  EMBER_OPTIM_SETTER(AdamWConfig, double, lr)
  EMBER_OPTIM_SETTER(AdamWConfig, double, eps)
  EMBER_OPTIM_SETTER(AdamWConfig, double, weight_decay)
  EMBER_OPTIM_SETTER(AdamWConfig, bool, amsgrad)
  EMBER_OPTIM_SETTER(AdamWConfig, bool, fused)
  AdamWConfig& betas(double b1, double b2) {
    beta1_ = b1;
    beta2_ = b2;
    return *this;
  }
  EMBER_OPTIM_MAXIMIZE(AdamWConfig)
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
  EMBER_OPTIM_MAXIMIZE(RmspropConfig)
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
  EMBER_OPTIM_MAXIMIZE(AdagradConfig)
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
  EMBER_OPTIM_MAXIMIZE(LionConfig)
  Optimizer init() const;
};

/// torch.optim.Adadelta: lr scales the rho-averaged update (lr 1 is the paper's).
struct AdadeltaConfig {
  double lr_ = 1.0, rho_ = 0.9, eps_ = 1e-6, weight_decay_ = 0;
  EMBER_OPTIM_SETTER(AdadeltaConfig, double, lr)
  EMBER_OPTIM_SETTER(AdadeltaConfig, double, rho)
  EMBER_OPTIM_SETTER(AdadeltaConfig, double, eps)
  EMBER_OPTIM_SETTER(AdadeltaConfig, double, weight_decay)
  EMBER_OPTIM_MAXIMIZE(AdadeltaConfig)
  Optimizer init() const;
};

/// torch.optim.Adamax: Adam with the infinity norm (max(beta2 * u, |g| + eps)) as denominator.
struct AdamaxConfig {
  double lr_ = 2e-3, beta1_ = 0.9, beta2_ = 0.999, eps_ = 1e-8, weight_decay_ = 0;
  EMBER_OPTIM_SETTER(AdamaxConfig, double, lr)
  EMBER_OPTIM_SETTER(AdamaxConfig, double, eps)
  EMBER_OPTIM_SETTER(AdamaxConfig, double, weight_decay)
  EMBER_OPTIM_MAXIMIZE(AdamaxConfig)
  AdamaxConfig& betas(double b1, double b2) {
    beta1_ = b1;
    beta2_ = b2;
    return *this;
  }
  Optimizer init() const;
};

/// torch.optim.NAdam: Adam with Nesterov momentum and Dozat's momentum schedule
/// (mu_t = beta1 (1 - 0.5 * 0.96^(t momentum_decay))); decoupled_weight_decay gives NAdamW
/// (PyTorch >= 2.1's option).
struct NAdamConfig {
  double lr_ = 2e-3, beta1_ = 0.9, beta2_ = 0.999, eps_ = 1e-8, weight_decay_ = 0,
         momentum_decay_ = 4e-3;
  bool decoupled_weight_decay_ = false;
  EMBER_OPTIM_SETTER(NAdamConfig, double, lr)
  EMBER_OPTIM_SETTER(NAdamConfig, double, eps)
  EMBER_OPTIM_SETTER(NAdamConfig, double, weight_decay)
  EMBER_OPTIM_SETTER(NAdamConfig, double, momentum_decay)
  EMBER_OPTIM_SETTER(NAdamConfig, bool, decoupled_weight_decay)
  EMBER_OPTIM_MAXIMIZE(NAdamConfig)
  NAdamConfig& betas(double b1, double b2) {
    beta1_ = b1;
    beta2_ = b2;
    return *this;
  }
  Optimizer init() const;
};

/// torch.optim.RAdam: Adam with the variance rectification of Liu et al. 2020 (plain momentum
/// steps while the rectifier is undefined, rho_t <= 5); decoupled_weight_decay as AdamW.
struct RAdamConfig {
  double lr_ = 1e-3, beta1_ = 0.9, beta2_ = 0.999, eps_ = 1e-8, weight_decay_ = 0;
  bool decoupled_weight_decay_ = false;
  EMBER_OPTIM_SETTER(RAdamConfig, double, lr)
  EMBER_OPTIM_SETTER(RAdamConfig, double, eps)
  EMBER_OPTIM_SETTER(RAdamConfig, double, weight_decay)
  EMBER_OPTIM_SETTER(RAdamConfig, bool, decoupled_weight_decay)
  EMBER_OPTIM_MAXIMIZE(RAdamConfig)
  RAdamConfig& betas(double b1, double b2) {
    beta1_ = b1;
    beta2_ = b2;
    return *this;
  }
  Optimizer init() const;
};

/// torch.optim.Rprop: per-element step sizes grown by etaplus while the gradient keeps its sign,
/// shrunk by etaminus when it flips, clamped to step_sizes; lr is the initial step size. No
/// weight decay (as PyTorch).
struct RpropConfig {
  double lr_ = 1e-2, etaminus_ = 0.5, etaplus_ = 1.2, step_size_min_ = 1e-6, step_size_max_ = 50;
  EMBER_OPTIM_SETTER(RpropConfig, double, lr)
  EMBER_OPTIM_MAXIMIZE(RpropConfig)
  RpropConfig& etas(double minus, double plus) {
    etaminus_ = minus;
    etaplus_ = plus;
    return *this;
  }
  RpropConfig& step_sizes(double min, double max) {
    step_size_min_ = min;
    step_size_max_ = max;
    return *this;
  }
  Optimizer init() const;
};

/// torch.optim.ASGD: SGD with a decaying step eta = lr / (1 + lambd lr t)^alpha and a running
/// average of the parameters from step t0 on (the state's `ax` buffer).
struct AsgdConfig {
  double lr_ = 1e-2, lambd_ = 1e-4, alpha_ = 0.75, t0_ = 1e6, weight_decay_ = 0;
  EMBER_OPTIM_SETTER(AsgdConfig, double, lr)
  EMBER_OPTIM_SETTER(AsgdConfig, double, lambd)
  EMBER_OPTIM_SETTER(AsgdConfig, double, alpha)
  EMBER_OPTIM_SETTER(AsgdConfig, double, t0)
  EMBER_OPTIM_SETTER(AsgdConfig, double, weight_decay)
  EMBER_OPTIM_MAXIMIZE(AsgdConfig)
  Optimizer init() const;
};

/// Adan (Xie et al. 2022, "Adan: Adaptive Nesterov Momentum Algorithm"), as the authors'
/// reference implementation (github.com/sail-sg/Adan): betas for the gradient, the gradient
/// difference and the squared Nesterov gradient; weight decay proximal (p / (1 + lr wd)) or,
/// with no_prox, decoupled (p * (1 - lr wd)). Not in torch.optim.
struct AdanConfig {
  double lr_ = 1e-3, beta1_ = 0.98, beta2_ = 0.92, beta3_ = 0.99, eps_ = 1e-8, weight_decay_ = 0;
  bool no_prox_ = false;
  EMBER_OPTIM_SETTER(AdanConfig, double, lr)
  EMBER_OPTIM_SETTER(AdanConfig, double, eps)
  EMBER_OPTIM_SETTER(AdanConfig, double, weight_decay)
  EMBER_OPTIM_SETTER(AdanConfig, bool, no_prox)
  EMBER_OPTIM_MAXIMIZE(AdanConfig)
  AdanConfig& betas(double b1, double b2, double b3) {
    beta1_ = b1;
    beta2_ = b2;
    beta3_ = b3;
    return *this;
  }
  Optimizer init() const;
};

/// How Muon scales the learning rate of an A x B matrix (torch.optim.Muon's adjust_lr_fn).
enum class MuonLrAdjust {
  original,         // lr * sqrt(max(1, A / B)) (Keller Jordan's reference)
  match_rms_adamw,  // lr * 0.2 * sqrt(max(A, B)) (Moonshot's, an update RMS like AdamW's)
};

/// Muon (Keller Jordan 2024): SGD momentum (Nesterov by default) whose update is orthogonalised
/// by a quintic Newton-Schulz iteration; for 2-D parameters only (as torch.optim.Muon: give the
/// others, and embeddings and the output layer, to another optimizer). Computed in the
/// parameter's dtype (the reference uses bfloat16).
struct MuonConfig {
  double lr_ = 1e-3, weight_decay_ = 0.1, momentum_ = 0.95, eps_ = 1e-7;
  double ns_a_ = 3.4445, ns_b_ = -4.7750, ns_c_ = 2.0315;
  int ns_steps_ = 5;
  bool nesterov_ = true;
  MuonLrAdjust adjust_lr_fn_ = MuonLrAdjust::original;
  EMBER_OPTIM_SETTER(MuonConfig, double, lr)
  EMBER_OPTIM_SETTER(MuonConfig, double, weight_decay)
  EMBER_OPTIM_SETTER(MuonConfig, double, momentum)
  EMBER_OPTIM_SETTER(MuonConfig, double, eps)
  EMBER_OPTIM_SETTER(MuonConfig, int, ns_steps)
  EMBER_OPTIM_SETTER(MuonConfig, bool, nesterov)
  EMBER_OPTIM_SETTER(MuonConfig, MuonLrAdjust, adjust_lr_fn)
  EMBER_OPTIM_MAXIMIZE(MuonConfig)
  MuonConfig& ns_coefficients(double a, double b, double c) {
    ns_a_ = a;
    ns_b_ = b;
    ns_c_ = c;
    return *this;
  }
  Optimizer init() const;
};

/// The line search of LBFGS (torch's line_search_fn: None or "strong_wolfe").
enum class LineSearch { none, strong_wolfe };

/// torch.optim.LBFGS: limited-memory BFGS on all parameters as one vector, several function
/// evaluations per step through a closure (`opt.step(model, closure)`), a fixed step lr or a
/// strong-Wolfe line search. One parameter group (as PyTorch). max_eval defaults to
/// max_iter * 5 / 4.
struct LbfgsConfig {
  double lr_ = 1, tolerance_grad_ = 1e-7, tolerance_change_ = 1e-9;
  int max_iter_ = 20, history_size_ = 100;
  std::optional<int> max_eval_;
  LineSearch line_search_fn_ = LineSearch::none;
  EMBER_OPTIM_SETTER(LbfgsConfig, double, lr)
  EMBER_OPTIM_SETTER(LbfgsConfig, int, max_iter)
  EMBER_OPTIM_SETTER(LbfgsConfig, int, max_eval)
  EMBER_OPTIM_SETTER(LbfgsConfig, double, tolerance_grad)
  EMBER_OPTIM_SETTER(LbfgsConfig, double, tolerance_change)
  EMBER_OPTIM_SETTER(LbfgsConfig, int, history_size)
  EMBER_OPTIM_SETTER(LbfgsConfig, LineSearch, line_search_fn)
  EMBER_OPTIM_MAXIMIZE(LbfgsConfig)
  Optimizer init() const;
};

#undef EMBER_OPTIM_MAXIMIZE
#undef EMBER_OPTIM_SETTER

/// What a closure returns: the loss it recomputed with the parameters' current values, and the
/// gradients of its backward pass: `{loss, backward(loss)}`, or `{loss.dyn(), loss.backward()}`
/// for a typed Tensor<0>.
struct LossAndGrads {
  DynTensor loss;
  Gradients grads;
};
/// PyTorch's closure: recomputes the loss and its gradients (there, `loss.backward()` fills .grad;
/// here the Gradients come back with the loss).
using Closure = std::function<LossAndGrads()>;

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
  explicit Optimizer(const AdadeltaConfig& config);
  explicit Optimizer(const AdamaxConfig& config);
  explicit Optimizer(const NAdamConfig& config);
  explicit Optimizer(const RAdamConfig& config);
  explicit Optimizer(const RpropConfig& config);
  explicit Optimizer(const AsgdConfig& config);
  explicit Optimizer(const AdanConfig& config);
  explicit Optimizer(const MuonConfig& config);
  explicit Optimizer(const LbfgsConfig& config);
  ~Optimizer();
  Optimizer(Optimizer&&) noexcept;
  Optimizer& operator=(Optimizer&&) noexcept;

  /// "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Lion", "Adadelta", "Adamax", "NAdam",
  /// "RAdam", "Rprop", "ASGD", "Adan" or "Muon".
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

  /// PyTorch's step(closure): LBFGS calls `closure` as often as it needs (it must recompute the
  /// loss from the model's current values, which the optimizer changes between calls); every
  /// other optimizer calls it once and steps with its gradients. Returns the first loss.
  ///
  ///   auto opt = optim::LbfgsConfig().line_search_fn(optim::LineSearch::strong_wolfe).init();
  ///   opt.step(model, [&] {
  ///     DynTensor loss = loss_of(model, batch);
  ///     return optim::LossAndGrads{loss, backward(loss)};
  ///   });
  template <nn::detail::Module M>
  DynTensor step(M& model, const Closure& closure) {
    return step(nn::module_tree(model), closure);
  }
  DynTensor step(const nn::ModuleTree& tree, const Closure& closure);

  /// The learning rate of a group (what schedules read and write).
  double lr(int group = 0) const;
  void set_lr(double lr, int group);
  /// Sets every group's learning rate.
  void set_lr(double lr);
  double weight_decay(int group = 0) const;
  /// Momentum (SGD, RMSprop, Muon) or beta1 (Adam, AdamW, Lion, Adamax, NAdam, RAdam, Adan) of a
  /// group: what OneCycleLR cycles. Adagrad, Adadelta, Rprop and ASGD have none.
  bool has_momentum() const;
  double momentum(int group = 0) const;
  void set_momentum(double momentum, int group);
  /// The learning rate a schedule starts from (PyTorch's group["initial_lr"]); set by the first
  /// schedule attached to this optimizer.
  std::optional<double> initial_lr(int group) const;
  void set_initial_lr(double lr, int group);

  /// Steps taken (by the parameter updated most often).
  int64_t steps() const;
  /// Whether step() writes the new values into the parameters' own storage (SGD, Adam and AdamW
  /// with fused(true)), as a replayed DeviceGraph that reads them needs.
  bool updates_in_place() const;

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
