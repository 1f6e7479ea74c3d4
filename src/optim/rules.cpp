// One update rule per algorithm, as torch.optim's single-tensor implementations compute it (same
// order of operations, so float64 results agree to the last bits). Each rule validates its
// config when made, with PyTorch's conditions.
#include "rules.hpp"
#include "ember/tensor/ops/optim.hpp"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <utility>

#include "ember/core/error.hpp"
#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/linalg.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "ember/tensor/ops/reduce.hpp"

namespace ember::optim::detail {

void Rule::update_in_place(const std::vector<InPlace>&) const {
  EMBER_FAIL("[", name(), "] has no in-place update");
}

void Rule::check(const GroupHyper& h) const {
  EMBER_CHECK(h.lr >= 0, "[", name(), "] invalid learning rate: ", h.lr, " (must be >= 0)");
  EMBER_CHECK(h.weight_decay >= 0, "[", name(), "] invalid weight_decay: ", h.weight_decay,
              " (must be >= 0)");
  EMBER_CHECK(has_weight_decay() || h.weight_decay == 0, "[", name(), "] has no weight_decay, got ",
              h.weight_decay);
}

namespace {

void check_non_negative(std::string_view op, const char* which, double value) {
  EMBER_CHECK(value >= 0, "[", op, "] invalid ", which, ": ", value, " (must be >= 0)");
}

void check_beta(const char* op, const char* which, double beta) {
  EMBER_CHECK(beta >= 0 && beta < 1, "[", op, "] invalid ", which, ": ", beta,
              " (must be in [0, 1))");
}

// The buffer `name`, made by `init` the first time.
template <class Init>
DynTensor& buffer(ParamState& s, const char* name, Init init) {
  auto [it, fresh] = s.buffers.try_emplace(name);
  if (fresh) it->second = init();
  return it->second;
}

// p + value * x (PyTorch's add_(x, alpha=value)).
DynTensor add_scaled(const DynTensor& p, const DynTensor& x, double value) {
  return add(p, mul(x, value));
}

class Sgd final : public Rule {
 public:
  explicit Sgd(const SgdConfig& c) : c_(c) {
    check(defaults());
    check_non_negative("SGD", "momentum", c.momentum_);
    EMBER_CHECK(!c.nesterov_ || (c.momentum_ > 0 && c.dampening_ == 0),
                "[SGD] Nesterov momentum needs a momentum > 0 and zero dampening, got momentum ",
                c.momentum_, ", dampening ", c.dampening_);
  }
  const char* name() const override { return "SGD"; }
  std::vector<std::string> buffer_names() const override { return {"momentum_buffer"}; }
  GroupHyper defaults() const override { return {c_.lr_, c_.weight_decay_, c_.momentum_}; }
  DynTensor update(const DynTensor& p, const DynTensor& grad, ParamState& s,
                   const GroupHyper& h) const override {
    const auto it = s.buffers.find("momentum_buffer");
    const bool first = it == s.buffers.end();
    const SgdTensors next = ember::detail::sgd_step_composite({p, first ? DynTensor() : it->second},
                                                              grad, params(h, first));
    if (h.momentum != 0) s.buffers["momentum_buffer"] = next.momentum_buffer;
    ++s.step;
    return next.param;
  }
  bool in_place() const override { return c_.fused_; }
  void update_in_place(const std::vector<InPlace>& params_in) const override {
    std::vector<SgdTensors> states;
    std::vector<DynTensor> grads;
    std::vector<SgdParams> steps;
    std::vector<std::pair<ParamState*, DynTensor>> fresh;  // kept only once the step has run
    for (const InPlace& p : params_in) {
      const auto it = p.state->buffers.find("momentum_buffer");
      const bool first = it == p.state->buffers.end();
      DynTensor buf;
      if (p.hyper->momentum != 0) {
        buf = first ? zeros_like(p.param) : it->second;
        if (first) fresh.emplace_back(p.state, buf);
      }
      steps.push_back(params(*p.hyper, first));
      states.push_back({p.param, buf});
      grads.push_back(p.grad);
    }
    sgd_step_in_place(states, grads, steps);  // checks every input before it writes any
    for (auto& [state, buf] : fresh) state->buffers.emplace("momentum_buffer", std::move(buf));
    for (const InPlace& p : params_in) ++p.state->step;
  }

