// Losses: every option set against PyTorch (fixtures/make_loss_fixtures.py), value and gradients,
// in float64 to 1e-10; finite-difference gradient checks, first and second order; error paths.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <string>

#include "autodiff/fixture.hpp"
#include "autodiff/gradcheck.hpp"
#include "ember/ember.hpp"

using namespace ember;
using namespace ember::nn;
using ember::test::GradInput;

namespace {

// float64 parity tolerance: both sides compute the same formulas, so only rounding differs.
constexpr double kTol = 1e-10;

using Fixture = std::map<std::string, DynTensor>;

const Fixture& fixture() {
  static const Fixture f = ember::test::load_fixture(EMBER_NN_FIXTURES "/losses.txt");
  return f;
}
// Issue 14's losses and edge cases (written with another seed, see the script).
const Fixture& fixture_more() {
  static const Fixture f = ember::test::load_fixture(EMBER_NN_FIXTURES "/losses_more.txt");
  return f;
}

// The loss of fixture case `id` (e.g. "cross_entropy/3") on the given inputs.
DynTensor run_case(const Fixture& f, const std::string& id, const DynTensor& input,
                   const DynTensor& input2, const DynTensor& input3, const DynTensor& target) {
  const std::string kind = id.substr(0, id.find('/'));
  auto opt = [&](const char* name, double fallback) {
    const auto it = f.find(id + "." + name);
    return it == f.end() ? fallback : it->second.item<double>();
  };
  auto tensor = [&](const char* name) {
    const auto it = f.find(id + "." + name);
    return it == f.end() ? DynTensor() : it->second;
  };
  const auto reduction = static_cast<Reduction>(static_cast<int>(opt("reduction", 1)));
  const auto ignore_index = static_cast<int64_t>(opt("ignore_index", -100));
  const double param = opt("param", 0.0);
  if (kind == "cross_entropy") {
    return cross_entropy(input, target,
                         {.weight = tensor("weight"),
                          .ignore_index = ignore_index,
                          .reduction = reduction,
                          .label_smoothing = opt("label_smoothing", 0.0)});
  }
  if (kind == "nll_loss") {
    return nll_loss(
        input, target,
        {.weight = tensor("weight"), .ignore_index = ignore_index, .reduction = reduction});
  }
  if (kind == "mse_loss") return mse_loss(input, target, reduction);
  if (kind == "l1_loss") return l1_loss(input, target, reduction);
  if (kind == "huber_loss") return huber_loss(input, target, reduction, param);
  if (kind == "smooth_l1_loss") return smooth_l1_loss(input, target, reduction, param);
  if (kind == "binary_cross_entropy") {
    return binary_cross_entropy(input, target,
                                {.weight = tensor("weight"), .reduction = reduction});
  }
  if (kind == "binary_cross_entropy_with_logits") {
    return binary_cross_entropy_with_logits(
        input, target,
        {.weight = tensor("weight"), .pos_weight = tensor("pos_weight"), .reduction = reduction});
  }
  if (kind == "kl_div") return kl_div(input, target, reduction, opt("log_target", 0.0) != 0.0);
  if (kind == "cosine_embedding_loss") {
    return cosine_embedding_loss(input, input2, target, param, reduction);
  }
  if (kind == "margin_ranking_loss") {
    return margin_ranking_loss(input, input2, target, param, reduction);
  }
  if (kind == "poisson_nll_loss") {
    return poisson_nll_loss(input, target,
                            {.log_input = opt("log_input", 1.0) != 0.0,
                             .full = opt("full", 0.0) != 0.0,
                             .eps = opt("eps", 1e-8),
                             .reduction = reduction});
  }
  if (kind == "gaussian_nll_loss") {
    return gaussian_nll_loss(
        input, target, input3,
        {.full = opt("full", 0.0) != 0.0, .eps = opt("eps", 1e-6), .reduction = reduction});
  }
  if (kind == "triplet_margin_loss") {
    return triplet_margin_loss(input, input2, input3,
                               {.margin = param,
                                .p = opt("p", 2.0),
                                .eps = opt("eps", 1e-6),
                                .swap = opt("swap", 0.0) != 0.0,
                                .reduction = reduction});
  }
  if (kind == "hinge_embedding_loss") return hinge_embedding_loss(input, target, param, reduction);
  if (kind == "multilabel_margin_loss") return multilabel_margin_loss(input, target, reduction);
  if (kind == "multilabel_soft_margin_loss") {
    return multilabel_soft_margin_loss(input, target, tensor("weight"), reduction);
  }
  if (kind == "multi_margin_loss") {
    return multi_margin_loss(input, target,
                             {.p = static_cast<int>(opt("p", 1.0)),
                              .margin = param,
                              .weight = tensor("weight"),
                              .reduction = reduction});
  }
  if (kind == "soft_margin_loss") return soft_margin_loss(input, target, reduction);
  if (kind == "ctc_loss") {  // `input` holds logits (see the script)
    return ctc_loss(log_softmax(input, -1), target, cast(tensor("input_lengths"), DType::i64),
                    cast(tensor("target_lengths"), DType::i64),
                    {.blank = static_cast<int64_t>(opt("blank", 0.0)),
                     .reduction = reduction,
                     .zero_infinity = opt("zero_infinity", 0.0) != 0.0});
  }
  if (kind == "lp_loss") return lp_loss(input, target, opt("p", 2.0), reduction);
  if (kind == "rnnt_loss") {
    return rnnt_loss(input, target, cast(tensor("input_lengths"), DType::i64),
                     cast(tensor("target_lengths"), DType::i64),
                     {.blank = static_cast<int64_t>(opt("blank", -1.0)),
                      .reduction = reduction,
                      .fused_log_softmax = opt("fused_log_softmax", 1.0) != 0.0});
  }
  ADD_FAILURE() << "unknown loss in the fixture: " << kind;
  return {};
}

bool is_class_index_case(const Fixture& f, const std::string& id) {
  const std::string kind = id.substr(0, id.find('/'));
  return kind == "nll_loss" || kind == "multilabel_margin_loss" || kind == "multi_margin_loss" ||
         kind == "ctc_loss" || kind == "rnnt_loss" ||
         (kind == "cross_entropy" && f.at(id + ".input").shape() != f.at(id + ".target").shape());
}

// max |a - b| / max(1, |b|) (absolute below 1, relative above: gaussian_nll's var clamped at
// 1e-6 makes losses of 1e6), where NaN matches NaN only and inf matches inf.
double max_diff(const DynTensor& a, const DynTensor& b) {
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  double m = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) || std::isnan(y[i])) {
      if (std::isnan(x[i]) != std::isnan(y[i])) return INFINITY;
      continue;
    }
    if (x[i] == y[i]) continue;  // infinities too
    m = std::max(m, std::fabs(x[i] - y[i]) / std::max(1.0, std::fabs(y[i])));
  }
  return m;
}

