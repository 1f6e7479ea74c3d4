// Image items and their batcher, PNG/JPEG files (libpng, libjpeg-turbo) and the image-folder
// dataset (torchvision's ImageFolder: one subdirectory per class).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ember/data/dataloader.hpp"
#include "ember/data/dataset.hpp"
#include "ember/tensor/tensor.hpp"

namespace ember::data {

/// One image with its class: u8 pixels, channel-major (C, H, W) like the tensors made from it.
struct ImageItem {
  std::vector<uint8_t> pixels;  // channels * height * width values
  int64_t channels = 1, height = 0, width = 0;
  int64_t label = 0;

  uint8_t at(int64_t c, int64_t y, int64_t x) const {
    return pixels[static_cast<size_t>((c * height + y) * width + x)];
  }
};

/// A batch of images: images [B, C, H, W] (f32 by default) and labels [B] (i64).
struct ImageBatch {
  Tensor<4> images;
  Tensor<1, Int> labels;
};
/// Calls f on each tensor of the batch, images then labels: how the Learner's graph replay
/// (train::LearnerConfig::graph) copies a batch into its captured inputs. A batch type of one's
/// own gets the same function in its namespace (found by argument-dependent lookup).
template <class F>
void for_each_tensor(ImageBatch& batch, F&& f) {
  f(batch.images);
  f(batch.labels);
}

/// How ImageBatcher turns pixels into floats: x / 255, then (x - mean[c]) / std[c] when mean and
/// std are given (one value for every channel, or one per channel).
struct ImageBatcherConfig {
  std::vector<float> mean_, std_;
  DType dtype_ = DType::f32;

  ImageBatcherConfig& normalize(std::vector<float> mean, std::vector<float> std) {
    mean_ = std::move(mean);
    std_ = std::move(std);
    return *this;
  }
  ImageBatcherConfig& dtype(DType t) {
    dtype_ = t;
    return *this;
  }
};

/// Collates ImageItems of one shape into an ImageBatch on the target device. Fails (naming the
/// item) when shapes differ: resize in a mapped dataset first.
class ImageBatcher : public Batcher<ImageItem, ImageBatch> {
 public:
  explicit ImageBatcher(ImageBatcherConfig config = {});
  ImageBatch batch(std::vector<ImageItem> items, Device device) const override;

 private:
  ImageBatcherConfig config_;
};

/// read_image's default limit on a decoded image, width x height x channels bytes: 256 MiB, the
/// size of PIL's limit (89.5 M pixels) in RGB. 16384 x 16384 x 1 or 9459 x 9459 x 3 fit.
inline constexpr uint64_t kImageMaxBytes = uint64_t{1} << 28;

/// Decodes a PNG or JPEG file (by its first bytes, not its name) to channels-first u8 pixels.
/// `channels` 0 keeps the file's channels (1 grey, 3 RGB, 4 RGBA for PNG); 1 converts to grey,
/// 3 to RGB (alpha dropped). The header's width x height x channels (as decoded) is checked
/// against `max_bytes` before anything is decoded. Errors name the file; a truncated or corrupt
/// file is an error.
ImageItem read_image(const std::string& path, int channels = 0,
                     uint64_t max_bytes = kImageMaxBytes);
/// Writes a 1, 3 or 4 (PNG only) channel item as PNG, or JPEG at `quality` 1..100.
void write_png(const std::string& path, const ImageItem& image);
void write_jpeg(const std::string& path, const ImageItem& image, int quality = 90);

/// torchvision's ImageFolder: root/<class>/<file>.{png,jpg,jpeg} (any case). Classes are the
/// subdirectory names sorted, labelled 0, 1, ...; files are sorted within each class. Images are
/// decoded on demand by get(), so the DataLoader's workers do the decoding.
class ImageFolder : public Dataset<ImageItem> {
 public:
  /// `channels` and `max_bytes` (the limit on each decoded image) as in read_image; use channels
  /// 1 or 3 so that every image batches together.
  static std::shared_ptr<const ImageFolder> open(const std::string& root, int channels = 0,
                                                 uint64_t max_bytes = kImageMaxBytes);

  std::optional<ImageItem> get(size_t index) const override;
  size_t size() const override { return files_.size(); }
  const std::vector<std::string>& classes() const { return classes_; }
  const std::string& path(size_t index) const { return files_.at(index); }

  ImageFolder(std::vector<std::string> classes, std::vector<std::string> files,
              std::vector<int64_t> labels, int channels, uint64_t max_bytes = kImageMaxBytes);

 private:
  std::vector<std::string> classes_;
  std::vector<std::string> files_;
  std::vector<int64_t> labels_;
  int channels_;
  uint64_t max_bytes_;
};

}  // namespace ember::data
