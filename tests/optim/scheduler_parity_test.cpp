// Every schedule against torch.optim.lr_scheduler: the learning rates of two parameter groups
// (0.1 and 0.05) after construction and after each of 60 steps (fixtures/schedules.txt), and
// OneCycleLR's momentum. Tolerance: 1e-13 relative (the same formulas in the same order; in
// practice the values are equal). Also: exact resume from a schedule's saved state.
#include <cmath>
#include <functional>
#include <map>

#include "optim_test_util.hpp"

namespace ember {
namespace {

using namespace optim;

constexpr int kSteps = 60;

const test::Fixture& fixture() {
  static const test::Fixture f(EMBER_OPTIM_FIXTURES "/schedules.txt");
  return f;
}

Optimizer make_optimizer(const std::string& name) {
  Optimizer opt = name == "onecycle_linear"        ? Optimizer(AdamConfig().lr(0.1))
                  : name.rfind("onecycle", 0) == 0 ? Optimizer(SgdConfig().lr(0.1).momentum(0.9))
                                                   : Optimizer(SgdConfig().lr(0.1));
  opt.add_group("b", GroupOptions().lr(0.05));
  return opt;
}

double noam_reference(int64_t step) {  // the fixture's lambda, for the LambdaLR check
  const double s = static_cast<double>(std::max<int64_t>(step, 1));
  return 2.0 * (std::pow(512.0, -0.5) * std::min(std::pow(s, -0.5), s * std::pow(10.0, -1.5)));
}

using Make = std::function<Scheduler(Optimizer&)>;
const std::map<std::string, Make>& schedules() {
  static const std::map<std::string, Make> table = {
      {"constant", [](Optimizer& o) { return ConstantLR(o, 0.5, 4); }},
      {"constant_one", [](Optimizer& o) { return ConstantLR(o, 1.0, 0); }},
      {"step", [](Optimizer& o) { return StepLR(o, 7, 0.5); }},
      {"multistep",
       [](Optimizer& o) {
         return MultiStepLR(o, {5, 12, 12, 40}, 0.3);
       }},
      {"exponential", [](Optimizer& o) { return ExponentialLR(o, 0.95); }},
      {"cosine", [](Optimizer& o) { return CosineAnnealingLR(o, 20, 0.001); }},
      {"cosine_zero", [](Optimizer& o) { return CosineAnnealingLR(o, 60); }},
      {"warm_restarts", [](Optimizer& o) { return CosineAnnealingWarmRestarts(o, 10, 1, 0.002); }},
      {"warm_restarts_mult", [](Optimizer& o) { return CosineAnnealingWarmRestarts(o, 5, 2); }},
      {"linear", [](Optimizer& o) { return LinearLR(o, 0.1, 1.0, 10); }},
      {"linear_decay", [](Optimizer& o) { return LinearLR(o, 1.0, 0.2, 30); }},
      {"polynomial", [](Optimizer& o) { return PolynomialLR(o, 40, 2.0); }},
      {"onecycle_cos",
       [](Optimizer& o) {
         return OneCycleLR(o, OneCycleConfig({1.0, 0.5}, kSteps));
       }},
      {"onecycle_linear",
       [](Optimizer& o) {
         return OneCycleLR(o, OneCycleConfig(0.8, kSteps)
                                  .pct_start(0.25)
                                  .anneal_strategy("linear")
                                  .div_factor(10.0)
                                  .final_div_factor(100.0));
       }},
      {"onecycle_three",
       [](Optimizer& o) {
         return OneCycleLR(o, OneCycleConfig(0.8, kSteps).three_phase(true).cycle_momentum(false));
       }},
      {"noam", [](Optimizer& o) { return NoamLR(o, 512, 10, 2.0); }},
      {"sequential",
       [](Optimizer& o) {
         return SequentialLR(
             o, {LinearLR(o, 0.1, 1.0, 5), CosineAnnealingLR(o, 30), ExponentialLR(o, 0.9)},
             {5, 35});
       }},
      {"chained",
       [](Optimizer& o) {
         return ChainedScheduler(o, {ConstantLR(o, 0.1, 4), ExponentialLR(o, 0.9)});
       }},
      {"chained_warmup_cosine",
       [](Optimizer& o) {
         return ChainedScheduler(o, {LinearLR(o, 0.2, 1.0, 8), CosineAnnealingLR(o, 25, 0.01)});
       }},
      {"plateau_min",
       [](Optimizer& o) { return ReduceLROnPlateau(o, PlateauConfig().factor(0.5).patience(2)); }},
      {"plateau_max_abs",
       [](Optimizer& o) {
         return ReduceLROnPlateau(o, PlateauConfig()
                                         .mode("max")
                                         .factor(0.3)
                                         .patience(1)
                                         .threshold(0.05)
                                         .threshold_mode("abs")
                                         .cooldown(2)
                                         .min_lr({0.01, 0.004}));
       }},
  };
  return table;
}

bool is_plateau(const std::string& name) { return name.rfind("plateau", 0) == 0; }

// Steps the schedule from `from` to `to`, writing lrs (and momenta) into rows from + 1 on.
void run(const std::string& name, Optimizer& opt, Scheduler& s, int from, int to,
         std::vector<double>& lrs, std::vector<double>& momenta) {
  const std::vector<double> metric = fixture().get("sched.metric").to_vector<double>();
  for (int k = from; k < to; ++k) {
    if (is_plateau(name)) {
      s.step(metric[static_cast<size_t>(k)]);
    } else {
      s.step();
    }
    for (int g = 0; g < 2; ++g) {
      lrs[static_cast<size_t>(2 * (k + 1) + g)] = opt.lr(g);
      if (opt.has_momentum()) momenta[static_cast<size_t>(2 * (k + 1) + g)] = opt.momentum(g);
    }
    EXPECT_EQ(s.last_lr(), (std::vector<double>{opt.lr(0), opt.lr(1)})) << name << " step " << k;
  }
}

DynTensor as_tensor(const std::vector<double>& v) {
  return from_data(TensorData::from(v, Shape{kSteps + 1, 2}));
}

void check(const std::string& name) {
  SCOPED_TRACE(name);
  Optimizer opt = make_optimizer(name);
  Scheduler s = schedules().at(name)(opt);
  std::vector<double> lrs(2 * (kSteps + 1)), momenta(2 * (kSteps + 1));
  for (int g = 0; g < 2; ++g) {
    lrs[static_cast<size_t>(g)] = opt.lr(g);
    if (opt.has_momentum()) momenta[static_cast<size_t>(g)] = opt.momentum(g);
  }
  run(name, opt, s, 0, kSteps, lrs, momenta);
  fixture().expect_close(as_tensor(lrs), "sched." + name + ".lr", 1e-13, 0.0);
  if (fixture().has("sched." + name + ".momentum")) {
    fixture().expect_close(as_tensor(momenta), "sched." + name + ".momentum", 1e-13, 0.0);
  }
}

TEST(SchedulerParity, Constant) {
  for (auto c : {"constant", "constant_one"}) check(c);
}
TEST(SchedulerParity, Step) { check("step"); }
TEST(SchedulerParity, MultiStep) { check("multistep"); }
TEST(SchedulerParity, Exponential) { check("exponential"); }
TEST(SchedulerParity, CosineAnnealing) {
  for (auto c : {"cosine", "cosine_zero"}) check(c);
}
TEST(SchedulerParity, CosineAnnealingWarmRestarts) {
  for (auto c : {"warm_restarts", "warm_restarts_mult"}) check(c);
}
TEST(SchedulerParity, LinearWarmupAndDecay) {
  for (auto c : {"linear", "linear_decay"}) check(c);
}
TEST(SchedulerParity, Polynomial) { check("polynomial"); }
TEST(SchedulerParity, OneCycle) {
  for (auto c : {"onecycle_cos", "onecycle_linear", "onecycle_three"}) check(c);
}
TEST(SchedulerParity, Noam) { check("noam"); }
TEST(SchedulerParity, Sequential) { check("sequential"); }
TEST(SchedulerParity, Chained) {
  for (auto c : {"chained", "chained_warmup_cosine"}) check(c);
}
TEST(SchedulerParity, ReduceOnPlateau) {
  for (auto c : {"plateau_min", "plateau_max_abs"}) check(c);
}

TEST(SchedulerParity, LambdaIsNoam) {
  Optimizer a = make_optimizer("noam"), b = make_optimizer("noam");
  NoamLR noam(a, 512, 10, 2.0);
  LambdaLR lambda(b, noam_reference);
  for (int k = 0; k < 30; ++k) {
    EXPECT_EQ(a.lr(0), b.lr(0));
    noam.step();
    lambda.step();
  }
}

// A schedule and its optimizer saved after 25 steps and restored into fresh ones continue
// exactly as the uninterrupted run.
TEST(SchedulerState, ResumeIsExact) {
  for (const auto& [name, make] : schedules()) {
    SCOPED_TRACE(name);
    Optimizer opt = make_optimizer(name);
    Scheduler s = make(opt);
    std::vector<double> want(2 * (kSteps + 1)), got(2 * (kSteps + 1)), m1(want.size()),
        m2(want.size());
    run(name, opt, s, 0, kSteps, want, m1);

    Optimizer first = make_optimizer(name);
    Scheduler s1 = make(first);
    run(name, first, s1, 0, 25, got, m2);
    const OptimizerState opt_state = first.state(nn::ModuleTree{});
    const auto sched_state = s1->state();

    Optimizer second = make_optimizer(name);
    Scheduler s2 = make(second);
    second.load_state(nn::ModuleTree{}, opt_state);
    s2->load_state(sched_state);
    run(name, second, s2, 25, kSteps, got, m2);
    for (size_t i = 50; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]) << "row " << i / 2;
    EXPECT_EQ(m1, m2);
  }
}

// A schedule shares its optimizer's state, so the optimizer may be moved (into a Learner).
TEST(SchedulerState, OptimizerMayBeMovedAfter) {
  Optimizer opt = SgdConfig().lr(0.1).init();
  StepLR sched(opt, 2, 0.5);
  struct Holder {
    Optimizer opt;
  } holder{std::move(opt)};
  sched.step();
  sched.step();
  EXPECT_EQ(holder.opt.lr(0), 0.05);
  EXPECT_EQ(sched.last_lr(), std::vector<double>{0.05});
}

TEST(SchedulerErrors, BadArgumentsNameTheSchedule) {
  Optimizer sgd = make_optimizer("step");
  test::expect_error([&] { LinearLR(sgd, 0.0); }, {"[LinearLR]", "start_factor", "0"});
  test::expect_error([&] { StepLR(sgd, 0); }, {"[StepLR]", "step_size", "0"});
  test::expect_error([&] { ConstantLR(sgd, 1.5); }, {"[ConstantLR]", "factor", "1.5"});
  test::expect_error([&] { ReduceLROnPlateau(sgd, PlateauConfig().factor(1.0)); },
                     {"[ReduceLROnPlateau]", "factor", "1"});
  test::expect_error([&] { PlateauConfig().mode("lowest"); }, {"[ReduceLROnPlateau]", "lowest"});
  test::expect_error([&] { ReduceLROnPlateau(sgd).step(); }, {"[ReduceLROnPlateau]", "metric"});
  test::expect_error([&] { StepLR(sgd, 3).step(0.5); }, {"[StepLR]", "ReduceLROnPlateau"});
  test::expect_error(
      [&] {
        SequentialLR(sgd, {StepLR(sgd, 3), StepLR(sgd, 3)}, {});
      },
      {"[SequentialLR]", "milestone"});
  Optimizer adagrad{AdagradConfig()};
  test::expect_error([&] { OneCycleLR(adagrad, OneCycleConfig(0.1, 10)); },
                     {"[OneCycleLR]", "Adagrad", "cycle_momentum"});
  test::expect_error([&] { OneCycleConfig(0.1, 10).anneal_strategy("cosine"); },
                     {"[OneCycleLR]", "\"cosine\""});
  OneCycleLR short_cycle(sgd, OneCycleConfig(0.1, 3).cycle_momentum(false));
  for (int i = 0; i < 3; ++i) short_cycle.step();
  test::expect_error([&] { short_cycle.step(); }, {"[OneCycleLR]", "total_steps 3"});
  Optimizer other = make_optimizer("step");
  StepLR foreign(other, 3);
  test::expect_error([&] { ChainedScheduler(sgd, {foreign}); },
                     {"[ChainedScheduler]", "another optimizer"});
}

}  // namespace
}  // namespace ember
