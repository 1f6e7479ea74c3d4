// Learning-rate schedules (torch.optim.lr_scheduler), with PyTorch's semantics: a schedule is
// attached to an Optimizer, sets every group's lr when made and at each step(), and computes
// it as PyTorch does (the same recursive forms), so values match step by step and schedules
// chain (ChainedScheduler) and follow each other (SequentialLR) as in PyTorch.
//
//   optim::Optimizer opt(optim::SgdConfig().lr(0.1).momentum(0.9));
//   optim::CosineAnnealingLR sched(opt, 100);
//   for (int epoch = 0; epoch < 100; ++epoch) { train(opt); sched.step(); }
//
// A schedule keeps a handle on its optimizer's state: the optimizer may be moved after.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace ember::optim {

class Optimizer;

/// Base of every schedule. last_lr() are the groups' lrs after the latest step.
class LrScheduler {
 public:
  virtual ~LrScheduler() = default;
  virtual const char* name() const = 0;
  /// Advances one epoch (or iteration) and sets the optimizer's lrs.
  virtual void step();
  /// ReduceLROnPlateau's step; an error for other schedules.
  virtual void step(double metric);
  const std::vector<double>& last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  /// Everything needed to continue exactly after a restart, as strings (exact decimal forms).
  virtual std::map<std::string, std::string> state() const;
  virtual void load_state(const std::map<std::string, std::string>& state);
  virtual std::unique_ptr<LrScheduler> clone() const = 0;

 protected:
  /// Records each group's initial_lr (once per optimizer) and base lrs; derived constructors end
  /// with initial_step().
  explicit LrScheduler(Optimizer& optimizer, bool record_initial_lr = true);
  void initial_step();
  /// The chainable form: new lrs from the optimizer's current ones (PyTorch's get_lr()).
  virtual std::vector<double> get_lr() = 0;
  /// The closed form at last_epoch_ (used by SequentialLR at its milestones), when there is one.
  virtual bool has_closed_form() const { return false; }
  virtual std::vector<double> closed_form() { return get_lr(); }
  /// last_epoch_ + 1 (or = epoch) and the new lrs into the optimizer.
  void update_lr(const int64_t* epoch = nullptr);
  std::vector<double> current_lrs() const;
  void set_lrs(const std::vector<double>& lrs);
  /// SequentialLR's "undo" of the step each schedule took when made.
  virtual void undo_epoch() { --last_epoch_; }

  static bool same_optimizer(const LrScheduler& s, const Optimizer& opt);

  std::shared_ptr<Optimizer> optimizer_;  // shares the state of the optimizer given
  std::vector<double> base_lrs_;
  int64_t last_epoch_ = -1;
  int64_t step_count_ = 0;
  bool is_initial_ = false;
  std::vector<double> last_lr_;

  friend class SequentialLR;
  friend class ChainedScheduler;
};

/// A schedule as a value (any LrScheduler, copied by clone()): what SequentialLR and
/// ChainedScheduler hold and what a training loop can keep without knowing the type.
class Scheduler {
 public:
  Scheduler() = default;
  template <class S>
  requires std::is_base_of_v<LrScheduler, S> Scheduler(const S& s)
      : impl_(s.clone()) {}  // NOLINT: any schedule converts
  Scheduler(const Scheduler& other) : impl_(other.impl_ ? other.impl_->clone() : nullptr) {}
  Scheduler& operator=(const Scheduler& other) {
    impl_ = other.impl_ ? other.impl_->clone() : nullptr;
    return *this;
  }
  Scheduler(Scheduler&&) = default;
  Scheduler& operator=(Scheduler&&) = default;

  bool defined() const { return impl_ != nullptr; }
  LrScheduler& get() const;
  LrScheduler* operator->() const { return &get(); }
  void step() { get().step(); }
  void step(double metric) { get().step(metric); }
  const std::vector<double>& last_lr() const { return get().last_lr(); }