 private:
  SgdParams params(const GroupHyper& h, bool first) const {
    SgdParams p;
    p.lr = h.lr;
    p.momentum = h.momentum;
    p.dampening = c_.dampening_;
    p.weight_decay = h.weight_decay;
    p.nesterov = c_.nesterov_;
    p.first = first;
    return p;
  }

  SgdConfig c_;
};

// Adam and AdamW (decoupled weight decay).
class Adam final : public Rule {
 public:
  Adam(const char* name, double lr, double beta1, double beta2, double eps, double wd, bool amsgrad,
       bool decoupled, bool fused)
      : name_(name),
        lr_(lr),
        beta1_(beta1),
        beta2_(beta2),
        eps_(eps),
        wd_(wd),
        amsgrad_(amsgrad),
        decoupled_(decoupled),
        fused_(fused) {
    check(defaults());
    check_beta(name_, "beta1", beta1);
    check_beta(name_, "beta2", beta2);
    check_non_negative(name_, "eps", eps);
  }
  const char* name() const override { return name_; }
  std::vector<std::string> buffer_names() const override {
    return {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  }
  double momentum_limit() const override { return 1; }
  GroupHyper defaults() const override { return {lr_, wd_, beta1_}; }
  DynTensor update(const DynTensor& param, const DynTensor& grad, ParamState& s,
                   const GroupHyper& h) const override {
    const AdamParams fp = step_params(param, s, h, ++s.step);
    // One op: the backend's fused pass where it has one, else the same 13 tensor ops.
    AdamTensors next = adam_step(tensors(param, s), grad, fp);
    s.buffers["exp_avg"] = next.exp_avg;
    s.buffers["exp_avg_sq"] = next.exp_avg_sq;
    if (amsgrad_) s.buffers["max_exp_avg_sq"] = next.max_exp_avg_sq;
    return next.param;
  }
  bool in_place() const override { return fused_; }
  void update_in_place(const std::vector<InPlace>& params) const override {
    std::vector<AdamTensors> states;
    std::vector<DynTensor> grads;
    std::vector<AdamParams> steps;
    for (const InPlace& p : params) {
      steps.push_back(step_params(p.param, *p.state, *p.hyper, p.state->step + 1));
      states.push_back(tensors(p.param, *p.state));
      grads.push_back(p.grad);
    }
    adam_step_in_place(states, grads, steps);  // checks every input before it writes any
    for (const InPlace& p : params) ++p.state->step;
  }

 private:
  // Makes missing buffers and gives the constants of step number `number`.
  AdamParams step_params(const DynTensor& param, ParamState& s, const GroupHyper& h,
                         int64_t number) const {
    const double step = static_cast<double>(number);
    buffer(s, "exp_avg", [&] { return zeros_like(param); });
    buffer(s, "exp_avg_sq", [&] { return zeros_like(param); });
    if (amsgrad_) buffer(s, "max_exp_avg_sq", [&] { return zeros_like(param); });
    AdamParams fp;
    fp.lr = h.lr;
    fp.beta1 = h.momentum;
    fp.beta2 = beta2_;
    fp.eps = eps_;
    fp.weight_decay = h.weight_decay;
    fp.bias_correction1 = 1 - std::pow(h.momentum, step);
    fp.bias_correction2_sqrt = std::sqrt(1 - std::pow(beta2_, step));
    fp.decoupled = decoupled_;
    fp.amsgrad = amsgrad_;
    return fp;
  }
  AdamTensors tensors(const DynTensor& param, ParamState& s) const {
    return {param, s.buffers.at("exp_avg"), s.buffers.at("exp_avg_sq"),
            amsgrad_ ? s.buffers.at("max_exp_avg_sq") : DynTensor()};
  }

  const char* name_;
  double lr_, beta1_, beta2_, eps_, wd_;
  bool amsgrad_, decoupled_, fused_;
};

class Rmsprop final : public Rule {
 public:
  explicit Rmsprop(const RmspropConfig& c) : c_(c) {
    check(defaults());
    check_non_negative("RMSprop", "alpha", c.alpha_);
    check_non_negative("RMSprop", "eps", c.eps_);
    check_non_negative("RMSprop", "momentum", c.momentum_);
  }
  const char* name() const override { return "RMSprop"; }
  std::vector<std::string> buffer_names() const override {
    return {"square_avg", "grad_avg", "momentum_buffer"};
  }
  GroupHyper defaults() const override { return {c_.lr_, c_.weight_decay_, c_.momentum_}; }
  DynTensor update(const DynTensor& p, const DynTensor& grad, ParamState& s,
                   const GroupHyper& h) const override {
    ++s.step;
    const DynTensor g = h.weight_decay != 0 ? add_scaled(grad, p, h.weight_decay) : grad;
    DynTensor& sq = buffer(s, "square_avg", [&] { return zeros_like(p); });
    sq = add_scaled(mul(sq, c_.alpha_), mul(g, g), 1 - c_.alpha_);
    DynTensor avg;
    if (c_.centered_) {
      DynTensor& ga = buffer(s, "grad_avg", [&] { return zeros_like(p); });
      ga = lerp(ga, g, 1 - c_.alpha_);
      avg = sqrt(sub(sq, mul(ga, ga)));
    } else {
      avg = sqrt(sq);
    }
    avg = add(avg, c_.eps_);
    if (h.momentum > 0) {
      DynTensor& buf = buffer(s, "momentum_buffer", [&] { return zeros_like(p); });
      buf = add(mul(buf, h.momentum), div(g, avg));
      return add_scaled(p, buf, -h.lr);
    }
    return add_scaled(p, div(g, avg), -h.lr);
  }

