// The Learner: exact resume (after an epoch and mid-epoch), metrics files, early stopping,
// checkpoint retention, errors.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "train_test_util.hpp"

namespace ember::train::testing {
namespace {
namespace fs = std::filesystem;

// One run of the tiny model: Adam, a StepLR schedule, dropout, two loader workers. Everything a
// resume must restore (weights, optimizer moments, schedule, RNG offset, loader epoch) matters.
struct TinyRun {
  TinyNet model;
  Learner<TinyNet> learner;
  explicit TinyRun(LearnerConfig config, uint64_t seed = 3)
      : model((manual_seed(seed), TinyNet())),
        learner(model, optim::AdamConfig().lr(1e-2).init(),
                std::move(config.progress(Progress::none))) {
    optim::StepLR sched(learner.optimizer(), 1, 0.7);
    learner.set_scheduler(sched);
  }
};

const auto& train_data() {
  static const auto ds = quadrant_images(200, 1);
  return ds;
}
const auto& valid_data() {
  static const auto ds = quadrant_images(64, 2);
  return ds;
}

TEST(Learner, ResumedAfterAnEpochEndsBitIdentical) {
  const auto train = loader(train_data(), true, 2), valid = loader(valid_data(), false);
  TinyRun whole(LearnerConfig().epochs(3));
  const FitResult full = whole.learner.fit(train, valid);
  ASSERT_EQ(full.epochs_done, 3);

  const std::string dir = fresh_dir("resume_epoch");
  {
    TinyRun first(LearnerConfig().epochs(1).out_dir(dir));
    EXPECT_EQ(first.learner.fit(train, valid).epochs_done, 1);
  }
  manual_seed(999);  // the resumed run's RNG must come from the checkpoint, not from here
  TinyRun second(LearnerConfig().epochs(3).out_dir(dir).resume(), 3);
  const FitResult resumed = second.learner.fit(train, valid);
  EXPECT_EQ(resumed.epochs_done, 3);
  ASSERT_EQ(resumed.history.size(), 3u);
  EXPECT_EQ(weights(second.model), weights(whole.model));
  for (size_t e = 0; e < 3; ++e) {
    EXPECT_EQ(resumed.history[e].train_loss, full.history[e].train_loss) << "epoch " << e + 1;
    EXPECT_EQ(resumed.history[e].valid_loss, full.history[e].valid_loss) << "epoch " << e + 1;
    EXPECT_EQ(resumed.history[e].lr, full.history[e].lr) << "epoch " << e + 1;
  }
}

// The loss and accuracy sums stay on the device: the Learner reads them once per log line and
// epoch, never per batch (13 batches here; three reads each before).
TEST(Learner, ReadsItsRunningSumsOncePerLogLine) {
  const auto train = loader(train_data(), false);
  TinyRun quiet(LearnerConfig().epochs(1));
  uint64_t before = host_sync_count(default_device());
  ASSERT_EQ(quiet.learner.fit(train).epochs_done, 1);
  EXPECT_EQ(host_sync_count(default_device()) - before, 1u);  // the epoch's row

  TinyNet model;
  Learner<TinyNet> logged(model, optim::AdamConfig().lr(1e-2).init(),
                          LearnerConfig().epochs(1).progress(Progress::lines).log_every(4));
  before = host_sync_count(default_device());
  ASSERT_EQ(logged.fit(train).epochs_done, 1);
  EXPECT_EQ(host_sync_count(default_device()) - before, 4u);  // batches 4, 8, 12 and 13
}

// The same on the Fashion-MNIST CNN (oneDNN convolutions, threaded kernels) with random images.
TEST(Learner, ResumedCnnEndsBitIdentical) {
  std::vector<data::ImageItem> items;
  manual_seed(11);
  const auto pixels = (Tensor<1>::rand({96 * 28 * 28}) * 255.0f).to<Int>().to_vector<int64_t>();
  for (size_t i = 0; i < 96; ++i) {
    data::ImageItem item;
    item.height = item.width = 28;
    for (size_t k = 0; k < 28 * 28; ++k)
      item.pixels.push_back(static_cast<uint8_t>(pixels[i * 784 + k]));
    item.label = static_cast<int64_t>(i % 10);
    items.push_back(std::move(item));
  }
  const auto train = loader(data::in_memory(std::move(items)), true, 2, 32);
  auto run = [&](const std::string& dir, int64_t epochs, bool resume) {
    manual_seed(4);
    auto model = std::make_unique<models::FashionCnn>();
    Learner learner(
        *model, optim::AdamConfig().lr(1e-3).init(),
        LearnerConfig().epochs(epochs).out_dir(dir).resume(resume).progress(Progress::none));
    learner.fit(train);
    std::vector<std::vector<float>> w;
    for (const auto& t : nn::named_tensors(nn::module_tree(*model))) {
      w.push_back(t.slot->dyn().to_vector<float>());
    }
    return w;
  };
  // Bit for bit needs kernels that repeat bit for bit: on Cuda, cuDNN's weight gradients may
  // add in a varying order unless deterministic algorithms are asked for (as in PyTorch).
  use_deterministic_algorithms(true);
  const auto whole = run(fresh_dir("cnn_whole"), 2, false);
  const std::string dir = fresh_dir("cnn_resume");
  run(dir, 1, false);
  EXPECT_EQ(run(dir, 2, true), whole);
  use_deterministic_algorithms(false);
}

TEST(Learner, CtrlCSavesACheckpointAndTheResumedRunEndsBitIdentical) {
  const auto train = loader(train_data(), true, 2), valid = loader(valid_data(), false);
  TinyRun whole(LearnerConfig().epochs(2));
  whole.learner.fit(train, valid);

  const std::string dir = fresh_dir("sigint");
  {
    TinyRun first(LearnerConfig().epochs(2).out_dir(dir));
    int batches = 0;
    auto step = [&batches](TinyNet& m, const data::ImageBatch& b) {
      if (++batches == 21) std::raise(SIGINT);  // epoch 2, batch 4 (13 + 4 valid batches an epoch)
      return ClassificationStep()(m, b);
    };
    const FitResult r = first.learner.fit(train, valid, step);
    EXPECT_TRUE(r.interrupted);
    EXPECT_EQ(r.epochs_done, 1);
    EXPECT_EQ(fs::path(r.checkpoint).filename(), "epoch-0002-batch-000004.safetensors");
  }
  const auto latest = latest_checkpoint(dir + "/checkpoints");
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->epochs_done, 1);
  EXPECT_EQ(latest->batch, 4);
  TinyRun second(LearnerConfig().epochs(2).out_dir(dir).resume());
  const FitResult r = second.learner.fit(train, valid);
  EXPECT_FALSE(r.interrupted);
  EXPECT_EQ(weights(second.model), weights(whole.model));
  // The mid-epoch checkpoint is superseded by the end of epoch 2.
  const auto left = list_checkpoints(dir + "/checkpoints");
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(left.back().batch, 0);
}

TEST(Learner, MetricsCsvAndCurves) {
  const auto train = loader(train_data(), true), valid = loader(valid_data(), false);
  const std::string dir = fresh_dir("metrics");
  TinyRun run(LearnerConfig().epochs(3).out_dir(dir).top_k(2));
  const FitResult r = run.learner.fit(train, valid);
  const std::string csv = read_text(dir + "/metrics.csv");
  std::istringstream lines(csv);
  std::string header, row;
  std::getline(lines, header);
  EXPECT_EQ(header,
            "epoch,train_loss,train_accuracy,train_top2,valid_loss,valid_accuracy,valid_top2,lr,"
            "items_per_s,peak_memory_mb,seconds");
  int rows = 0;
  while (std::getline(lines, row)) ++rows;
  EXPECT_EQ(rows, 3);
  const auto back = history_from_csv(csv, 2);
  ASSERT_EQ(back.size(), 3u);
  for (size_t e = 0; e < 3; ++e) {
    EXPECT_EQ(back[e].epoch, static_cast<int64_t>(e + 1));
    EXPECT_EQ(back[e].train_loss, r.history[e].train_loss);
    EXPECT_EQ(back[e].valid_accuracy, r.history[e].valid_accuracy);
    EXPECT_GE(back[e].valid_top_k, back[e].valid_accuracy);
    EXPECT_GT(back[e].items_per_s, 0);
  }
  EXPECT_DOUBLE_EQ(r.history[0].lr, 1e-2);
  EXPECT_DOUBLE_EQ(r.history[1].lr, 7e-3);
  EXPECT_LT(r.history[2].train_loss, r.history[0].train_loss);
  EXPECT_GT(r.history[2].valid_accuracy, 0.6);  // 4 classes: chance is 0.25
  const std::string svg = read_text(dir + "/curves.svg");
  EXPECT_TRUE(svg.starts_with("<svg"));
  EXPECT_NE(svg.find("<polyline"), std::string::npos);
  EXPECT_TRUE(svg.ends_with("</svg>\n"));
}

// peak_MB is the model's device's peak (memory_stats), restarted every epoch: a 64 MB tensor
// freed before fit() does not show, and each epoch's value is within the device's peak since.
TEST(Learner, PeakMemoryIsTheModelDevicesPeakOfTheEpoch) {
  const auto train = loader(train_data(), true);
  TinyRun run(LearnerConfig().epochs(2));
  { const DynTensor big = zeros(Shape{16 << 20}, DType::f32); }
  ASSERT_GE(memory_stats(default_device()).peak, 64u << 20);
  const FitResult r = run.learner.fit(train);
  ASSERT_EQ(r.history.size(), 2u);
  for (const EpochMetrics& m : r.history) {
    EXPECT_GT(m.peak_memory_mb, 0) << "epoch " << m.epoch;
    EXPECT_LT(m.peak_memory_mb, 32) << "epoch " << m.epoch;
  }
  EXPECT_LE(r.history[1].peak_memory_mb,
            static_cast<double>(memory_stats(default_device()).peak) / 1e6);
}

TEST(Learner, EarlyStoppingAfterPatienceEpochsWithoutImprovement) {
  const auto train = loader(train_data(), true), valid = loader(valid_data(), false);
  manual_seed(3);
  TinyNet model;
  // lr 0: the validation loss never changes, so it never improves on epoch 1.
  Learner learner(model, optim::SgdConfig().lr(0).init(),
                  LearnerConfig().epochs(10).early_stopping(2).progress(Progress::none));
  const FitResult r = learner.fit(train, valid);
  EXPECT_TRUE(r.early_stopped);
  EXPECT_EQ(r.epochs_done, 3);
  ASSERT_TRUE(r.best_epoch);
  EXPECT_EQ(*r.best_epoch, 1);
}

TEST(Learner, KeepsTheLastNCheckpointsAndTheBest) {
  const auto train = loader(train_data(), true);
  const std::string dir = fresh_dir("keep");
  manual_seed(3);
  TinyNet model;
  auto opt = optim::AdamConfig().lr(1e-2).init();
  optim::ExponentialLR sched(opt, 0.5);
  // Monitoring the lr (highest is best) makes epoch 1 the best, whatever the losses do.
  Learner learner(model, std::move(opt),
                  LearnerConfig()
                      .epochs(5)
                      .out_dir(dir)
                      .keep_last(2)
                      .monitor("lr", Goal::maximize)
                      .progress(Progress::none));
  learner.set_scheduler(sched);
  learner.fit(train);
  std::vector<std::string> names;
  for (const auto& c : list_checkpoints(dir + "/checkpoints")) {
    names.push_back(fs::path(c.path).filename().string());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"epoch-0001.safetensors", "epoch-0004.safetensors",
                                             "epoch-0005.safetensors"}));
}

