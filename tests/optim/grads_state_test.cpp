// Gradient clipping against torch.nn.utils (1e-12 relative), accumulation over backward passes,
// the optimizer's state saved and restored (exact resume on Cpu), and the errors of bad configs.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>
#include <set>
#include <tuple>

#include <ember/tensor/ops/optim.hpp>

#include "optim_test_util.hpp"

namespace ember {
namespace {

using optim::Optimizer;
using test::Net;

// ---- clipping ----

void expect_clipped(const std::string& name, optim::ParamGrads& g, Net& net) {
  for (const nn::NamedTensor& p : nn::named_params(nn::module_tree(net))) {
    test::optim_fixture().expect_close(g.find(p.slot->id()), "clip." + name + "." + p.path, 1e-12,
                                       1e-15);
  }
}

TEST(Clipping, NormMatchesPyTorch) {
  const test::Fixture& f = test::optim_fixture();
  for (auto [name, max_norm, type] :
       {std::tuple{"norm2", 1.5, 2.0}, std::tuple{"norm2_large", 100.0, 2.0},
        std::tuple{"norm_inf", 1.5, std::numeric_limits<double>::infinity()}}) {
    SCOPED_TRACE(name);
    Net net = test::fixture_net();
    optim::ParamGrads g = test::fixture_grads(net, 1);
    const double total = optim::clip_grad_norm(g, max_norm, type).item<double>();
    const double want = f.get(std::string("clip.") + name + ".total").item<double>();
    EXPECT_NEAR(total, want, 1e-12 * want);
    expect_clipped(name, g, net);
  }
}

TEST(Clipping, ValueMatchesPyTorch) {
  Net net = test::fixture_net();
  optim::ParamGrads g = test::fixture_grads(net, 1);
  optim::clip_grad_value(g, 0.3);
  expect_clipped("value", g, net);
}

TEST(Clipping, NonFiniteNormIsAnErrorWhenAsked) {
  Net net = test::fixture_net();
  optim::ParamGrads g;
  g.set(net.fc1.bias->id(),
        from_data(TensorData::from(std::vector<double>{1.0, std::nan(""), 2.0}, {3})));
  test::expect_error([&] { optim::clip_grad_norm(g, 1.0, 2.0, true); },
                     {"[clip_grad_norm]", "nan"});
}

// ---- accumulation ----

DynTensor batch(int i) {
  Generator gen(100 + static_cast<uint64_t>(i));
  return randn(Shape{5, 4}, DType::f64, default_device(), &gen);
}

DynTensor loss_of(const Net& net, const DynTensor& x) {
  return sum(mul(net.forward(x), net.forward(x)));
}

TEST(Accumulation, SumsTheGradientsOfSeveralBackwardPasses) {
  Net net = test::fixture_net();
  optim::GradientsAccumulator acc;
  for (int i = 0; i < 3; ++i) acc.accumulate(net, backward(loss_of(net, batch(i))));
  EXPECT_EQ(acc.count(), 3);
  optim::ParamGrads summed = acc.take();
  EXPECT_EQ(acc.count(), 0);
  const Gradients all =
      backward(add(add(loss_of(net, batch(0)), loss_of(net, batch(1))), loss_of(net, batch(2))));
  const optim::ParamGrads want = optim::ParamGrads::from(net, all);
  ASSERT_EQ(summed.size(), 4u);
  for (const auto& [id, g] : want.map()) {
    EXPECT_TRUE(allclose(summed.find(id), g, 1e-13, 1e-15));
  }
}

TEST(Accumulation, KeysSurviveAnUpdateBetweenPasses) {
  // The accumulator keys by ParamId: gradients taken before and after an update (which gives
  // every parameter a new autodiff leaf) still add up per parameter.
  Net net = test::fixture_net();
  Optimizer opt(optim::SgdConfig().lr(0.01));
  optim::GradientsAccumulator acc;
  const Gradients g0 = backward(loss_of(net, batch(0)));
  const optim::ParamGrads p0 = optim::ParamGrads::from(net, g0);
  acc.accumulate(net, g0);
  opt.step(net, g0);
  const Gradients g1 = backward(loss_of(net, batch(1)));
  const optim::ParamGrads p1 = optim::ParamGrads::from(net, g1);
  acc.accumulate(net, g1);
  const optim::ParamGrads sum = acc.take();
  for (const auto& [id, g] : p0.map()) EXPECT_TRUE(allclose(sum.find(id), add(g, p1.find(id))));
}

// ---- state: exact resume ----

struct Mlp {
  nn::Linear fc1, fc2, head;
  EMBER_MODULE(Mlp, fc1, fc2, head)
  DynTensor forward(const DynTensor& x) const {
    return head.forward(relu(fc2.forward(relu(fc1.forward(x)))));
  }
};

Mlp make_mlp(uint64_t seed) {
  Generator gen(seed);
  return Mlp{nn::Linear(nn::LinearConfig(8, 16), default_device(), &gen),
             nn::Linear(nn::LinearConfig(16, 16), default_device(), &gen),
             nn::Linear(nn::LinearConfig(16, 4), default_device(), &gen)};
}

// Everything a run keeps between steps: built the same way at the start and at a resume.
struct TrainRun {
  Mlp model;
  Optimizer opt;
  optim::OneCycleLR sched;