 private:
  RmspropConfig c_;
};

class Adagrad final : public Rule {
 public:
  explicit Adagrad(const AdagradConfig& c) : c_(c) {
    check(defaults());
    check_non_negative("Adagrad", "lr_decay", c.lr_decay_);
    check_non_negative("Adagrad", "initial_accumulator_value", c.initial_accumulator_value_);
    check_non_negative("Adagrad", "eps", c.eps_);
  }
  const char* name() const override { return "Adagrad"; }
  std::vector<std::string> buffer_names() const override { return {"sum"}; }
  GroupHyper defaults() const override { return {c_.lr_, c_.weight_decay_, 0.0}; }
  bool has_momentum() const override { return false; }
  DynTensor update(const DynTensor& p, const DynTensor& grad, ParamState& s,
                   const GroupHyper& h) const override {
    ++s.step;
    const DynTensor g = h.weight_decay != 0 ? add_scaled(grad, p, h.weight_decay) : grad;
    const double clr = h.lr / (1 + static_cast<double>(s.step - 1) * c_.lr_decay_);
    DynTensor& sum = buffer(s, "sum", [&] { return full_like(p, c_.initial_accumulator_value_); });
    sum = add(sum, mul(g, g));
    const DynTensor std = add(sqrt(sum), c_.eps_);
    return add_scaled(p, div(g, std), -clr);
  }

 private:
  AdagradConfig c_;
};

class Lion final : public Rule {
 public:
  explicit Lion(const LionConfig& c) : c_(c) {
    check(defaults());
    check_beta("Lion", "beta1", c.beta1_);
    check_beta("Lion", "beta2", c.beta2_);
  }
  const char* name() const override { return "Lion"; }
  std::vector<std::string> buffer_names() const override { return {"exp_avg"}; }
  double momentum_limit() const override { return 1; }
  GroupHyper defaults() const override { return {c_.lr_, c_.weight_decay_, c_.beta1_}; }
  DynTensor update(const DynTensor& param, const DynTensor& g, ParamState& s,
                   const GroupHyper& h) const override {
    ++s.step;
    const double beta1 = h.momentum;
    DynTensor& m = buffer(s, "exp_avg", [&] { return zeros_like(param); });
    const DynTensor p = mul(param, 1 - h.lr * h.weight_decay);
    const DynTensor direction = sign(add_scaled(mul(m, beta1), g, 1 - beta1));
    m = add_scaled(mul(m, c_.beta2_), g, 1 - c_.beta2_);
    return add_scaled(p, direction, -h.lr);
  }

