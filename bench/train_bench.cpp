// One Fashion-MNIST training epoch of the issue-5 CNN (conv 1->32 3x3, ReLU, max-pool, conv
// 32->64 3x3, ReLU, max-pool, linear 1600->128, ReLU, linear 128->10), batch 64, Adam (lr 1e-3),
// beside LibTorch running the same model on the same batches (train_torch.cpp) in the same
// process; bench/train_torch.py times the newest PyTorch from pip the same way. The 60,000
// images are decoded and normalised once, before timing: this measures training, and
// bench_data measures the loader alone. Counters: images_per_s, and seconds per epoch as the
// time.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <ember/data/data.hpp>
#include <ember/ember.hpp>
#include <ember/models/fashion_cnn.hpp>
#include <ember/optim/optim.hpp>

#include "train_data.hpp"

namespace ember::bench {

const TrainData& train_data() {
  static const TrainData d = [] {
    TrainData t;
    const auto ds = data::FashionMnist::train();
    // EMBER_BENCH_TRAIN_IMAGES=n trains on the first n images only: a short run for comparing
    // two builds on a busy machine (the rows then report that many images per epoch).
    const char* limit = std::getenv("EMBER_BENCH_TRAIN_IMAGES");
    t.count = static_cast<int64_t>(ds->size());
    if (limit && std::atoll(limit) > 0) t.count = std::min<int64_t>(t.count, std::atoll(limit));
    t.images.resize(static_cast<size_t>(t.count) * 28 * 28);
    t.labels.resize(static_cast<size_t>(t.count));
    for (int64_t i = 0; i < t.count; ++i) {
      const data::ImageItem item = ds->at(static_cast<size_t>(i));
      for (size_t p = 0; p < item.pixels.size(); ++p) {
        // The usual Fashion-MNIST normalisation (mean 0.2860, std 0.3530 of x / 255).
        t.images[static_cast<size_t>(i) * 784 + p] =
            (static_cast<float>(item.pixels[p]) / 255.0f - 0.2860f) / 0.3530f;
      }
      t.labels[static_cast<size_t>(i)] = item.label;
    }
    return t;
  }();
  return d;
}

float ember_epoch(Device device) {
  const TrainData& d = train_data();
  const Tensor<4> images = Tensor<4>::from_vector<float>(d.images, {d.count, 1, 28, 28}, device);
  const Tensor<1, Int> labels =
      Tensor<1, Int>(from_data(TensorData::from(d.labels, Shape{d.count}), device));
  const int64_t batch = 64, batches = (d.count + batch - 1) / batch;
  Generator gen(1);
  models::FashionCnn model(device, &gen);
  optim::Optimizer opt = optim::AdamConfig().lr(1e-3).init();
  float last_loss = 0;
  for (int64_t b = 0; b < batches; ++b) {
    const int64_t n = std::min(batch, d.count - b * batch);
    const Tensor<4> x = images.narrow(0, b * batch, n);
    const Tensor<1, Int> y = labels.narrow(0, b * batch, n);
    const Tensor<0> loss = Tensor<0>(nn::cross_entropy(model(x).dyn(), y.dyn()));
    const Gradients grads = loss.backward();
    opt.step(model, grads);
    if (b == batches - 1) last_loss = loss.item<float>();
  }
  return last_loss;
}

}  // namespace ember::bench

namespace {

using namespace ember;

void BM_ember_epoch(benchmark::State& state) {
  cpu::set_num_threads(static_cast<int>(state.range(0)));
  float last_loss = 0;
  for (auto _ : state) last_loss = bench::ember_epoch(Device::cpu());
  ember::bench::epoch_counters(state, last_loss);
}

}  // namespace

EMBER_EPOCH_BENCHMARK(BM_ember_epoch);

BENCHMARK_MAIN();
