// The Optimizer: parameter groups by path, per-parameter state keyed by ParamId, the step loop,
// and the state by path for checkpoints. The algorithms are in rules.cpp.
#include "ember/optim/optimizer.hpp"

#include <algorithm>
#include <limits>
#include <regex>
#include <set>
#include <string_view>
#include <unordered_map>

#include "ember/core/error.hpp"
#include "ember/core/text.hpp"
#include "ember/io/safetensors.hpp"
#include "ember/tensor/device_graph.hpp"
#include "ember/tensor/ops/creation.hpp"
#include "rules.hpp"
#include "state_text.hpp"

namespace ember::optim {

namespace detail {

namespace {

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// nn::set_trainable's rule: the exact path, a module prefix, or a regex over the whole path.
bool path_matches(const std::string& path, const std::string& pattern, const std::regex* re) {
  if (pattern.empty() || path == pattern) return true;
  if (path.size() > pattern.size() && path.compare(0, pattern.size(), pattern) == 0 &&
      path[pattern.size()] == '.') {
    return true;
  }
  return re && std::regex_match(path, *re);
}

}  // namespace

class OptimizerImpl {
 public:
  struct Group {
    std::string pattern;
    std::optional<std::regex> re;
    GroupHyper hyper;
    std::optional<double> initial_lr;
  };

  explicit OptimizerImpl(std::unique_ptr<Rule> r) : rule(std::move(r)) {
    groups.push_back({"", std::nullopt, rule->defaults(), std::nullopt});
  }

  const char* name() const { return rule->name(); }

  Group& group(int i) {
    EMBER_CHECK(i >= 0 && i < static_cast<int>(groups.size()), "[", name(), "] no parameter group ",
                i, " (there are ", groups.size(), ")");
    return groups[static_cast<size_t>(i)];
  }

  // The group of every parameter in `tree` (cached by id); checks that each added group matches.
  int group_of(const nn::ModuleTree& tree, const nn::NamedTensor& p) {
    if (!checked_) {
      for (size_t g = 1; g < groups.size(); ++g) {
        const bool any = std::any_of(tree.begin(), tree.end(), [&](const nn::ModuleEntry& e) {
          return e.kind == nn::ModuleEntry::Kind::Tensor &&
                 e.slot->kind() == nn::TensorSlot::Kind::Param && matches(g, e.path);
        });
        EMBER_CHECK(any, "[", name(), "] parameter group ", g, " (pattern \"", groups[g].pattern,
                    "\") matches no parameter of ", tree.empty() ? "the module" : tree[0].type);
      }
      checked_ = true;
    }
    auto it = group_of_.find(p.slot->id());
    if (it != group_of_.end()) return it->second;
    int found = 0;
    for (size_t g = 1; g < groups.size() && found == 0; ++g) {
      if (matches(g, p.path)) found = static_cast<int>(g);
    }
    group_of_.emplace(p.slot->id(), found);
    return found;
  }

  bool matches(size_t g, const std::string& path) const {
    return path_matches(path, groups[g].pattern, groups[g].re ? &*groups[g].re : nullptr);
  }

  void forget_groups() {
    group_of_.clear();
    checked_ = false;
  }

  std::unique_ptr<Rule> rule;
  std::vector<Group> groups;
  std::unordered_map<nn::ParamId, ParamState> state;
  LbfgsState lbfgs;  // LBFGS's global state (unused by the other rules)