 private:
  LionConfig c_;
};

class Adadelta final : public Rule {
 public:
  explicit Adadelta(const AdadeltaConfig& c) : c_(c) {
    check(defaults());
    EMBER_CHECK(c.rho_ >= 0 && c.rho_ <= 1, "[Adadelta] invalid rho: ", c.rho_,
                " (must be in [0, 1])");
    check_non_negative("Adadelta", "eps", c.eps_);
  }
  const char* name() const override { return "Adadelta"; }
  std::vector<std::string> buffer_names() const override { return {"square_avg", "acc_delta"}; }
  GroupHyper defaults() const override { return {c_.lr_, c_.weight_decay_, 0.0}; }
  bool has_momentum() const override { return false; }
  DynTensor update(const DynTensor& p, const DynTensor& grad, ParamState& s,
                   const GroupHyper& h) const override {
    ++s.step;
    const double rho = c_.rho_;
    const DynTensor g = h.weight_decay != 0 ? add_scaled(grad, p, h.weight_decay) : grad;
    DynTensor& sq = buffer(s, "square_avg", [&] { return zeros_like(p); });
    DynTensor& acc = buffer(s, "acc_delta", [&] { return zeros_like(p); });
    sq = add_scaled(mul(sq, rho), mul(g, g), 1 - rho);
    const DynTensor std = sqrt(add(sq, c_.eps_));
    const DynTensor delta = mul(div(sqrt(add(acc, c_.eps_)), std), g);
    acc = add_scaled(mul(acc, rho), mul(delta, delta), 1 - rho);
    return add_scaled(p, delta, -h.lr);
  }

 private:
  AdadeltaConfig c_;
};

class Adamax final : public Rule {
 public:
  explicit Adamax(const AdamaxConfig& c) : c_(c) {
    check(defaults());
    check_beta("Adamax", "beta1", c.beta1_);
    check_beta("Adamax", "beta2", c.beta2_);
    check_non_negative("Adamax", "eps", c.eps_);
  }
  const char* name() const override { return "Adamax"; }
  std::vector<std::string> buffer_names() const override { return {"exp_avg", "exp_inf"}; }
  double momentum_limit() const override { return 1; }
  GroupHyper defaults() const override { return {c_.lr_, c_.weight_decay_, c_.beta1_}; }
  DynTensor update(const DynTensor& p, const DynTensor& grad, ParamState& s,
                   const GroupHyper& h) const override {
    ++s.step;
    const double beta1 = h.momentum;
    const DynTensor g = h.weight_decay != 0 ? add_scaled(grad, p, h.weight_decay) : grad;
    DynTensor& m = buffer(s, "exp_avg", [&] { return zeros_like(p); });
    DynTensor& u = buffer(s, "exp_inf", [&] { return zeros_like(p); });
    m = add_scaled(mul(m, beta1), g, 1 - beta1);
    u = maximum(mul(u, c_.beta2_), add(abs(g), c_.eps_));
    const double clr = h.lr / (1 - std::pow(beta1, static_cast<double>(s.step)));
    return add_scaled(p, div(m, u), -clr);
  }

