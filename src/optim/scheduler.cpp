// Learning-rate schedules, computed as torch.optim.lr_scheduler computes them: the recursive
// ("chainable") form at each step, the closed form where SequentialLR restarts a schedule.
#include "ember/optim/scheduler.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <numbers>

#include "ember/core/error.hpp"
#include "ember/core/text.hpp"
#include "ember/optim/optimizer.hpp"
#include "state_text.hpp"

namespace ember::optim {

namespace {

constexpr double kPi = std::numbers::pi;

std::string join(const std::vector<double>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ',';
    out += detail::format_double(v[i]);
  }
  return out;
}

using detail::kMaxCount;
constexpr double kInf = std::numeric_limits<double>::infinity();

// The state of a child schedule, under a prefix.
void put_child(std::map<std::string, std::string>& out, const std::string& prefix,
               const std::map<std::string, std::string>& child) {
  for (const auto& [k, v] : child) out[prefix + k] = v;
}

std::map<std::string, std::string> get_child(const std::map<std::string, std::string>& state,
                                             const std::string& prefix) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : state) {
    if (k.rfind(prefix, 0) == 0) out[k.substr(prefix.size())] = v;
  }
  return out;
}

}  // namespace

// ---- LrScheduler ----

LrScheduler::LrScheduler(Optimizer& optimizer, bool record_initial_lr)
    : optimizer_(std::make_shared<Optimizer>(optimizer.share())) {
  for (int g = 0; g < optimizer.num_groups(); ++g) {
    if (record_initial_lr && !optimizer.initial_lr(g)) optimizer.set_initial_lr(optimizer.lr(g), g);
    base_lrs_.push_back(optimizer.initial_lr(g).value_or(optimizer.lr(g)));
  }
}

bool LrScheduler::same_optimizer(const LrScheduler& s, const Optimizer& opt) {
  return s.optimizer_->impl_ == opt.impl_;
}

void LrScheduler::initial_step() {
  step_count_ = 0;
  is_initial_ = true;
  step();
  is_initial_ = false;
}

void LrScheduler::step() {
  ++step_count_;
  update_lr();
}

void LrScheduler::step(double metric) {
  EMBER_FAIL("[", name(), "] step(metric) is for ReduceLROnPlateau; call step() (metric ", metric,
             ")");
}

void LrScheduler::update_lr(const int64_t* epoch) {
  std::vector<double> values;
  if (!epoch) {
    ++last_epoch_;
    values = get_lr();
  } else {
    last_epoch_ = *epoch;
    values = has_closed_form() ? closed_form() : get_lr();
  }
  set_lrs(values);
  last_lr_ = current_lrs();
}

std::vector<double> LrScheduler::current_lrs() const {
  std::vector<double> out;
  for (int g = 0; g < optimizer_->num_groups(); ++g) out.push_back(optimizer_->lr(g));
  return out;
}

void LrScheduler::set_lrs(const std::vector<double>& lrs) {
  EMBER_CHECK(static_cast<int>(lrs.size()) == optimizer_->num_groups(), "[", name(), "] has ",
              lrs.size(), " learning rates for ", optimizer_->num_groups(),
              " parameter groups (groups added after the schedule was made?)");
  for (size_t g = 0; g < lrs.size(); ++g) optimizer_->set_scheduled_lr(lrs[g], static_cast<int>(g));
}

std::map<std::string, std::string> LrScheduler::state() const {
  return {{"scheduler", name()},
          {"last_epoch", std::to_string(last_epoch_)},
          {"step_count", std::to_string(step_count_)},
          {"base_lrs", join(base_lrs_)},
          {"last_lr", join(last_lr_)}};
}