  explicit TrainRun(uint64_t seed, optim::Optimizer o)
      : model(make_mlp(seed)), opt(std::move(o)), sched(opt, optim::OneCycleConfig(0.01, 40)) {}

  void train(int from, int to) {
    for (int k = from; k < to; ++k) {
      Generator gen(1000 + static_cast<uint64_t>(k));
      const DynTensor x = randn(Shape{32, 8}, DType::f32, default_device(), &gen);
      const DynTensor y = randn(Shape{32, 4}, DType::f32, default_device(), &gen);
      // Two half-batches accumulated, clipped, then one step.
      optim::GradientsAccumulator acc;
      for (int h = 0; h < 2; ++h) {
        const DynTensor xs = narrow(x, 0, 16 * h, 16), ys = narrow(y, 0, 16 * h, 16);
        const DynTensor d = sub(model.forward(xs), ys);
        acc.accumulate(model, backward(mean(mul(d, d))));
      }
      optim::ParamGrads g = acc.take();
      optim::clip_grad_norm(g, 0.5);
      opt.step(model, g);
      sched.step();
    }
  }
};

Optimizer make_adam() {
  Optimizer opt(optim::AdamWConfig().lr(3e-3).amsgrad(true));
  opt.add_group("head", optim::GroupOptions().lr(1e-3).weight_decay(0.0));
  return opt;
}

TEST(State, ResumeIsBitIdentical) {
  const std::string dir = ::testing::TempDir();
  TrainRun straight(7, make_adam());
  straight.train(0, 20);

  TrainRun first(7, make_adam());
  first.train(0, 10);
  save(first.model, dir + "/optim_resume_model.safetensors");
  first.opt.save(first.model, dir + "/optim_resume_opt.safetensors");
  const auto sched_state = first.sched.state();

  // A fresh process would build everything again: other initial weights and other ParamIds.
  TrainRun resumed(99, make_adam());
  load(resumed.model, dir + "/optim_resume_model.safetensors");
  resumed.opt.load(resumed.model, dir + "/optim_resume_opt.safetensors");
  resumed.sched.load_state(sched_state);
  EXPECT_EQ(resumed.opt.steps(), 10);
  resumed.train(10, 20);

  const auto a = nn::named_params(nn::module_tree(straight.model));
  const auto b = nn::named_params(nn::module_tree(resumed.model));
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(equal(a[i].slot->dyn(), b[i].slot->dyn())) << a[i].path;
  }
  EXPECT_EQ(straight.opt.lr(0), resumed.opt.lr(0));
  EXPECT_EQ(straight.opt.lr(1), resumed.opt.lr(1));
  EXPECT_EQ(straight.opt.momentum(0), resumed.opt.momentum(0));
  std::filesystem::remove(dir + "/optim_resume_model.safetensors");
  std::filesystem::remove(dir + "/optim_resume_opt.safetensors");
}

TEST(State, FileRoundTripWithoutTensorsAndWithARegexGroup) {
  // Plain SGD keeps no tensors (only metadata), and a regex pattern has characters JSON escapes.
  const std::string path = ::testing::TempDir() + "/optim_sgd_state.safetensors";
  Net net = test::fixture_net();
  Optimizer opt = optim::SgdConfig().lr(0.1).init();
  opt.add_group(R"(.*\.bias)", optim::GroupOptions().lr(0.5));
  opt.step(net, test::fixture_grads(net, 1));
  opt.set_lr(0.25, 1);
  opt.save(net, path);
  Optimizer back = optim::SgdConfig().lr(0.1).init();
  back.add_group(R"(.*\.bias)", optim::GroupOptions().lr(0.5));
  back.load(net, path);
  EXPECT_EQ(back.lr(1), 0.25);
  EXPECT_EQ(back.steps(), 1);
  std::filesystem::remove(path);
}

struct Tied {
  nn::Param<2> a, b;  // b is a copy of a: one parameter in two places
  EMBER_MODULE(Tied, a, b)
};

TEST(State, AParameterInTwoPlacesIsUpdatedOnce) {
  Tied tied{nn::Param<2>(Tensor<2>::ones({2, 2}).to(DType::f64)), {}};
  tied.b = tied.a;
  const DynTensor loss = sum(add(mul(tied.a.dyn(), 2.0), tied.b.dyn()));
  Optimizer opt = optim::AdamConfig().lr(0.1).init();
  opt.step(tied, backward(loss));  // the gradient is 3 everywhere; Adam's first step is -lr
  EXPECT_TRUE(allclose(tied.a.dyn(), full(Shape{2, 2}, 0.9, DType::f64)));
  EXPECT_TRUE(equal(tied.a.dyn(), tied.b.dyn()));
  EXPECT_EQ(tied.a.id(), tied.b.id());
  EXPECT_EQ(opt.steps(), 1);
}

TEST(State, NamesTensorsByParameterPath) {
  Net net = test::fixture_net();
  Optimizer opt(optim::AdamConfig().amsgrad(true));
  opt.step(net, test::fixture_grads(net, 3));  // fc2.bias has no gradient at step 3
  const optim::OptimizerState s = opt.state(net);
  std::set<std::string> names;
  for (const auto& [n, t] : s.tensors) names.insert(n);
  EXPECT_TRUE(names.count("fc1.weight.exp_avg"));
  EXPECT_TRUE(names.count("fc1.weight.exp_avg_sq"));
  EXPECT_TRUE(names.count("fc2.weight.max_exp_avg_sq"));
  EXPECT_FALSE(names.count("fc2.bias.exp_avg"));
  EXPECT_EQ(s.metadata.at("optimizer"), "Adam");
  EXPECT_EQ(s.metadata.at("step.fc1.weight"), "1");
  EXPECT_EQ(s.metadata.count("step.fc2.bias"), 0u);
}

struct Other {
  nn::Linear fc1;
  EMBER_MODULE(Other, fc1)
};

TEST(State, MismatchesAreClearErrors) {
  Net net = test::fixture_net();
  Optimizer adam = optim::AdamConfig().init();  // the config.init() form
  adam.step(net, test::fixture_grads(net, 1));
  const optim::OptimizerState s = adam.state(net);

  Optimizer sgd{optim::SgdConfig()};
  test::expect_error([&] { sgd.load_state(net, s); }, {"[SGD]", "optimizer \"Adam\""});
  Optimizer grouped{optim::AdamConfig()};
  grouped.add_group("fc2");
  test::expect_error([&] { grouped.load_state(net, s); }, {"[Adam]", "1 parameter groups", "2"});
  Other other{nn::Linear(nn::LinearConfig(4, 3).with_dtype(DType::f64))};
  Optimizer fresh{optim::AdamConfig()};
  test::expect_error([&] { fresh.load_state(other, s); }, {"[Adam]", "fc2", "Other"});
}

// Every optimizer of issue 14 resumes exactly: 10 steps, state through a file (buffers, step
// counts and per-parameter numbers such as NAdam's mu_product and ASGD's eta and mu), a fresh
// model and optimizer with other ParamIds, 10 more steps == 20 uninterrupted ones; with a
// parameter group and a schedule, whose state goes along.
TEST(State, EveryNewOptimizerResumesExactly) {
  using namespace optim;
  const std::vector<std::pair<const char*, std::function<Optimizer()>>> optimizers = {
      {"Adadelta", [] { return AdadeltaConfig().weight_decay(0.01).init(); }},
      {"Adamax", [] { return AdamaxConfig().lr(0.01).init(); }},
      {"NAdam", [] { return NAdamConfig().lr(0.01).decoupled_weight_decay(true).init(); }},
      {"RAdam", [] { return RAdamConfig().lr(0.01).weight_decay(0.1).init(); }},
      {"Rprop", [] { return RpropConfig().lr(0.01).maximize(true).init(); }},
      {"ASGD", [] { return AsgdConfig().lr(0.05).t0(4).init(); }},
      {"Adan", [] { return AdanConfig().lr(0.01).weight_decay(0.02).init(); }},
      {"Muon", [] { return MuonConfig().lr(0.02).init(); }},
  };
  const std::string path = ::testing::TempDir() + "/optim_resume_new.safetensors";
  for (const auto& [name, make] : optimizers) {
    SCOPED_TRACE(name);
    const bool matrices_only = std::string(name) == "Muon";
    auto grads = [&](Net& net, int k) {
      optim::ParamGrads g = test::fixture_grads(net, k);
      if (matrices_only) {
        g.remove(net.fc1.bias->id());
        g.remove(net.fc2.bias->id());
      }
      return g;
    };
    auto build = [&](Optimizer& opt) { opt.add_group("fc2", GroupOptions().lr(opt.lr() / 2)); };
    Net straight = test::fixture_net();
    Optimizer a = make();
    build(a);
    StepLR sched_a(a, 3, 0.5);
    for (int k = 1; k <= 20; ++k) {
      a.step(straight, grads(straight, k));
      sched_a.step();
    }

    Net first = test::fixture_net();
    Optimizer b = make();
    build(b);
    StepLR sched_b(b, 3, 0.5);
    for (int k = 1; k <= 10; ++k) {
      b.step(first, grads(first, k));
      sched_b.step();
    }
    b.save(first, path);
    Net resumed = test::fixture_net();  // other ParamIds
    const auto from = nn::named_params(nn::module_tree(first));
    const auto to = nn::named_params(nn::module_tree(resumed));
    for (size_t i = 0; i < from.size(); ++i) to[i].slot->set_dyn(from[i].slot->dyn());
    Optimizer c = make();
    build(c);
    StepLR sched_c(c, 3, 0.5);
    c.load(resumed, path);
    sched_c.load_state(sched_b.state());
    EXPECT_EQ(c.steps(), 10);
    for (int k = 11; k <= 20; ++k) {
      c.step(resumed, grads(resumed, k));
      sched_c.step();
    }
    const auto want = nn::named_params(nn::module_tree(straight));
    const auto got = nn::named_params(nn::module_tree(resumed));
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_TRUE(equal(want[i].slot->dyn(), got[i].slot->dyn())) << want[i].path;
    }
  }
  std::filesystem::remove(path);
}