TEST(Learner, ACheckpointOfAnotherModelIsAClearErrorAndChangesNothing) {
  const auto train = loader(train_data(), true);
  const std::string dir = fresh_dir("mismatch");
  {
    TinyRun run(LearnerConfig().epochs(1).out_dir(dir));
    run.learner.fit(train);
  }
  manual_seed(3);
  TinyNet wider(32);
  const auto before = weights(wider);
  Learner learner(wider, optim::AdamConfig().init(), LearnerConfig().progress(Progress::none));
  optim::StepLR sched(learner.optimizer(), 1, 0.7);
  learner.set_scheduler(sched);
  try {
    learner.load_checkpoint(dir + "/checkpoints/epoch-0001.safetensors");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("'model.fc1.weight' has shape [16, 16], the model [32, 16]"),
        std::string::npos)
        << e.what();
  }
  EXPECT_EQ(weights(wider), before);
  EXPECT_THROW(learner.load_checkpoint(dir + "/nope.safetensors"), Error);
}

TEST(Learner, PlateauScheduleStepsOnTheMonitoredMetric) {
  const auto train = loader(train_data(), true);
  manual_seed(3);
  TinyNet model;
  auto opt = optim::SgdConfig().lr(0.1).init();
  optim::ReduceLROnPlateau plateau(opt, optim::PlateauConfig().patience(0));
  // "epoch" grows every epoch, so a schedule minimising it sees no improvement after epoch 1.
  Learner learner(model, std::move(opt),
                  LearnerConfig().epochs(3).monitor("epoch").progress(Progress::none));
  learner.set_scheduler(plateau, ScheduleEvery::epoch_on_metric);
  const FitResult r = learner.fit(train);
  ASSERT_EQ(r.history.size(), 3u);
  EXPECT_DOUBLE_EQ(r.history[0].lr, 0.1);
  EXPECT_DOUBLE_EQ(r.history[1].lr, 0.1);  // epoch 1 set the best; epoch 2 is the first bad one
  EXPECT_NEAR(r.history[2].lr, 0.01, 1e-12);
}

TEST(Learner, RequestStopEndsFitAfterTheCurrentBatch) {
  const auto train = loader(train_data(), true);
  manual_seed(3);
  TinyNet model;
  Learner learner(model, optim::AdamConfig().init(),
                  LearnerConfig().epochs(2).catch_sigint(false).progress(Progress::none));
  int batches = 0;
  auto step = [&batches](TinyNet& m, const data::ImageBatch& b) {
    if (++batches == 5) request_stop();
    return ClassificationStep()(m, b);
  };
  const FitResult r = learner.fit(train, step);
  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(batches, 5);
  EXPECT_EQ(r.epochs_done, 0);
  EXPECT_TRUE(r.checkpoint.empty()) << "no out_dir: nothing written";
}

TEST(Learner, UnknownMonitorIsAnError) {
  TinyNet model;
  EXPECT_THROW(Learner(model, optim::AdamConfig().init(), LearnerConfig().monitor("valid_los")),
               Error);
}

}  // namespace
}  // namespace ember::train::testing