void LrScheduler::load_state(const std::map<std::string, std::string>& state) {
  // Everything is parsed and checked before anything changes. last_epoch may be negative: a
  // SequentialLR's schedules that have not started yet hold -1.
  const std::string kind = detail::state_text(state, "scheduler", name());
  EMBER_CHECK(kind == name(), "[", name(), "] the saved state is of schedule \"",
              ember::detail::shown(kind), "\"");
  const size_t groups = static_cast<size_t>(optimizer_->num_groups());
  const int64_t last_epoch = detail::state_int(state, "last_epoch", name(), -kMaxCount, kMaxCount);
  const int64_t step_count = detail::state_int(state, "step_count", name(), 0, kMaxCount);
  std::vector<double> base_lrs =
      detail::state_doubles(state, "base_lrs", name(), groups, -kInf, kInf);
  std::vector<double> last_lr =
      detail::state_doubles(state, "last_lr", name(), groups, -kInf, kInf);
  last_epoch_ = last_epoch;
  step_count_ = step_count;
  base_lrs_ = std::move(base_lrs);
  last_lr_ = std::move(last_lr);
}

LrScheduler& Scheduler::get() const {
  EMBER_CHECK(impl_ != nullptr, "[Scheduler] empty (default-constructed)");
  return *impl_;
}

// ---- the schedules ----

ConstantLR::ConstantLR(Optimizer& opt, double factor, int64_t total_iters)
    : LrScheduler(opt), factor_(factor), total_iters_(total_iters) {
  EMBER_CHECK(factor >= 0 && factor <= 1, "[ConstantLR] factor must be in [0, 1], got ", factor);
  initial_step();
}

std::vector<double> ConstantLR::get_lr() {
  std::vector<double> lrs = current_lrs();
  if (last_epoch_ == 0) {
    for (double& lr : lrs) lr *= factor_;
  } else if (last_epoch_ == total_iters_) {
    for (double& lr : lrs) lr *= 1.0 / factor_;
  }
  return lrs;
}

std::vector<double> ConstantLR::closed_form() {
  std::vector<double> lrs;
  const double on = last_epoch_ >= total_iters_ ? 1.0 : 0.0;
  for (double base : base_lrs_) lrs.push_back(base * (factor_ + on * (1 - factor_)));
  return lrs;
}

StepLR::StepLR(Optimizer& opt, int64_t step_size, double gamma)
    : LrScheduler(opt), step_size_(step_size), gamma_(gamma) {
  EMBER_CHECK(step_size > 0, "[StepLR] step_size must be positive, got ", step_size);
  initial_step();
}

std::vector<double> StepLR::get_lr() {
  std::vector<double> lrs = current_lrs();
  if (last_epoch_ != 0 && last_epoch_ % step_size_ == 0) {
    for (double& lr : lrs) lr *= gamma_;
  }
  return lrs;
}

std::vector<double> StepLR::closed_form() {
  std::vector<double> lrs;
  const int64_t k = last_epoch_ >= 0 ? last_epoch_ / step_size_ : -1;  // Python's floor division
  for (double base : base_lrs_) lrs.push_back(base * std::pow(gamma_, static_cast<double>(k)));
  return lrs;
}

MultiStepLR::MultiStepLR(Optimizer& opt, std::vector<int64_t> milestones, double gamma)
    : LrScheduler(opt), milestones_(std::move(milestones)), gamma_(gamma) {
  std::sort(milestones_.begin(), milestones_.end());
  initial_step();
}

std::vector<double> MultiStepLR::get_lr() {
  std::vector<double> lrs = current_lrs();
  const auto n = std::count(milestones_.begin(), milestones_.end(), last_epoch_);
  if (n > 0) {
    for (double& lr : lrs) lr *= std::pow(gamma_, static_cast<double>(n));
  }
  return lrs;
}

std::vector<double> MultiStepLR::closed_form() {
  const auto n =
      std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin();
  std::vector<double> lrs;
  for (double base : base_lrs_) lrs.push_back(base * std::pow(gamma_, static_cast<double>(n)));
  return lrs;
}

ExponentialLR::ExponentialLR(Optimizer& opt, double gamma) : LrScheduler(opt), gamma_(gamma) {
  initial_step();
}

std::vector<double> ExponentialLR::get_lr() {
  std::vector<double> lrs = current_lrs();
  if (!is_initial_) {
    for (double& lr : lrs) lr *= gamma_;
  }
  return lrs;
}

std::vector<double> ExponentialLR::closed_form() {
  std::vector<double> lrs;
  for (double base : base_lrs_) {
    lrs.push_back(base * std::pow(gamma_, static_cast<double>(last_epoch_)));
  }
  return lrs;
}