// LBFGS's global state (direction, step, history of curvature pairs, counters) resumes exactly.
struct Fit {
  nn::Linear fc;
  EMBER_MODULE(Fit, fc)
};

Fit fit_model() {
  const test::Fixture& f = test::optim_fixture();
  Fit m{nn::Linear(nn::LinearConfig(4, 3).with_dtype(DType::f64))};
  m.fc.weight.set_dyn(f.get("lbfgs.init.fc.weight"));
  m.fc.bias->set_dyn(f.get("lbfgs.init.fc.bias"));
  return m;
}

optim::Closure fit_closure(Fit& m) {
  return [&m] {
    const test::Fixture& f = test::optim_fixture();
    const DynTensor d = sub(tanh(m.fc.forward(f.get("lbfgs.X"))), f.get("lbfgs.Y"));
    const DynTensor loss = mean(mul(d, d));
    return optim::LossAndGrads{loss, backward(loss)};
  };
}

TEST(State, LbfgsResumesExactly) {
  for (const auto search : {optim::LineSearch::none, optim::LineSearch::strong_wolfe}) {
    const auto config =
        optim::LbfgsConfig().lr(0.5).max_iter(4).history_size(2).line_search_fn(search);
    const std::string path = ::testing::TempDir() + "/optim_lbfgs_state.safetensors";
    Fit straight = fit_model();
    Optimizer a(config);
    for (int k = 0; k < 3; ++k) a.step(straight, fit_closure(straight));

    Fit first = fit_model();
    Optimizer b(config);
    for (int k = 0; k < 2; ++k) b.step(first, fit_closure(first));
    b.save(first, path);
    Fit resumed = fit_model();
    resumed.fc.weight.set_dyn(first.fc.weight.dyn());
    resumed.fc.bias->set_dyn(first.fc.bias->dyn());
    Optimizer c(config);
    c.load(resumed, path);
    EXPECT_EQ(c.steps(), b.steps());
    c.step(resumed, fit_closure(resumed));
    EXPECT_TRUE(equal(straight.fc.weight.dyn(), resumed.fc.weight.dyn()));
    EXPECT_TRUE(equal(straight.fc.bias->dyn(), resumed.fc.bias->dyn()));
    EXPECT_EQ(a.state(straight).metadata, c.state(resumed).metadata);

    // A state of another model size is refused, naming the tensor and the sizes.
    Net other = test::fixture_net();
    Optimizer d(config);
    test::expect_error([&] { d.load(other, path); }, {"[LBFGS]", "lbfgs/", "[15]", "23"});
    std::filesystem::remove(path);
  }
}

