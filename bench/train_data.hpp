// The decoded, normalised Fashion-MNIST training set shared by the two sides of bench_train.
#pragma once

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

}  // namespace ember::bench