 private:
  AdamaxConfig c_;
};

// NAdam, as PyTorch >= 2.0 computes it: mu_product_next = mu_product * mu_next (PyTorch 1.13
// multiplied by mu once more, a bug fixed by pytorch/pytorch#92699), mu_product kept in double.
class NAdam final : public Rule {
 public:
  explicit NAdam(const NAdamConfig& c) : c_(c) {
    check(defaults());
    check_beta("NAdam", "beta1", c.beta1_);
    check_beta("NAdam", "beta2", c.beta2_);
    check_non_negative("NAdam", "eps", c.eps_);
    check_non_negative("NAdam", "momentum_decay", c.momentum_decay_);
  }
  const char* name() const override { return "NAdam"; }
  std::vector<std::string> buffer_names() const override { return {"exp_avg", "exp_avg_sq"}; }
  std::vector<std::string> scalar_names() const override { return {"mu_product"}; }
  double momentum_limit() const override { return 1; }
  GroupHyper defaults() const override { return {c_.lr_, c_.weight_decay_, c_.beta1_}; }
  DynTensor update(const DynTensor& param, const DynTensor& grad, ParamState& s,
                   const GroupHyper& h) const override {
    ++s.step;
    const double beta1 = h.momentum, beta2 = c_.beta2_;
    const double step = static_cast<double>(s.step);
    const double bias_correction2 = 1 - std::pow(beta2, step);
    DynTensor p = param, g = grad;
    if (h.weight_decay != 0) {
      if (c_.decoupled_weight_decay_) {
        p = mul(p, 1 - h.lr * h.weight_decay);
      } else {
        g = add_scaled(g, p, h.weight_decay);
      }
    }
    const double mu = beta1 * (1. - 0.5 * std::pow(0.96, step * c_.momentum_decay_));
    const double mu_next = beta1 * (1. - 0.5 * std::pow(0.96, (step + 1) * c_.momentum_decay_));
    double& mu_product = s.scalars.try_emplace("mu_product", 1.0).first->second;
    mu_product *= mu;
    DynTensor& m = buffer(s, "exp_avg", [&] { return zeros_like(p); });
    DynTensor& v = buffer(s, "exp_avg_sq", [&] { return zeros_like(p); });
    m = add_scaled(mul(m, beta1), g, 1 - beta1);
    v = add_scaled(mul(v, beta2), mul(g, g), 1 - beta2);
    const DynTensor denom = add(sqrt(div(v, bias_correction2)), c_.eps_);
    p = add_scaled(p, div(g, denom), -h.lr * (1. - mu) / (1. - mu_product));
    return add_scaled(p, div(m, denom), (-h.lr * mu_next) / (1. - mu_product * mu_next));
  }

 private:
  NAdamConfig c_;
};

class RAdam final : public Rule {
 public:
  explicit RAdam(const RAdamConfig& c) : c_(c) {
    check(defaults());
    check_beta("RAdam", "beta1", c.beta1_);
    check_beta("RAdam", "beta2", c.beta2_);
    check_non_negative("RAdam", "eps", c.eps_);
  }
  const char* name() const override { return "RAdam"; }
  std::vector<std::string> buffer_names() const override { return {"exp_avg", "exp_avg_sq"}; }
  double momentum_limit() const override { return 1; }
  GroupHyper defaults() const override { return {c_.lr_, c_.weight_decay_, c_.beta1_}; }
  DynTensor update(const DynTensor& param, const DynTensor& grad, ParamState& s,
                   const GroupHyper& h) const override {
    ++s.step;
    const double beta1 = h.momentum, beta2 = c_.beta2_;
    const double step = static_cast<double>(s.step);
    DynTensor p = param, g = grad;
    if (h.weight_decay != 0) {
      if (c_.decoupled_weight_decay_) {
        p = mul(p, 1 - h.lr * h.weight_decay);
      } else {
        g = add_scaled(g, p, h.weight_decay);
      }
    }
    DynTensor& m = buffer(s, "exp_avg", [&] { return zeros_like(p); });
    DynTensor& v = buffer(s, "exp_avg_sq", [&] { return zeros_like(p); });
    m = add_scaled(mul(m, beta1), g, 1 - beta1);
    v = add_scaled(mul(v, beta2), mul(g, g), 1 - beta2);
    const double bias_correction1 = 1 - std::pow(beta1, step);
    const double bias_correction2 = 1 - std::pow(beta2, step);
    const DynTensor corrected = div(m, bias_correction1);
    // The length of the approximated simple moving average: rectified once it exceeds 5.
    const double rho_inf = 2 / (1 - beta2) - 1;
    const double rho_t = rho_inf - 2 * step * std::pow(beta2, step) / bias_correction2;
    if (rho_t > 5.) {
      const double rect =
          std::sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t));
      const DynTensor adaptive_lr = div(std::sqrt(bias_correction2), add(sqrt(v), c_.eps_));
      return sub(p, mul(mul(mul(corrected, h.lr), adaptive_lr), rect));
    }
    return sub(p, mul(corrected, h.lr));
  }