// No optimizer but LBFGS (which reads losses and dot products, as PyTorch's) waits for the device
// in a step: bias corrections, NAdam's mu_product, ASGD's eta and mu, RAdam's rectifier are
// doubles computed on the host; Muon's norm stays a tensor.
TEST(State, StepsMakeNoHostSynchronisation) {
  using namespace optim;
  const std::vector<std::pair<const char*, std::function<Optimizer()>>> optimizers = {
      {"SGD", [] { return SgdConfig().momentum(0.9).nesterov(true).maximize(true).init(); }},
      {"Adam", [] { return AdamConfig().amsgrad(true).init(); }},
      {"RMSprop", [] { return RmspropConfig().centered(true).momentum(0.5).init(); }},
      {"Adagrad", [] { return AdagradConfig().init(); }},
      {"Lion", [] { return LionConfig().init(); }},
      {"Adadelta", [] { return AdadeltaConfig().weight_decay(0.01).init(); }},
      {"Adamax", [] { return AdamaxConfig().init(); }},
      {"NAdam", [] { return NAdamConfig().init(); }},
      {"RAdam", [] { return RAdamConfig().init(); }},
      {"Rprop", [] { return RpropConfig().init(); }},
      {"ASGD", [] { return AsgdConfig().t0(1).init(); }},
      {"Adan", [] { return AdanConfig().init(); }},
      {"Muon", [] { return MuonConfig().init(); }},
  };
  for (const auto& [name, make] : optimizers) {
    SCOPED_TRACE(name);
    Net net = test::fixture_net();
    Optimizer opt = make();
    std::vector<optim::ParamGrads> grads;
    for (int k = 1; k <= 8; ++k) {
      grads.push_back(test::fixture_grads(net, k));
      if (std::string(name) == "Muon") {
        grads.back().remove(net.fc1.bias->id());
        grads.back().remove(net.fc2.bias->id());
      }
    }
    opt.step(net, grads[0]);  // state made
    const uint64_t before = host_sync_count(default_device());
    for (size_t k = 1; k < grads.size(); ++k) opt.step(net, grads[k]);  // RAdam rectifies at 6
    EXPECT_EQ(host_sync_count(default_device()) - before, 0u);
  }
}

