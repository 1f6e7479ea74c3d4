// LBFGS as torch.optim.LBFGS computes it (PyTorch's lbfgs.py, itself ported from minFunc and
// torch7's optim): the two-loop recursion over a limited history, a fixed step or a strong-Wolfe
// line search with cubic interpolation, and PyTorch's termination tests in the same order. The
// scalars PyTorch keeps as 0-d tensors (t, H_diag, ro, gtd) are doubles here.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "ember/core/error.hpp"
#include "ember/core/text.hpp"
#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/linalg.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "ember/tensor/ops/reduce.hpp"
#include "rules.hpp"
#include "state_text.hpp"

namespace ember::optim::detail {

namespace {

class Lbfgs final : public Rule {
 public:
  explicit Lbfgs(const LbfgsConfig& c) : c_(c) {
    if (!c_.max_eval_) c_.max_eval_ = c.max_iter_ * 5 / 4;
    check(defaults());
    EMBER_CHECK(c.max_iter_ >= 1, "[LBFGS] invalid max_iter: ", c.max_iter_, " (must be >= 1)");
    EMBER_CHECK(*c_.max_eval_ >= 1, "[LBFGS] invalid max_eval: ", *c_.max_eval_, " (must be >= 1)");
    EMBER_CHECK(c.history_size_ >= 1, "[LBFGS] invalid history_size: ", c.history_size_,
                " (must be >= 1)");
    EMBER_CHECK(c.tolerance_grad_ >= 0 && c.tolerance_change_ >= 0,
                "[LBFGS] invalid tolerances: tolerance_grad ", c.tolerance_grad_,
                ", tolerance_change ", c.tolerance_change_, " (must be >= 0)");
  }
  const char* name() const override { return "LBFGS"; }
  std::vector<std::string> buffer_names() const override { return {}; }
  GroupHyper defaults() const override { return {c_.lr_, 0.0, 0.0}; }
  bool has_momentum() const override { return false; }
  bool has_weight_decay() const override { return false; }
  bool needs_closure() const override { return true; }
  DynTensor update(const DynTensor&, const DynTensor&, ParamState&,
                   const GroupHyper&) const override {
    EMBER_FAIL("[LBFGS] needs a closure: opt.step(model, closure)");
  }
  const LbfgsConfig& config() const { return c_; }

 private:
  LbfgsConfig c_;
};

double scalar(const DynTensor& t) { return t.item<double>(); }
double dot_d(const DynTensor& a, const DynTensor& b) { return scalar(dot(a, b)); }
double abs_max(const DynTensor& x) { return scalar(max(abs(x))); }

// p + alpha * x (PyTorch's add_(x, alpha=...)).
DynTensor add_scaled(const DynTensor& p, const DynTensor& x, double alpha) {
  return add(p, mul(x, alpha));
}

// torch7's polyinterp for two points with values and derivatives: the minimiser of the cubic,
// clamped to the bounds (the midpoint when the cubic has none).
double cubic_interpolate(double x1, double f1, double g1, double x2, double f2, double g2,
                         std::optional<std::pair<double, double>> bounds = std::nullopt) {
  const auto [lo, hi] = bounds ? *bounds : (x1 <= x2 ? std::pair(x1, x2) : std::pair(x2, x1));
  const double d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2);
  const double d2_square = d1 * d1 - g1 * g2;
  if (d2_square >= 0) {
    const double d2 = std::sqrt(d2_square);
    const double min_pos = x1 <= x2 ? x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
                                    : x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2));
    return std::min(std::max(min_pos, lo), hi);
  }
  return (lo + hi) / 2.;
}

class Run {
 public:
  Run(const Rule& rule, const LbfgsConfig& c, const std::vector<nn::TensorSlot*>& params,
      const nn::ModuleTree& tree, const Closure& closure)
      : c_(c), params_(params), tree_(tree), closure_(closure), sign_(rule.maximize ? -1 : 1) {}

  // The loss and the flat gradient at the parameters' current values (maximize: negated).
  std::pair<double, DynTensor> evaluate(DynTensor* original = nullptr) {
    LossAndGrads r;
    {
      auto recording = enable_grad();  // the closure runs its forward and backward passes
      r = closure_();
    }
    EMBER_CHECK(r.loss.defined() && r.loss.numel() == 1,
                "[LBFGS] the closure must return the loss (one element), got ",
                r.loss.defined() ? r.loss.shape() : Shape{});
    if (original) *original = detach(r.loss);
    const ParamGrads g = ParamGrads::from(tree_, r.grads);
    std::vector<DynTensor> views;
    for (nn::TensorSlot* p : params_) {
      const DynTensor& value = p->dyn();
      const DynTensor grad = g.find(p->id());
      views.push_back(grad.defined() ? reshape(grad, Shape{value.numel()})
                                     : zeros(Shape{value.numel()}, value.dtype(), value.device()));
    }
    DynTensor flat = cat(views, 0);
    const double loss = sign_ * scalar(cast(detach(r.loss), DType::f64));
    return {loss, sign_ < 0 ? neg(flat) : flat};
  }

