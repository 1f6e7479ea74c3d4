// ImageBatcher: u8 pixels -> [B, C, H, W] floats through a per-channel lookup table.
#include <array>

#include "ember/core/error.hpp"
#include "ember/data/image.hpp"

namespace ember::data {

ImageBatcher::ImageBatcher(ImageBatcherConfig config) : config_(std::move(config)) {
  EMBER_CHECK(config_.mean_.size() == config_.std_.size(), "[ImageBatcher] ", config_.mean_.size(),
              " means but ", config_.std_.size(), " stds");
  for (float s : config_.std_)
    EMBER_CHECK(s > 0.0f, "[ImageBatcher] std must be positive, got ", s);
  EMBER_CHECK(is_floating(config_.dtype_), "[ImageBatcher] images must be a float dtype, got ",
              config_.dtype_);
}

ImageBatch ImageBatcher::batch(std::vector<ImageItem> items, Device device) const {
  EMBER_CHECK(!items.empty(), "[ImageBatcher] empty batch");
  const ImageItem& first = items[0];
  const int64_t c = first.channels, h = first.height, w = first.width;
  // Item 0's shape, checked in 64 bits (its fields are plain values, from anywhere), and every
  // item against it, before anything is allocated from them.
  int64_t plane = 0, per_item = 0, total = 0;
  const auto n = static_cast<int64_t>(items.size());
  EMBER_CHECK(c >= 0 && h >= 0 && w >= 0 && !__builtin_mul_overflow(h, w, &plane) &&
                  !__builtin_mul_overflow(c, plane, &per_item) &&
                  !__builtin_mul_overflow(n, per_item, &total),
              "[ImageBatcher] item 0 has a bad shape ", c, " x ", h, " x ", w, " for a batch of ",
              n);
  for (int64_t i = 0; i < n; ++i) {
    const ImageItem& im = items[static_cast<size_t>(i)];
    EMBER_CHECK(im.channels == c && im.height == h && im.width == w, "[ImageBatcher] item ", i,
                " is ", im.channels, " x ", im.height, " x ", im.width, ", item 0 is ", c, " x ", h,
                " x ", w, " (resize in a mapped dataset first)");
    EMBER_CHECK(static_cast<int64_t>(im.pixels.size()) == per_item, "[ImageBatcher] item ", i,
                " has ", im.pixels.size(), " pixel values for ", c, " x ", h, " x ", w);
  }
  const size_t n_norm = config_.mean_.size();
  EMBER_CHECK(n_norm == 0 || n_norm == 1 || static_cast<int64_t>(n_norm) == c, "[ImageBatcher] ",
              n_norm, " mean/std values for ", c, "-channel images");
  // One table per channel: pixel value -> normalised float.
  std::vector<std::array<float, 256>> lut(static_cast<size_t>(c));
  for (int64_t k = 0; k < c; ++k) {
    const size_t j = n_norm == 1 ? 0 : static_cast<size_t>(k);
    const float mean = n_norm ? config_.mean_[j] : 0.0f,
                inv = n_norm ? 1.0f / config_.std_[j] : 1.0f;
    for (int v = 0; v < 256; ++v)
      lut[static_cast<size_t>(k)][static_cast<size_t>(v)] =
          (static_cast<float>(v) / 255.0f - mean) * inv;
  }
  std::vector<float> pixels(static_cast<size_t>(total));
  std::vector<int64_t> labels(static_cast<size_t>(n));
  float* out = pixels.data();
  for (int64_t i = 0; i < n; ++i) {
    const ImageItem& im = items[static_cast<size_t>(i)];
    const uint8_t* src = im.pixels.data();
    for (int64_t k = 0; k < c; ++k) {
      const float* table = lut[static_cast<size_t>(k)].data();
      for (int64_t p = 0; p < plane; ++p) *out++ = table[*src++];
    }
    labels[static_cast<size_t>(i)] = im.label;
  }
  ImageBatch b;
  b.images = Tensor<4>::from_vector(pixels, {n, c, h, w}, device);
  if (config_.dtype_ != DType::f32) b.images = b.images.to(config_.dtype_);
  b.labels = Tensor<1, Int>::from_vector(labels, device);
  return b;
}

}  // namespace ember::data