LinearLR::LinearLR(Optimizer& opt, double start_factor, double end_factor, int64_t total_iters)
    : LrScheduler(opt), start_(start_factor), end_(end_factor), total_iters_(total_iters) {
  EMBER_CHECK(start_factor > 0 && start_factor <= 1,
              "[LinearLR] start_factor must be in (0, 1], got ", start_factor);
  EMBER_CHECK(end_factor >= 0 && end_factor <= 1, "[LinearLR] end_factor must be in [0, 1], got ",
              end_factor);
  EMBER_CHECK(total_iters > 0, "[LinearLR] total_iters must be positive, got ", total_iters);
  initial_step();
}

std::vector<double> LinearLR::get_lr() {
  std::vector<double> lrs = current_lrs();
  if (last_epoch_ == 0) {
    for (double& lr : lrs) lr *= start_;
  } else if (!is_initial_ && last_epoch_ <= total_iters_) {
    const double f =
        1.0 + (end_ - start_) / (static_cast<double>(total_iters_) * start_ +
                                 static_cast<double>(last_epoch_ - 1) * (end_ - start_));
    for (double& lr : lrs) lr *= f;
  }
  return lrs;
}

std::vector<double> LinearLR::closed_form() {
  std::vector<double> lrs;
  const double t = static_cast<double>(std::min(total_iters_, last_epoch_));
  for (double base : base_lrs_) {
    lrs.push_back(base * (start_ + (end_ - start_) * t / static_cast<double>(total_iters_)));
  }
  return lrs;
}

PolynomialLR::PolynomialLR(Optimizer& opt, int64_t total_iters, double power)
    : LrScheduler(opt), total_iters_(total_iters), power_(power) {
  EMBER_CHECK(total_iters > 0, "[PolynomialLR] total_iters must be positive, got ", total_iters);
  initial_step();
}

std::vector<double> PolynomialLR::get_lr() {
  std::vector<double> lrs = current_lrs();
  if (is_initial_ || last_epoch_ > total_iters_) return lrs;
  const double t = static_cast<double>(last_epoch_), n = static_cast<double>(total_iters_);
  const double decay = std::pow((1.0 - t / n) / (1.0 - (t - 1) / n), power_);
  for (double& lr : lrs) lr *= decay;
  return lrs;
}

std::vector<double> PolynomialLR::closed_form() {
  std::vector<double> lrs;
  const double t = static_cast<double>(std::min(total_iters_, last_epoch_));
  for (double base : base_lrs_) {
    lrs.push_back(base * std::pow(1.0 - t / static_cast<double>(total_iters_), power_));
  }
  return lrs;
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& opt, int64_t t_max, double eta_min)
    : LrScheduler(opt), t_max_(t_max), eta_min_(eta_min) {
  EMBER_CHECK(t_max > 0, "[CosineAnnealingLR] t_max must be positive, got ", t_max);
  initial_step();
}

std::vector<double> CosineAnnealingLR::get_lr() {
  std::vector<double> lrs = current_lrs();
  if (is_initial_) return lrs;
  const double e = static_cast<double>(last_epoch_), t = static_cast<double>(t_max_);
  for (size_t g = 0; g < lrs.size(); ++g) {
    const double base = base_lrs_[g];
    if (step_count_ == 1 && last_epoch_ > 0) {
      lrs[g] = eta_min_ + (base - eta_min_) * (1 + std::cos(e * kPi / t)) / 2;
    } else if ((last_epoch_ - 1 - t_max_) % (2 * t_max_) == 0) {
      lrs[g] = lrs[g] + (base - eta_min_) * (1 - std::cos(kPi / t)) / 2;
    } else {
      lrs[g] =
          (1 + std::cos(kPi * e / t)) / (1 + std::cos(kPi * (e - 1) / t)) * (lrs[g] - eta_min_) +
          eta_min_;
    }
  }
  return lrs;
}

