// PyTorch checkpoints: the files torch.save writes (a zip archive since PyTorch 1.6, holding a
// pickle and one record per storage), read without running anything from the file. The pickle is
// read by a restricted unpickler that rebuilds only tensors, storages and plain containers; any
// other global (os.system, builtins.eval, a pickled class) is refused by name. docs/IO.md has the
// rules.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ember/core/device.hpp"
#include "ember/core/dtype.hpp"
#include "ember/core/shape.hpp"
#include "ember/tensor/dyn_tensor.hpp"

namespace ember::io {

namespace detail {
class Bytes;
struct PytorchStorages;
}  // namespace detail

/// One tensor of a checkpoint: a view of a storage, as torch keeps it.
struct PytorchTensorInfo {
  Shape shape;
  Strides strides;           // in elements; views of one storage keep theirs
  int64_t offset = 0;        // in elements from the start of the storage
  DType dtype = DType::f32;  // Ember's dtype (torch.int16 reads as i32: Ember has no int16)
  std::string torch_dtype;   // "torch.float32", as the file has it
  std::string storage;       // the storage's key: its record is <archive>/data/<key>
};

/// An opened torch.save file. Tensors are named by their path in the pickled object, joined by
/// dots: a state dict's own keys ("fc1.weight"), "model.fc1.weight" in a nested checkpoint, or
/// "state.0.exp_avg" for an optimizer's. Copies share the file's bytes.
class PytorchFile {
 public:
  const std::string& path() const { return path_; }
  /// Tensor names, in the pickle's order.
  const std::vector<std::string>& names() const { return names_; }
  size_t size() const { return names_.size(); }
  bool contains(const std::string& name) const { return infos_.count(name) != 0; }
  const PytorchTensorInfo& info(const std::string& name) const;
  DType dtype(const std::string& name) const { return info(name).dtype; }
  const Shape& shape(const std::string& name) const { return info(name).shape; }
  /// The tensor `name` on `device`. On the Cpu device it shares the file's read-only memory when
  /// its storage's record is aligned for the dtype (torch aligns records to 64 bytes); views of
  /// one storage share one buffer.
  DynTensor tensor(const std::string& name, Device device = default_device()) const;
  /// The same, converted to `dtype`.
  DynTensor tensor(const std::string& name, Device device, DType dtype) const;
  /// Everything that is not a tensor (an epoch, a learning rate, a name), by path, as text.
  const std::vector<std::pair<std::string, std::string>>& values() const { return values_; }
  /// The keys of the checkpoint's top-level dict (empty when it is not a dict).
  const std::vector<std::string>& top_level_keys() const { return top_keys_; }

 private:
  friend PytorchFile load_pytorch(const std::string&, const std::string&);
  friend PytorchFile parse_pytorch(std::vector<unsigned char>, std::string, const std::string&);
  static PytorchFile parse(std::shared_ptr<const detail::Bytes> bytes, std::string label,
                           const std::string& key);
  std::shared_ptr<const detail::Bytes> bytes_;
  std::shared_ptr<detail::PytorchStorages> storages_;
  std::string path_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, PytorchTensorInfo> infos_;
  std::vector<std::pair<std::string, std::string>> values_;
  std::vector<std::string> top_keys_;
};

/// True when the file at `path` starts as a torch.save archive does (a zip local header) and not
/// as a safetensors file (whose 9th byte opens its JSON header): how load() and `ember inspect`
/// tell the formats apart. False for a file that cannot be read.
bool is_pytorch_file(const std::string& path);

/// Opens a torch.save file (mapped read-only) and reads its pickle. `key` picks one entry of a
/// checkpoint dict ({"model": ..., "optimizer": ...}): its tensors are then named from inside it.
/// Every problem is an ember::Error naming the file, and what was refused and why.
PytorchFile load_pytorch(const std::string& path, const std::string& key = "");
/// The same on a file already in memory; `label` names it in errors.
PytorchFile parse_pytorch(std::vector<unsigned char> bytes, std::string label = "<memory>",
                          const std::string& key = "");

}  // namespace ember::io
