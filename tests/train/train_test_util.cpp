#include "train_test_util.hpp"

#include <ember/io/safetensors.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ember::train::testing {

std::shared_ptr<const data::Dataset<data::ImageItem>> quadrant_images(size_t n, uint64_t seed) {
  std::vector<data::ImageItem> items;
  uint64_t state = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  auto next = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<uint8_t>(state >> 56);
  };
  for (size_t i = 0; i < n; ++i) {
    data::ImageItem item;
    item.height = item.width = 4;
    item.pixels.resize(16);
    for (auto& p : item.pixels) p = static_cast<uint8_t>(next() / 2);
    item.label = static_cast<int64_t>(i % 4);
    const int64_t qy = item.label / 2 * 2, qx = item.label % 2 * 2;
    for (int64_t y = qy; y < qy + 2; ++y) {
      for (int64_t x = qx; x < qx + 2; ++x) item.pixels[static_cast<size_t>(y * 4 + x)] += 100;
    }
    items.push_back(std::move(item));
  }
  return data::in_memory(std::move(items));
}

data::DataLoader<data::ImageItem, data::ImageBatch> loader(
    std::shared_ptr<const data::Dataset<data::ImageItem>> ds, bool shuffle, size_t workers,
    size_t batch) {
  auto config = data::DataLoaderConfig().batch_size(batch).workers(workers);
  if (shuffle) config.shuffle(7);
  return data::DataLoader<data::ImageItem, data::ImageBatch>(
      std::move(ds), std::make_shared<data::ImageBatcher>(), config);
}

std::string fresh_dir(const std::string& name) {
  // One root per test process, removed when it exits (a forked child exits by SIGKILL only).
  static const std::filesystem::path root = [] {
    auto r =
        std::filesystem::temp_directory_path() / ("ember_train_test_" + std::to_string(getpid()));
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(
          std::filesystem::temp_directory_path() / ("ember_train_test_" + std::to_string(getpid())),
          ec);
    });
    return r;
  }();
  const auto dir = root / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

std::vector<std::pair<std::string, std::vector<float>>> weights(const TinyNet& model) {
  std::vector<std::pair<std::string, std::vector<float>>> out;
  for (const auto& t : nn::named_tensors(nn::module_tree(model))) {
    out.emplace_back(t.path, t.slot->dyn().to_vector<float>());
  }
  return out;
}

void doctor(const std::string& from, const std::string& to,
            const std::map<std::string, std::string>& changes) {
  const io::SafetensorsFile file = io::load_safetensors(from);
  std::vector<std::pair<std::string, DynTensor>> tensors;
  for (const std::string& n : file.names()) tensors.emplace_back(n, file.tensor(n));
  auto md = file.metadata();
  for (const auto& [k, v] : changes) {
    if (v.empty()) {
      md.erase(k);
    } else {
      md[k] = v;
    }
  }
  io::save_safetensors(tensors, to, md);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace ember::train::testing
