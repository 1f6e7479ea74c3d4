// torchvision-style ImageFolder: class-per-subdirectory, decoded on demand.
#include <algorithm>
#include <cctype>
#include <filesystem>

#include "ember/core/error.hpp"
#include "ember/data/image.hpp"

namespace ember::data {

namespace {

bool is_image_name(const std::filesystem::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg";
}

}  // namespace

ImageFolder::ImageFolder(std::vector<std::string> classes, std::vector<std::string> files,
                         std::vector<int64_t> labels, int channels, uint64_t max_bytes)
    : classes_(std::move(classes)),
      files_(std::move(files)),
      labels_(std::move(labels)),
      channels_(channels),
      max_bytes_(max_bytes) {
  EMBER_CHECK(files_.size() == labels_.size(), "[ImageFolder] ", files_.size(), " files but ",
              labels_.size(), " labels");
  EMBER_CHECK(channels == 0 || channels == 1 || channels == 3,
              "[ImageFolder] channels must be 0 (as stored), 1 or 3, got ", channels);
}

std::shared_ptr<const ImageFolder> ImageFolder::open(const std::string& root, int channels,
                                                     uint64_t max_bytes) {
  namespace fs = std::filesystem;
  std::error_code ec;
  EMBER_CHECK(fs::is_directory(root, ec), "[ImageFolder] ", root, ": not a directory");
  std::vector<std::string> classes;
  for (const fs::directory_entry& e : fs::directory_iterator(root, ec))
    if (e.is_directory()) classes.push_back(e.path().filename().string());
  EMBER_CHECK(!ec, "[ImageFolder] ", root, ": cannot list: ", ec.message());
  std::sort(classes.begin(), classes.end());
  EMBER_CHECK(!classes.empty(), "[ImageFolder] ", root, ": no class subdirectories");

  std::vector<std::string> files;
  std::vector<int64_t> labels;
  for (size_t c = 0; c < classes.size(); ++c) {
    std::vector<std::string> in_class;
    for (const fs::directory_entry& e : fs::directory_iterator(fs::path(root) / classes[c], ec))
      if (e.is_regular_file() && is_image_name(e.path())) in_class.push_back(e.path().string());
    EMBER_CHECK(!ec, "[ImageFolder] ", root, "/", classes[c], ": cannot list: ", ec.message());
    std::sort(in_class.begin(), in_class.end());
    for (std::string& f : in_class) {
      files.push_back(std::move(f));
      labels.push_back(static_cast<int64_t>(c));
    }
  }
  EMBER_CHECK(!files.empty(), "[ImageFolder] ", root,
              ": no .png, .jpg or .jpeg files in its class subdirectories");
  return std::make_shared<ImageFolder>(std::move(classes), std::move(files), std::move(labels),
                                       channels, max_bytes);
}

std::optional<ImageItem> ImageFolder::get(size_t index) const {
  if (index >= files_.size()) return std::nullopt;
  ImageItem item = read_image(files_[index], channels_, max_bytes_);
  item.label = labels_[index];
  return item;
}

}  // namespace ember::data
