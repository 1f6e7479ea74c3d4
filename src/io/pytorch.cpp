#include "ember/io/pytorch.hpp"

#include <cstring>
#include <fstream>
#include <mutex>
#include <unordered_set>

#include "ember/core/error.hpp"
#include "ember/core/storage.hpp"
#include "ember/tensor/ops/creation.hpp"
#include "file.hpp"
#include "pytorch_pickle.hpp"
#include "zip.hpp"

namespace ember::io {

namespace detail {

// The storages' records, and the copies made of those that cannot be shared (int16 widened to
// int32, a record not aligned for its dtype): kept so that views of one storage share one copy.
struct PytorchStorages {
  struct Record {
    uint64_t offset = 0, nbytes = 0;
    bool checked_bool = false;  // every byte is 0 or 1
  };
  std::unordered_map<std::string, Record> records;
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<Storage>> copies;  // key + "/" + dtype
};

}  // namespace detail

namespace {

using detail::Pickle;
using detail::PickleValue;
using Kind = PickleValue::Kind;
constexpr const char* kWhat = "[pytorch]";
constexpr int kMaxDepth = 100;  // a checkpoint nests a few levels; a pickle can nest without end

const detail::TorchDType& torch_dtype(int index) {
  return detail::torch_dtypes()[static_cast<size_t>(index)];
}

// Names every tensor of a pickled object by its path, and every other leaf as a value.
class Flattener {
 public:
  Flattener(const Pickle& p, const std::string& where, std::vector<std::string>& names,
            std::unordered_map<std::string, PytorchTensorInfo>& infos,
            std::vector<std::pair<std::string, std::string>>& values)
      : p_(p),
        where_(where),
        names_(names),
        infos_(infos),
        values_(values),
        budget_(4 * p.values.size() + 1024) {}

  void walk(uint32_t id, const std::string& path, int depth) {
    EMBER_CHECK(depth <= kMaxDepth, where_, "the object nests more than ", kMaxDepth,
                " levels deep at '", path.substr(0, 200),
                "...' (a recursion bomb, or a container that holds itself)");
    EMBER_CHECK(budget_-- > 0, where_, "the object's containers are shared so many times over ",
                "that naming its tensors would not end (a recursion bomb)");
    const PickleValue& v = p_.values[id];
    switch (v.kind) {
      case Kind::Dict:
        for (size_t i = 0; i < v.items.size(); i += 2)
          walk(v.items[i + 1], join(path, key_text(v.items[i])), depth + 1);
        break;
      case Kind::List:
      case Kind::Tuple:
        if (plain(v)) {  // (0.9, 0.999), [0, 1, 2]: one value
          values_.emplace_back(path, detail::describe(p_, id));
          break;
        }
        for (size_t i = 0; i < v.items.size(); ++i)
          walk(v.items[i], join(path, std::to_string(i)), depth + 1);
        break;
      case Kind::Tensor: {
        const detail::TorchDType& d = torch_dtype(v.dtype);
        PytorchTensorInfo info;
        info.shape = Shape(v.sizes);
        info.strides = Strides(v.strides);
        info.offset = v.offset;
        info.dtype = d.dtype;
        info.torch_dtype = std::string("torch.") + d.name;
        info.storage = p_.values[v.storage].s;
        EMBER_CHECK(infos_.emplace(path, std::move(info)).second, where_, "two tensors are named '",
                    path, "'");
        names_.push_back(path);
        break;
      }
      default:
        values_.emplace_back(path, detail::describe(p_, id));
    }
  }

 private:
  // A list or tuple of plain values only (no containers, no tensors).
  bool plain(const PickleValue& v) const {
    for (uint32_t item : v.items) {
      const Kind k = p_.values[item].kind;
      if (k == Kind::Dict || k == Kind::List || k == Kind::Tuple || k == Kind::Tensor) return false;
    }
    return true;
  }
  static std::string join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }
  std::string key_text(uint32_t key) const {
    const PickleValue& k = p_.values[key];
    if (k.kind == Kind::Str) return k.s;
    if (k.kind == Kind::Int || k.kind == Kind::Bool) return std::to_string(k.i);
    return detail::describe(p_, key);
  }