// Per-parameter numbers are saved as metadata `<name>.<path>` and are required back.
TEST(State, PerParameterNumbersAreSavedAndChecked) {
  Net net = test::fixture_net();
  Optimizer opt = optim::AsgdConfig().lr(0.05).init();
  opt.step(net, test::fixture_grads(net, 1));
  optim::OptimizerState s = opt.state(net);
  EXPECT_EQ(s.metadata.at("eta.fc1.weight"), s.metadata.at("eta.fc2.bias"));
  EXPECT_EQ(s.metadata.at("mu.fc1.weight"), "1");
  s.metadata.erase("mu.fc1.bias");
  Optimizer back = optim::AsgdConfig().lr(0.05).init();
  test::expect_error([&] { back.load_state(net, s); }, {"[ASGD]", "no \"mu.fc1.bias\""});
  s.metadata["mu.fc1.bias"] = "nan";
  test::expect_error([&] { back.load_state(net, s); }, {"[ASGD]", "mu.fc1.bias", "nan"});
  EXPECT_EQ(back.steps(), 0);  // nothing loaded
}

// ---- bad configs ----

TEST(Errors, BadConfigsNameTheOptimizerAndTheValue) {
  using namespace optim;
  test::expect_error([] { Optimizer(AdamConfig().lr(-0.1)); }, {"[Adam]", "learning rate", "-0.1"});
  test::expect_error([] { Optimizer(AdamWConfig().betas(0.9, 1.0)); }, {"[AdamW]", "beta2", "1"});
  test::expect_error([] { Optimizer(AdamConfig().betas(-0.5, 0.9)); }, {"[Adam]", "beta1", "-0.5"});
  test::expect_error([] { Optimizer(LionConfig().betas(0.9, 1.5)); }, {"[Lion]", "beta2", "1.5"});
  test::expect_error([] { Optimizer(SgdConfig().nesterov(true)); },
                     {"[SGD]", "Nesterov", "momentum 0"});
  test::expect_error([] { Optimizer(SgdConfig().momentum(-1)); }, {"[SGD]", "momentum", "-1"});
  test::expect_error([] { Optimizer(RmspropConfig().alpha(-0.5)); },
                     {"[RMSprop]", "alpha", "-0.5"});
  test::expect_error([] { Optimizer(AdagradConfig().lr_decay(-1)); },
                     {"[Adagrad]", "lr_decay", "-1"});
  test::expect_error([] { Optimizer(SgdConfig().weight_decay(-0.01)); },
                     {"[SGD]", "weight_decay", "-0.01"});
  Optimizer opt{SgdConfig()};
  test::expect_error([&] { opt.add_group("fc1", optim::GroupOptions().lr(-1.0)); },
                     {"[SGD]", "learning rate", "-1"});
  test::expect_error([&] { opt.set_lr(-2.0, 0); }, {"[SGD]", "learning rate", "-2"});
  test::expect_error([&] { opt.lr(3); }, {"[SGD]", "no parameter group 3"});
  test::expect_error([] { Optimizer(AdagradConfig()).momentum(0); }, {"[Adagrad]", "momentum"});
  // Issue 14's optimizers.
  test::expect_error([] { Optimizer(AdadeltaConfig().rho(1.5)); }, {"[Adadelta]", "rho", "1.5"});
  test::expect_error([] { Optimizer(AdamaxConfig().betas(0.9, 1.0)); }, {"[Adamax]", "beta2", "1"});
  test::expect_error([] { Optimizer(NAdamConfig().momentum_decay(-1)); },
                     {"[NAdam]", "momentum_decay", "-1"});
  test::expect_error([] { Optimizer(RAdamConfig().eps(-1e-8)); }, {"[RAdam]", "eps", "-1e-08"});
  test::expect_error([] { Optimizer(RpropConfig().etas(0.5, 0.9)); },
                     {"[Rprop]", "etas", "0.5", "0.9"});
  test::expect_error([] { Optimizer(RpropConfig().step_sizes(1.0, 0.1)); },
                     {"[Rprop]", "step_sizes", "1", "0.1"});
  test::expect_error([] { Optimizer(AsgdConfig().lr(-1)); }, {"[ASGD]", "learning rate", "-1"});
  test::expect_error([] { Optimizer(AdanConfig().betas(0.98, 0.92, 1.0)); },
                     {"[Adan]", "beta3", "1"});
  test::expect_error([] { Optimizer(MuonConfig().ns_steps(-1)); }, {"[Muon]", "ns_steps", "-1"});
  test::expect_error([] { Optimizer(MuonConfig().momentum(-0.5)); },
                     {"[Muon]", "momentum", "-0.5"});
  Optimizer rprop{RpropConfig()};
  test::expect_error([&] { rprop.add_group("fc1", optim::GroupOptions().weight_decay(0.1)); },
                     {"[Rprop]", "no weight_decay", "0.1"});
}

