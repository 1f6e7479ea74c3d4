// The update rules, one per algorithm (src/optim/rules.cpp): what one step does to one parameter,
// written with the public ops. Internal to ember_optim.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ember/optim/optimizer.hpp"

namespace ember::optim::detail {

/// A parameter's state: its step count and named buffers (PyTorch's names: exp_avg, ...).
struct ParamState {
  int64_t step = 0;
  std::map<std::string, DynTensor> buffers;
  // Per-parameter numbers (NAdam's mu_product, ASGD's eta and mu): PyTorch keeps 0-d tensors,
  // Ember doubles, so a step never reads the device; saved as metadata `<name>.<path>`.
  std::map<std::string, double> scalars;
};

/// The options a group sets for its parameters.
struct GroupHyper {
  double lr;
  double weight_decay;
  double momentum;  // momentum or beta1
};

class Rule {
 public:
  virtual ~Rule() = default;
  virtual const char* name() const = 0;
  /// Defaults of the config, for group 0 and for groups that do not set their own.
  virtual GroupHyper defaults() const = 0;
  /// Whether momentum() means something (OneCycleLR cycles it).
  virtual bool has_momentum() const { return true; }
  /// The parameter's new value (the state is updated in place); runs under no_grad.
  virtual DynTensor update(const DynTensor& param, const DynTensor& grad, ParamState& state,
                           const GroupHyper& h) const = 0;
  /// Whether update_in_place() is how step() updates (the fused optimizers).
  virtual bool in_place() const { return false; }
  /// One parameter of an in-place step.
  struct InPlace {
    DynTensor param, grad;
    ParamState* state;
    const GroupHyper* hyper;
  };
  /// Writes every parameter's new value into its own storage (and its state's buffers into
  /// theirs); runs under no_grad. Only for rules whose in_place() is true.
  virtual void update_in_place(const std::vector<InPlace>& params) const;
  /// Checks a group's options (errors name the algorithm and the value).
  void check(const GroupHyper& h) const;
  /// The names of the buffers it keeps in a ParamState: a saved state may hold no others.
  virtual std::vector<std::string> buffer_names() const = 0;
  /// A group's momentum must be below this (1 for a beta1); a saved state is checked with it.
  virtual double momentum_limit() const { return std::numeric_limits<double>::infinity(); }
  /// The names of the per-parameter numbers it keeps in ParamState::scalars.
  virtual std::vector<std::string> scalar_names() const { return {}; }
  /// Whether weight_decay means something (Rprop has none: a group setting one is an error).
  virtual bool has_weight_decay() const { return true; }
  /// Checks that the rule can update a parameter (Muon: 2-D only), before any parameter changes.
  virtual void check_param(const std::string& /*path*/, const DynTensor& /*param*/) const {}
  /// Whether step(model, grads) works; LBFGS needs a closure.
  virtual bool needs_closure() const { return false; }
  /// maximize: the gradient is negated before update() (PyTorch's maximize=True).
  bool maximize = false;
};

std::unique_ptr<Rule> make_rule(const SgdConfig& c);
std::unique_ptr<Rule> make_rule(const AdamConfig& c);
std::unique_ptr<Rule> make_rule(const AdamWConfig& c);
std::unique_ptr<Rule> make_rule(const RmspropConfig& c);
std::unique_ptr<Rule> make_rule(const AdagradConfig& c);
std::unique_ptr<Rule> make_rule(const LionConfig& c);
std::unique_ptr<Rule> make_rule(const AdadeltaConfig& c);
std::unique_ptr<Rule> make_rule(const AdamaxConfig& c);
std::unique_ptr<Rule> make_rule(const NAdamConfig& c);
std::unique_ptr<Rule> make_rule(const RAdamConfig& c);
std::unique_ptr<Rule> make_rule(const RpropConfig& c);
std::unique_ptr<Rule> make_rule(const AsgdConfig& c);
std::unique_ptr<Rule> make_rule(const AdanConfig& c);
std::unique_ptr<Rule> make_rule(const MuonConfig& c);
std::unique_ptr<Rule> make_rule(const LbfgsConfig& c);

/// LBFGS's state: global, over all parameters as one flat vector (PyTorch keeps it on the first
/// parameter). Saved as tensors and metadata named `lbfgs/...` (a slash is in no parameter path).
struct LbfgsState {
  int64_t func_evals = 0, n_iter = 0;
  DynTensor d, prev_flat_grad;  // undefined before the first iteration
  double t = 0, h_diag = 1, prev_loss = 0;
  std::vector<DynTensor> old_dirs, old_stps;
  std::vector<double> ro;
};

/// LBFGS's state into / out of a saved OptimizerState (`lbfgs/...`); loading checks every
/// number and that each vector has `numel` elements, and converts them to `like`'s dtype and
/// device.
void save_lbfgs(const LbfgsState& state, OptimizerState& out);
LbfgsState load_lbfgs(const OptimizerState& saved, const char* who, int64_t numel,
                      const DynTensor& like);

/// One LBFGS step (lbfgs.cpp): `params` in the model's order, lr the group's.
DynTensor lbfgs_step(const Rule& rule, double lr, LbfgsState& state,
                     const std::vector<nn::TensorSlot*>& params, const nn::ModuleTree& tree,
                     const Closure& closure);

}  // namespace ember::optim::detail