 private:
  RAdamConfig c_;
};

class Rprop final : public Rule {
 public:
  explicit Rprop(const RpropConfig& c) : c_(c) {
    check(defaults());
    EMBER_CHECK(c.etaminus_ > 0 && c.etaminus_ < 1 && c.etaplus_ > 1, "[Rprop] invalid etas: (",
                c.etaminus_, ", ", c.etaplus_, ") (must be 0 < etaminus < 1 < etaplus)");
    EMBER_CHECK(c.step_size_min_ >= 0 && c.step_size_min_ <= c.step_size_max_,
                "[Rprop] invalid step_sizes: (", c.step_size_min_, ", ", c.step_size_max_,
                ") (must be 0 <= min <= max)");
  }
  const char* name() const override { return "Rprop"; }
  std::vector<std::string> buffer_names() const override { return {"prev", "step_size"}; }
  GroupHyper defaults() const override { return {c_.lr_, 0.0, 0.0}; }
  bool has_momentum() const override { return false; }
  bool has_weight_decay() const override { return false; }
  DynTensor update(const DynTensor& p, const DynTensor& grad, ParamState& s,
                   const GroupHyper& h) const override {
    ++s.step;
    DynTensor& prev = buffer(s, "prev", [&] { return zeros_like(p); });
    // lr is only the initial step size (PyTorch's): later lr changes do not reach it.
    DynTensor& step_size = buffer(s, "step_size", [&] { return full_like(p, h.lr); });
    const DynTensor sgn = sign(mul(grad, prev));
    const DynTensor flipped = lt(sgn, 0.0);
    const DynTensor factor =
        where(gt(sgn, 0.0), c_.etaplus_, where(flipped, c_.etaminus_, full_like(p, 1.0)));
    step_size = clamp(mul(step_size, factor), c_.step_size_min_, c_.step_size_max_);
    // Where the sign flipped, no step this time and no sign to compare with next time.
    const DynTensor g = where(flipped, 0.0, grad);
    prev = g;
    return sub(p, mul(sign(g), step_size));
  }

 private:
  RpropConfig c_;
};

class Asgd final : public Rule {
 public:
  explicit Asgd(const AsgdConfig& c) : c_(c) { check(defaults()); }
  const char* name() const override { return "ASGD"; }
  std::vector<std::string> buffer_names() const override { return {"ax"}; }
  std::vector<std::string> scalar_names() const override { return {"eta", "mu"}; }
  GroupHyper defaults() const override { return {c_.lr_, c_.weight_decay_, 0.0}; }
  bool has_momentum() const override { return false; }
  DynTensor update(const DynTensor& param, const DynTensor& grad, ParamState& s,
                   const GroupHyper& h) const override {
    ++s.step;
    const double step = static_cast<double>(s.step);
    double& eta = s.scalars.try_emplace("eta", h.lr).first->second;
    double& mu = s.scalars.try_emplace("mu", 1.0).first->second;
    const DynTensor g = h.weight_decay != 0 ? add_scaled(grad, param, h.weight_decay) : grad;
    DynTensor p = mul(param, 1 - c_.lambd_ * eta);
    p = add_scaled(p, g, -eta);
    DynTensor& ax = buffer(s, "ax", [&] { return zeros_like(p); });
    ax = mu != 1 ? add(ax, mul(sub(p, ax), mu)) : clone(p);
    eta = h.lr / std::pow(1 + c_.lambd_ * h.lr * step, c_.alpha_);
    mu = 1 / std::max(1.0, step - c_.t0_);
    return p;
  }

