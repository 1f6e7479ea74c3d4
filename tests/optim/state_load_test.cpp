// Saved optimizer and schedule states that were doctored (a checkpoint's metadata is text anyone
// can edit): every bad value is a clear ember::Error naming the key and the value, never a cast
// of an out-of-range double (UB), and a failed load changes nothing.
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <ember/io/safetensors.hpp>

#include "optim_test_util.hpp"

namespace ember {
namespace {

using optim::Optimizer;
using optim::OptimizerState;
using Meta = std::map<std::string, std::string>;

// Adam after two steps of the fixture: steps 2, exp_avg and exp_avg_sq of every parameter that
// got a gradient.
struct Trained {
  test::Net net = test::fixture_net();
  Optimizer opt = optim::AdamConfig().lr(0.01).init();
  Trained() {
    opt.step(net, test::fixture_grads(net, 1));
    opt.step(net, test::fixture_grads(net, 2));
  }
};

// Loads `bad` into a trained optimizer: the error must hold every part, and the optimizer must be
// as it was.
void expect_refused(const OptimizerState& bad, std::initializer_list<std::string> parts) {
  Trained t;
  const OptimizerState before = t.opt.state(t.net);
  test::expect_error([&] { t.opt.load_state(t.net, bad); }, parts);
  const OptimizerState after = t.opt.state(t.net);
  EXPECT_EQ(after.metadata, before.metadata);
  ASSERT_EQ(after.tensors.size(), before.tensors.size());
  for (size_t i = 0; i < after.tensors.size(); ++i) {
    EXPECT_TRUE(equal(after.tensors[i].second, before.tensors[i].second));
  }
}

OptimizerState saved() {
  Trained t;
  return t.opt.state(t.net);
}

TEST(StateLoad, StepsThatAreNotCountsAreRefusedNamingKeyAndValue) {
  for (const std::string v : {"1e300", "nan", "NaN", "inf", "-1", "abc", "", "1.5", " 1", "+1",
                              "9223372036854775807", "99999999999999999999", "0x10"}) {
    SCOPED_TRACE(v);
    OptimizerState s = saved();
    s.metadata["step.fc1.weight"] = v;
    expect_refused(s, {"[Adam] the saved state's \"step.fc1.weight\" is \"" + v + "\"",
                       "not an integer in [0, 2^53]"});
  }
  OptimizerState s = saved();
  s.metadata["groups"] = "1e300";
  expect_refused(s, {"\"groups\" is \"1e300\", not an integer"});
}

TEST(StateLoad, GroupOptionsMustBeFiniteAndInRange) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"group.0.lr", "nan"},        {"group.0.lr", "inf"},          {"group.0.lr", "1e400"},
      {"group.0.lr", "abc"},        {"group.0.weight_decay", "-1"}, {"group.0.weight_decay", "nan"},
      {"group.0.momentum", "-0.5"}, {"group.0.initial_lr", "-inf"},
  };
  for (const auto& [key, v] : cases) {
    SCOPED_TRACE(key + " = " + v);
    OptimizerState s = saved();
    s.metadata[key] = v;
    expect_refused(s, {"[Adam] the saved state's \"" + key + "\" is \"" + v + "\", not a finite"});
  }
  OptimizerState s = saved();
  s.metadata["group.0.momentum"] = "1";  // Adam's beta1: bias correction would divide by 0
  expect_refused(s, {"\"group.0.momentum\" is 1, not below 1"});
}

TEST(StateLoad, MissingKeysAreNamed) {
  for (const std::string key : {"optimizer", "groups", "group.0.pattern", "group.0.lr",
                                "group.0.weight_decay", "group.0.momentum"}) {
    SCOPED_TRACE(key);
    OptimizerState s = saved();
    ASSERT_EQ(s.metadata.erase(key), 1u);
    expect_refused(s, {"[Adam] the saved state has no \"" + key + "\""});
  }
}

TEST(StateLoad, TensorsOfTheWrongShapeOrOfNoParameterAreRefused) {
  OptimizerState s = saved();
  bool found = false;
  for (auto& [name, t] : s.tensors) {
    if (name == "fc1.weight.exp_avg") {
      t = zeros(Shape{3, 3}, t.dtype());
      found = true;
    }
  }
  ASSERT_TRUE(found);
  expect_refused(s, {"[Adam] the saved fc1.weight.exp_avg has shape [3, 3]", "the parameter"});

  s = saved();
  s.metadata["step.nope.weight"] = "1";
  expect_refused(s, {"parameter \"nope.weight\", which Net does not have"});

  s = saved();
  s.tensors.emplace_back("nope.weight.exp_avg", zeros(Shape{2}, DType::f32));
  expect_refused(s, {"tensor \"nope.weight.exp_avg\" for a parameter Net does not have"});

  s = saved();
  s.tensors.emplace_back("fc1.weight.momentum_buffer", s.tensors[0].second);
  expect_refused(s, {"\"fc1.weight.momentum_buffer\", a buffer Adam does not keep",
                     "exp_avg, exp_avg_sq, max_exp_avg_sq"});
}