std::vector<double> CosineAnnealingLR::closed_form() {
  std::vector<double> lrs;
  const double e = static_cast<double>(last_epoch_), t = static_cast<double>(t_max_);
  for (double base : base_lrs_) {
    lrs.push_back(eta_min_ + (base - eta_min_) * (1 + std::cos(kPi * e / t)) / 2);
  }
  return lrs;
}

CosineAnnealingWarmRestarts::CosineAnnealingWarmRestarts(Optimizer& opt, int64_t t_0,
                                                         int64_t t_mult, double eta_min)
    : LrScheduler(opt), t_0_(t_0), t_i_(t_0), t_mult_(t_mult), eta_min_(eta_min) {
  EMBER_CHECK(t_0 > 0, "[CosineAnnealingWarmRestarts] t_0 must be positive, got ", t_0);
  EMBER_CHECK(t_mult >= 1, "[CosineAnnealingWarmRestarts] t_mult must be >= 1, got ", t_mult);
  initial_step();
}

void CosineAnnealingWarmRestarts::step() {
  if (last_epoch_ < 0) {
    t_i_ = t_0_;
    t_cur_ = 0;
    last_epoch_ = 0;
  } else {
    ++last_epoch_;
    if (++t_cur_ >= t_i_) {
      t_cur_ %= t_i_;
      t_i_ *= t_mult_;
    }
  }
  set_lrs(get_lr());
  last_lr_ = current_lrs();
}

std::vector<double> CosineAnnealingWarmRestarts::get_lr() {
  std::vector<double> lrs;
  const double c = std::cos(kPi * static_cast<double>(t_cur_) / static_cast<double>(t_i_));
  for (double base : base_lrs_) lrs.push_back(eta_min_ + (base - eta_min_) * (1 + c) / 2);
  return lrs;
}

std::map<std::string, std::string> CosineAnnealingWarmRestarts::state() const {
  auto s = LrScheduler::state();
  s["t_i"] = std::to_string(t_i_);
  s["t_cur"] = std::to_string(t_cur_);
  return s;
}

void CosineAnnealingWarmRestarts::load_state(const std::map<std::string, std::string>& state) {
  const int64_t t_i =
      detail::state_int(state, "t_i", name(), 1, std::numeric_limits<int64_t>::max());
  const int64_t t_cur = detail::state_int(state, "t_cur", name(), 0, t_i - 1);
  LrScheduler::load_state(state);
  t_i_ = t_i;
  t_cur_ = t_cur;
}

OneCycleConfig& OneCycleConfig::anneal_strategy(const std::string& s) {
  EMBER_CHECK(s == "cos" || s == "linear",
              "[OneCycleLR] anneal_strategy must be \"cos\" or \"linear\", got \"", s, "\"");
  cos_ = s == "cos";
  return *this;
}

namespace {

// OneCycleLR records its lrs before the base constructor reads them.
Optimizer& one_cycle_setup(Optimizer& opt, const OneCycleConfig& c) {
  EMBER_CHECK(c.total_steps_ > 0, "[OneCycleLR] total_steps must be positive, got ",
              c.total_steps_);
  EMBER_CHECK(c.pct_start_ >= 0 && c.pct_start_ <= 1,
              "[OneCycleLR] pct_start must be in [0, 1], got ", c.pct_start_);
  const size_t groups = static_cast<size_t>(opt.num_groups());
  EMBER_CHECK(c.max_lr_.size() == 1 || c.max_lr_.size() == groups, "[OneCycleLR] expected ", groups,
              " max_lr values (one per parameter group) or one, got ", c.max_lr_.size());
  EMBER_CHECK(!c.cycle_momentum_ || opt.has_momentum(), "[OneCycleLR] ", opt.name(),
              " has no momentum or beta1 to cycle: use cycle_momentum(false)");
  for (size_t g = 0; g < groups; ++g) {
    const double max_lr = c.max_lr_.size() == 1 ? c.max_lr_[0] : c.max_lr_[g];
    opt.set_initial_lr(max_lr / c.div_factor_, static_cast<int>(g));
    if (c.cycle_momentum_) opt.set_momentum(c.max_momentum_, static_cast<int>(g));
  }
  return opt;
}

}  // namespace