TEST(Errors, LbfgsNeedsAClosureAndOneGroup) {
  Net net = test::fixture_net();
  Optimizer opt{optim::LbfgsConfig()};
  test::expect_error([&] { opt.step(net, test::fixture_grads(net, 1)); },
                     {"[LBFGS]", "needs a closure"});
  test::expect_error([&] { opt.add_group("fc1"); }, {"[LBFGS]", "no parameter groups"});
  test::expect_error([&] { opt.step(net, optim::Closure()); }, {"[LBFGS]", "closure is empty"});
  test::expect_error(
      [&] {
        opt.step(net, [&] {
          const DynTensor out = net.forward(test::optim_fixture().get("lbfgs.X"));
          return optim::LossAndGrads{out, backward(sum(out))};
        });
      },
      {"[LBFGS]", "loss (one element)", "[8, 2]"});
  test::expect_error([] { Optimizer(optim::LbfgsConfig().history_size(0)); },
                     {"[LBFGS]", "history_size", "0"});
  test::expect_error([] { Optimizer(optim::LbfgsConfig().max_iter(0)); },
                     {"[LBFGS]", "max_iter", "0"});
}

// Muon updates matrices only; a vector with a gradient is an error before anything changes.
TEST(Errors, MuonRefusesParametersThatAreNotMatrices) {
  Net net = test::fixture_net();
  const DynTensor before = net.fc1.weight.dyn();
  Optimizer opt{optim::MuonConfig()};
  test::expect_error([&] { opt.step(net, test::fixture_grads(net, 1)); },
                     {"[Muon]", "2-D", "fc1.bias", "[3]"});
  EXPECT_TRUE(equal(net.fc1.weight.dyn(), before));
  EXPECT_EQ(opt.steps(), 0);
}