struct ParityStats {
  int cases = 0, compared = 0;
  double max_loss = 0.0, max_grad = 0.0;
};

// Every case of a fixture against PyTorch: the loss and the gradient of each input.
void check_parity(const Fixture& f, int expected_cases, size_t expected_kinds) {
  ParityStats stats;
  std::map<std::string, int> per_kind;
  for (const auto& [key, loss_ref] : f) {
    if (!key.ends_with(".loss")) continue;
    const std::string id = key.substr(0, key.size() - 5);
    SCOPED_TRACE(id);
    ++stats.cases;
    ++per_kind[id.substr(0, id.find('/'))];
    const bool class_index = is_class_index_case(f, id);
    // The target's gradient is not compared where PyTorch has none to compare with.
    const bool has_target = f.contains(id + ".target");  // triplet has three inputs instead
    const bool target_grad = has_target && !class_index && !f.contains(id + ".target_nograd");
    DynTensor input = require_grad(f.at(id + ".input"));
    auto optional_input = [&](const char* name) {
      return f.contains(id + name) ? require_grad(f.at(id + name)) : DynTensor();
    };
    DynTensor input2 = optional_input(".input2"), input3 = optional_input(".input3");
    DynTensor target = has_target ? f.at(id + ".target") : DynTensor();
    if (class_index) target = cast(target, DType::i64);
    if (target_grad) target = require_grad(target);

    const DynTensor loss = run_case(f, id, input, input2, input3, target);
    ASSERT_EQ(loss.shape(), loss_ref.shape());
    const double dl = max_diff(loss, loss_ref);
    EXPECT_LE(dl, kTol) << "loss " << loss.to_vector<double>()[0] << " vs torch "
                        << loss_ref.to_vector<double>()[0];
    stats.max_loss = std::max(stats.max_loss, dl);

    std::vector<DynTensor> wrt = {input};
    std::vector<std::string> names = {"input"};
    if (input2.defined()) wrt.push_back(input2), names.push_back("input2");
    if (input3.defined()) wrt.push_back(input3), names.push_back("input3");
    if (target_grad) wrt.push_back(target), names.push_back("target");
    const std::vector<DynTensor> grads = grad(loss, wrt, f.at(id + ".seed"));
    for (size_t i = 0; i < wrt.size(); ++i) {
      const auto it = f.find(id + ".grad_" + names[i]);
      if (it == f.end()) {  // PyTorch gives no gradient here: none, or zeros
        if (grads[i].defined()) {
          EXPECT_EQ(amax(abs(grads[i])).item<double>(), 0.0) << names[i];
        }
        continue;
      }
      ASSERT_TRUE(grads[i].defined()) << "no gradient for " << names[i];
      ASSERT_EQ(grads[i].shape(), it->second.shape()) << names[i];
      const double dg = max_diff(grads[i], it->second);
      EXPECT_LE(dg, kTol) << "gradient w.r.t. " << names[i];
      stats.max_grad = std::max(stats.max_grad, dg);
      ++stats.compared;
    }
  }
  EXPECT_EQ(stats.cases, expected_cases);
  EXPECT_EQ(per_kind.size(), expected_kinds);
  std::printf(
      "[ parity ] %d cases, %d gradients; max |loss - torch| %.3g, max |grad - torch| %.3g\n",
      stats.cases, stats.compared, stats.max_loss, stats.max_grad);
}

}  // namespace

TEST(LossParity, EveryCaseMatchesTorchFloat64) { check_parity(fixture(), 349, 11); }

// poisson_nll, gaussian_nll, triplet_margin, hinge_embedding, multilabel_margin,
// multilabel_soft_margin, multi_margin, soft_margin, ctc; l1 / huber / smooth_l1 at ties and
// binary_cross_entropy saturated at 0 and 1; Burn's lp_loss and rnnt_loss (references written in
// the script, torch having neither).
TEST(LossParity, Issue14CasesMatchTorchFloat64) { check_parity(fixture_more(), 321, 15); }

// The fused cross_entropy node against the composite it replaces, in float32 too.
TEST(LossParity, FusedCrossEntropyMatchesComposite) {
  for (DType dtype : {DType::f64, DType::f32}) {
    const DynTensor x0 = cast(randn({16, 10, 3}, DType::f64, default_device(), nullptr), dtype);
    const DynTensor t = randint(0, 10, {16, 3}, DType::i64);
    const DynTensor w = rand({10}, dtype);
    for (Reduction r : {Reduction::Mean, Reduction::Sum}) {
      const DynTensor a = require_grad(x0), b = require_grad(x0);
      const DynTensor fused = cross_entropy(a, t, {.weight = w, .reduction = r});
      const DynTensor composite = nll_loss(log_softmax(b, 1), t, {.weight = w, .reduction = r});
      const double tol = dtype == DType::f64 ? 1e-12 : 1e-5;
      EXPECT_NEAR(fused.item<double>(), composite.item<double>(), tol);
      const DynTensor ga = grad(fused, {a})[0], gb = grad(composite, {b})[0];
      EXPECT_TRUE(allclose(ga, gb, tol, tol));
    }
  }
}

