// One update rule per algorithm, as torch.optim's single-tensor implementations compute it (same
// order of operations, so float64 results agree to the last bits). Each rule validates its
// config when made, with PyTorch's conditions.
#include "rules.hpp"
#include "ember/tensor/ops/optim.hpp"

#include <cmath>

#include "ember/core/error.hpp"
#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"

namespace ember::optim::detail {

void Rule::check(const GroupHyper& h) const {
  EMBER_CHECK(h.lr >= 0, "[", name(), "] invalid learning rate: ", h.lr, " (must be >= 0)");
  EMBER_CHECK(h.weight_decay >= 0, "[", name(), "] invalid weight_decay: ", h.weight_decay,
              " (must be >= 0)");
}

namespace {

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
    EMBER_CHECK(c.momentum_ >= 0, "[SGD] invalid momentum: ", c.momentum_, " (must be >= 0)");
    EMBER_CHECK(!c.nesterov_ || (c.momentum_ > 0 && c.dampening_ == 0),
                "[SGD] Nesterov momentum needs a momentum > 0 and zero dampening, got momentum ",
                c.momentum_, ", dampening ", c.dampening_);
  }
  const char* name() const override { return "SGD"; }
  std::vector<std::string> buffer_names() const override { return {"momentum_buffer"}; }
  GroupHyper defaults() const override { return {c_.lr_, c_.weight_decay_, c_.momentum_}; }
  DynTensor update(const DynTensor& p, const DynTensor& grad, ParamState& s,
                   const GroupHyper& h) const override {
    DynTensor g = h.weight_decay != 0 ? add_scaled(grad, p, h.weight_decay) : grad;
    if (h.momentum != 0) {
      auto it = s.buffers.find("momentum_buffer");
      if (it == s.buffers.end()) {
        it = s.buffers.emplace("momentum_buffer", clone(g)).first;
      } else {
        it->second = add_scaled(mul(it->second, h.momentum), g, 1 - c_.dampening_);
      }
      g = c_.nesterov_ ? add_scaled(g, it->second, h.momentum) : it->second;
    }
    ++s.step;
    return add_scaled(p, g, -h.lr);
  }

 private:
  SgdConfig c_;
};

// Adam and AdamW (decoupled weight decay).
class Adam final : public Rule {
 public:
  Adam(const char* name, double lr, double beta1, double beta2, double eps, double wd, bool amsgrad,
       bool decoupled)
      : name_(name),
        lr_(lr),
        beta1_(beta1),
        beta2_(beta2),
        eps_(eps),
        wd_(wd),
        amsgrad_(amsgrad),
        decoupled_(decoupled) {
    check(defaults());
    check_beta(name_, "beta1", beta1);
    check_beta(name_, "beta2", beta2);
    EMBER_CHECK(eps >= 0, "[", name_, "] invalid eps: ", eps, " (must be >= 0)");
  }
  const char* name() const override { return name_; }
  std::vector<std::string> buffer_names() const override {
    return {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  }
  double momentum_limit() const override { return 1; }
  GroupHyper defaults() const override { return {lr_, wd_, beta1_}; }
  DynTensor update(const DynTensor& param, const DynTensor& grad, ParamState& s,
                   const GroupHyper& h) const override {
    ++s.step;
    const double beta1 = h.momentum;
    const double step = static_cast<double>(s.step);
    const double bias_correction1 = 1 - std::pow(beta1, step);
    const double bias_correction2_sqrt = std::sqrt(1 - std::pow(beta2_, step));
    DynTensor& m = buffer(s, "exp_avg", [&] { return zeros_like(param); });
    DynTensor& v = buffer(s, "exp_avg_sq", [&] { return zeros_like(param); });
    DynTensor* vmax =
        amsgrad_ ? &buffer(s, "max_exp_avg_sq", [&] { return zeros_like(param); }) : nullptr;
    // One op: the backend's fused pass where it has one, else the same 13 tensor ops.
    AdamParams fp;
    fp.lr = h.lr;
    fp.beta1 = beta1;
    fp.beta2 = beta2_;
    fp.eps = eps_;
    fp.weight_decay = h.weight_decay;
    fp.bias_correction1 = bias_correction1;
    fp.bias_correction2_sqrt = bias_correction2_sqrt;
    fp.decoupled = decoupled_;
    fp.amsgrad = amsgrad_;
    AdamTensors next = adam_step({param, m, v, vmax ? *vmax : DynTensor()}, grad, fp);
    m = next.exp_avg;
    v = next.exp_avg_sq;
    if (vmax) *vmax = next.max_exp_avg_sq;
    return next.param;
  }

 private:
  const char* name_;
  double lr_, beta1_, beta2_, eps_, wd_;
  bool amsgrad_, decoupled_;
};

class Rmsprop final : public Rule {
 public:
  explicit Rmsprop(const RmspropConfig& c) : c_(c) {
    check(defaults());
    EMBER_CHECK(c.alpha_ >= 0, "[RMSprop] invalid alpha: ", c.alpha_, " (must be >= 0)");
    EMBER_CHECK(c.eps_ >= 0, "[RMSprop] invalid eps: ", c.eps_, " (must be >= 0)");
    EMBER_CHECK(c.momentum_ >= 0, "[RMSprop] invalid momentum: ", c.momentum_, " (must be >= 0)");
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
    EMBER_CHECK(c.lr_decay_ >= 0, "[Adagrad] invalid lr_decay: ", c.lr_decay_, " (must be >= 0)");
    EMBER_CHECK(c.initial_accumulator_value_ >= 0,
                "[Adagrad] invalid initial_accumulator_value: ", c.initial_accumulator_value_,
                " (must be >= 0)");
    EMBER_CHECK(c.eps_ >= 0, "[Adagrad] invalid eps: ", c.eps_, " (must be >= 0)");
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

}  // namespace

std::unique_ptr<Rule> make_rule(const SgdConfig& c) { return std::make_unique<Sgd>(c); }
std::unique_ptr<Rule> make_rule(const AdamConfig& c) {
  return std::make_unique<Adam>("Adam", c.lr_, c.beta1_, c.beta2_, c.eps_, c.weight_decay_,
                                c.amsgrad_, false);
}
std::unique_ptr<Rule> make_rule(const AdamWConfig& c) {
  return std::make_unique<Adam>("AdamW", c.lr_, c.beta1_, c.beta2_, c.eps_, c.weight_decay_,
                                c.amsgrad_, true);
}
std::unique_ptr<Rule> make_rule(const RmspropConfig& c) { return std::make_unique<Rmsprop>(c); }
std::unique_ptr<Rule> make_rule(const AdagradConfig& c) { return std::make_unique<Adagrad>(c); }
std::unique_ptr<Rule> make_rule(const LionConfig& c) { return std::make_unique<Lion>(c); }

}  // namespace ember::optim::detail