  // params += step * update.
  void add_grad(double step, const DynTensor& update) {
    int64_t offset = 0;
    for (nn::TensorSlot* p : params_) {
      const DynTensor value = detach(p->dyn());
      const int64_t n = value.numel();
      p->set_dyn(add_scaled(value, reshape(narrow(update, 0, offset, n), value.shape()), step));
      offset += n;
    }
  }

  std::vector<DynTensor> clone_params() const {
    std::vector<DynTensor> out;
    for (nn::TensorSlot* p : params_) out.push_back(detach(p->dyn()));
    return out;
  }
  void set_params(const std::vector<DynTensor>& values) {
    for (size_t i = 0; i < params_.size(); ++i) params_[i]->set_dyn(values[i]);
  }

  std::pair<double, DynTensor> directional_evaluate(const std::vector<DynTensor>& x, double t,
                                                    const DynTensor& d) {
    add_grad(t, d);
    auto out = evaluate();
    set_params(x);
    return out;
  }

  struct LineSearchResult {
    double loss;
    DynTensor flat_grad;
    double t;
    int evals;
  };

  // PyTorch's _strong_wolfe (c1 1e-4, c2 0.9, at most 25 evaluations).
  LineSearchResult strong_wolfe(const std::vector<DynTensor>& x, double t, const DynTensor& d,
                                double f, const DynTensor& g, double gtd) {
    constexpr double c1 = 1e-4, c2 = 0.9;
    constexpr int max_ls = 25;
    const double d_norm = abs_max(d);
    auto [f_new, g_new] = directional_evaluate(x, t, d);
    int evals = 1;
    double gtd_new = dot_d(g_new, d);
    double t_prev = 0, f_prev = f, gtd_prev = gtd;
    DynTensor g_prev = g;
    bool done = false;
    int ls_iter = 0;
    std::vector<double> bracket, bracket_f, bracket_gtd;
    std::vector<DynTensor> bracket_g;
    while (ls_iter < max_ls) {
      if (f_new > (f + c1 * t * gtd) || (ls_iter > 1 && f_new >= f_prev)) {
        bracket = {t_prev, t};
        bracket_f = {f_prev, f_new};
        bracket_g = {g_prev, g_new};
        bracket_gtd = {gtd_prev, gtd_new};
        break;
      }
      if (std::abs(gtd_new) <= -c2 * gtd) {
        bracket = {t};
        bracket_f = {f_new};
        bracket_g = {g_new};
        done = true;
        break;
      }
      if (gtd_new >= 0) {
        bracket = {t_prev, t};
        bracket_f = {f_prev, f_new};
        bracket_g = {g_prev, g_new};
        bracket_gtd = {gtd_prev, gtd_new};
        break;
      }
      const double min_step = t + 0.01 * (t - t_prev);
      const double max_step = t * 10;
      const double tmp = t;
      t = cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                            std::pair(min_step, max_step));
      t_prev = tmp;
      f_prev = f_new;
      g_prev = g_new;
      gtd_prev = gtd_new;
      std::tie(f_new, g_new) = directional_evaluate(x, t, d);
      ++evals;
      gtd_new = dot_d(g_new, d);
      ++ls_iter;
    }
    if (ls_iter == max_ls) {
      bracket = {0, t};
      bracket_f = {f, f_new};
      bracket_g = {g, g_new};
    }
    // Zoom: shrink the bracket until a point satisfies the strong Wolfe conditions.
    bool insuf_progress = false;
    size_t low = bracket_f.front() <= bracket_f.back() ? 0 : 1, high = 1 - low;
    while (!done && ls_iter < max_ls) {
      if (std::abs(bracket[1] - bracket[0]) * d_norm < c_.tolerance_change_) break;
      t = cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1],
                            bracket_gtd[1]);
      const double bmax = std::max(bracket[0], bracket[1]);
      const double bmin = std::min(bracket[0], bracket[1]);
      const double eps = 0.1 * (bmax - bmin);
      if (std::min(bmax - t, t - bmin) < eps) {
        if (insuf_progress || t >= bmax || t <= bmin) {
          t = std::abs(t - bmax) < std::abs(t - bmin) ? bmax - eps : bmin + eps;
          insuf_progress = false;
        } else {
          insuf_progress = true;
        }
      } else {
        insuf_progress = false;
      }
      std::tie(f_new, g_new) = directional_evaluate(x, t, d);
      ++evals;
      gtd_new = dot_d(g_new, d);
      ++ls_iter;
      if (f_new > (f + c1 * t * gtd) || f_new >= bracket_f[low]) {
        bracket[high] = t;
        bracket_f[high] = f_new;
        bracket_g[high] = g_new;
        bracket_gtd[high] = gtd_new;
        low = bracket_f[0] <= bracket_f[1] ? 0 : 1;
        high = 1 - low;
      } else {
        if (std::abs(gtd_new) <= -c2 * gtd) {
          done = true;
        } else if (gtd_new * (bracket[high] - bracket[low]) >= 0) {
          bracket[high] = bracket[low];
          bracket_f[high] = bracket_f[low];
          bracket_g[high] = bracket_g[low];
          bracket_gtd[high] = bracket_gtd[low];
        }
        bracket[low] = t;
        bracket_f[low] = f_new;
        bracket_g[low] = g_new;
        bracket_gtd[low] = gtd_new;
      }
    }
    return {bracket_f[low], bracket_g[low], bracket[low], evals};
  }

 private:
  const LbfgsConfig& c_;
  const std::vector<nn::TensorSlot*>& params_;
  const nn::ModuleTree& tree_;
  const Closure& closure_;
  double sign_;
};

}  // namespace