TEST(LossParity, TypedForms) {
  auto x = Tensor<2>::randn({4, 3}).require_grad();
  auto t = Tensor<1, Int>::from_vector<int64_t>({0, 2, 1, 2});
  Tensor<0> l = nn::cross_entropy(x, t, {.label_smoothing = 0.1});
  EXPECT_TRUE(std::isfinite(l.item<float>()));
  EXPECT_EQ(x.grad(l.backward()).dims(), (std::array<int64_t, 2>{4, 3}));
  auto y = Tensor<2>::randn({4, 3});
  EXPECT_NEAR(nn::mse_loss(x, y).item<float>(), ((x - y) * (x - y)).mean().item<float>(), 1e-6);
  EXPECT_GT(nn::kl_div(x.log_softmax(1), y.softmax(1), Reduction::BatchMean).item<float>(), 0.0f);
  auto probs = Tensor<2>::rand({4, 3});
  EXPECT_TRUE(std::isfinite(nn::cross_entropy(x, probs).item<float>()));
  EXPECT_THROW(nn::mse_loss(x, y, Reduction::None), Error);
  // Issue 14's typed forms.
  EXPECT_GE(nn::triplet_margin_loss(x, y, probs, {.swap = true}).item<float>(), 0.0f);
  EXPECT_GE(nn::multi_margin_loss(x, t, {.p = 2}).item<float>(), 0.0f);
  EXPECT_GE(nn::multilabel_margin_loss(x, Tensor<2, Int>::full({4, 3}, -1)).item<float>(), 0.0f);
  EXPECT_TRUE(std::isfinite(nn::gaussian_nll_loss(x, y, Tensor<1>::ones({4})).item<float>()));
  EXPECT_GE(nn::lp_loss(x, y, 3.0).item<float>(), 0.0f);
  auto joint = Tensor<4>::randn({2, 3, 3, 4});
  auto rnnt = nn::rnnt_loss(joint, Tensor<2, Int>::ones({2, 2}), Tensor<1, Int>::full({2}, 3),
                            Tensor<1, Int>::full({2}, 2));
  EXPECT_GT(rnnt.item<float>(), 0.0f);
}

// Finite differences, first and second order, on every loss (PyTorch differentiates each
// of them twice).
TEST(LossGradcheck, EveryLossFirstAndSecondOrder) {
  using test::gradcheck;
  using test::gradgradcheck;
  using test::random_values;
  auto in = [](Shape s, double lo, double hi, uint32_t seed) {
    return GradInput{s, test::Layout::Contiguous, random_values(s.numel(), lo, hi, false, seed)};
  };
  auto strided = [](Shape s, double lo, double hi, uint32_t seed) {
    return GradInput{s, test::Layout::Strided, random_values(s.numel(), lo, hi, false, seed)};
  };
  const DynTensor t4 = from_data(TensorData::from(std::vector<int64_t>{0, 2, 1, -100}, {4}));
  const DynTensor w3 = from_data(TensorData::from(std::vector<double>{0.5, 1.5, 1.0}, {3}));
  const DynTensor ts = from_data(TensorData::from(std::vector<int64_t>{0, 2, 1, 1}, {2, 2}));
  const DynTensor sign = from_data(TensorData::from(std::vector<double>{1, -1, -1, 1}, {4}));
  struct Case {
    std::string name;
    test::GradFn f;
    std::vector<GradInput> inputs;
  };
  const std::vector<Case> cases = {
      {"cross_entropy",
       [&](const std::vector<DynTensor>& v) {
         return cross_entropy(v[0], t4, {.weight = w3, .label_smoothing = 0.2});
       },
       {strided({4, 3}, -2, 2, 1)}},
      {"cross_entropy spatial none",
       [&](const std::vector<DynTensor>& v) {
         return cross_entropy(v[0], ts, {.ignore_index = 2, .reduction = Reduction::None});
       },
       {in({2, 3, 2}, -2, 2, 2)}},
      {"cross_entropy probs",
       [&](const std::vector<DynTensor>& v) {
         return cross_entropy(v[0], v[1], {.weight = w3, .label_smoothing = 0.1});
       },
       {in({4, 3}, -2, 2, 3), in({4, 3}, 0, 1, 4)}},
      {"nll_loss",
       [&](const std::vector<DynTensor>& v) { return nll_loss(v[0], t4, {.weight = w3}); },
       {in({4, 3}, -3, 0, 5)}},
      {"mse_loss",
       [](const std::vector<DynTensor>& v) { return mse_loss(v[0], v[1]); },
       {in({3, 4}, -2, 2, 6), strided({3, 4}, -2, 2, 7)}},
      {"l1_loss",
       [](const std::vector<DynTensor>& v) { return l1_loss(v[0], v[1], Reduction::Sum); },
       {in({3, 4}, -2, 2, 8), in({3, 4}, -2, 2, 9)}},
      {"huber_loss",
       [](const std::vector<DynTensor>& v) { return huber_loss(v[0], v[1], Reduction::Mean, 0.7); },
       {in({3, 4}, -2, 2, 10), in({3, 4}, -2, 2, 11)}},
      {"smooth_l1_loss",
       [](const std::vector<DynTensor>& v) {
         return smooth_l1_loss(v[0], v[1], Reduction::None, 0.6);
       },
       {in({3, 4}, -2, 2, 12), in({3, 4}, -2, 2, 13)}},
      {"binary_cross_entropy",
       [&](const std::vector<DynTensor>& v) {
         return binary_cross_entropy(v[0], v[1], {.weight = w3});
       },
       {in({4, 3}, 0.05, 0.95, 14), in({4, 3}, 0, 1, 15)}},
      {"binary_cross_entropy_with_logits",
       [&](const std::vector<DynTensor>& v) {
         return binary_cross_entropy_with_logits(v[0], v[1], {.weight = w3, .pos_weight = w3});
       },
       {in({4, 3}, -4, 4, 16), in({4, 3}, 0, 1, 17)}},
      {"kl_div",
       [](const std::vector<DynTensor>& v) { return kl_div(v[0], v[1], Reduction::BatchMean); },
       {in({3, 4}, -3, 0, 18), in({3, 4}, 0.1, 1, 19)}},
      {"kl_div log_target",
       [](const std::vector<DynTensor>& v) { return kl_div(v[0], v[1], Reduction::Sum, true); },
       {in({3, 4}, -3, 0, 20), in({3, 4}, -3, 0, 21)}},
      {"cosine_embedding_loss",
       [&](const std::vector<DynTensor>& v) {
         return cosine_embedding_loss(v[0], v[1], sign, -0.5);
       },
       {in({4, 5}, -2, 2, 22), in({4, 5}, -2, 2, 23)}},
      {"margin_ranking_loss",
       [](const std::vector<DynTensor>& v) {
         return margin_ranking_loss(v[0], v[1], v[2], 0.1, Reduction::Sum);
       },
       {in({6}, -2, 2, 24), in({6}, -2, 2, 25), in({6}, -1, 1, 26)}},
  };
  for (const Case& c : cases) {
    EXPECT_TRUE(gradcheck(c.name, c.f, c.inputs)) << c.name;
    EXPECT_TRUE(gradgradcheck(c.name, c.f, c.inputs)) << c.name;
  }
}

