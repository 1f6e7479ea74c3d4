// The decoded, normalised Fashion-MNIST training set shared by the two sides of bench_train.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include <ember/core/device.hpp>

namespace ember::bench {

struct TrainData {
  int64_t count = 0;
  std::vector<float> images;    // [count, 1, 28, 28]
  std::vector<int64_t> labels;  // [count]
};

/// Read once (the first call decodes the 60,000 images).
const TrainData& train_data();

/// One epoch of Ember training the CNN on `device` (train_bench.cpp); returns the last loss.
float ember_epoch(Device device);

/// The counters every epoch benchmark reports: images per second and the last batch's loss.
inline void epoch_counters(benchmark::State& state, float last_loss) {
  state.counters["images_per_s"] = benchmark::Counter(
      static_cast<double>(train_data().count) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
  state.counters["last_loss"] = last_loss;
}

}  // namespace ember::bench

// One epoch per run, at 1 and 2 threads, timed in seconds of wall time.
#define EMBER_EPOCH_BENCHMARK(fn)                                                    \
  BENCHMARK(fn)->ArgName("thr")->Arg(1)->Arg(2)->Iterations(1)->UseRealTime()->Unit( \
      benchmark::kSecond)