  const Pickle& p_;
  const std::string& where_;
  std::vector<std::string>& names_;
  std::unordered_map<std::string, PytorchTensorInfo>& infos_;
  std::vector<std::pair<std::string, std::string>>& values_;
  size_t budget_;
};

// Why a file that is not a zip archive cannot be read, as precisely as its first bytes tell.
[[noreturn]] void not_an_archive(const unsigned char* data, size_t size, const std::string& where) {
  const bool tar = size > 262 && std::memcmp(data + 257, "ustar", 5) == 0;
  EMBER_CHECK(!(size >= 2 && data[0] == 0x80) && !tar, where,
              "this is PyTorch's legacy format (torch.save before PyTorch 1.6, or with "
              "_use_new_zipfile_serialization=False), which is not read: re-save it with a newer "
              "PyTorch, torch.save(torch.load(path), path)");
  EMBER_CHECK(!(size >= 9 && data[8] == '{'), where,
              "this looks like a safetensors file: read it with load_safetensors");
  EMBER_FAIL(where, "not a torch.save file (it is not a zip archive)");
}

}  // namespace

const PytorchTensorInfo& PytorchFile::info(const std::string& name) const {
  const auto it = infos_.find(name);
  EMBER_CHECK(it != infos_.end(), kWhat, " ", path_, ": no tensor named '", name, "' (",
              names_.size(), " tensors", names_.empty() ? "" : ", the first '" + names_[0] + "'",
              ")");
  return it->second;
}

PytorchFile PytorchFile::parse(std::shared_ptr<const detail::Bytes> bytes, std::string label,
                               const std::string& key) {
  const std::string where = std::string(kWhat) + " " + label + ": ";
  const unsigned char* data = bytes->data();
  const size_t size = bytes->size();
  if (!detail::looks_like_zip(data, size)) not_an_archive(data, size, where);
  const std::vector<detail::ZipEntry> entries = detail::read_zip(data, size, kWhat, label);
  std::unordered_map<std::string, const detail::ZipEntry*> by_name;
  for (const detail::ZipEntry& e : entries) by_name[e.name] = &e;

  // torch.save names every record <prefix>/...; the prefix is the first record's folder.
  const std::string first = entries.empty() ? "" : entries[0].name;
  const std::string prefix = first.substr(0, first.find('/'));
  EMBER_CHECK(by_name.count(prefix + "/data.pkl"), where, "the archive has no '", prefix,
              "/data.pkl' record, so it is not a torch.save file");
  EMBER_CHECK(!by_name.count(prefix + "/constants.pkl"), where,
              "this is a TorchScript archive (torch.jit.save), which holds code; save the "
              "model's weights with torch.save(model.state_dict(), path) and load those");
  if (const auto it = by_name.find(prefix + "/byteorder"); it != by_name.end()) {
    const std::string order(reinterpret_cast<const char*>(data + it->second->offset),
                            static_cast<size_t>(std::min<uint64_t>(it->second->size, 16)));
    EMBER_CHECK(order == "little", where, "the storages are '", order,
                "'-endian; only little-endian files are read");
  }
  // torch.save stores every record; a compressed one was rewritten by another tool.
  auto stored = [&](const detail::ZipEntry& e) -> const detail::ZipEntry& {
    EMBER_CHECK(e.method == 0, where, "zip entry '", e.name, "' is compressed (method ", e.method,
                "); torch.save stores records uncompressed, and only such archives are read");
    return e;
  };
  const detail::ZipEntry& pkl = stored(*by_name.at(prefix + "/data.pkl"));
  const Pickle pickle = detail::unpickle_torch(data + pkl.offset, pkl.size, kWhat, label);

  PytorchFile file;
  file.bytes_ = bytes;
  file.path_ = std::move(label);
  file.storages_ = std::make_shared<detail::PytorchStorages>();
  uint32_t root = pickle.root;
  const PickleValue& top = pickle.values[root];
  if (top.kind == Kind::Dict) {
    for (size_t i = 0; i < top.items.size(); i += 2) {
      const PickleValue& k = pickle.values[top.items[i]];
      if (k.kind == Kind::Str) file.top_keys_.push_back(k.s);
    }
  }
  if (!key.empty()) {
    bool found = false;
    for (size_t i = 0; top.kind == Kind::Dict && i < top.items.size() && !found; i += 2) {
      const PickleValue& k = pickle.values[top.items[i]];
      if (k.kind == Kind::Str && k.s == key) {
        root = top.items[i + 1];
        found = true;
      }
    }
    if (!found) {
      std::string keys;
      for (const std::string& k : file.top_keys_) keys += (keys.empty() ? "'" : ", '") + k + "'";
      EMBER_FAIL(where, "no top-level key '", key, "': the file holds ",
                 top.kind == Kind::Dict ? "a dict with the keys " + (keys.empty() ? "(none)" : keys)
                                        : detail::describe(pickle, pickle.root));
    }
  }
  Flattener(pickle, where, file.names_, file.infos_, file.values_).walk(root, "", 0);

  // Every storage a tensor views has its record, long enough for the persistent id's length.
  for (const PickleValue& v : pickle.values) {
    if (v.kind != Kind::Storage) continue;
    const auto it = by_name.find(prefix + "/data/" + v.s);
    EMBER_CHECK(it != by_name.end(), where, "storage '", v.s, "' has no record '", prefix, "/data/",
                v.s, "' in the archive");
    stored(*it->second);
    const auto elem =
        static_cast<uint64_t>(v.dtype == detail::kUntyped ? 1 : torch_dtype(v.dtype).size);
    EMBER_CHECK(static_cast<uint64_t>(v.i) <= it->second->size / elem, where, "storage '", v.s,
                "' is too short: its record holds ", it->second->size, " bytes, the pickle says ",
                v.i, " elements of ", elem, " bytes");
    file.storages_->records[v.s] = {it->second->offset, static_cast<uint64_t>(v.i) * elem, false};
  }
  return file;
}