 private:
  std::unique_ptr<LrScheduler> impl_;
};

#define EMBER_SCHEDULE_SETTER(Config, type, name) \
  Config& name(type v) {                          \
    name##_ = v;                                  \
    return *this;                                 \
  }

#define EMBER_SCHEDULER_COMMON(Type)                  \
  const char* name() const override { return #Type; } \
  std::unique_ptr<LrScheduler> clone() const override { return std::make_unique<Type>(*this); }

/// ConstantLR: lr * factor until total_iters steps, then lr. factor 1 is a constant lr.
class ConstantLR : public LrScheduler {
 public:
  ConstantLR(Optimizer& opt, double factor = 1.0 / 3, int64_t total_iters = 5);
  EMBER_SCHEDULER_COMMON(ConstantLR)

 protected:
  std::vector<double> get_lr() override;
  bool has_closed_form() const override { return true; }
  std::vector<double> closed_form() override;

 private:
  double factor_;
  int64_t total_iters_;
};

/// StepLR: lr * gamma every step_size steps.
class StepLR : public LrScheduler {
 public:
  StepLR(Optimizer& opt, int64_t step_size, double gamma = 0.1);
  EMBER_SCHEDULER_COMMON(StepLR)

 protected:
  std::vector<double> get_lr() override;
  bool has_closed_form() const override { return true; }
  std::vector<double> closed_form() override;

 private:
  int64_t step_size_;
  double gamma_;
};

/// MultiStepLR: lr * gamma at each milestone (a milestone listed twice multiplies twice).
class MultiStepLR : public LrScheduler {
 public:
  MultiStepLR(Optimizer& opt, std::vector<int64_t> milestones, double gamma = 0.1);
  EMBER_SCHEDULER_COMMON(MultiStepLR)

 protected:
  std::vector<double> get_lr() override;
  bool has_closed_form() const override { return true; }
  std::vector<double> closed_form() override;

 private:
  std::vector<int64_t> milestones_;  // sorted
  double gamma_;
};

/// ExponentialLR: lr * gamma every step.
class ExponentialLR : public LrScheduler {
 public:
  ExponentialLR(Optimizer& opt, double gamma);
  EMBER_SCHEDULER_COMMON(ExponentialLR)

 protected:
  std::vector<double> get_lr() override;
  bool has_closed_form() const override { return true; }
  std::vector<double> closed_form() override;

 private:
  double gamma_;
};

/// LinearLR (linear warm-up or decay): the factor goes from start_factor to end_factor over
/// total_iters steps.
class LinearLR : public LrScheduler {
 public:
  LinearLR(Optimizer& opt, double start_factor = 1.0 / 3, double end_factor = 1.0,
           int64_t total_iters = 5);
  EMBER_SCHEDULER_COMMON(LinearLR)

 protected:
  std::vector<double> get_lr() override;
  bool has_closed_form() const override { return true; }
  std::vector<double> closed_form() override;

 private:
  double start_, end_;
  int64_t total_iters_;
};

/// PolynomialLR: lr * (1 - t / total_iters)^power.
class PolynomialLR : public LrScheduler {
 public:
  PolynomialLR(Optimizer& opt, int64_t total_iters = 5, double power = 1.0);
  EMBER_SCHEDULER_COMMON(PolynomialLR)

 protected:
  std::vector<double> get_lr() override;
  bool has_closed_form() const override { return true; }
  std::vector<double> closed_form() override;

 private:
  int64_t total_iters_;
  double power_;
};

/// CosineAnnealingLR: from the base lr to eta_min over t_max steps (and back, beyond t_max).
class CosineAnnealingLR : public LrScheduler {
 public:
  CosineAnnealingLR(Optimizer& opt, int64_t t_max, double eta_min = 0.0);
  EMBER_SCHEDULER_COMMON(CosineAnnealingLR)

 protected:
  std::vector<double> get_lr() override;
  bool has_closed_form() const override { return true; }
  std::vector<double> closed_form() override;

 private:
  int64_t t_max_;
  double eta_min_;
};

/// CosineAnnealingWarmRestarts (SGDR): cosine periods of t_0, t_0 * t_mult, ... steps.
class CosineAnnealingWarmRestarts : public LrScheduler {
 public:
  CosineAnnealingWarmRestarts(Optimizer& opt, int64_t t_0, int64_t t_mult = 1,
                              double eta_min = 0.0);
  EMBER_SCHEDULER_COMMON(CosineAnnealingWarmRestarts)
  void step() override;
  std::map<std::string, std::string> state() const override;
  void load_state(const std::map<std::string, std::string>& state) override;

 protected:
  std::vector<double> get_lr() override;

 private:
  int64_t t_0_, t_i_, t_mult_;
  double eta_min_;
  int64_t t_cur_ = -1;
};

/// Options of OneCycleLR (PyTorch's defaults).
struct OneCycleConfig {
  std::vector<double> max_lr_;  // one for all groups, or one per group
  int64_t total_steps_;
  double pct_start_ = 0.3;
  bool cos_ = true;  // anneal_strategy "cos" (else "linear")
  bool cycle_momentum_ = true;
  double base_momentum_ = 0.85, max_momentum_ = 0.95;
  double div_factor_ = 25.0, final_div_factor_ = 1e4;
  bool three_phase_ = false;

  OneCycleConfig(double max_lr, int64_t total_steps) : max_lr_{max_lr}, total_steps_(total_steps) {}
  OneCycleConfig(std::vector<double> max_lr, int64_t total_steps)
      : max_lr_(std::move(max_lr)), total_steps_(total_steps) {}
  EMBER_SCHEDULE_SETTER(OneCycleConfig, double, pct_start)
  /// "cos" or "linear".
  OneCycleConfig& anneal_strategy(const std::string& s);
  EMBER_SCHEDULE_SETTER(OneCycleConfig, bool, cycle_momentum)
  EMBER_SCHEDULE_SETTER(OneCycleConfig, double, base_momentum)
  EMBER_SCHEDULE_SETTER(OneCycleConfig, double, max_momentum)
  EMBER_SCHEDULE_SETTER(OneCycleConfig, double, div_factor)
  EMBER_SCHEDULE_SETTER(OneCycleConfig, double, final_div_factor)
  EMBER_SCHEDULE_SETTER(OneCycleConfig, bool, three_phase)
};

/// OneCycleLR (Smith's 1cycle policy): warm up to max_lr, anneal to max_lr / (div_factor *
/// final_div_factor); momentum (or Adam's beta1) cycles the other way. Step once per batch.
class OneCycleLR : public LrScheduler {
 public:
  OneCycleLR(Optimizer& opt, const OneCycleConfig& config);
  EMBER_SCHEDULER_COMMON(OneCycleLR)

 protected:
  std::vector<double> get_lr() override;

 private:
  struct Phase {
    double end_step;
    int start_lr, end_lr;              // 0 initial, 1 max, 2 min
    int start_momentum, end_momentum;  // 0 max, 1 base
  };
  double anneal(double start, double end, double pct) const;
  OneCycleConfig config_;
  std::vector<Phase> phases_;
  std::vector<std::array<double, 3>> group_lrs_;  // initial, max, min
};

/// LambdaLR: base_lr * fn(epoch).
class LambdaLR : public LrScheduler {
 public:
  LambdaLR(Optimizer& opt, std::function<double(int64_t)> fn);
  EMBER_SCHEDULER_COMMON(LambdaLR)

 protected:
  std::vector<double> get_lr() override;

 private:
  std::function<double(int64_t)> fn_;
};

/// Noam ("Attention is all you need"): base_lr * factor * d_model^-0.5 *
/// min(step^-0.5, step * warmup^-1.5), step 0 counted as 1 (as The Annotated Transformer's
/// LambdaLR). Use a base lr of 1 for the paper's schedule.
class NoamLR : public LambdaLR {
 public:
  NoamLR(Optimizer& opt, int64_t d_model, int64_t warmup_steps, double factor = 1.0);
  EMBER_SCHEDULER_COMMON(NoamLR)
};

/// SequentialLR: schedules[i] runs from milestones[i-1] (each restarted at its milestone).
class SequentialLR : public LrScheduler {
 public:
  SequentialLR(Optimizer& opt, std::vector<Scheduler> schedulers, std::vector<int64_t> milestones);
  EMBER_SCHEDULER_COMMON(SequentialLR)
  void step() override;
  std::map<std::string, std::string> state() const override;
  void load_state(const std::map<std::string, std::string>& state) override;

 protected:
  std::vector<double> get_lr() override { return current_lrs(); }
  void undo_epoch() override;

 private:
  std::vector<Scheduler> schedulers_;
  std::vector<int64_t> milestones_;
};

/// ChainedScheduler: every schedule steps, in order, each on the lrs the previous one set (their
/// factors multiply).
class ChainedScheduler : public LrScheduler {
 public:
  ChainedScheduler(Optimizer& opt, std::vector<Scheduler> schedulers);
  EMBER_SCHEDULER_COMMON(ChainedScheduler)
  void step() override;
  std::map<std::string, std::string> state() const override;
  void load_state(const std::map<std::string, std::string>& state) override;

 protected:
  std::vector<double> get_lr() override { return current_lrs(); }
  void undo_epoch() override;

 private:
  std::vector<Scheduler> schedulers_;
};

/// Options of ReduceLROnPlateau (PyTorch's defaults).
struct PlateauConfig {
  bool max_ = false;  // mode "max" (else "min")
  double factor_ = 0.1;
  int64_t patience_ = 10;
  double threshold_ = 1e-4;
  bool abs_ = false;  // threshold_mode "abs" (else "rel")
  int64_t cooldown_ = 0;
  std::vector<double> min_lr_ = {0.0};  // one for all groups, or one per group
  double eps_ = 1e-8;

  /// "min" or "max".
  PlateauConfig& mode(const std::string& m);
  EMBER_SCHEDULE_SETTER(PlateauConfig, double, factor)
  EMBER_SCHEDULE_SETTER(PlateauConfig, int64_t, patience)
  EMBER_SCHEDULE_SETTER(PlateauConfig, double, threshold)
  /// "rel" or "abs".
  PlateauConfig& threshold_mode(const std::string& m);
  EMBER_SCHEDULE_SETTER(PlateauConfig, int64_t, cooldown)
  PlateauConfig& min_lr(double v) {
    min_lr_ = {v};
    return *this;
  }
  PlateauConfig& min_lr(std::vector<double> v) {
    min_lr_ = std::move(v);
    return *this;
  }
  EMBER_SCHEDULE_SETTER(PlateauConfig, double, eps)
};

/// ReduceLROnPlateau: lr * factor when the metric has not improved for `patience` steps.
/// Step it with the metric: sched.step(valid_loss).
class ReduceLROnPlateau : public LrScheduler {
 public:
  explicit ReduceLROnPlateau(Optimizer& opt, const PlateauConfig& config = {});
  EMBER_SCHEDULER_COMMON(ReduceLROnPlateau)
  void step() override;
  void step(double metric) override;
  std::map<std::string, std::string> state() const override;
  void load_state(const std::map<std::string, std::string>& state) override;
  double best() const { return best_; }
  int64_t num_bad_epochs() const { return num_bad_epochs_; }

 protected:
  std::vector<double> get_lr() override { return current_lrs(); }

 private:
  bool is_better(double a, double best) const;
  PlateauConfig config_;
  double best_;
  int64_t num_bad_epochs_ = 0, cooldown_counter_ = 0;
};

#undef EMBER_SCHEDULER_COMMON
#undef EMBER_SCHEDULE_SETTER

}  // namespace ember::optim