 private:
  AsgdConfig c_;
};

// Adan as the authors' single-tensor reference (sail-sg/Adan, adan.py), with a step count per
// parameter (the reference counts per group) and without its global max_grad_norm clipping
// (optim::clip_grad_norm does that).
class Adan final : public Rule {
 public:
  explicit Adan(const AdanConfig& c) : c_(c) {
    check(defaults());
    check_beta("Adan", "beta1", c.beta1_);
    check_beta("Adan", "beta2", c.beta2_);
    check_beta("Adan", "beta3", c.beta3_);
    check_non_negative("Adan", "eps", c.eps_);
  }
  const char* name() const override { return "Adan"; }
  std::vector<std::string> buffer_names() const override {
    return {"exp_avg", "exp_avg_sq", "exp_avg_diff", "pre_grad"};
  }
  double momentum_limit() const override { return 1; }
  GroupHyper defaults() const override { return {c_.lr_, c_.weight_decay_, c_.beta1_}; }
  DynTensor update(const DynTensor& param, const DynTensor& g, ParamState& s,
                   const GroupHyper& h) const override {
    ++s.step;
    const double beta1 = h.momentum, beta2 = c_.beta2_, beta3 = c_.beta3_;
    const double step = static_cast<double>(s.step);
    const double bias_correction1 = 1 - std::pow(beta1, step);
    const double bias_correction2 = 1 - std::pow(beta2, step);
    const double bias_correction3_sqrt = std::sqrt(1 - std::pow(beta3, step));
    DynTensor& m = buffer(s, "exp_avg", [&] { return zeros_like(param); });
    DynTensor& n = buffer(s, "exp_avg_sq", [&] { return zeros_like(param); });
    DynTensor& d = buffer(s, "exp_avg_diff", [&] { return zeros_like(param); });
    DynTensor& pre = buffer(s, "pre_grad", [&] { return clone(g); });  // no difference at first
    const DynTensor diff = sub(g, pre);
    m = add_scaled(mul(m, beta1), g, 1 - beta1);
    d = add_scaled(mul(d, beta2), diff, 1 - beta2);
    const DynTensor nesterov = add(mul(diff, beta2), g);
    n = add_scaled(mul(n, beta3), mul(nesterov, nesterov), 1 - beta3);
    const DynTensor denom = add(div(sqrt(n), bias_correction3_sqrt), c_.eps_);
    const double step_size = h.lr / bias_correction1;
    const double step_size_diff = h.lr * beta2 / bias_correction2;
    pre = clone(g);
    DynTensor p = param;
    if (c_.no_prox_) p = mul(p, 1 - h.lr * h.weight_decay);
    p = add_scaled(p, div(m, denom), -step_size);
    p = add_scaled(p, div(d, denom), -step_size_diff);
    return c_.no_prox_ ? p : div(p, 1 + h.lr * h.weight_decay);
  }

