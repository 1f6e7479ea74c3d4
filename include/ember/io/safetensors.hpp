// safetensors: the weights format of Hugging Face and PyTorch users. Files are read through a
// read-only memory mapping (tensors on the Cpu device share it, no copy, where aligned) and
// written atomically (temp file, fsync, rename, fsync of the directory). docs/IO.md has the rules.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ember/core/device.hpp"
#include "ember/core/dtype.hpp"
#include "ember/core/shape.hpp"
#include "ember/tensor/dyn_tensor.hpp"

namespace ember::io {

namespace detail {
class Bytes;  // the file's bytes (a mapping, or a buffer) and whoever owns them
}

/// One tensor's entry in a safetensors header.
struct TensorInfo {
  Shape shape;
  DType dtype = DType::f32;  // Ember's dtype; meaningless when !supported
  std::string format_dtype;  // as the file names it: "F32", "BF16", "F8_E4M3", ...
  bool supported = true;     // false for format dtypes Ember has no DType for: tensor() fails
  uint64_t begin = 0;        // byte range [begin, end) within the data area
  uint64_t end = 0;
};

/// An opened safetensors file. Copies share the mapping, which lives until the last copy and the
/// last tensor made from it are gone.
class SafetensorsFile {
 public:
  /// Where the bytes came from: the path, or the label given to parse_safetensors.
  const std::string& path() const { return path_; }
  /// Tensor names in the order of the header.
  const std::vector<std::string>& names() const { return names_; }
  size_t size() const { return names_.size(); }
  bool contains(const std::string& name) const { return infos_.count(name) != 0; }
  /// The header entry of `name`; fails naming the file when there is none.
  const TensorInfo& info(const std::string& name) const;
  DType dtype(const std::string& name) const;
  const Shape& shape(const std::string& name) const { return info(name).shape; }
  /// The header's "__metadata__" (string to string), empty when absent.
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  /// Byte offset of the data area from the start of the file (8 + header length).
  uint64_t data_start() const { return data_start_; }

  /// True when tensor(name) on the Cpu device shares the file's memory instead of copying: the
  /// data is aligned for its dtype.
  bool zero_copy(const std::string& name) const;

  /// The tensor `name` on `device`. On the Cpu device it shares the file's read-only memory
  /// when aligned (see zero_copy); ops never write to their inputs, so it is safe to use.
  DynTensor tensor(const std::string& name, Device device = default_device()) const;
  /// The same, converted to `dtype` (a copy unless it already has that dtype).
  DynTensor tensor(const std::string& name, Device device, DType dtype) const;

 private:
  friend SafetensorsFile load_safetensors(const std::string&);
  friend SafetensorsFile parse_safetensors(std::vector<unsigned char>, std::string);
  friend SafetensorsFile view_safetensors(std::span<const unsigned char>, std::string);
  static SafetensorsFile parse(std::shared_ptr<const detail::Bytes> bytes, std::string label);

  std::shared_ptr<const detail::Bytes> bytes_;
  std::string path_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, TensorInfo> infos_;
  std::map<std::string, std::string> metadata_;
  uint64_t data_start_ = 0;
};

#ifndef EMBER_BARE_METAL  // files: not on a microcontroller
/// Opens `path` with a read-only mmap and validates the whole header (see docs/IO.md for the
/// list of checks). Every problem is an ember::Error naming the file and the values involved.
SafetensorsFile load_safetensors(const std::string& path);

#endif

/// Parses and validates a file already in memory; `label` names it in errors. Tensors share
/// `bytes` (kept alive by them) where aligned.
SafetensorsFile parse_safetensors(std::vector<unsigned char> bytes, std::string label = "<memory>");

/// Parses and validates bytes the caller keeps alive and unchanged for as long as the file and its
/// Cpu tensors live (static data, a buffer of one's own): aligned tensors on the Cpu use them in
/// place, with no copy.
SafetensorsFile view_safetensors(std::span<const unsigned char> bytes,
                                 std::string label = "<memory>");

/// The safetensors file linked into the program under `name` by the CMake function ember_embed
/// (ember/core/embedded.hpp): weights read in place from the executable's read-only data.
SafetensorsFile embedded_safetensors(std::string_view name);

#ifndef EMBER_BARE_METAL
/// Writes `tensors` (names unique, non-empty, without NUL bytes) and optional string metadata in
/// the safetensors format. Non-contiguous tensors are written in row-major order; data is laid
/// out largest dtype first so every tensor stays aligned. Atomic: the file at `path` is either
/// the old one or the complete new one, never a partial write, and no temp file stays behind.
void save_safetensors(const std::vector<std::pair<std::string, DynTensor>>& tensors,
                      const std::string& path,
                      const std::map<std::string, std::string>& metadata = {});

#endif  // EMBER_BARE_METAL

}  // namespace ember::io