OneCycleLR::OneCycleLR(Optimizer& opt, const OneCycleConfig& c)
    : LrScheduler(one_cycle_setup(opt, c)), config_(c) {
  const double total = static_cast<double>(c.total_steps_);
  if (c.three_phase_) {
    phases_ = {{c.pct_start_ * total - 1, 0, 1, 0, 1},
               {2 * c.pct_start_ * total - 2, 1, 0, 1, 0},
               {total - 1, 0, 2, 0, 0}};
  } else {
    phases_ = {{c.pct_start_ * total - 1, 0, 1, 0, 1}, {total - 1, 1, 2, 1, 0}};
  }
  for (size_t g = 0; g < base_lrs_.size(); ++g) {
    const double max_lr = c.max_lr_.size() == 1 ? c.max_lr_[0] : c.max_lr_[g];
    const double initial = *opt.initial_lr(static_cast<int>(g));
    group_lrs_.push_back({initial, max_lr, initial / c.final_div_factor_});
  }
  initial_step();
}

double OneCycleLR::anneal(double start, double end, double pct) const {
  if (config_.cos_) return end + (start - end) / 2.0 * (std::cos(kPi * pct) + 1);
  return (end - start) * pct + start;
}

std::vector<double> OneCycleLR::get_lr() {
  EMBER_CHECK(last_epoch_ <= config_.total_steps_, "[OneCycleLR] stepped ", last_epoch_,
              " times, more than total_steps ", config_.total_steps_);
  const double step = static_cast<double>(last_epoch_);
  const double momenta[2] = {config_.max_momentum_, config_.base_momentum_};
  std::vector<double> lrs;
  for (size_t g = 0; g < group_lrs_.size(); ++g) {
    double start_step = 0.0;
    for (size_t i = 0; i < phases_.size(); ++i) {
      const Phase& ph = phases_[i];
      if (step <= ph.end_step || i + 1 == phases_.size()) {
        const double pct = (step - start_step) / (ph.end_step - start_step);
        lrs.push_back(anneal(group_lrs_[g][static_cast<size_t>(ph.start_lr)],
                             group_lrs_[g][static_cast<size_t>(ph.end_lr)], pct));
        if (config_.cycle_momentum_) {
          optimizer_->set_momentum(
              anneal(momenta[ph.start_momentum], momenta[ph.end_momentum], pct),
              static_cast<int>(g));
        }
        break;
      }
      start_step = ph.end_step;
    }
  }
  return lrs;
}

LambdaLR::LambdaLR(Optimizer& opt, std::function<double(int64_t)> fn)
    : LrScheduler(opt), fn_(std::move(fn)) {
  EMBER_CHECK(fn_ != nullptr, "[LambdaLR] the function is empty");
  initial_step();
}

std::vector<double> LambdaLR::get_lr() {
  std::vector<double> lrs;
  for (double base : base_lrs_) lrs.push_back(base * fn_(last_epoch_));
  return lrs;
}

namespace {

std::function<double(int64_t)> noam(int64_t d_model, int64_t warmup, double factor) {
  EMBER_CHECK(d_model > 0 && warmup > 0, "[NoamLR] d_model and warmup_steps must be positive, got ",
              d_model, " and ", warmup);
  return [=](int64_t epoch) {
    const double s = static_cast<double>(std::max<int64_t>(epoch, 1));
    return factor * (std::pow(static_cast<double>(d_model), -0.5) *
                     std::min(std::pow(s, -0.5), s * std::pow(static_cast<double>(warmup), -1.5)));
  };
}

}  // namespace

NoamLR::NoamLR(Optimizer& opt, int64_t d_model, int64_t warmup_steps, double factor)
    : LambdaLR(opt, noam(d_model, warmup_steps, factor)) {}

// ---- composites ----

