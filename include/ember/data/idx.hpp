// IDX files (the MNIST / Fashion-MNIST format) and the MNIST-style datasets built on them.
// An IDX file is: two zero bytes, a type byte, a rank byte, one big-endian u32 per dim, then the
// values row-major and big-endian. Files are read plain or gzip-compressed (zlib).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ember/data/dataset.hpp"
#include "ember/data/image.hpp"

namespace ember::data {

/// The element types of IDX (the third byte of the magic number).
enum class IdxType : uint8_t {
  u8 = 0x08,
  i8 = 0x09,
  i16 = 0x0B,
  i32 = 0x0C,
  f32 = 0x0D,
  f64 = 0x0E
};
size_t idx_type_size(IdxType type);

/// An IDX array in memory: values in host byte order, row-major.
struct IdxArray {
  IdxType type = IdxType::u8;
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;  // numel() * idx_type_size(type) bytes

  int64_t numel() const;
};

/// read_idx's default limit on the data bytes a header may claim: 16 GiB (MNIST's training
/// images are 47 MB, InfiMNIST's 8.1 million images 6.4 GB).
inline constexpr uint64_t kIdxMaxBytes = uint64_t{1} << 34;

/// Reads an IDX file, gzip-compressed or not (told apart by the first bytes). Every field is
/// validated (magic, type, rank, dims, and the data size against the file's), and errors name
/// the file and the bad value. The header is read first: dims whose data would exceed
/// `max_bytes` are refused at once, and a compressed file is inflated only as far as the dims
/// say (more data after them is an error, found without inflating the rest).
IdxArray read_idx(const std::string& path, uint64_t max_bytes = kIdxMaxBytes);
/// The same on bytes already in memory (already gunzipped); `label` names them in errors.
IdxArray parse_idx(std::span<const uint8_t> bytes, const std::string& label);
/// Writes an IDX file, gzip-compressed when the path ends in ".gz".
void write_idx(const std::string& path, const IdxArray& array);

/// MNIST-format images ([N, H, W] u8) with their labels ([N] u8) as 1-channel ImageItems.
class MnistDataset : public Dataset<ImageItem> {
 public:
  enum class Split { train, test };
  /// Opens <dir>/train-images-idx3-ubyte(.gz) and train-labels-idx1-ubyte(.gz), or the t10k-*
  /// pair for the test split (the standard names of MNIST, Fashion-MNIST and KMNIST).
  static std::shared_ptr<const MnistDataset> open(const std::string& dir, Split split);
  /// From arrays already read; `label` names them in errors.
  MnistDataset(IdxArray images, IdxArray labels, const std::string& label);

  std::optional<ImageItem> get(size_t index) const override;
  size_t size() const override { return count_; }
  int64_t height() const { return height_; }
  int64_t width() const { return width_; }
  const IdxArray& images() const { return images_; }
  const IdxArray& labels() const { return labels_; }

 private:
  IdxArray images_, labels_;
  size_t count_ = 0;
  int64_t height_ = 0, width_ = 0;
};

/// Fashion-MNIST (Zalando): 60,000 training and 10,000 test images of 10 clothing classes.
struct FashionMnist {
  /// Where Debian's dataset-fashion-mnist package puts the files.
  static constexpr const char* kDebianDir = "/usr/share/datasets/fashion-mnist";
  /// $EMBER_FASHION_MNIST_DIR when set, else kDebianDir.
  static std::string default_dir();
  static std::shared_ptr<const MnistDataset> train(const std::string& dir = default_dir());
  static std::shared_ptr<const MnistDataset> test(const std::string& dir = default_dir());
  /// The class names, by label: "T-shirt/top", "Trouser", ..., "Ankle boot".
  static const std::vector<std::string>& classes();
};

/// MNIST digits, from a directory holding the four standard files.
struct Mnist {
  static std::shared_ptr<const MnistDataset> train(const std::string& dir);
  static std::shared_ptr<const MnistDataset> test(const std::string& dir);
};

}  // namespace ember::data