TEST(Errors, UnknownGroupPatternNamesItAndTheModel) {
  Net net = test::fixture_net();
  Optimizer opt{optim::AdamWConfig()};
  opt.add_group("decoder", optim::GroupOptions().lr(1e-4));
  test::expect_error([&] { opt.step(net, test::fixture_grads(net, 1)); },
                     {"[AdamW]", "group 1", "\"decoder\"", "Net"});
}

TEST(Errors, GradientOfTheWrongShape) {
  Net net = test::fixture_net();
  optim::ParamGrads g;
  g.set(net.fc1.weight.id(), zeros(Shape{4, 3}, DType::f64));
  Optimizer opt{optim::SgdConfig()};
  g.set(net.fc1.bias->id(), ones(Shape{3}, DType::f64));  // a good one: not applied either
  const DynTensor bias = net.fc1.bias->dyn();
  test::expect_error([&] { opt.step(net, g); }, {"[SGD]", "fc1.weight", "[4, 3]", "[3, 4]"});
  EXPECT_TRUE(equal(net.fc1.bias->dyn(), bias));
  EXPECT_EQ(opt.steps(), 0);
}

}  // namespace
}  // namespace ember

namespace ember {
namespace {

// ---- a real training loop ----

// Each optimizer, driven by real backward passes, fits a small regression: the loss after 100
// steps is well below the first (the update direction and the state are right end to end).
TEST(Training, EveryOptimizerLowersTheLoss) {
  const std::vector<std::pair<const char*, std::function<Optimizer()>>> optimizers = {
      {"SGD", [] { return optim::SgdConfig().lr(0.1).momentum(0.9).init(); }},
      {"Adam", [] { return optim::AdamConfig().lr(0.01).init(); }},
      {"AdamW", [] { return optim::AdamWConfig().lr(0.01).amsgrad(true).init(); }},
      {"RMSprop", [] { return optim::RmspropConfig().lr(0.003).centered(true).init(); }},
      {"Adagrad", [] { return optim::AdagradConfig().lr(0.1).init(); }},
      {"Lion", [] { return optim::LionConfig().lr(0.01).init(); }},
      {"Adadelta", [] { return optim::AdadeltaConfig().init(); }},
      {"Adamax", [] { return optim::AdamaxConfig().lr(0.01).init(); }},
      {"NAdam", [] { return optim::NAdamConfig().lr(0.01).init(); }},
      {"RAdam", [] { return optim::RAdamConfig().lr(0.03).init(); }},
      {"Rprop", [] { return optim::RpropConfig().lr(0.001).init(); }},
      {"ASGD", [] { return optim::AsgdConfig().lr(0.3).init(); }},
      {"Adan", [] { return optim::AdanConfig().lr(0.01).init(); }},
  };
  Generator gen(3);
  const DynTensor x = randn(Shape{64, 8}, DType::f32, default_device(), &gen);
  const DynTensor y = randn(Shape{64, 4}, DType::f32, default_device(), &gen);
  for (const auto& [name, make] : optimizers) {
    SCOPED_TRACE(name);
    Mlp model = make_mlp(11);
    Optimizer opt = make();
    double first = 0, last = 0;
    for (int k = 0; k < 100; ++k) {
      const DynTensor d = sub(model.forward(x), y);
      const DynTensor loss = mean(mul(d, d));
      (k == 0 ? first : last) = loss.item<double>();
      opt.step(model, backward(loss));
    }
    EXPECT_LT(last, 0.7 * first) << "first " << first << ", last " << last;
  }
}

// The fused Adam step's front end (ember/tensor/ops/optim.hpp): state that does not match the
// parameter, or a missing amsgrad buffer, is an error naming the op and the shapes.
TEST(FusedAdam, MismatchedStateIsAnError) {
  const DynTensor p = randn(Shape{3, 4}, DType::f32), g = randn(Shape{3, 4}, DType::f32);
  const DynTensor m = zeros(Shape{3, 4}, DType::f32), v = zeros(Shape{4, 3}, DType::f32);
  AdamParams hp;
  try {
    adam_step({p, m, v, {}}, g, hp);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[adam_step] every tensor must match the parameter's "
                                         "[3, 4] float32, got [4, 3] float32"),
              std::string::npos)
        << e.what();
  }
  hp.amsgrad = true;
  EXPECT_THROW(adam_step({p, m, zeros(Shape{3, 4}, DType::f32), {}}, g, hp), Error);
  EXPECT_THROW(adam_step({p, m, m, {}}, randn(Shape{4, 3}, DType::f32), AdamParams{}), Error);
}