void save_lbfgs(const LbfgsState& s, OptimizerState& out) {
  auto& meta = out.metadata;
  meta["lbfgs/func_evals"] = std::to_string(s.func_evals);
  meta["lbfgs/n_iter"] = std::to_string(s.n_iter);
  if (!s.d.defined()) return;  // no iteration yet: nothing else exists
  meta["lbfgs/t"] = format_double(s.t);
  meta["lbfgs/h_diag"] = format_double(s.h_diag);
  meta["lbfgs/prev_loss"] = format_double(s.prev_loss);
  meta["lbfgs/history"] = std::to_string(s.old_dirs.size());
  std::string ro;
  for (double v : s.ro) {
    if (!ro.empty()) ro += ',';
    ro += format_double(v);
  }
  meta["lbfgs/ro"] = ro;
  out.tensors.emplace_back("lbfgs/d", s.d);
  out.tensors.emplace_back("lbfgs/prev_flat_grad", s.prev_flat_grad);
  for (size_t i = 0; i < s.old_dirs.size(); ++i) {
    out.tensors.emplace_back("lbfgs/old_dirs/" + std::to_string(i), s.old_dirs[i]);
    out.tensors.emplace_back("lbfgs/old_stps/" + std::to_string(i), s.old_stps[i]);
  }
}

LbfgsState load_lbfgs(const OptimizerState& saved, const char* who, int64_t numel,
                      const DynTensor& like) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const auto& meta = saved.metadata;
  LbfgsState s;
  s.func_evals = state_int(meta, "lbfgs/func_evals", who, 0, kMaxCount);
  s.n_iter = state_int(meta, "lbfgs/n_iter", who, 0, kMaxCount);
  std::map<std::string, DynTensor> tensors;
  for (const auto& [key, t] : saved.tensors) {
    EMBER_CHECK(key.starts_with("lbfgs/"), "[", who, "] the saved state has tensor \"",
                ember::detail::shown(key, 80), "\"; LBFGS keeps only lbfgs/... tensors");
    EMBER_CHECK(t.shape() == Shape{numel}, "[", who, "] the saved ", ember::detail::shown(key, 80),
                " has shape ", t.shape(), ", not [", numel,
                "] (the number of trainable parameter elements)");
    tensors[key] = clone(cast(to_device(t, like.device()), like.dtype()));
  }
  auto tensor = [&](const std::string& key) {
    auto it = tensors.find(key);
    EMBER_CHECK(it != tensors.end(), "[", who, "] the saved state has no tensor \"", key, "\"");
    return it->second;
  };
  if (!meta.count("lbfgs/t")) {
    EMBER_CHECK(tensors.empty() && s.n_iter == 0, "[", who,
                "] the saved state has LBFGS iterations or tensors but no \"lbfgs/t\"");
    return s;
  }
  s.t = state_double(meta, "lbfgs/t", who, -kInf, kInf);
  s.h_diag = state_double(meta, "lbfgs/h_diag", who, -kInf, kInf);
  s.prev_loss = state_double(meta, "lbfgs/prev_loss", who, -kInf, kInf);
  const int64_t history = state_int(meta, "lbfgs/history", who, 0, 1 << 20);
  s.ro = state_doubles(meta, "lbfgs/ro", who, static_cast<size_t>(history), -kInf, kInf);
  s.d = tensor("lbfgs/d");
  s.prev_flat_grad = tensor("lbfgs/prev_flat_grad");
  for (int64_t i = 0; i < history; ++i) {
    s.old_dirs.push_back(tensor("lbfgs/old_dirs/" + std::to_string(i)));
    s.old_stps.push_back(tensor("lbfgs/old_stps/" + std::to_string(i)));
  }
  EMBER_CHECK(tensors.size() == 2 + 2 * static_cast<size_t>(history), "[", who,
              "] the saved state has ", tensors.size(), " LBFGS tensors, expected ",
              2 + 2 * history, " for a history of ", history);
  return s;
}

