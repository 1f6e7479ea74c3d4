// Losses: every option set against PyTorch (fixtures/make_loss_fixtures.py), value and gradients,
// in float64 to 1e-10; finite-difference gradient checks, first and second order; error paths.
#include <gtest/gtest.h>

#include <cmath>
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

// The loss of fixture case `id` (e.g. "cross_entropy/3") on the given inputs.
DynTensor run_case(const Fixture& f, const std::string& id, const DynTensor& input,
                   const DynTensor& input2, const DynTensor& target) {
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
  ADD_FAILURE() << "unknown loss in the fixture: " << kind;
  return {};
}

bool is_class_index_case(const Fixture& f, const std::string& id) {
  const std::string kind = id.substr(0, id.find('/'));
  return kind == "nll_loss" ||
         (kind == "cross_entropy" && f.at(id + ".input").shape() != f.at(id + ".target").shape());
}

// max |a - b|, where NaN matches NaN only.
double max_diff(const DynTensor& a, const DynTensor& b) {
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  double m = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) || std::isnan(y[i])) {
      if (std::isnan(x[i]) != std::isnan(y[i])) return INFINITY;
      continue;
    }
    m = std::max(m, std::fabs(x[i] - y[i]));
  }
  return m;
}

struct ParityStats {
  int cases = 0, compared = 0;
  double max_loss = 0.0, max_grad = 0.0;
};

}  // namespace

TEST(LossParity, EveryCaseMatchesTorchFloat64) {
  const Fixture& f = fixture();
  ParityStats stats;
  std::map<std::string, int> per_kind;
  for (const auto& [key, loss_ref] : f) {
    if (!key.ends_with(".loss")) continue;
    const std::string id = key.substr(0, key.size() - 5);
    SCOPED_TRACE(id);
    ++stats.cases;
    ++per_kind[id.substr(0, id.find('/'))];
    const bool class_index = is_class_index_case(f, id);
    DynTensor input = require_grad(f.at(id + ".input"));
    DynTensor input2 =
        f.contains(id + ".input2") ? require_grad(f.at(id + ".input2")) : DynTensor();
    DynTensor target = f.at(id + ".target");
    target = class_index ? cast(target, DType::i64) : require_grad(target);

    const DynTensor loss = run_case(f, id, input, input2, target);
    ASSERT_EQ(loss.shape(), loss_ref.shape());
    const double dl = max_diff(loss, loss_ref);
    EXPECT_LE(dl, kTol) << "loss " << loss.to_vector<double>()[0] << " vs torch "
                        << loss_ref.to_vector<double>()[0];
    stats.max_loss = std::max(stats.max_loss, dl);

    std::vector<DynTensor> wrt = {input};
    std::vector<std::string> names = {"input"};
    if (input2.defined()) wrt.push_back(input2), names.push_back("input2");
    if (!class_index) wrt.push_back(target), names.push_back("target");
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
  EXPECT_EQ(stats.cases, 349);
  EXPECT_EQ(per_kind.size(), 11u);
  std::printf(
      "[ parity ] %d cases, %d gradients; max |loss - torch| %.3g, max |grad - torch| %.3g\n",
      stats.cases, stats.compared, stats.max_loss, stats.max_grad);
}

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