TEST(LossErrors, ClearMessages) {
  const DynTensor x = randn({4, 3}, DType::f32);
  auto expect_error = [](const std::function<void()>& fn, const std::string& text) {
    try {
      fn();
      synchronize(default_device());  // a range error of a queued check is raised here
      ADD_FAILURE() << "no error; expected: " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  const DynTensor t5 = zeros({5}, DType::i64);
  expect_error([&] { (void)cross_entropy(x, t5); },
               "[cross_entropy] target has 5 entries but input has batch 4");
  expect_error(
      [&] {
        (void)cross_entropy(x, zeros({4, 2}, DType::i64));
      },
      "[cross_entropy] target shape [4, 2] does not fit input shape [4, 3]");
  expect_error([&] { (void)cross_entropy(x, full({4}, 3, DType::i64)); },
               "[cross_entropy] target class 3 is out of range for 3 classes");
  expect_error([&] { (void)nll_loss(x, full({4}, -1, DType::i64)); },
               "[nll_loss] target class -1 is out of range");
  expect_error(
      [&] { (void)cross_entropy(x, zeros({4}, DType::i64), {.weight = ones({4}, DType::f32)}); },
      "[cross_entropy] weight must have shape [3]");
  expect_error([&] { (void)cross_entropy(x, zeros({4}, DType::i64), {.label_smoothing = 1.5}); },
               "label_smoothing must be in [0, 1]");
  expect_error(
      [&] {
        (void)cross_entropy(x, rand({4, 3}, DType::f32), {.ignore_index = 0});
      },
      "ignore_index is not supported for probability targets");
  expect_error([&] { (void)cross_entropy(x, zeros({4}, DType::boolean)); },
               "[cross_entropy] class-index target must be an Int tensor");
  expect_error([&] { (void)mse_loss(x, randn({4}, DType::f32)); },
               "[mse_loss] target shape [4] differs from input shape [4, 3]");
  expect_error([&] { (void)l1_loss(x, x, Reduction::BatchMean); },
               "[l1_loss] Reduction::BatchMean is only for kl_div");
  expect_error([&] { (void)huber_loss(x, x, Reduction::Mean, 0.0); },
               "[huber_loss] delta must be positive");
  expect_error([&] { (void)smooth_l1_loss(x, x, Reduction::Mean, -1.0); },
               "[smooth_l1_loss] beta must be non-negative");
  expect_error(
      [&] {
        (void)binary_cross_entropy(add(x, 5.0), rand({4, 3}, DType::f32));
      },
      "[binary_cross_entropy] input values must be probabilities in [0, 1]");
  expect_error(
      [&] { (void)binary_cross_entropy_with_logits(x, x, {.pos_weight = ones({4}, DType::f32)}); },
      "[binary_cross_entropy_with_logits] pos_weight shape [4] does not broadcast to input shape "
      "[4, 3]");
  expect_error(
      [&] {
        (void)kl_div(x, zeros({4, 3}, DType::i64));
      },
      "[kl_div] target must be a floating tensor");
  expect_error([&] { (void)cosine_embedding_loss(x, x, ones({3}, DType::f32)); },
               "[cosine_embedding_loss] target shape [3] does not fit inputs of shape [4, 3]");
  expect_error([&] { (void)margin_ranking_loss(x, x, ones({4}, DType::f32)); },
               "[margin_ranking_loss] target shape [4] differs from input shape [4, 3]");
  expect_error(
      [&] {
        (void)cross_entropy(zeros({4, 3}, DType::i64), zeros({4}, DType::i64));
      },
      "[cross_entropy] input must be a floating tensor");
}

// Ignored targets add nothing; the mean is over the others, and all ignored gives NaN with a
// zero gradient (PyTorch's behaviour).
TEST(LossSemantics, IgnoreIndex) {
  const DynTensor x = require_grad(randn({3, 4}, DType::f64));
  const DynTensor t = from_data(TensorData::from(std::vector<int64_t>{1, -100, 3}, {3}));
  const DynTensor all = cross_entropy(x, t);
  const DynTensor kept = cross_entropy(
      index_select(x, 0, from_data(TensorData::from(std::vector<int64_t>{0, 2}, {2}))),
      from_data(TensorData::from(std::vector<int64_t>{1, 3}, {2})));
  EXPECT_NEAR(all.item<double>(), kept.item<double>(), 1e-12);
  const DynTensor none = cross_entropy(x, full({3}, -100, DType::i64));
  EXPECT_TRUE(std::isnan(none.item<double>()));
  EXPECT_EQ(amax(abs(grad(none, {x})[0])).item<double>(), 0.0);
}

// Issue 14's losses against finite differences, first and second order. ctc_loss is checked on
// raw log-probabilities: Ember's is the true gradient (PyTorch's adds exp(log_probs), which only
// log_softmax's backward cancels; docs/NN.md).
TEST(LossGradcheck, Issue14LossesFirstAndSecondOrder) {
  using test::gradcheck;
  using test::gradgradcheck;
  using test::random_values;
  auto in = [](Shape s, double lo, double hi, uint32_t seed) {
    return GradInput{s, test::Layout::Contiguous, random_values(s.numel(), lo, hi, false, seed)};
  };
  auto strided = [](Shape s, double lo, double hi, uint32_t seed) {
    return GradInput{s, test::Layout::Strided, random_values(s.numel(), lo, hi, false, seed)};
  };
  const DynTensor w5 =
      from_data(TensorData::from(std::vector<double>{0.5, 1.5, 1.0, 2.0, 0.7}, {5}));
  const DynTensor sign6 =
      from_data(TensorData::from(std::vector<double>{1, -1, -1, 1, -1, 1}, {6}));
  const DynTensor labels = from_data(TensorData::from(
      std::vector<int64_t>{3, 0, -1, 4, 1, 2, 4, -1, 0, 0, 1, -1, 2, 3, 4}, {3, 5}));
  const DynTensor classes = from_data(TensorData::from(std::vector<int64_t>{1, 4, 0, 2}, {4}));
  const DynTensor ctc_targets =
      from_data(TensorData::from(std::vector<int64_t>{1, 2, 2, 3, 1, 0}, {2, 3}));
  const DynTensor ctc_in = from_data(TensorData::from(std::vector<int64_t>{7, 5}, {2}));
  const DynTensor ctc_tl = from_data(TensorData::from(std::vector<int64_t>{3, 2}, {2}));
  struct Case {
    std::string name;
    test::GradFn f;
    std::vector<GradInput> inputs;
    bool second_order = true;
  };
  const std::vector<Case> cases = {
      {"poisson_nll_loss full",
       [](const std::vector<DynTensor>& v) { return poisson_nll_loss(v[0], v[1], {.full = true}); },
       {in({3, 4}, -2, 2, 31), in({3, 4}, 0.1, 4, 32)}},
      {"poisson_nll_loss rates",
       [](const std::vector<DynTensor>& v) {
         return poisson_nll_loss(v[0], v[1], {.log_input = false, .reduction = Reduction::Sum});
       },
       {strided({3, 4}, 0.2, 3, 33), in({3, 4}, 0, 4, 34)}},
      {"gaussian_nll_loss",
       [](const std::vector<DynTensor>& v) {
         return gaussian_nll_loss(v[0], v[1], v[2], {.full = true});
       },
       {in({3, 4}, -2, 2, 35), in({3, 4}, -2, 2, 36), in({3}, 0.2, 2, 37)}},
      {"triplet_margin_loss swap",
       [](const std::vector<DynTensor>& v) {
         return triplet_margin_loss(v[0], v[1], v[2], {.margin = 2.0, .swap = true});
       },
       {in({4, 5}, -1, 1, 38), in({4, 5}, -1, 1, 39), strided({4, 5}, -1, 1, 40)}},
      {"triplet_margin_loss p=1",
       [](const std::vector<DynTensor>& v) {
         return triplet_margin_loss(v[0], v[1], v[2],
                                    {.margin = 3.0, .p = 1.0, .reduction = Reduction::None});
       },
       {in({4, 5}, -1, 1, 41), in({4, 5}, -1, 1, 42), in({4, 5}, -1, 1, 43)}},
      {"triplet_margin_loss p=3",
       [](const std::vector<DynTensor>& v) {
         return triplet_margin_loss(v[0], v[1], v[2], {.margin = 2.0, .p = 3.0});
       },
       {in({5}, -1, 1, 44), in({5}, -1, 1, 45), in({5}, -1, 1, 46)}},
      {"hinge_embedding_loss",
       [&](const std::vector<DynTensor>& v) {
         return hinge_embedding_loss(v[0], sign6, 0.5, Reduction::Sum);
       },
       {in({6}, -2, 2, 47)}},
      {"multilabel_margin_loss",
       [&](const std::vector<DynTensor>& v) { return multilabel_margin_loss(v[0], labels); },
       {strided({3, 5}, -2, 2, 48)}},
      {"multilabel_soft_margin_loss",
       [&](const std::vector<DynTensor>& v) {
         return multilabel_soft_margin_loss(v[0], v[1], w5, Reduction::None);
       },
       {in({3, 5}, -3, 3, 49), in({3, 5}, 0, 1, 50)}},
      {"multi_margin_loss p=1",
       [&](const std::vector<DynTensor>& v) {
         return multi_margin_loss(v[0], classes, {.margin = 0.8, .weight = w5});
       },
       {in({4, 5}, -2, 2, 51)}},
      {"multi_margin_loss p=2",
       [&](const std::vector<DynTensor>& v) {
         return multi_margin_loss(v[0], classes, {.p = 2, .reduction = Reduction::None});
       },
       {in({4, 5}, -2, 2, 52)}},
      {"soft_margin_loss",
       [](const std::vector<DynTensor>& v) { return soft_margin_loss(v[0], v[1]); },
       {in({3, 4}, -3, 3, 53), in({3, 4}, -2, 2, 54)}},
      {"ctc_loss",
       [&](const std::vector<DynTensor>& v) {
         return ctc_loss(v[0], ctc_targets, ctc_in, ctc_tl, {.reduction = Reduction::None});
       },
       {in({7, 2, 4}, -3, 0, 55)},
       false},
      {"ctc_loss mean blank 3",
       [&](const std::vector<DynTensor>& v) {
         return ctc_loss(log_softmax(v[0], -1), ctc_targets, ctc_in, ctc_tl, {.blank = 3});
       },
       {in({7, 2, 4}, -2, 2, 56)}},
  };
  const DynTensor rnnt_targets =
      from_data(TensorData::from(std::vector<int64_t>{1, 2, 0, 2, 1, 1}, {3, 2}));
  const DynTensor rnnt_t = from_data(TensorData::from(std::vector<int64_t>{3, 2, 1}, {3}));
  const DynTensor rnnt_u = from_data(TensorData::from(std::vector<int64_t>{2, 1, 2}, {3}));
  const std::vector<Case> more = {
      {"lp_loss p=3",
       [](const std::vector<DynTensor>& v) { return lp_loss(v[0], v[1], 3.0); },
       {in({3, 4}, -2, 2, 57), in({3, 4}, -2, 2, 58)}},
      {"lp_loss p=1.5",
       [](const std::vector<DynTensor>& v) { return lp_loss(v[0], v[1], 1.5, Reduction::None); },
       {in({5}, -2, 2, 59), in({5}, -2, 2, 60)}},
      {"rnnt_loss",
       [&](const std::vector<DynTensor>& v) {
         return rnnt_loss(v[0], rnnt_targets, rnnt_t, rnnt_u, {.reduction = Reduction::None});
       },
       {in({3, 3, 3, 3}, -2, 2, 61)}},
  };
  for (const Case& c : more) {
    EXPECT_TRUE(gradcheck(c.name, c.f, c.inputs)) << c.name;
    EXPECT_TRUE(gradgradcheck(c.name, c.f, c.inputs)) << c.name;
  }
  for (const Case& c : cases) {
    EXPECT_TRUE(gradcheck(c.name, c.f, c.inputs)) << c.name;
    if (c.second_order) {
      EXPECT_TRUE(gradgradcheck(c.name, c.f, c.inputs)) << c.name;
    }
  }
}

// Issue 14, edge cases: binary_cross_entropy saturated at exactly 0 and 1 gives PyTorch's
// finite loss (each log clamped at -100) and finite gradients, in f64 and f32.
TEST(LossEdgeCases, BinaryCrossEntropySaturated) {
  for (DType dtype : {DType::f64, DType::f32}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    const DynTensor x = require_grad(
        cast(from_data(TensorData::from(std::vector<double>{0, 1, 0, 1}, {4})), dtype));
    const DynTensor t = require_grad(
        cast(from_data(TensorData::from(std::vector<double>{0, 1, 1, 0}, {4})), dtype));
    const DynTensor loss = binary_cross_entropy(x, t, {.reduction = Reduction::None});
    EXPECT_EQ(loss.to_vector<double>(), (std::vector<double>{0, 0, 100, 100}));
    const std::vector<DynTensor> g = grad(binary_cross_entropy(x, t), {x, t});
    // ATen: (x - t) / max(x (1 - x), 1e-12) / 4; the target's: the clamped logs' difference / 4.
    const std::vector<double> gx = g[0].to_vector<double>(), gt = g[1].to_vector<double>();
    const double big = 0.25 / static_cast<double>(1e-12f);
    EXPECT_EQ(gx[0], 0.0);
    EXPECT_EQ(gx[1], 0.0);
    EXPECT_NEAR(gx[2], -big, big * 1e-6);
    EXPECT_NEAR(gx[3], big, big * 1e-6);
    EXPECT_EQ(gt, (std::vector<double>{25, -25, 25, -25}));
  }
}

// smooth_l1_loss(beta = 0) is l1_loss, its gradient at a tie included (sign(0) = 0; PyTorch 1.13
// gives -1 there, later versions 0). huber_loss's gradient at a tie is 0 as PyTorch's.
TEST(LossEdgeCases, SmoothL1BetaZeroIsL1AtTies) {
  const DynTensor x =
      require_grad(from_data(TensorData::from(std::vector<double>{0, 1, -1, 0.5, 2}, {5})));
  const DynTensor t = from_data(TensorData::from(std::vector<double>{0, 1, 0, 0.5, 1}, {5}));
  const DynTensor smooth = smooth_l1_loss(x, t, Reduction::Sum, 0.0);
  const DynTensor l1 = l1_loss(x, t, Reduction::Sum);
  EXPECT_EQ(smooth.item<double>(), l1.item<double>());
  const DynTensor gs = grad(smooth, {x})[0], gl = grad(l1, {x})[0];
  EXPECT_EQ(gs.to_vector<double>(), gl.to_vector<double>());
  EXPECT_EQ(gs.to_vector<double>(), (std::vector<double>{0, 0, -1, 0, 1}));
  const DynTensor gh = grad(huber_loss(x, t, Reduction::Sum, 1.0), {x})[0];
  EXPECT_EQ(gh.to_vector<double>(), (std::vector<double>{0, 0, -1, 0, 1}));
}

namespace {
bool all_finite(const DynTensor& t) {
  for (double v : t.to_vector<double>()) {
    if (!std::isfinite(v)) return false;
  }
  return true;
}

struct CtcBatch {
  DynTensor logits, padded, concatenated, input_lengths, target_lengths;
  std::vector<int64_t> in_host, tgt_host;
};
CtcBatch ctc_batch(int64_t steps, int64_t batch, int64_t classes, int64_t longest, uint64_t seed) {
  Generator gen(seed);
  CtcBatch b;
  b.logits = randn({steps, batch, classes}, DType::f64, default_device(), &gen);
  std::vector<int64_t> padded, flat;
  for (int64_t n = 0; n < batch; ++n) {
    const int64_t len = (n * 7 + 3) % (longest + 1);
    b.tgt_host.push_back(len);
    b.in_host.push_back(steps - (n % 3));
    for (int64_t s = 0; s < longest; ++s) {
      const int64_t label = 1 + (n * 5 + s * s * 3) % (classes - 1);
      padded.push_back(s < len ? label : 0);
      if (s < len) flat.push_back(label);
    }
  }
  b.padded = from_data(TensorData::from(padded, {batch, longest}));
  b.concatenated = from_data(TensorData::from(flat, {static_cast<int64_t>(flat.size())}));
  b.input_lengths = from_data(TensorData::from(b.in_host, {batch}));
  b.target_lengths = from_data(TensorData::from(b.tgt_host, {batch}));
  return b;
}
}  // namespace

// Padded, concatenated and host-length forms agree; f32 agrees with f64.
TEST(LossCtc, FormsAndDtypesAgree) {
  const CtcBatch b = ctc_batch(30, 5, 8, 9, 7);
  const DynTensor lp = log_softmax(b.logits, -1);
  const DynTensor padded =
      ctc_loss(lp, b.padded, b.input_lengths, b.target_lengths, {.reduction = Reduction::None});
  const DynTensor concat = ctc_loss(lp, b.concatenated, b.input_lengths, b.target_lengths,
                                    {.reduction = Reduction::None});
  const DynTensor host =
      ctc_loss(lp, b.padded, b.in_host, b.tgt_host, {.reduction = Reduction::None});
  const DynTensor host_concat =
      ctc_loss(lp, b.concatenated, b.in_host, b.tgt_host, {.reduction = Reduction::None});
  EXPECT_TRUE(allclose(padded, concat, 0, 1e-12));
  EXPECT_TRUE(allclose(padded, host, 0, 1e-12));
  EXPECT_TRUE(allclose(padded, host_concat, 0, 1e-12));
  const DynTensor x64 = require_grad(b.logits), x32 = require_grad(cast(b.logits, DType::f32));
  const DynTensor l64 = ctc_loss(log_softmax(x64, -1), b.padded, b.input_lengths, b.target_lengths);
  const DynTensor l32 = ctc_loss(log_softmax(x32, -1), b.padded, b.input_lengths, b.target_lengths);
  EXPECT_EQ(l32.dtype(), DType::f32);
  EXPECT_NEAR(l32.item<double>(), l64.item<double>(), 1e-4 * std::fabs(l64.item<double>()));
  EXPECT_TRUE(allclose(cast(grad(l32, {x32})[0], DType::f64), grad(l64, {x64})[0], 1e-3, 1e-5));
  // f16 / bf16 are computed in f32 and returned in their dtype.
  for (DType half : {DType::f16, DType::bf16}) {
    const DynTensor lh = ctc_loss(cast(lp, half), b.padded, b.input_lengths, b.target_lengths);
    EXPECT_EQ(lh.dtype(), half);
    EXPECT_NEAR(lh.item<double>(), l64.item<double>(), 2e-2 * std::fabs(l64.item<double>()));
  }
  // Unbatched: log_probs [T, C], targets [S] (padded past the length), 0-d lengths.
  const DynTensor one =
      ctc_loss(select(lp, 1, 1), select(b.padded, 0, 1), std::vector<int64_t>{b.in_host[1]},
               {b.tgt_host[1]}, {.reduction = Reduction::None});
  EXPECT_EQ(one.rank(), 0);
  EXPECT_NEAR(one.item<double>(), padded.to_vector<double>()[1], 1e-12);
  // The typed forms.
  const Tensor<0> typed =
      nn::ctc_loss(Tensor<3>(lp), Tensor<2, Int>(b.padded), Tensor<1, Int>(b.input_lengths),
                   Tensor<1, Int>(b.target_lengths));
  EXPECT_NEAR(typed.item<double>(), l64.item<double>(), 1e-12);
}

// An infeasible alignment: inf (PyTorch's value) with a zero gradient for that sample (PyTorch's
// is NaN); 0 with zero_infinity. A zero-length input with an empty target costs 0.
TEST(LossCtc, InfeasibleAndEmpty) {
  const DynTensor x = require_grad(randn({4, 3, 5}, DType::f64));
  const DynTensor targets =
      from_data(TensorData::from(std::vector<int64_t>{1, 1, 2, 3, 2, 3, 0, 0, 0, 0, 0, 0}, {3, 4}));
  const std::vector<int64_t> in_len{4, 4, 0}, tgt_len{4, 2, 0};  // [1, 1, 2, 3] needs 5 steps
  const DynTensor lp = log_softmax(x, -1);
  const DynTensor none = ctc_loss(lp, targets, in_len, tgt_len, {.reduction = Reduction::None});
  const std::vector<double> v = none.to_vector<double>();
  EXPECT_TRUE(std::isinf(v[0]) && v[0] > 0);
  EXPECT_TRUE(std::isfinite(v[1]) && v[1] > 0);
  EXPECT_EQ(v[2], 0.0);
  EXPECT_TRUE(std::isinf(ctc_loss(lp, targets, in_len, tgt_len).item<double>()));
  const DynTensor g =
      grad(none, {x}, from_data(TensorData::from(std::vector<double>{1, 1, 1}, {3})))[0];
  EXPECT_EQ(amax(abs(select(g, 1, 0))).item<double>(), 0.0);
  EXPECT_GT(amax(abs(select(g, 1, 1))).item<double>(), 0.0);
  EXPECT_TRUE(all_finite(g));
  const DynTensor zeroed = ctc_loss(lp, targets, in_len, tgt_len, {.zero_infinity = true});
  EXPECT_NEAR(zeroed.item<double>(), v[1] / 2.0 / 3.0, 1e-12);  // mean of [0, v1 / 2, 0]
}

// The composite's cost at a speech-like size, printed for the record.
TEST(LossCtc, SpeechSizedBatch) {
  const CtcBatch b = ctc_batch(100, 16, 29, 30, 3);
  const DynTensor x = require_grad(cast(b.logits, DType::f32));
  using Clock = std::chrono::steady_clock;
  auto ms = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  const auto t0 = Clock::now();
  {
    const auto guard = no_grad();
    EXPECT_TRUE(std::isfinite(
        ctc_loss(log_softmax(x, -1), b.padded, b.input_lengths, b.target_lengths).item<double>()));
  }
  const auto t1 = Clock::now();
  const DynTensor loss = ctc_loss(log_softmax(x, -1), b.padded, b.input_lengths, b.target_lengths);
  EXPECT_TRUE(std::isfinite(loss.item<double>()));
  const auto t2 = Clock::now();
  const DynTensor g = grad(loss, {x})[0];
  EXPECT_TRUE(all_finite(g));
  const auto t3 = Clock::now();
  std::printf(
      "[ ctc ] T=100 N=16 C=29 S=30 f32: forward %.1f ms (%.1f ms recorded), backward %.1f ms\n",
      ms(t0, t1), ms(t1, t2), ms(t2, t3));
}

TEST(LossErrors, Issue14Messages) {
  const DynTensor x = randn({4, 3}, DType::f32);
  auto expect_error = [](const std::function<void()>& fn, const std::string& text) {
    try {
      fn();
      synchronize(default_device());
      ADD_FAILURE() << "no error; expected: " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  expect_error([&] { (void)poisson_nll_loss(x, randn({3}, DType::f32)); },
               "[poisson_nll_loss] target shape [3] differs from input shape [4, 3]");
  expect_error([&] { (void)gaussian_nll_loss(x, x, ones({3}, DType::f32)); },
               "[gaussian_nll_loss] var shape [3] does not fit input shape [4, 3]");
  expect_error([&] { (void)gaussian_nll_loss(x, x, full({4}, -1.0, DType::f32)); },
               "[gaussian_nll_loss] var must be non-negative, got -1");
  expect_error(
      [&] {
        (void)triplet_margin_loss(x, x, randn({4, 2}, DType::f32));
      },
      "[triplet_margin_loss] negative shape [4, 2] differs from input shape [4, 3]");
  expect_error([&] { (void)triplet_margin_loss(x, x, x, {.p = 0.0}); },
               "[triplet_margin_loss] p must be positive");
  expect_error([&] { (void)hinge_embedding_loss(x, ones({4}, DType::f32)); },
               "[hinge_embedding_loss] target shape [4] differs from input shape [4, 3]");
  expect_error(
      [&] {
        (void)multilabel_margin_loss(x, full({4, 3}, 3, DType::i64));
      },
      "[multilabel_margin_loss] target class 3 is out of range for 3 classes");
  expect_error([&] { (void)multilabel_margin_loss(x, x); },
               "[multilabel_margin_loss] target must be an Int tensor");
  expect_error([&] { (void)multilabel_soft_margin_loss(x, x, ones({4}, DType::f32)); },
               "[multilabel_soft_margin_loss] weight shape [4] does not broadcast to input shape");
  expect_error([&] { (void)multi_margin_loss(x, zeros({4}, DType::i64), {.p = 3}); },
               "[multi_margin_loss] p must be 1 or 2, got 3");
  expect_error([&] { (void)multi_margin_loss(x, full({4}, -1, DType::i64)); },
               "[multi_margin_loss] target class -1 is out of range for 3 classes");
  expect_error([&] { (void)multi_margin_loss(x, zeros({3}, DType::i64)); },
               "[multi_margin_loss] target shape [3] does not fit input shape [4, 3]");
  expect_error(
      [&] {
        (void)soft_margin_loss(x, zeros({4, 3}, DType::i64));
      },
      "[soft_margin_loss] target must be a floating tensor");
  expect_error([&] { (void)lp_loss(x, x, 0.0); }, "[lp_loss] p must be positive, got 0");
  const DynTensor joint = randn({2, 3, 3, 4}, DType::f32);
  const DynTensor rt = ones({2, 2}, DType::i64);
  const DynTensor two = full({2}, 2, DType::i64);
  expect_error(
      [&] {
        (void)rnnt_loss(joint, ones({2, 3}, DType::i64), two, two);
      },
      "[rnnt_loss] targets must have shape [2, 2]");
  expect_error([&] { (void)rnnt_loss(joint, rt, full({2}, 4, DType::i64), two); },
               "[rnnt_loss] logit length 4 is out of range [1, 3]");
  expect_error([&] { (void)rnnt_loss(joint, rt, two, full({2}, 3, DType::i64)); },
               "[rnnt_loss] target length 3 is out of range [0, 2]");
  expect_error(
      [&] {
        (void)rnnt_loss(joint, full({2, 2}, 4, DType::i64), two, two);
      },
      "[rnnt_loss] target class 4 is out of range for 4 classes");
  expect_error([&] { (void)rnnt_loss(joint, rt, two, two, {.blank = 4}); },
               "[rnnt_loss] blank 4 is out of range for 4 classes");
  const DynTensor lp = log_softmax(randn({6, 2, 4}, DType::f32), -1);
  const DynTensor tg = ones({2, 3}, DType::i64);
  expect_error(
      [&] {
        (void)ctc_loss(lp, tg, std::vector<int64_t>{7, 6}, {3, 3});
      },
      "[ctc_loss] input length 7 is out of range [0, 6]");
  expect_error(
      [&] {
        (void)ctc_loss(lp, tg, std::vector<int64_t>{6, 6}, {4, 3});
      },
      "[ctc_loss] target length 4 is out of range [0, 3]");
  expect_error(
      [&] {
        (void)ctc_loss(lp, full({2, 3}, 4, DType::i64), std::vector<int64_t>{6, 6}, {3, 3});
      },
      "[ctc_loss] target class 4 is out of range for 4 classes");
  expect_error(
      [&] {
        (void)ctc_loss(lp, tg, std::vector<int64_t>{6, 6}, {3, 3}, {.blank = 4});
      },
      "[ctc_loss] blank 4 is out of range for 4 classes");
  expect_error(
      [&] {
        (void)ctc_loss(lp, ones({5}, DType::i64), std::vector<int64_t>{6, 6}, {3, 3});
      },
      "[ctc_loss] concatenated targets have 5 entries but target_lengths sum to 6");
  expect_error(
      [&] {
        (void)ctc_loss(lp, tg, std::vector<int64_t>{6}, {3, 3});
      },
      "[ctc_loss] input_lengths must have shape [2]");
  expect_error(
      [&] {
        (void)ctc_loss(randn({6, 4}, DType::f32), tg, std::vector<int64_t>{6}, {3});
      },
      "[ctc_loss] unbatched targets must be [S]");
}
