// Shared pieces of the train tests: a tiny model with dropout, a synthetic 4-class image set
// and helpers for temp directories and exact weight comparison.
#pragma once

#include <ember/data/data.hpp>
#include <ember/ember.hpp>
#include <ember/models/fashion_cnn.hpp>
#include <ember/nn/nn.hpp>
#include <ember/optim/optim.hpp>
#include <ember/train/train.hpp>

#include <map>
#include <string>
#include <vector>

namespace ember::train::testing {

/// 4x4 grey images; the label is the brightest quadrant, so a small MLP learns it.
struct TinyNet {
  nn::Linear fc1, fc2;
  nn::Dropout drop;
  EMBER_MODULE(TinyNet, fc1, fc2, drop)
  explicit TinyNet(int64_t hidden = 16) : fc1(16, hidden), fc2(hidden, 4), drop(nn::Dropout(0.2)) {}
  Tensor<2> operator()(const Tensor<4>& x) const {
    const int64_t n = x.dims()[0];
    return fc2(drop(relu(fc1(x.reshape({n, int64_t{16}})))));
  }
};

std::shared_ptr<const data::Dataset<data::ImageItem>> quadrant_images(size_t n, uint64_t seed);

data::DataLoader<data::ImageItem, data::ImageBatch> loader(
    std::shared_ptr<const data::Dataset<data::ImageItem>> ds, bool shuffle, size_t workers = 0,
    size_t batch = 16);

/// A fresh empty directory under the test temp dir.
std::string fresh_dir(const std::string& name);

/// Every parameter's bytes, by path.
std::vector<std::pair<std::string, std::vector<float>>> weights(const TinyNet& model);

/// A copy of the checkpoint at `from` with its metadata changed (a value of "" removes the key).
void doctor(const std::string& from, const std::string& to,
            const std::map<std::string, std::string>& changes);

/// The whole file at `path` as text ("" when it cannot be read).
std::string read_text(const std::string& path);

}  // namespace ember::train::testing