namespace {

void check_children(const char* who, const std::vector<Scheduler>& children) {
  EMBER_CHECK(!children.empty(), "[", who, "] needs at least one schedule");
  for (size_t i = 0; i < children.size(); ++i) {
    EMBER_CHECK(children[i].defined(), "[", who, "] schedule ", i, " is empty");
    EMBER_CHECK(std::string(children[i]->name()) != "ReduceLROnPlateau", "[", who,
                "] cannot hold ReduceLROnPlateau (schedule ", i, "): it steps with a metric");
  }
}

// Loads a schedule that holds others, all or nothing: a child's bad state puts back what every
// schedule held before. A child's error says which child (its keys start with "<i>.").
void load_children(LrScheduler& self, std::vector<Scheduler>& children,
                   const std::map<std::string, std::string>& state) {
  const auto before = self.state();
  size_t i = 0;
  try {
    self.LrScheduler::load_state(state);
    for (; i < children.size(); ++i) {
      children[i]->load_state(get_child(state, std::to_string(i) + "."));
    }
  } catch (const Error& e) {
    self.LrScheduler::load_state(before);
    for (size_t k = 0; k < children.size(); ++k) {
      children[k]->load_state(get_child(before, std::to_string(k) + "."));
    }
    if (i == children.size()) throw;
    EMBER_FAIL("[", self.name(), "] schedule ", i, " (keys \"", i, ".*\"): ", e.what());
  }
}

}  // namespace

SequentialLR::SequentialLR(Optimizer& opt, std::vector<Scheduler> schedulers,
                           std::vector<int64_t> milestones)
    : LrScheduler(opt), schedulers_(std::move(schedulers)), milestones_(std::move(milestones)) {
  check_children("SequentialLR", schedulers_);
  EMBER_CHECK(milestones_.size() + 1 == schedulers_.size(),
              "[SequentialLR] expects one milestone "
              "fewer than schedules, got ",
              schedulers_.size(), " schedules and ", milestones_.size(), " milestones");
  for (const Scheduler& s : schedulers_) {
    EMBER_CHECK(same_optimizer(s.get(), opt), "[SequentialLR] schedule ", s->name(),
                " belongs to another optimizer");
  }
  last_epoch_ = 0;
  // Back to the initial lrs, undo the step each schedule took when made, and start the one
  // that runs at step 0.
  for (int g = 0; g < opt.num_groups(); ++g) opt.set_lr(*opt.initial_lr(g), g);
  undo_epoch();
  const auto idx =
      std::upper_bound(milestones_.begin(), milestones_.end(), 0) - milestones_.begin();
  schedulers_[static_cast<size_t>(idx)]->initial_step();
  last_lr_ = schedulers_[static_cast<size_t>(idx)]->last_lr();
}

void SequentialLR::undo_epoch() {
  for (Scheduler& s : schedulers_) s->undo_epoch();
}

void SequentialLR::step() {
  ++last_epoch_;
  const auto idx =
      std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin();
  LrScheduler& s = *schedulers_[static_cast<size_t>(idx)].operator->();
  if (idx > 0 && milestones_[static_cast<size_t>(idx - 1)] == last_epoch_) {
    const int64_t zero = 0;
    s.update_lr(&zero);
  } else {
    s.step();
  }
  last_lr_ = s.last_lr();
}

std::map<std::string, std::string> SequentialLR::state() const {
  auto out = LrScheduler::state();
  for (size_t i = 0; i < schedulers_.size(); ++i) {
    put_child(out, std::to_string(i) + ".", schedulers_[i]->state());
  }
  return out;
}

void SequentialLR::load_state(const std::map<std::string, std::string>& state) {
  load_children(*this, schedulers_, state);
}

ChainedScheduler::ChainedScheduler(Optimizer& opt, std::vector<Scheduler> schedulers)
    : LrScheduler(opt), schedulers_(std::move(schedulers)) {
  check_children("ChainedScheduler", schedulers_);
  for (const Scheduler& s : schedulers_) {
    EMBER_CHECK(same_optimizer(s.get(), opt), "[ChainedScheduler] schedule ", s->name(),
                " belongs to another optimizer");
  }
  last_lr_ = current_lrs();
}

void ChainedScheduler::undo_epoch() {
  for (Scheduler& s : schedulers_) s->undo_epoch();
}

void ChainedScheduler::step() {
  for (Scheduler& s : schedulers_) s.step();
  last_lr_ = current_lrs();
}

