// IDX read/write and the MNIST-style datasets.
#include "ember/data/idx.hpp"

#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

#include "ember/core/error.hpp"
#include "file_util.hpp"

namespace ember::data {

namespace {

bool known_type(uint8_t t) {
  return t == 0x08 || t == 0x09 || t == 0x0B || t == 0x0C || t == 0x0D || t == 0x0E;
}

uint32_t read_be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// Reverses each `size`-byte element in place (big-endian file <-> little-endian host).
void swap_elements(uint8_t* data, size_t count, size_t size) {
  if (size == 1 || std::endian::native == std::endian::big) return;
  for (size_t i = 0; i < count; ++i, data += size)
    for (size_t a = 0, b = size - 1; a < b; ++a, --b) std::swap(data[a], data[b]);
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

size_t idx_type_size(IdxType type) {
  switch (type) {
    case IdxType::u8:
    case IdxType::i8:
      return 1;
    case IdxType::i16:
      return 2;
    case IdxType::i32:
    case IdxType::f32:
      return 4;
    case IdxType::f64:
      return 8;
  }
  EMBER_FAIL("[idx] unknown type code ", static_cast<int>(type));
}

int64_t IdxArray::numel() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

namespace {

// The 4-byte prefix: two zero bytes, a known type code, a rank of at least 1. Returns the rank.
int check_prefix(const uint8_t* b, size_t n, const std::string& label) {
  EMBER_CHECK(n >= 4, "[read_idx] ", label, ": file too short for an IDX header (", n, " bytes)");
  EMBER_CHECK(b[0] == 0 && b[1] == 0, "[read_idx] ", label,
              ": bad magic number: first two bytes must be zero, got ", int{b[0]}, ", ", int{b[1]});
  EMBER_CHECK(known_type(b[2]), "[read_idx] ", label, ": unknown IDX type code ", int{b[2]},
              " (expected 8, 9, 11, 12, 13 or 14)");
  EMBER_CHECK(b[3] >= 1, "[read_idx] ", label, ": rank 0 is not supported");
  return b[3];
}

// The dims (big-endian u32 each) and the data bytes they need, in 64 bits with an overflow check:
// up to 255 dims of up to 2^32 - 1 each. `a` comes with its type; its dims are filled in.
uint64_t read_dims(IdxArray& a, const uint8_t* dims, int rank, const std::string& label) {
  const size_t elem = idx_type_size(a.type);
  uint64_t count = 1;
  for (int i = 0; i < rank; ++i) {
    const uint32_t d = read_be32(dims + 4 * i);
    a.dims.push_back(d);
    EMBER_CHECK(d == 0 || count <= (uint64_t{1} << 62) / elem / d, "[read_idx] ", label,
                ": dims overflow: dim ", i, " = ", d, " makes more than 2^62 bytes");
    count *= d;
  }
  return count * elem;
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// A gzFile closed on every path out.
struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzPtr = std::unique_ptr<gzFile_s, GzCloser>;

// Reads up to n bytes (fewer only at the end of the data); a corrupt or cut stream is an error.
size_t gz_read(gzFile f, uint8_t* out, size_t n, const std::string& path) {
  size_t got = 0;
  while (got < n) {
    const unsigned want = static_cast<unsigned>(std::min<size_t>(n - got, 1u << 30));
    const int r = gzread(f, out + got, want);
    int code = Z_OK;
    const char* message = gzerror(f, &code);
    // A stream cut short reads as an end of file with Z_BUF_ERROR set.
    EMBER_CHECK(r >= 0 && code == Z_OK, "[read_idx] ", path,
                ": bad gzip data: ", message ? message : "");
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  return got;
}

}  // namespace

IdxArray parse_idx(std::span<const uint8_t> bytes, const std::string& label) {
  const int rank = check_prefix(bytes.data(), bytes.size(), label);
  const size_t header = 4 + 4 * static_cast<size_t>(rank);
  EMBER_CHECK(bytes.size() >= header, "[read_idx] ", label, ": truncated header: rank ", rank,
              " needs ", header, " bytes, file has ", bytes.size());
  IdxArray a;
  a.type = static_cast<IdxType>(bytes[2]);
  const uint64_t expected = read_dims(a, bytes.data() + 4, rank, label);
  const uint64_t actual = bytes.size() - header;
  EMBER_CHECK(actual >= expected, "[read_idx] ", label, ": truncated: dims need ", expected,
              " data bytes, file has ", actual);
  EMBER_CHECK(actual == expected, "[read_idx] ", label, ": ", actual - expected,
              " bytes after the data (dims need ", expected, ")");
  a.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(header), bytes.end());
  swap_elements(a.data.data(), static_cast<size_t>(expected) / idx_type_size(a.type),
                idx_type_size(a.type));
  return a;
}

IdxArray read_idx(const std::string& path, uint64_t max_bytes) {
  // gzread passes plain files through unchanged, so one path reads both. The header comes first
  // and the data is read only as far as the dims say: a gzip bomb is never inflated past them.
  check_regular_file(path, "read_idx");
  GzPtr file(gzopen(path.c_str(), "rb"));
  EMBER_CHECK(file != nullptr, "[read_idx] ", path, ": cannot open: ", std::strerror(errno));
  gzFile f = file.get();
  gzbuffer(f, 1 << 17);
  uint8_t prefix[4];
  const int rank = check_prefix(prefix, gz_read(f, prefix, 4, path), path);
  const size_t header = 4 + 4 * static_cast<size_t>(rank);
  uint8_t dims[4 * 255];
  const size_t got = gz_read(f, dims, header - 4, path);
  EMBER_CHECK(got == header - 4, "[read_idx] ", path, ": truncated header: rank ", rank, " needs ",
              header, " bytes, file has ", 4 + got);
  IdxArray a;
  a.type = static_cast<IdxType>(prefix[2]);
  const uint64_t expected = read_dims(a, dims, rank, path);
  EMBER_CHECK(expected <= max_bytes, "[read_idx] ", path, ": dims ", dims_text(a.dims), " need ",
              expected, " data bytes, over the limit of ", max_bytes, " (read_idx's max_bytes)");
  // A plain file's size is known: a short or long one is refused before anything is allocated.
  std::error_code ec;
  const uint64_t file_size = gzdirect(f) ? std::filesystem::file_size(path, ec) : 0;
  if (gzdirect(f) && !ec) {
    EMBER_CHECK(file_size - header >= expected, "[read_idx] ", path, ": truncated: dims need ",
                expected, " data bytes, file has ", file_size - header);
    EMBER_CHECK(file_size - header == expected, "[read_idx] ", path, ": ",
                file_size - header - expected, " bytes after the data (dims need ", expected, ")");
  }
  // Grow as the data really arrives (doubling from 1 MiB), so that a header claiming gigabytes
  // over a few bytes of data allocates no more than twice what the data holds.
  size_t used = 0;
  while (used < expected) {
    const size_t step = std::max<size_t>(used, size_t{1} << 20);
    a.data.resize(static_cast<size_t>(std::min<uint64_t>(expected, used + step)));
    const size_t n = gz_read(f, a.data.data() + used, a.data.size() - used, path);
    used += n;
    EMBER_CHECK(used == a.data.size(), "[read_idx] ", path, ": truncated: dims need ", expected,
                " data bytes, file has ", used);
  }
  uint8_t extra = 0;
  EMBER_CHECK(gz_read(f, &extra, 1, path) == 0, "[read_idx] ", path, ": more data after the ",
              expected, " bytes the dims ", dims_text(a.dims),
              " need (refused; the rest was not read)");
  swap_elements(a.data.data(), static_cast<size_t>(expected) / idx_type_size(a.type),
                idx_type_size(a.type));
  return a;
}

void write_idx(const std::string& path, const IdxArray& a) {
  EMBER_CHECK(!a.dims.empty() && a.dims.size() <= 255, "[write_idx] ", path,
              ": rank must be 1..255, got ", a.dims.size());
  for (int64_t d : a.dims)
    EMBER_CHECK(d >= 0 && d <= 0xFFFFFFFFll, "[write_idx] ", path, ": dim ", d,
                " does not fit in 32 bits");
  const size_t elem = idx_type_size(a.type);
  EMBER_CHECK(a.data.size() == static_cast<size_t>(a.numel()) * elem, "[write_idx] ", path, ": ",
              a.data.size(), " data bytes for ", a.numel(), " elements of ", elem, " bytes");
  std::vector<uint8_t> out{0, 0, static_cast<uint8_t>(a.type), static_cast<uint8_t>(a.dims.size())};
  for (int64_t d : a.dims)
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(d >> shift));
  const size_t header = out.size();
  out.insert(out.end(), a.data.begin(), a.data.end());
  swap_elements(out.data() + header, static_cast<size_t>(a.numel()), elem);

  const bool gz = ends_with(path, ".gz");
  if (gz) {
    gzFile f = gzopen(path.c_str(), "wb");
    EMBER_CHECK(f != nullptr, "[write_idx] ", path, ": cannot create: ", std::strerror(errno));
    const bool ok = out.empty() || gzwrite(f, out.data(), static_cast<unsigned>(out.size())) ==
                                       static_cast<int>(out.size());
    const bool closed = gzclose(f) == Z_OK;
    EMBER_CHECK(ok && closed, "[write_idx] ", path, ": write failed");
  } else {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    EMBER_CHECK(f != nullptr, "[write_idx] ", path, ": cannot create: ", std::strerror(errno));
    const bool ok = std::fwrite(out.data(), 1, out.size(), f) == out.size();
    const bool closed = std::fclose(f) == 0;
    EMBER_CHECK(ok && closed, "[write_idx] ", path, ": write failed");
  }
}

MnistDataset::MnistDataset(IdxArray images, IdxArray labels, const std::string& label)
    : images_(std::move(images)), labels_(std::move(labels)) {
  EMBER_CHECK(images_.type == IdxType::u8 && images_.dims.size() == 3, "[MnistDataset] ", label,
              ": images must be u8 [N, H, W], got type code ", static_cast<int>(images_.type),
              " with ", images_.dims.size(), " dims");
  EMBER_CHECK(labels_.type == IdxType::u8 && labels_.dims.size() == 1, "[MnistDataset] ", label,
              ": labels must be u8 [N], got type code ", static_cast<int>(labels_.type), " with ",
              labels_.dims.size(), " dims");
  EMBER_CHECK(images_.dims[0] == labels_.dims[0], "[MnistDataset] ", label, ": ", images_.dims[0],
              " images but ", labels_.dims[0], " labels");
  count_ = static_cast<size_t>(images_.dims[0]);
  height_ = images_.dims[1];
  width_ = images_.dims[2];
}

std::optional<ImageItem> MnistDataset::get(size_t index) const {
  if (index >= count_) return std::nullopt;
  ImageItem item;
  item.channels = 1;
  item.height = height_;
  item.width = width_;
  const size_t plane = static_cast<size_t>(height_ * width_);
  const uint8_t* p = images_.data.data() + index * plane;
  item.pixels.assign(p, p + plane);
  item.label = labels_.data[index];
  return item;
}

namespace {

std::string find_file(const std::string& dir, const std::string& name, const char* who) {
  namespace fs = std::filesystem;
  for (const std::string& candidate : {name + ".gz", name}) {
    const fs::path p = fs::path(dir) / candidate;
    if (fs::exists(p)) return p.string();
  }
  EMBER_FAIL("[", who, "] ", dir, ": neither ", name, ".gz nor ", name, " found");
}

std::shared_ptr<const MnistDataset> open_split(const std::string& dir, MnistDataset::Split split,
                                               const char* who) {
  const std::string prefix = split == MnistDataset::Split::train ? "train" : "t10k";
  const std::string images = find_file(dir, prefix + "-images-idx3-ubyte", who);
  const std::string labels = find_file(dir, prefix + "-labels-idx1-ubyte", who);
  return std::make_shared<MnistDataset>(read_idx(images), read_idx(labels), images);
}

}  // namespace

std::shared_ptr<const MnistDataset> MnistDataset::open(const std::string& dir, Split split) {
  return open_split(dir, split, "MnistDataset");
}

std::string FashionMnist::default_dir() {
  const char* env = std::getenv("EMBER_FASHION_MNIST_DIR");
  return env && *env ? env : kDebianDir;
}
std::shared_ptr<const MnistDataset> FashionMnist::train(const std::string& dir) {
  return open_split(dir, MnistDataset::Split::train,
                    "FashionMnist (apt-get install dataset-fashion-mnist)");
}
std::shared_ptr<const MnistDataset> FashionMnist::test(const std::string& dir) {
  return open_split(dir, MnistDataset::Split::test,
                    "FashionMnist (apt-get install dataset-fashion-mnist)");
}
const std::vector<std::string>& FashionMnist::classes() {
  static const std::vector<std::string> names = {"T-shirt/top", "Trouser",   "Pullover", "Dress",
                                                 "Coat",        "Sandal",    "Shirt",    "Sneaker",
                                                 "Bag",         "Ankle boot"};
  return names;
}

std::shared_ptr<const MnistDataset> Mnist::train(const std::string& dir) {
  return open_split(dir, MnistDataset::Split::train, "Mnist");
}
std::shared_ptr<const MnistDataset> Mnist::test(const std::string& dir) {
  return open_split(dir, MnistDataset::Split::test, "Mnist");
}

}  // namespace ember::data
