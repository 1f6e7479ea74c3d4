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
  /// Checks a group's options (errors name the algorithm and the value).
  void check(const GroupHyper& h) const;
  /// The names of the buffers it keeps in a ParamState: a saved state may hold no others.
  virtual std::vector<std::string> buffer_names() const = 0;
  /// A group's momentum must be below this (1 for a beta1); a saved state is checked with it.
  virtual double momentum_limit() const { return std::numeric_limits<double>::infinity(); }
};

std::unique_ptr<Rule> make_rule(const SgdConfig& c);
std::unique_ptr<Rule> make_rule(const AdamConfig& c);
std::unique_ptr<Rule> make_rule(const AdamWConfig& c);
std::unique_ptr<Rule> make_rule(const RmspropConfig& c);
std::unique_ptr<Rule> make_rule(const AdagradConfig& c);
std::unique_ptr<Rule> make_rule(const LionConfig& c);

}  // namespace ember::optim::detail
