// The restricted unpickler behind load_pytorch: it reads the pickle of a torch.save archive into
// plain values, and rebuilds only what a checkpoint holds (tensors over storages, parameters,
// OrderedDicts, torch.Size, dtypes and devices). Nothing from the file is ever called or imported:
// every global is looked up in a fixed allow-list, and any other is refused by name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ember/core/dtype.hpp"

namespace ember::io::detail {

/// A torch element type as the pickle names it. ShortStorage (int16) has no Ember dtype: its
/// values are widened to i32 when read.
struct TorchDType {
  const char* storage;  // "FloatStorage"
  const char* name;     // "float32", the torch.<name> dtype global
  DType dtype;          // Ember's dtype for the values
  int size;             // bytes per element in the file
};

/// Index into torch_dtypes(); kUntyped for a torch.UntypedStorage (bytes).
inline constexpr int kUntyped = -1;
const std::vector<TorchDType>& torch_dtypes();
/// The index in torch_dtypes() of a dtype's name ("float32", or torch's alias "float"); -2 if none.
int torch_dtype_index(const std::string& name);

struct PickleValue {
  enum class Kind : uint8_t {
    None,
    Bool,
    Int,
    Float,
    Str,
    Bytes,
    List,
    Tuple,
    Dict,
    Global,
    Storage,
    Tensor
  };
  Kind kind = Kind::None;
  int64_t i = 0;  // Bool, Int; Storage: its element count
  double f = 0;
  std::string s;  // Str, Bytes; Global: "module.name"; Storage: its key in the archive
  std::vector<uint32_t> items;  // List, Tuple: elements; Dict: key, value, key, value, ...
  int dtype = kUntyped;         // Storage, Tensor, and a dtype Global (torch.float32)
  // Tensor: a view of `storage` (a Storage value), in elements of `dtype`.
  uint32_t storage = 0;
  int64_t offset = 0;
  std::vector<int64_t> sizes, strides;
};

struct Pickle {
  std::vector<PickleValue> values;  // every value made; items and storage index into it
  uint32_t root = 0;
};

/// Reads the pickle in [data, data + size). `what` and `label` start every error.
Pickle unpickle_torch(const unsigned char* data, size_t size, const char* what,
                      const std::string& label);

/// A value in a line of text (for errors and `ember inspect`): "3", "'adam'", "list of 4".
std::string describe(const Pickle& p, uint32_t v);

}  // namespace ember::io::detail