 private:
  std::unordered_map<nn::ParamId, int> group_of_;
  bool checked_ = false;
};

}  // namespace detail

using detail::format_double;
using ember::detail::shown;

Optimizer::Optimizer(const SgdConfig& c)
    : impl_(std::make_shared<detail::OptimizerImpl>(detail::make_rule(c))) {}
Optimizer::Optimizer(const AdamConfig& c)
    : impl_(std::make_shared<detail::OptimizerImpl>(detail::make_rule(c))) {}
Optimizer::Optimizer(const AdamWConfig& c)
    : impl_(std::make_shared<detail::OptimizerImpl>(detail::make_rule(c))) {}
Optimizer::Optimizer(const RmspropConfig& c)
    : impl_(std::make_shared<detail::OptimizerImpl>(detail::make_rule(c))) {}
Optimizer::Optimizer(const AdagradConfig& c)
    : impl_(std::make_shared<detail::OptimizerImpl>(detail::make_rule(c))) {}
Optimizer::Optimizer(const LionConfig& c)
    : impl_(std::make_shared<detail::OptimizerImpl>(detail::make_rule(c))) {}
Optimizer::Optimizer(const AdadeltaConfig& c)
    : impl_(std::make_shared<detail::OptimizerImpl>(detail::make_rule(c))) {}
Optimizer::Optimizer(const AdamaxConfig& c)
    : impl_(std::make_shared<detail::OptimizerImpl>(detail::make_rule(c))) {}
Optimizer::Optimizer(const NAdamConfig& c)
    : impl_(std::make_shared<detail::OptimizerImpl>(detail::make_rule(c))) {}
Optimizer::Optimizer(const RAdamConfig& c)
    : impl_(std::make_shared<detail::OptimizerImpl>(detail::make_rule(c))) {}
Optimizer::Optimizer(const RpropConfig& c)
    : impl_(std::make_shared<detail::OptimizerImpl>(detail::make_rule(c))) {}
Optimizer::Optimizer(const AsgdConfig& c)
    : impl_(std::make_shared<detail::OptimizerImpl>(detail::make_rule(c))) {}
Optimizer::Optimizer(const AdanConfig& c)
    : impl_(std::make_shared<detail::OptimizerImpl>(detail::make_rule(c))) {}
Optimizer::Optimizer(const MuonConfig& c)
    : impl_(std::make_shared<detail::OptimizerImpl>(detail::make_rule(c))) {}
Optimizer::Optimizer(const LbfgsConfig& c)
    : impl_(std::make_shared<detail::OptimizerImpl>(detail::make_rule(c))) {}
Optimizer::~Optimizer() = default;
Optimizer SgdConfig::init() const { return Optimizer(*this); }
Optimizer AdamConfig::init() const { return Optimizer(*this); }
Optimizer AdamWConfig::init() const { return Optimizer(*this); }
Optimizer RmspropConfig::init() const { return Optimizer(*this); }
Optimizer AdagradConfig::init() const { return Optimizer(*this); }
Optimizer LionConfig::init() const { return Optimizer(*this); }
Optimizer AdadeltaConfig::init() const { return Optimizer(*this); }
Optimizer AdamaxConfig::init() const { return Optimizer(*this); }
Optimizer NAdamConfig::init() const { return Optimizer(*this); }
Optimizer RAdamConfig::init() const { return Optimizer(*this); }
Optimizer RpropConfig::init() const { return Optimizer(*this); }
Optimizer AsgdConfig::init() const { return Optimizer(*this); }
Optimizer AdanConfig::init() const { return Optimizer(*this); }
Optimizer MuonConfig::init() const { return Optimizer(*this); }
Optimizer LbfgsConfig::init() const { return Optimizer(*this); }
Optimizer::Optimizer(Optimizer&&) noexcept = default;
Optimizer& Optimizer::operator=(Optimizer&&) noexcept = default;

const char* Optimizer::name() const { return impl_->name(); }

int Optimizer::add_group(std::string pattern, const GroupOptions& options) {
  EMBER_CHECK(!impl_->rule->needs_closure(), "[", name(),
              "] has no parameter groups (as PyTorch's): one vector of all parameters");
  detail::GroupHyper h = impl_->rule->defaults();
  if (options.lr_) h.lr = *options.lr_;
  if (options.weight_decay_) h.weight_decay = *options.weight_decay_;
  impl_->rule->check(h);
  std::optional<std::regex> re;
  if (!pattern.empty()) {
    try {
      re.emplace(pattern, std::regex::ECMAScript);
    } catch (const std::regex_error&) {
      // Not a regex: it can still match as a path or a module prefix.
    }
  }
  impl_->groups.push_back({std::move(pattern), std::move(re), h, std::nullopt});
  impl_->forget_groups();
  return static_cast<int>(impl_->groups.size()) - 1;
}

int Optimizer::num_groups() const { return static_cast<int>(impl_->groups.size()); }

void Optimizer::step(const nn::ModuleTree& tree, const Gradients& grads) {
  step(tree, ParamGrads::from(tree, grads));
}

void Optimizer::step(const nn::ModuleTree& tree, const ParamGrads& grads) {
  EMBER_CHECK(!impl_->rule->needs_closure(), "[", name(),
              "] needs a closure that recomputes the loss and gradients: opt.step(model, "
              "closure)");
  auto guard = no_grad();
  // Everything is checked before the first parameter changes: a bad gradient updates nothing.
  struct Update {
    nn::TensorSlot* slot;
    int group;
    DynTensor grad;
  };
  std::vector<Update> updates;
  // Copies of one Param in two places of a module (same ParamId) are one parameter: updated
  // once, and the copies get the new value.
  std::unordered_map<nn::ParamId, size_t> seen;
  std::vector<std::pair<nn::TensorSlot*, size_t>> copies;
  for (const nn::NamedTensor& p : nn::named_params(tree)) {
    if (!p.slot->trainable()) continue;
    if (auto it = seen.find(p.slot->id()); it != seen.end()) {
      copies.emplace_back(p.slot, it->second);
      continue;
    }
    const int g = impl_->group_of(tree, p);
    const DynTensor grad = grads.find(p.slot->id());
    if (!grad.defined()) continue;
    EMBER_CHECK(grad.shape() == p.slot->dyn().shape(), "[", name(), "] the gradient of ", p.path,
                " has shape ", grad.shape(), ", the parameter ", p.slot->dyn().shape());
    impl_->rule->check_param(p.path, p.slot->dyn());
    seen.emplace(p.slot->id(), updates.size());
    updates.push_back({p.slot, g, impl_->rule->maximize ? neg(detach(grad)) : detach(grad)});
  }
  // The step's numbers (lr, step counts) are host values: a captured step would replay them.
  for (const Update& u : updates) {
    const Device dev = u.slot->dyn().device();
    EMBER_CHECK(!capture_under_way(dev), "[", name(),
                "] cannot step inside a DeviceGraph capture on ", dev,
                ": its learning rate and step counts are host values a replay would repeat; "
                "step between replays (fused(true) keeps the parameters where the graph reads "
                "them)");
  }
  if (impl_->rule->in_place()) {  // fused: the parameters keep their storage
    std::vector<detail::Rule::InPlace> params;
    for (const Update& u : updates) {
      params.push_back({detach(u.slot->dyn()), u.grad, &impl_->state[u.slot->id()],
                        &impl_->group(u.group).hyper});
    }
    impl_->rule->update_in_place(params);
    // Copies of a shared Param that hold their own storage (after to_device or load) get the
    // new value written into it, as the graph that reads them needs.
    for (const auto& [slot, index] : copies) {
      const DynTensor primary = detach(updates[index].slot->dyn());
      if (slot->dyn().raw().storage != primary.raw().storage)
        copy_into(detach(slot->dyn()), primary);
    }
    return;
  }
  for (const Update& u : updates) {
    detail::ParamState& s = impl_->state[u.slot->id()];
    u.slot->set_dyn(
        impl_->rule->update(detach(u.slot->dyn()), u.grad, s, impl_->group(u.group).hyper));
  }
  for (const auto& [slot, index] : copies) slot->set_dyn(updates[index].slot->dyn());
}

DynTensor Optimizer::step(const nn::ModuleTree& tree, const Closure& closure) {
  EMBER_CHECK(static_cast<bool>(closure), "[", name(), "] step: the closure is empty");
  if (!impl_->rule->needs_closure()) {
    LossAndGrads r;
    {
      auto recording = enable_grad();
      r = closure();
    }
    step(tree, ParamGrads::from(tree, r.grads));
    return r.loss;
  }
  // LBFGS: the trainable Params in the module's order, each once.
  std::vector<nn::TensorSlot*> params;
  std::set<nn::ParamId> seen;
  for (const nn::NamedTensor& p : nn::named_params(tree)) {
    if (p.slot->trainable() && seen.insert(p.slot->id()).second) params.push_back(p.slot);
  }
  return detail::lbfgs_step(*impl_->rule, impl_->group(0).hyper.lr, impl_->lbfgs, params, tree,
                            closure);
}

double Optimizer::lr(int group) const { return impl_->group(group).hyper.lr; }

void Optimizer::set_lr(double lr, int group) {
  EMBER_CHECK(lr >= 0, "[", name(), "] invalid learning rate: ", lr, " (must be >= 0)");
  impl_->group(group).hyper.lr = lr;
}

void Optimizer::set_scheduled_lr(double lr, int group) { impl_->group(group).hyper.lr = lr; }

void Optimizer::set_lr(double lr) {
  for (int g = 0; g < num_groups(); ++g) set_lr(lr, g);
}

double Optimizer::weight_decay(int group) const { return impl_->group(group).hyper.weight_decay; }

bool Optimizer::has_momentum() const { return impl_->rule->has_momentum(); }
bool Optimizer::updates_in_place() const { return impl_->rule->in_place(); }

double Optimizer::momentum(int group) const {
  EMBER_CHECK(impl_->rule->has_momentum(), "[", name(), "] has no momentum or beta1");
  return impl_->group(group).hyper.momentum;
}

void Optimizer::set_momentum(double momentum, int group) {
  EMBER_CHECK(impl_->rule->has_momentum(), "[", name(), "] has no momentum or beta1");
  impl_->group(group).hyper.momentum = momentum;
}

std::optional<double> Optimizer::initial_lr(int group) const {
  return impl_->group(group).initial_lr;
}

void Optimizer::set_initial_lr(double lr, int group) { impl_->group(group).initial_lr = lr; }

int64_t Optimizer::steps() const {
  if (impl_->rule->needs_closure()) return impl_->lbfgs.n_iter;
  int64_t n = 0;
  for (const auto& [id, s] : impl_->state) n = std::max(n, s.step);
  return n;
}

OptimizerState Optimizer::state(const nn::ModuleTree& tree) const {
  OptimizerState out;
  auto& meta = out.metadata;
  meta["optimizer"] = name();
  meta["groups"] = std::to_string(impl_->groups.size());
  for (size_t g = 0; g < impl_->groups.size(); ++g) {
    const auto& group = impl_->groups[g];
    const std::string key = "group." + std::to_string(g) + ".";
    meta[key + "pattern"] = group.pattern;
    meta[key + "lr"] = format_double(group.hyper.lr);
    meta[key + "weight_decay"] = format_double(group.hyper.weight_decay);
    meta[key + "momentum"] = format_double(group.hyper.momentum);
    if (group.initial_lr) meta[key + "initial_lr"] = format_double(*group.initial_lr);
  }
  if (impl_->rule->needs_closure()) detail::save_lbfgs(impl_->lbfgs, out);
  for (const nn::NamedTensor& p : nn::named_params(tree)) {
    auto it = impl_->state.find(p.slot->id());
    if (it == impl_->state.end()) continue;
    meta["step." + p.path] = std::to_string(it->second.step);
    for (const auto& [scalar, v] : it->second.scalars) {
      meta[scalar + "." + p.path] = format_double(v);
    }
    for (const auto& [buffer, t] : it->second.buffers) {
      // A fused optimizer writes its buffers in place: the snapshot must not change with them.
      out.tensors.emplace_back(p.path + "." + buffer,
                               impl_->rule->in_place() ? clone(detach(t)) : detach(t));
    }
  }
  return out;
}

void Optimizer::load_state(const nn::ModuleTree& tree, const OptimizerState& state) {
  // Check everything first, so that a bad state changes nothing. Every number is parsed whole
  // and range-checked (detail::state_int/state_double) before it is used.
  const auto& meta = state.metadata;
  const char* who = name();
  const std::string algo = detail::state_text(meta, "optimizer", who);
  EMBER_CHECK(algo == who, "[", who, "] the saved state is of optimizer \"", shown(algo),
              "\", not ", who);
  const int64_t n_groups = detail::state_int(meta, "groups", who, 1, detail::kMaxCount);
  EMBER_CHECK(n_groups == static_cast<int64_t>(impl_->groups.size()), "[", who,
              "] the saved state has ", n_groups, " parameter groups, this optimizer ",
              impl_->groups.size(), " (add the same groups before loading)");
  const char* module = tree.empty() ? "the module" : tree[0].type;
  std::map<std::string, const nn::NamedTensor*> by_path;
  const std::vector<nn::NamedTensor> params = nn::named_params(tree);
  for (const nn::NamedTensor& p : params) by_path[p.path] = &p;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::unordered_map<nn::ParamId, detail::ParamState> fresh;
  for (const auto& [key, value] : meta) {
    if (!key.starts_with("step.")) continue;
    const std::string path = key.substr(5);
    auto it = by_path.find(path);
    EMBER_CHECK(it != by_path.end(), "[", who, "] the saved state has parameter \"",
                shown(path, 80), "\", which ", module, " does not have");
    fresh[it->second->slot->id()].step = detail::state_int(meta, key, who, 0, detail::kMaxCount);
  }
  for (const nn::NamedTensor& p : params) {
    auto s = fresh.find(p.slot->id());
    if (s == fresh.end()) continue;
    for (const std::string& scalar : impl_->rule->scalar_names()) {
      // Every stepped parameter has them (made at its first step); any finite value is valid.
      s->second.scalars[scalar] =
          detail::state_double(meta, scalar + "." + p.path, who, -kInf, kInf);
    }
  }
  std::optional<detail::LbfgsState> lbfgs;
  if (impl_->rule->needs_closure()) {
    int64_t numel = 0;
    DynTensor like;
    std::set<nn::ParamId> counted;
    for (const nn::NamedTensor& p : params) {
      if (!p.slot->trainable() || !counted.insert(p.slot->id()).second) continue;
      numel += p.slot->dyn().numel();
      if (!like.defined()) like = p.slot->dyn();
    }
    EMBER_CHECK(like.defined(), "[", who, "] ", module, " has no trainable parameter");
    lbfgs = detail::load_lbfgs(state, who, numel, like);
  }
  const std::vector<std::string> kept = impl_->rule->buffer_names();
  for (const auto& [key, t] : state.tensors) {
    if (lbfgs) break;  // LBFGS's tensors were checked by load_lbfgs
    const size_t dot = key.rfind('.');
    const std::string path = dot == std::string::npos ? key : key.substr(0, dot);
    const std::string buffer = dot == std::string::npos ? "" : key.substr(dot + 1);
    auto it = by_path.find(path);
    EMBER_CHECK(dot != std::string::npos && it != by_path.end(), "[", who,
                "] the saved state has tensor \"", shown(key, 80), "\" for a parameter ", module,
                " does not have");
    EMBER_CHECK(std::find(kept.begin(), kept.end(), buffer) != kept.end(), "[", who,
                "] the saved state has tensor \"", shown(key, 80), "\", a buffer ", who,
                " does not keep (it keeps ", detail::join_names(kept), ")");
    const DynTensor& value = it->second->slot->dyn();
    EMBER_CHECK(t.shape() == value.shape(), "[", who, "] the saved ", shown(key, 80), " has shape ",
                t.shape(), ", the parameter ", value.shape());
    auto s = fresh.find(it->second->slot->id());
    EMBER_CHECK(s != fresh.end(), "[", who, "] the saved state has ", shown(key, 80),
                " but no step of ", shown(path, 80));
    // A copy of its own: a loaded tensor may share a read-only file mapping.
    s->second.buffers[buffer] = clone(cast(to_device(t, value.device()), value.dtype()));
  }
  std::vector<detail::GroupHyper> hypers;
  std::vector<std::optional<double>> initial;
  for (size_t g = 0; g < impl_->groups.size(); ++g) {
    const std::string key = "group." + std::to_string(g) + ".";
    const std::string pattern = detail::state_text(meta, key + "pattern", who);
    EMBER_CHECK(pattern == impl_->groups[g].pattern, "[", who, "] parameter group ", g,
                " of the saved state has pattern \"", shown(pattern, 80), "\", this optimizer \"",
                impl_->groups[g].pattern, "\"");
    // Learning rates need only be finite: a schedule with eta_min < 0 sets negative ones.
    const detail::GroupHyper h{detail::state_double(meta, key + "lr", who, -kInf, kInf),
                               detail::state_double(meta, key + "weight_decay", who, 0, kInf),
                               detail::state_double(meta, key + "momentum", who, 0, kInf)};
    const double limit = impl_->rule->momentum_limit();
    EMBER_CHECK(h.momentum < limit, "[", who, "] the saved state's \"", key, "momentum\" is ",
                h.momentum, ", not below ", limit, " (", who, "'s beta1)");
    hypers.push_back(h);
    initial.push_back(meta.count(key + "initial_lr")
                          ? std::optional<double>(
                                detail::state_double(meta, key + "initial_lr", who, -kInf, kInf))
                          : std::nullopt);
  }
  for (size_t g = 0; g < impl_->groups.size(); ++g) {
    impl_->groups[g].hyper = hypers[g];
    impl_->groups[g].initial_lr = initial[g];
  }
  impl_->state = std::move(fresh);
  if (lbfgs) impl_->lbfgs = std::move(*lbfgs);
  impl_->forget_groups();
}

void Optimizer::save(const nn::ModuleTree& tree, const std::string& path) const {
  const OptimizerState s = state(tree);
  io::save_safetensors(s.tensors, path, s.metadata);
}

void Optimizer::load(const nn::ModuleTree& tree, const std::string& path) {
  const io::SafetensorsFile file = io::load_safetensors(path);
  OptimizerState s;
  s.metadata = file.metadata();
  for (const std::string& n : file.names()) s.tensors.emplace_back(n, file.tensor(n));
  try {
    load_state(tree, s);
  } catch (const Error& e) {
    // The file's name after the optimizer's: "[Adam] 'opt.safetensors': the saved state ...".
    std::string_view what = e.what();
    const std::string tag = std::string("[") + name() + "] ";
    if (what.starts_with(tag)) what.remove_prefix(tag.size());
    EMBER_FAIL("[", name(), "] '", path, "': ", what);
  }
}

}  // namespace ember::optim
