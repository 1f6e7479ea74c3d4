// The Learner's graph replay (LearnerConfig::graph): training that replays captured steps ends
// where eager training ends (batch norm's buffers, a short last batch, validation between
// epochs), and what it cannot capture is refused or run eagerly with a note.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include <ember/tensor/conv_ops.hpp>
#include <ember/tensor/device_graph.hpp>

#include "train_test_util.hpp"

namespace ember::train::testing {
namespace {

// fn fails with an ember::Error whose message contains `needle`.
void expect_error_containing(const std::function<void()>& fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected one containing: " << needle;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

// A convolution, batch norm (running statistics updated every step) and a linear head.
struct BnNet {
  nn::Conv2d conv;
  nn::BatchNorm2d bn;
  nn::Linear fc;
  EMBER_MODULE(BnNet, conv, bn, fc)
  BnNet() : conv(nn::Conv2dConfig(1, 4, {3}).padding({1})), bn(4), fc(64, 4) {}
  Tensor<2> operator()(const Tensor<4>& x) const {
    const Tensor<4> h(bn.forward(conv(x).dyn()));
    return fc(relu(h).flatten<2>(1));
  }
};

// Every tensor of the model (parameters and buffers) as doubles, by path.
template <class M>
std::vector<std::pair<std::string, std::vector<double>>> state(const M& model) {
  std::vector<std::pair<std::string, std::vector<double>>> out;
  for (const auto& t : nn::named_tensors(nn::module_tree(model))) {
    out.emplace_back(t.path, t.slot->dyn().template to_vector<double>());
  }
  return out;
}

// Eager and graph runs agree bit for bit where both run the same kernels in the same order (the
// Cpu replays by calling the step again); a recorded Cuda graph runs the same kernels too, but
// cuBLAS and cuDNN may pick other algorithms inside a capture.
double tolerance() { return default_device().type == DeviceType::Cpu ? 0.0 : 1e-5; }

template <class M>
void expect_same_state(const M& a, const M& b) {
  const auto sa = state(a), sb = state(b);
  ASSERT_EQ(sa.size(), sb.size());
  for (size_t i = 0; i < sa.size(); ++i) {
    ASSERT_EQ(sa[i].second.size(), sb[i].second.size()) << sa[i].first;
    for (size_t k = 0; k < sa[i].second.size(); ++k) {
      ASSERT_NEAR(sa[i].second[k], sb[i].second[k], tolerance()) << sa[i].first << "[" << k << "]";
    }
  }
}

void expect_same_history(const FitResult& a, const FitResult& b) {
  ASSERT_EQ(a.history.size(), b.history.size());
  for (size_t e = 0; e < a.history.size(); ++e) {
    EXPECT_NEAR(a.history[e].train_loss, b.history[e].train_loss, tolerance()) << e;
    if (!std::isnan(a.history[e].valid_loss)) {  // NaN without validation
      EXPECT_NEAR(a.history[e].valid_loss, b.history[e].valid_loss, tolerance()) << e;
    }
    EXPECT_EQ(a.history[e].train_accuracy, b.history[e].train_accuracy) << e;
  }
}

// Trains two models made from one seed, eagerly and with graph replay (`run(graph, model)`), and
// checks that they end alike and that the graph run replayed `replays` steps; returns the graph
// run's result.
template <class M, class Run>
FitResult expect_replay_matches_eager(uint64_t seed, Run run, int64_t replays, M* graphed_out) {
  manual_seed(seed);
  M eager_model;
  manual_seed(seed);
  M& graph_model = *graphed_out;
  graph_model = M();
  const FitResult eager = run(false, eager_model);
  const FitResult graphed = run(true, graph_model);
  EXPECT_EQ(eager.replayed_steps, 0);
  EXPECT_EQ(graphed.replayed_steps, replays);
  expect_same_history(eager, graphed);
  expect_same_state(eager_model, graph_model);
  return graphed;
}

// 200 images in batches of 16: 12 full batches and one of 8 per epoch. Per epoch the first full
// batch warms up (first epoch) or replays, the second is captured (first epoch), the short one
// runs eagerly: 10 + 12 replays in two epochs.
TEST(LearnerGraph, ReplayedTrainingEndsWhereEagerTrainingEnds) {
  const auto train = loader(quadrant_images(200, 1), true, 2);
  const auto valid = loader(quadrant_images(64, 2), false);
  auto run = [&](bool graph, BnNet& model) {
    Learner learner(model, optim::SgdConfig().lr(0.05).momentum(0.9).fused(true).init(),
                    LearnerConfig().epochs(2).graph(graph).progress(Progress::none));
    return learner.fit(train, valid);
  };
  BnNet graph_model;
  expect_replay_matches_eager(5, run, 22, &graph_model);
  EXPECT_EQ(graph_model.bn.num_batches_tracked->dyn().item<int64_t>(), 26);
}

// bf16 autocast inside the captured step, and Adam's fused step between replays: 6 batches, a
// warm-up, a capture and 4 replays.
TEST(LearnerGraph, ReplaysUnderBf16Autocast) {
  const auto train = loader(quadrant_images(96, 3), true);
  auto run = [&](bool graph, BnNet& model) {
    Learner learner(
        model, optim::AdamWConfig().lr(1e-2).fused(true).init(),
        LearnerConfig().epochs(1).graph(graph).precision(DType::bf16).progress(Progress::none));
    return learner.fit(train);
  };
  BnNet graph_model;
  expect_replay_matches_eager(6, run, 4, &graph_model);
}

// A run resumed after 12 of an epoch's 13 batches starts on the short one: it becomes the static
// inputs, then the next epoch's full batches replace them, warm up and are captured (10 replays).
// The batcher stops the first fit after its 12th batch: a recorded replay does not call the step
// function, so counting there would not stop it.
TEST(LearnerGraph, AResumedEpochStartingOnTheShortBatchStillReplays) {
  int made = 0;
  bool counting = false;
  auto batcher =
      data::make_batcher<data::ImageItem>([&](std::vector<data::ImageItem> items, Device dev) {
        if (counting && ++made == 12) request_stop();
        return data::ImageBatcher().batch(std::move(items), dev);
      });
  data::DataLoader train(quadrant_images(200, 7), batcher, data::DataLoaderConfig().batch_size(16));
  int runs = 0;
  auto run = [&](bool graph, BnNet& model) {
    const std::string dir = fresh_dir("graph_resume_" + std::to_string(runs++));
    auto sgd = [] { return optim::SgdConfig().lr(0.05).momentum(0.9).fused(true).init(); };
    auto config = [&] {
      return LearnerConfig().epochs(2).out_dir(dir).catch_sigint(false).graph(graph).progress(
          Progress::none);
    };
    {
      made = 0;
      counting = true;
      Learner first(model, sgd(), config());
      const FitResult r = first.fit(train);
      counting = false;
      EXPECT_TRUE(r.interrupted);
    }
    Learner resumed(model, sgd(), config().resume());
    return resumed.fit(train);
  };
  BnNet graph_model;
  expect_replay_matches_eager(9, run, 10, &graph_model);
}

// Dropout draws random numbers: a recording backend (Cuda) refuses to capture them, and the
// Learner trains eagerly from there with a note; elsewhere the replay calls the step again and
// draws afresh. Either way the result is eager training's.
TEST(LearnerGraph, DropoutTrainsAsEagerDoes) {
  const auto train = loader(quadrant_images(96, 4), true);
  auto run = [&](bool graph, TinyNet& model) {
    manual_seed(7);  // the dropout masks' seed
    Learner learner(model, optim::AdamConfig().lr(1e-2).fused(true).init(),
                    LearnerConfig().epochs(2).graph(graph).progress(Progress::none));
    return learner.fit(train);
  };
  DeviceGraph probe(default_device());
  probe.capture([] {});
  TinyNet graph_model;
  expect_replay_matches_eager(8, run, probe.recorded() ? 0 : 10, &graph_model);
}

// A DataLoader's workers wait for a capture to end, so asking for a batch inside one is an error
// (not a hang), and the epoch carries on once the capture is over.
TEST(LearnerGraph, ABatchAskedForInsideACaptureIsAnError) {
  const auto train = loader(quadrant_images(64, 6), false, 2);
  auto epoch = train.epoch(0);
  auto it = epoch.begin();
  DeviceGraph g(default_device());
  expect_error_containing([&] { g.capture([&] { ++it; }); }, "inside a DeviceGraph capture");
  size_t rest = 0;
  for (++it; !(it == epoch.end()); ++it) ++rest;
  EXPECT_EQ(rest, 3u);  // batches 1 to 3 of 4: the refused ask consumed nothing
}

// A batch type of one's own without for_each_tensor.
struct PlainBatch {
  Tensor<4> images;
  Tensor<1, Int> labels;
};

TEST(LearnerGraph, WhatCannotReplayIsRefused) {
  const auto train = loader(quadrant_images(32, 5), false);
  TinyNet model;
  expect_error_containing(
      [&] {
        Learner learner(model, optim::AdamConfig().init(),
                        LearnerConfig().graph().progress(Progress::none));
        learner.fit(train);
      },
      "SGD, Adam or AdamW with fused(true)");
  expect_error_containing(
      [&] {
        Learner learner(model, optim::AdamConfig().fused(true).init(),
                        LearnerConfig().graph().precision(DType::f16));
      },
      "precision f16");
  auto batcher =
      data::make_batcher<data::ImageItem>([](std::vector<data::ImageItem> items, Device dev) {
        const data::ImageBatch b = data::ImageBatcher().batch(std::move(items), dev);
        return PlainBatch{b.images, b.labels};
      });
  data::DataLoader plain(quadrant_images(32, 5), batcher, data::DataLoaderConfig().batch_size(16));
  Learner learner(model, optim::AdamConfig().fused(true).init(),
                  LearnerConfig().graph().progress(Progress::none));
  expect_error_containing(
      [&] {
        learner.fit(plain, [](TinyNet& m, const PlainBatch& b) {
          return ClassificationStep()(m, data::ImageBatch{b.images, b.labels});
        });
      },
      "for_each_tensor(batch, f)");
}

}  // namespace
}  // namespace ember::train::testing