TEST(StateLoad, HostileValuesAreShownEscapedAndCutShort) {
  OptimizerState s = saved();
  s.metadata["step.fc1.weight"] = "\x1b]0;pwned\x07" + std::string(100000, '9');
  Trained t;
  try {
    t.opt.load_state(t.net, s);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_LT(what.size(), 400u) << what;
    EXPECT_EQ(what.find('\x1b'), std::string::npos);
    EXPECT_NE(what.find("\\x1b]0;pwned\\x07"), std::string::npos) << what;
    EXPECT_NE(what.find("(100010 bytes)"), std::string::npos) << what;
  }
}

TEST(StateLoad, ErrorsOfAFileNameTheFile) {
  const std::string path = ::testing::TempDir() + "/optim_doctored_state.safetensors";
  OptimizerState s = saved();
  s.metadata["step.fc2.bias"] = "-1";
  io::save_safetensors(s.tensors, path, s.metadata);
  Trained t;
  test::expect_error([&] { t.opt.load(t.net, path); },
                     {"[Adam] '" + path + "': the saved state's \"step.fc2.bias\" is \"-1\""});
  std::filesystem::remove(path);
}

// ---- schedules ----

// Loads `bad` into `sched`: the error must hold every part, and the schedule must be as it was.
template <class S>
void expect_sched_refused(S& sched, const Meta& bad, std::initializer_list<std::string> parts) {
  const Meta before = sched.state();
  test::expect_error([&] { sched.load_state(bad); }, parts);
  EXPECT_EQ(sched.state(), before);
}

TEST(StateLoad, ScheduleCountsAndListsAreChecked) {
  Optimizer opt = optim::SgdConfig().lr(0.1).init();
  opt.add_group("fc2", optim::GroupOptions().lr(0.2));
  optim::StepLR sched(opt, 2, 0.5);
  for (int i = 0; i < 3; ++i) sched.step();
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {"last_epoch", "1e300", "not an integer in [-2^53, 2^53]"},
      {"last_epoch", "nan", "not an integer"},
      {"last_epoch", "abc", "not an integer"},
      {"step_count", "-1", "not an integer in [0, 2^53]"},
      {"base_lrs", "0.1,nan", "not 2 comma-separated finite number(s)"},
      {"base_lrs", "0.1", "not 2 comma-separated finite number(s)"},
      {"last_lr", "0.1,0.2,0.3", "not 2 comma-separated"},
      {"last_lr", "0.1,", "not 2 comma-separated"},
      {"last_lr", "", "not 2 comma-separated"},
  };
  for (const auto& [key, v, why] : cases) {
    SCOPED_TRACE(key + " = " + v);
    Meta s = sched.state();
    s[key] = v;
    expect_sched_refused(sched, s, {"[StepLR] the saved state's \"" + key + "\" is \"" + v, why});
  }
  for (const std::string key : {"scheduler", "last_epoch", "step_count", "base_lrs", "last_lr"}) {
    Meta s = sched.state();
    s.erase(key);
    expect_sched_refused(sched, s, {"[StepLR] the saved state has no \"" + key + "\""});
  }
}

TEST(StateLoad, ScheduleOwnCountersAreChecked) {
  Optimizer opt = optim::SgdConfig().lr(0.1).init();
  optim::CosineAnnealingWarmRestarts warm(opt, 3, 2);
  for (int i = 0; i < 4; ++i) warm.step();
  for (const auto& [key, v] : std::vector<std::pair<std::string, std::string>>{
           {"t_i", "0"}, {"t_i", "-3"}, {"t_cur", "-1"}, {"t_cur", "6"}, {"t_cur", "1e300"}}) {
    SCOPED_TRACE(key + " = " + v);
    Meta s = warm.state();
    s[key] = v;
    expect_sched_refused(warm, s, {"the saved state's \"" + key + "\" is \"" + v + "\""});
  }

  Optimizer opt2 = optim::SgdConfig().lr(0.1).init();
  optim::ReduceLROnPlateau plateau(opt2, optim::PlateauConfig().patience(1));
  plateau.step(1.0);
  for (const auto& [key, v] : std::vector<std::pair<std::string, std::string>>{
           {"best", "nan"}, {"num_bad_epochs", "-1"}, {"cooldown_counter", "1e300"}}) {
    SCOPED_TRACE(key + " = " + v);
    Meta s = plateau.state();
    s[key] = v;
    expect_sched_refused(plateau, s, {"the saved state's \"" + key + "\" is \"" + v + "\""});
  }
  Meta s = plateau.state();
  s["best"] = "inf";  // a fresh "min" schedule's best
  plateau.load_state(s);
  EXPECT_TRUE(std::isinf(plateau.best()));
}

TEST(StateLoad, AChildScheduleBadStateChangesNoSchedule) {
  Optimizer opt = optim::SgdConfig().lr(0.1).init();
  optim::SequentialLR seq(opt, {optim::LinearLR(opt, 0.1, 1.0, 3), optim::StepLR(opt, 2)}, {3});
  for (int i = 0; i < 5; ++i) seq.step();
  Meta s = seq.state();
  s["last_epoch"] = "1";  // the parent's part is fine and would load first
  s["1.last_epoch"] = "1e300";
  expect_sched_refused(seq, s,
                       {"[SequentialLR] schedule 1 (keys \"1.*\"): [StepLR] the saved state's "
                        "\"last_epoch\" is \"1e300\""});
}

}  // namespace
}  // namespace ember