std::unique_ptr<Rule> make_rule(const LbfgsConfig& c) {
  auto rule = std::make_unique<Lbfgs>(c);
  rule->maximize = c.maximize_;
  return rule;
}

DynTensor lbfgs_step(const Rule& rule, double lr, LbfgsState& state,
                     const std::vector<nn::TensorSlot*>& params, const nn::ModuleTree& tree,
                     const Closure& closure) {
  const LbfgsConfig& c = dynamic_cast<const Lbfgs&>(rule).config();
  EMBER_CHECK(!params.empty(), "[LBFGS] the module has no trainable parameter");
  Run run(rule, c, params, tree, closure);
  const int max_iter = c.max_iter_, max_eval = *c.max_eval_;
  const double tolerance_grad = c.tolerance_grad_, tolerance_change = c.tolerance_change_;

  auto guard = no_grad();  // as PyTorch: only the closure records
  DynTensor orig_loss;
  auto [loss, flat_grad] = run.evaluate(&orig_loss);
  int current_evals = 1;
  ++state.func_evals;
  bool opt_cond = abs_max(flat_grad) <= tolerance_grad;
  if (opt_cond) return orig_loss;

  int n_iter = 0;
  while (n_iter < max_iter) {
    ++n_iter;
    ++state.n_iter;
    // The descent direction: the gradient's opposite at first, then the two-loop recursion.
    if (state.n_iter == 1) {
      state.d = neg(flat_grad);
      state.old_dirs.clear();
      state.old_stps.clear();
      state.ro.clear();
      state.h_diag = 1;
    } else {
      const DynTensor y = sub(flat_grad, state.prev_flat_grad);
      const DynTensor s = mul(state.d, state.t);
      const double ys = dot_d(y, s);
      if (ys > 1e-10) {
        if (static_cast<int>(state.old_dirs.size()) == c.history_size_) {
          state.old_dirs.erase(state.old_dirs.begin());
          state.old_stps.erase(state.old_stps.begin());
          state.ro.erase(state.ro.begin());
        }
        state.old_dirs.push_back(y);
        state.old_stps.push_back(s);
        state.ro.push_back(1. / ys);
        state.h_diag = ys / dot_d(y, y);
      }
      const size_t num_old = state.old_dirs.size();
      std::vector<double> al(num_old);
      DynTensor q = neg(flat_grad);
      for (size_t i = num_old; i-- > 0;) {
        al[i] = dot_d(state.old_stps[i], q) * state.ro[i];
        q = add_scaled(q, state.old_dirs[i], -al[i]);
      }
      DynTensor r = mul(q, state.h_diag);
      for (size_t i = 0; i < num_old; ++i) {
        const double be_i = dot_d(state.old_dirs[i], r) * state.ro[i];
        r = add_scaled(r, state.old_stps[i], al[i] - be_i);
      }
      state.d = r;
    }
    state.prev_flat_grad = flat_grad;
    state.prev_loss = loss;

    // The step length: lr, scaled down at the very first iteration.
    state.t = state.n_iter == 1 ? std::min(1., 1. / scalar(sum(abs(flat_grad)))) * lr : lr;
    const double gtd = dot_d(flat_grad, state.d);
    if (gtd > -tolerance_change) break;  // the directional derivative is below tolerance

    int ls_func_evals = 0;
    if (c.line_search_fn_ == LineSearch::strong_wolfe) {
      const std::vector<DynTensor> x_init = run.clone_params();
      auto ls = run.strong_wolfe(x_init, state.t, state.d, loss, flat_grad, gtd);
      loss = ls.loss;
      flat_grad = ls.flat_grad;
      state.t = ls.t;
      ls_func_evals = ls.evals;
      run.add_grad(state.t, state.d);
      opt_cond = abs_max(flat_grad) <= tolerance_grad;
    } else {
      run.add_grad(state.t, state.d);
      if (n_iter != max_iter) {
        // Re-evaluated except after the last iteration (no use in a stochastic setting).
        std::tie(loss, flat_grad) = run.evaluate();
        opt_cond = abs_max(flat_grad) <= tolerance_grad;
        ls_func_evals = 1;
      }
    }
    current_evals += ls_func_evals;
    state.func_evals += ls_func_evals;

    if (n_iter == max_iter) break;
    if (current_evals >= max_eval) break;
    if (opt_cond) break;
    if (abs_max(mul(state.d, state.t)) <= tolerance_change) break;  // lack of progress
    if (std::abs(loss - state.prev_loss) < tolerance_change) break;
  }
  return orig_loss;
}

}  // namespace ember::optim::detail