 private:
  AdanConfig c_;
};

// Muon as torch.optim.Muon (PyTorch 2.9) computes it, in the parameter's dtype.
class Muon final : public Rule {
 public:
  explicit Muon(const MuonConfig& c) : c_(c) {
    check(defaults());
    check_non_negative("Muon", "momentum", c.momentum_);
    check_non_negative("Muon", "eps", c.eps_);
    EMBER_CHECK(c.ns_steps_ >= 0 && c.ns_steps_ < 100, "[Muon] invalid ns_steps: ", c.ns_steps_,
                " (must be in [0, 100))");
  }
  const char* name() const override { return "Muon"; }
  std::vector<std::string> buffer_names() const override { return {"momentum_buffer"}; }
  GroupHyper defaults() const override { return {c_.lr_, c_.weight_decay_, c_.momentum_}; }
  void check_param(const std::string& path, const DynTensor& p) const override {
    EMBER_CHECK(p.rank() == 2, "[Muon] orthogonalises 2-D parameters only; ", path, " has shape ",
                p.shape(),
                " (give vectors, embeddings and the output layer to another optimizer, e.g. "
                "AdamW)");
  }
  DynTensor update(const DynTensor& param, const DynTensor& g, ParamState& s,
                   const GroupHyper& h) const override {
    ++s.step;
    const double momentum = h.momentum;
    DynTensor& buf = buffer(s, "momentum_buffer", [&] { return zeros_like(param); });
    buf = lerp(buf, g, 1 - momentum);
    const DynTensor update = orthogonalise(c_.nesterov_ ? lerp(g, buf, momentum) : buf);
    const double rows = static_cast<double>(param.size(0));
    const double cols = static_cast<double>(param.size(1));
    const double ratio = c_.adjust_lr_fn_ == MuonLrAdjust::original
                             ? std::sqrt(std::max(1.0, rows / cols))
                             : 0.2 * std::sqrt(std::max(rows, cols));
    const DynTensor p = mul(param, 1 - h.lr * h.weight_decay);
    return add_scaled(p, update, -h.lr * ratio);
  }

 private:
  // The quintic Newton-Schulz iteration: X <- a X + (b A + c A^2) X with A = X X^T, from X / |X|,
  // on the wide orientation (fewer rows than columns).
  DynTensor orthogonalise(const DynTensor& grad) const {
    const bool tall = grad.size(0) > grad.size(1);
    DynTensor x = tall ? transpose(grad, 0, 1) : grad;
    x = div(x, clamp_min(norm(x), c_.eps_));
    for (int i = 0; i < c_.ns_steps_; ++i) {
      const DynTensor gram = matmul(x, transpose(x, 0, 1));
      const DynTensor gram_update = add(mul(gram, c_.ns_b_), mul(matmul(gram, gram), c_.ns_c_));
      x = add(mul(x, c_.ns_a_), matmul(gram_update, x));
    }
    return tall ? transpose(x, 0, 1) : x;
  }

  MuonConfig c_;
};

template <class R, class C>
std::unique_ptr<Rule> with_maximize(std::unique_ptr<R> rule, const C& c) {
  rule->maximize = c.maximize_;
  return rule;
}

}  // namespace

std::unique_ptr<Rule> make_rule(const SgdConfig& c) {
  return with_maximize(std::make_unique<Sgd>(c), c);
}
std::unique_ptr<Rule> make_rule(const AdamConfig& c) {
  return with_maximize(std::make_unique<Adam>("Adam", c.lr_, c.beta1_, c.beta2_, c.eps_,
                                              c.weight_decay_, c.amsgrad_, false, c.fused_),
                       c);
}
std::unique_ptr<Rule> make_rule(const AdamWConfig& c) {
  return with_maximize(std::make_unique<Adam>("AdamW", c.lr_, c.beta1_, c.beta2_, c.eps_,
                                              c.weight_decay_, c.amsgrad_, true, c.fused_),
                       c);
}
#define EMBER_MAKE_RULE(Config, Class)                   \
  std::unique_ptr<Rule> make_rule(const Config& c) {     \
    return with_maximize(std::make_unique<Class>(c), c); \
  }
EMBER_MAKE_RULE(RmspropConfig, Rmsprop)
EMBER_MAKE_RULE(AdagradConfig, Adagrad)
EMBER_MAKE_RULE(LionConfig, Lion)
EMBER_MAKE_RULE(AdadeltaConfig, Adadelta)
EMBER_MAKE_RULE(AdamaxConfig, Adamax)
EMBER_MAKE_RULE(NAdamConfig, NAdam)
EMBER_MAKE_RULE(RAdamConfig, RAdam)
EMBER_MAKE_RULE(RpropConfig, Rprop)
EMBER_MAKE_RULE(AsgdConfig, Asgd)
EMBER_MAKE_RULE(AdanConfig, Adan)
EMBER_MAKE_RULE(MuonConfig, Muon)
#undef EMBER_MAKE_RULE

}  // namespace ember::optim::detail