// The largest |a - b| over |b| + 1.
double rel_gap(const DynTensor& a, const DynTensor& b) {
  EXPECT_EQ(a.dtype(), b.dtype());
  const std::vector<double> va = a.to_vector<double>(), vb = b.to_vector<double>();
  double worst = 0;
  for (size_t i = 0; i < va.size(); ++i) {
    worst = std::max(worst, std::fabs(va[i] - vb[i]) / (std::fabs(vb[i]) + 1));
  }
  return worst;
}

// adam_step runs the fused kernel on the Cpu and the composite of tensor ops on a backend
// without one: both give the same step, in every configuration (decay coupled or decoupled,
// amsgrad), so the composite stays tested while every backend has the kernel.
TEST(FusedAdam, CompositeMatchesFused) {
  for (DType dt : {DType::f64, DType::f32}) {
    const double tol = dt == DType::f64 ? 1e-14 : 1e-6;
    Generator gen(12);
    const DynTensor p = randn(Shape{5, 7}, dt, Device::cpu(), &gen),
                    g = randn(Shape{5, 7}, dt, Device::cpu(), &gen);
    const DynTensor m = mul(randn(Shape{5, 7}, dt, Device::cpu(), &gen), 0.1),
                    v = rand(Shape{5, 7}, dt, Device::cpu(), &gen, 0.0, 0.01),
                    vmax = rand(Shape{5, 7}, dt, Device::cpu(), &gen, 0.0, 0.02);
    for (int config = 0; config < 6; ++config) {
      AdamParams hp;
      hp.lr = 0.01;
      hp.weight_decay = config % 3 == 0 ? 0 : 0.1;
      hp.decoupled = config % 3 == 2;
      hp.amsgrad = config >= 3;
      hp.bias_correction1 = 1 - std::pow(0.9, 3);
      hp.bias_correction2_sqrt = std::sqrt(1 - std::pow(0.999, 3));
      const AdamTensors state{p, m, v, hp.amsgrad ? vmax : DynTensor()};
      const AdamTensors fused = adam_step(state, g, hp);
      const AdamTensors composite = detail::adam_step_composite(state, g, hp);
      const std::string what = std::string(dtype_name(dt)) + " config " + std::to_string(config);
      EXPECT_LE(rel_gap(composite.param, fused.param), tol) << what;
      EXPECT_LE(rel_gap(composite.exp_avg, fused.exp_avg), tol) << what;
      EXPECT_LE(rel_gap(composite.exp_avg_sq, fused.exp_avg_sq), tol) << what;
      if (hp.amsgrad) {
        EXPECT_LE(rel_gap(composite.max_exp_avg_sq, fused.max_exp_avg_sq), tol) << what;
      }
      EXPECT_GT(rel_gap(fused.param, p), 1e-4) << what;  // a step was taken
    }
  }
}

// A gradient of another dtype promotes the update, as in PyTorch: adam_step runs the composite
// (the fused kernel wants one dtype).
TEST(FusedAdam, MixedDtypesPromoteThroughTheComposite) {
  const DynTensor p = randn(Shape{3, 4}, DType::f32), g = randn(Shape{3, 4}, DType::f64);
  const DynTensor m = zeros(Shape{3, 4}, DType::f32);
  const AdamTensors out = adam_step({p, m, m, {}}, g, AdamParams{});
  EXPECT_EQ(out.param.dtype(), DType::f64);
  EXPECT_EQ(rel_gap(out.param, detail::adam_step_composite({p, m, m, {}}, g, AdamParams{}).param),
            0.0);
}

}  // namespace
}  // namespace ember
