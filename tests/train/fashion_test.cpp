// A short real training run: the Fashion-MNIST CNN on 4,000 training images for one epoch
// (Adam, lr 1e-3, batch 64). Skipped when the dataset is not installed (scripts/setup.sh installs
// Debian's dataset-fashion-mnist).
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>

#include "train_test_util.hpp"

namespace ember::train::testing {
namespace {

TEST(FashionMnist, OneShortEpochLowersTheLossAndClearsTheBar) {
  const std::string dir = data::FashionMnist::default_dir();
  if (!std::filesystem::exists(dir + "/train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "Fashion-MNIST is not installed in " << dir;
  }
  manual_seed(0);
  const auto train_set = data::partial<data::ImageItem>(data::FashionMnist::train(dir), 0, 4000);
  const auto test_set = data::partial<data::ImageItem>(data::FashionMnist::test(dir), 0, 1000);
  auto batcher = std::make_shared<data::ImageBatcher>();
  data::DataLoader train(train_set, batcher,
                         data::DataLoaderConfig().batch_size(64).shuffle(1).workers(1));
  data::DataLoader test(test_set, batcher, data::DataLoaderConfig().batch_size(250));

  models::FashionCnn model;
  Learner learner(model, optim::AdamConfig().lr(1e-3).init(),
                  LearnerConfig().epochs(1).progress(Progress::none));
  std::vector<float> losses;
  auto step = [&losses](models::FashionCnn& m, const data::ImageBatch& b) {
    StepOutput out = ClassificationStep()(m, b);
    if (m.conv1.weight.trainable() && grad_enabled()) losses.push_back(out.loss.item<float>());
    return out;
  };
  const FitResult r = learner.fit(train, test, step);
  std::cout << "[ short run  ] 4,000 images, 1 epoch: test accuracy "
            << 100 * r.history[0].valid_accuracy << "% (on 1,000 test images)\n";
  ASSERT_EQ(losses.size(), 63u);
  const float first = (losses[0] + losses[1] + losses[2]) / 3;
  const float last = (losses[60] + losses[61] + losses[62]) / 3;
  EXPECT_LT(last, 0.6f * first) << "first batches " << first << ", last " << last;
  // Measured: about 0.71 after this one short epoch (4,000 of the 60,000 images).
  EXPECT_GT(r.history[0].valid_accuracy, 0.65);
  EXPECT_GT(r.history[0].valid_top_k, 0.95);
}

// The same short run (no step hook) on `device`; returns the test accuracy.
double short_run_accuracy(Device device) {
  const std::string dir = data::FashionMnist::default_dir();
  manual_seed(0);
  const auto train_set = data::partial<data::ImageItem>(data::FashionMnist::train(dir), 0, 4000);
  const auto test_set = data::partial<data::ImageItem>(data::FashionMnist::test(dir), 0, 1000);
  auto batcher = std::make_shared<data::ImageBatcher>();
  data::DataLoader train(
      train_set, batcher,
      data::DataLoaderConfig().batch_size(64).shuffle(1).workers(1).device(device));
  data::DataLoader test(test_set, batcher, data::DataLoaderConfig().batch_size(250).device(device));
  models::FashionCnn model(device);
  Learner learner(model, optim::AdamConfig().lr(1e-3).init(),
                  LearnerConfig().epochs(1).progress(Progress::none));
  return learner.fit(train, test, ClassificationStep()).history[0].valid_accuracy;
}

// One model source, two backends: the same seed gives the same weights and batches, so only
// rounding (summation orders inside the kernels) separates the runs.
TEST(FashionMnist, LibTorchTrainsAsTheCpuDoes) {
  if (!std::filesystem::exists(data::FashionMnist::default_dir() + "/train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "Fashion-MNIST is not installed";
  }
  if (device_count(DeviceType::LibTorch) == 0) {
    GTEST_SKIP() << "this Ember was built without the LibTorch backend";
  }
  const double cpu = short_run_accuracy(Device::cpu());
  const double libtorch = short_run_accuracy(Device::libtorch());
  std::cout << "[ short run  ] test accuracy: cpu " << 100 * cpu << "%, libtorch " << 100 * libtorch
            << "%\n";
  EXPECT_GT(cpu, 0.65);
  EXPECT_NEAR(libtorch, cpu, 0.01);
}

// Int8 weights (nn::Int8Conv2d, nn::Int8Linear) on the short run's model: trained on the Cpu,
// quantized, then run on the device under test beside the float model.
TEST(FashionMnist, Int8WeightsKeepTheAccuracy) {
  const std::string dir = data::FashionMnist::default_dir();
  if (!std::filesystem::exists(dir + "/train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "Fashion-MNIST is not installed in " << dir;
  }
  manual_seed(0);
  const auto train_set = data::partial<data::ImageItem>(data::FashionMnist::train(dir), 0, 4000);
  auto batcher = std::make_shared<data::ImageBatcher>(
      data::ImageBatcherConfig().normalize({0.2860f}, {0.3530f}));
  data::DataLoader train(
      train_set, batcher,
      data::DataLoaderConfig().batch_size(64).shuffle(1).workers(1).device(Device::cpu()));
  models::FashionCnn model(Device::cpu());
  Learner learner(model, optim::AdamConfig().lr(1e-3).init(),
                  LearnerConfig().epochs(1).progress(Progress::none));
  learner.fit(train, ClassificationStep());

  const Device device = default_device();
  model.to(device);
  model.eval();
  const models::FashionCnnInt8 int8(model);
  EXPECT_EQ(int8.fc1.weight.dtype(), DType::i8);
  const auto test_set = data::partial<data::ImageItem>(data::FashionMnist::test(dir), 0, 1000);
  data::DataLoader test(test_set, batcher, data::DataLoaderConfig().batch_size(250).device(device));
  int64_t right = 0, right_int8 = 0, agree = 0, n = 0;
  for (data::ImageBatch& b : test.epoch(0)) {
    const std::vector<int64_t> labels = b.labels.to_vector<int64_t>();
    const std::vector<int64_t> f = model(b.images).argmax(1).to_vector<int64_t>();
    const std::vector<int64_t> q = int8(b.images).argmax(1).to_vector<int64_t>();
    for (size_t i = 0; i < labels.size(); ++i, ++n) {
      right += f[i] == labels[i];
      right_int8 += q[i] == labels[i];
      agree += f[i] == q[i];
    }
  }
  std::cout << "[ int8       ] accuracy on 1,000 test images: float32 " << right / 10.0
            << "%, int8 " << right_int8 / 10.0 << "%; the same class for " << agree / 10.0 << "%\n";
  ASSERT_EQ(n, 1000);
  EXPECT_GT(right, 650);
  EXPECT_LE(std::abs(right - right_int8), 10);  // within one point of float32
  EXPECT_GE(agree, 970);
}

}  // namespace
}  // namespace ember::train::testing