std::map<std::string, std::string> ChainedScheduler::state() const {
  auto out = LrScheduler::state();
  for (size_t i = 0; i < schedulers_.size(); ++i) {
    put_child(out, std::to_string(i) + ".", schedulers_[i]->state());
  }
  return out;
}

void ChainedScheduler::load_state(const std::map<std::string, std::string>& state) {
  load_children(*this, schedulers_, state);
}

// ---- ReduceLROnPlateau ----

PlateauConfig& PlateauConfig::mode(const std::string& m) {
  EMBER_CHECK(m == "min" || m == "max",
              "[ReduceLROnPlateau] mode must be \"min\" or \"max\", got \"", m, "\"");
  max_ = m == "max";
  return *this;
}

PlateauConfig& PlateauConfig::threshold_mode(const std::string& m) {
  EMBER_CHECK(m == "rel" || m == "abs",
              "[ReduceLROnPlateau] threshold_mode must be \"rel\" or \"abs\", got \"", m, "\"");
  abs_ = m == "abs";
  return *this;
}

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& opt, const PlateauConfig& config)
    : LrScheduler(opt, /*record_initial_lr=*/false), config_(config) {
  EMBER_CHECK(config.factor_ < 1.0, "[ReduceLROnPlateau] factor must be < 1, got ", config.factor_);
  EMBER_CHECK(
      config.min_lr_.size() == 1 || static_cast<int>(config.min_lr_.size()) == opt.num_groups(),
      "[ReduceLROnPlateau] expected ", opt.num_groups(),
      " min_lr values (one per parameter group) or one, got ", config.min_lr_.size());
  last_epoch_ = 0;
  last_lr_ = current_lrs();
  best_ = config.max_ ? -std::numeric_limits<double>::infinity()
                      : std::numeric_limits<double>::infinity();
}

void ReduceLROnPlateau::step() {
  EMBER_FAIL("[ReduceLROnPlateau] needs the metric: call step(metric)");
}

bool ReduceLROnPlateau::is_better(double a, double best) const {
  const double t = config_.threshold_;
  if (!config_.max_) return config_.abs_ ? a < best - t : a < best * (1.0 - t);
  return config_.abs_ ? a > best + t : a > best * (t + 1.0);
}

void ReduceLROnPlateau::step(double metric) {
  ++last_epoch_;
  if (is_better(metric, best_)) {
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    ++num_bad_epochs_;
  }
  if (cooldown_counter_ > 0) {
    --cooldown_counter_;
    num_bad_epochs_ = 0;  // bad epochs in cooldown do not count
  }
  if (num_bad_epochs_ > config_.patience_) {
    for (int g = 0; g < optimizer_->num_groups(); ++g) {
      const double min_lr = config_.min_lr_.size() == 1 ? config_.min_lr_[0]
                                                        : config_.min_lr_[static_cast<size_t>(g)];
      const double old_lr = optimizer_->lr(g);
      const double new_lr = std::max(old_lr * config_.factor_, min_lr);
      if (old_lr - new_lr > config_.eps_) optimizer_->set_lr(new_lr, g);
    }
    cooldown_counter_ = config_.cooldown_;
    num_bad_epochs_ = 0;
  }
  last_lr_ = current_lrs();
}

std::map<std::string, std::string> ReduceLROnPlateau::state() const {
  auto s = LrScheduler::state();
  s["best"] = detail::format_double(best_);
  s["num_bad_epochs"] = std::to_string(num_bad_epochs_);
  s["cooldown_counter"] = std::to_string(cooldown_counter_);
  return s;
}

void ReduceLROnPlateau::load_state(const std::map<std::string, std::string>& state) {
  const double best =
      detail::state_double(state, "best", name(), -kInf, kInf, /*infinite_ok=*/true);
  const int64_t bad = detail::state_int(state, "num_bad_epochs", name(), 0, kMaxCount);
  const int64_t cooldown = detail::state_int(state, "cooldown_counter", name(), 0, kMaxCount);
  LrScheduler::load_state(state);
  best_ = best;
  num_bad_epochs_ = bad;
  cooldown_counter_ = cooldown;
}

}  // namespace ember::optim