DynTensor PytorchFile::tensor(const std::string& name, Device device) const {
  const PytorchTensorInfo& t = info(name);
  const detail::TorchDType& d = torch_dtype(detail::torch_dtype_index(t.torch_dtype.substr(6)));
  const unsigned char* src;
  uint64_t nbytes;
  std::shared_ptr<Storage> storage;
  {
    std::lock_guard<std::mutex> lock(storages_->mutex);
    detail::PytorchStorages::Record& r = storages_->records.at(t.storage);
    src = bytes_->data() + r.offset;
    nbytes = r.nbytes - r.nbytes % static_cast<uint64_t>(d.size);
    if (t.dtype == DType::boolean && !r.checked_bool) {
      // Any byte but 0 and 1 would be undefined behaviour as a C++ bool.
      for (uint64_t i = 0; i < nbytes; ++i) {
        EMBER_CHECK(src[i] <= 1, kWhat, " ", path_, ": tensor '", name, "' is bool but byte ", i,
                    " of storage '", t.storage, "' holds ", static_cast<int>(src[i]));
      }
      r.checked_bool = true;
    }
    const bool shared = static_cast<size_t>(d.size) == dtype_size(t.dtype) &&
                        reinterpret_cast<uintptr_t>(src) % static_cast<uintptr_t>(d.size) == 0;
    if (!shared) {
      std::shared_ptr<Storage>& copy = storages_->copies[t.storage + "/" + d.name];
      if (!copy) {
        const auto count = static_cast<int64_t>(nbytes / static_cast<uint64_t>(d.size));
        DynTensor buffer = empty(Shape({count}), t.dtype, Device::cpu());
        if (d.size == 2 && t.dtype == DType::i32) {  // int16, widened
          auto* out = buffer.raw().data_as<int32_t>();
          for (int64_t i = 0; i < count; ++i) {
            int16_t v;
            std::memcpy(&v, src + 2 * i, 2);
            out[i] = v;
          }
        } else if (nbytes > 0) {
          std::memcpy(buffer.raw().data(), src, static_cast<size_t>(nbytes));
        }
        copy = buffer.raw().storage;
      }
      storage = copy;
    }
  }
  if (!storage) storage = detail::storage_over(bytes_, src, static_cast<size_t>(nbytes));
  RawTensor raw;
  raw.storage = std::move(storage);
  raw.shape = t.shape;
  raw.strides = t.strides;
  raw.offset = t.offset;
  raw.dtype = t.dtype;
  return to_device(DynTensor(std::move(raw)), device);
}

DynTensor PytorchFile::tensor(const std::string& name, Device device, DType dtype) const {
  return to_device(cast(tensor(name, Device::cpu()), dtype), device);
}

bool is_pytorch_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char head[9] = {};
  if (!in.read(reinterpret_cast<char*>(head), sizeof head)) return false;
  return detail::looks_like_zip(head, sizeof head) && head[8] != '{';
}

PytorchFile load_pytorch(const std::string& path, const std::string& key) {
  return PytorchFile::parse(detail::map_file(path, kWhat), path, key);
}

PytorchFile parse_pytorch(std::vector<unsigned char> bytes, std::string label,
                          const std::string& key) {
  return PytorchFile::parse(std::make_shared<detail::BufferBytes>(std::move(bytes)),
                            std::move(label), key);
}

}  // namespace ember::io
