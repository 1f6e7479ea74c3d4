#include "ember/io/safetensors.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>
#include <unordered_set>

#include "ember/core/error.hpp"
#include "ember/tensor/ops/creation.hpp"
#include "file.hpp"

namespace ember::io {
namespace {

using Json = nlohmann::ordered_json;  // keeps the header's order for names()

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the Python library's limit
constexpr int kMaxJsonDepth = 64;                  // a valid header nests 3 deep
constexpr const char* kWhat = "[safetensors]";

struct FormatDType {
  std::string_view name;
  int bits;
  DType dtype;
  bool supported;
};

// Every dtype the format defines; the last ones have no Ember dtype (tensor() says so).
constexpr FormatDType kFormatDTypes[] = {
    {"F64", 64, DType::f64, true},     {"F32", 32, DType::f32, true},
    {"F16", 16, DType::f16, true},     {"BF16", 16, DType::bf16, true},
    {"I64", 64, DType::i64, true},     {"I32", 32, DType::i32, true},
    {"I8", 8, DType::i8, true},        {"U8", 8, DType::u8, true},
    {"BOOL", 8, DType::boolean, true}, {"I16", 16, DType::f32, false},
    {"U16", 16, DType::f32, false},    {"U32", 32, DType::f32, false},
    {"U64", 64, DType::f32, false},    {"C64", 64, DType::f32, false},
    {"F8_E5M2", 8, DType::f32, false}, {"F8_E4M3", 8, DType::f32, false},
    {"F8_E8M0", 8, DType::f32, false}, {"F6_E2M3", 6, DType::f32, false},
    {"F6_E3M2", 6, DType::f32, false}, {"F4", 4, DType::f32, false},
};

const FormatDType* find_format_dtype(std::string_view name) {
  for (const FormatDType& f : kFormatDTypes) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::string_view format_name(DType t) {
  for (const FormatDType& f : kFormatDTypes) {
    if (f.supported && f.dtype == t) return f.name;
  }
  return "?";
}

// A JSON value for an error message: escaped (names may hold NUL bytes) and cut short.
std::string brief(const Json& j) {
  std::string s = j.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return s;
}
std::string quoted(const std::string& s) { return brief(Json(s)); }

// Parses the header, rejecting duplicate keys (nlohmann would keep one silently) and absurd
// nesting. Errors are thrown from the parser's callback and pass through it.
Json parse_header(std::string_view text, const std::string& where) {
  std::vector<std::set<std::string>> open_objects;
  Json::parser_callback_t check = [&](int depth, Json::parse_event_t event, Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start:
      case Json::parse_event_t::array_start:
        EMBER_CHECK(depth < kMaxJsonDepth, where, "header nests deeper than ", kMaxJsonDepth,
                    " levels");
        if (event == Json::parse_event_t::object_start) open_objects.emplace_back();
        break;
      case Json::parse_event_t::object_end:
        if (!open_objects.empty()) open_objects.pop_back();
        break;
      case Json::parse_event_t::key: {
        const auto& key = parsed.get_ref<const std::string&>();
        EMBER_CHECK(open_objects.empty() || open_objects.back().insert(key).second, where,
                    depth == 1 ? "tensor name " : "key ", quoted(key),
                    " appears twice in the header");
        break;
      }
      default:
        break;
    }
    return true;
  };
  try {
    return Json::parse(text.begin(), text.end(), check);
  } catch (const Json::exception& e) {
    EMBER_FAIL(where, "header is not valid JSON: ", e.what());
  }
}

uint64_t read_uint(const Json& j, const std::string& where, const std::string& name,
                   const char* field) {
  if (j.is_number_unsigned()) return j.get<uint64_t>();
  EMBER_CHECK(!j.is_number_integer(), where, "tensor ", quoted(name), ": ", field,
              " holds the negative value ", j.get<int64_t>());
  EMBER_FAIL(where, "tensor ", quoted(name), ": ", field, " holds ", brief(j),
             ", expected a non-negative integer");
}

void check_name(const std::string& name, const std::string& where) {
  EMBER_CHECK(!name.empty(), where, "the header has a tensor with an empty name");
  EMBER_CHECK(name.find('\0') == std::string::npos, where, "tensor name ", quoted(name),
              " contains a NUL byte");
}

TensorInfo parse_entry(const std::string& name, const Json& entry, const std::string& where,
                       uint64_t data_size) {
  const std::string q = quoted(name);
  EMBER_CHECK(entry.is_object(), where, "tensor ", q, " is a JSON ", entry.type_name(),
              ", expected an object with dtype, shape and data_offsets");
  for (const char* field : {"dtype", "shape", "data_offsets"}) {
    EMBER_CHECK(entry.contains(field), where, "tensor ", q, " has no \"", field, "\"");
  }
  TensorInfo info;

  const Json& dtype = entry.at("dtype");
  EMBER_CHECK(dtype.is_string(), where, "tensor ", q, ": dtype is ", brief(dtype),
              ", expected a string such as \"F32\"");
  const FormatDType* format = find_format_dtype(dtype.get_ref<const std::string&>());
  EMBER_CHECK(format != nullptr, where, "tensor ", q, " has unknown dtype ", brief(dtype),
              " (safetensors dtypes: F64 F32 F16 BF16 I64 I32 I16 I8 U64 U32 U16 U8 BOOL C64 "
              "F8_E5M2 F8_E4M3 F8_E8M0 F6_E2M3 F6_E3M2 F4)");
  info.format_dtype = std::string(format->name);
  info.dtype = format->dtype;
  info.supported = format->supported;

  const Json& shape = entry.at("shape");
  EMBER_CHECK(shape.is_array(), where, "tensor ", q, ": shape is ", brief(shape),
              ", expected an array of sizes");
  EMBER_CHECK(shape.size() <= static_cast<size_t>(kMaxRank), where, "tensor ", q, " has rank ",
              shape.size(), ", more than Ember's maximum of ", kMaxRank);
  // Sizes multiply in order with an overflow check, as in the Python library.
  int64_t numel = 1;
  for (const Json& d : shape) {
    const uint64_t size = read_uint(d, where, name, "shape");
    EMBER_CHECK(size <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) &&
                    !__builtin_mul_overflow(numel, static_cast<int64_t>(size), &numel),
                where, "tensor ", q, ": shape ", brief(shape),
                " has more elements than an int64 can count");
    info.shape.push_back(static_cast<int64_t>(size));
  }
  // An empty tensor's other sizes still make its strides: they must fit an int64 too.
  int64_t stride = 1;
  for (int64_t d : info.shape) {
    EMBER_CHECK(!__builtin_mul_overflow(stride, std::max<int64_t>(d, 1), &stride), where, "tensor ",
                q, ": shape ", brief(shape),
                " is too large for Ember's strides (the product of its sizes other than 0 "
                "overflows an int64)");
  }
  const unsigned __int128 bits = static_cast<unsigned __int128>(numel) * format->bits;
  EMBER_CHECK(bits / 8 <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()), where,
              "tensor ", q, ": shape ", brief(shape), " of ", info.format_dtype,
              " needs more bytes than an int64 can count");
  EMBER_CHECK(bits % 8 == 0, where, "tensor ", q, ": ", numel, " elements of ", info.format_dtype,
              " do not fill a whole number of bytes");
  const auto nbytes = static_cast<uint64_t>(bits / 8);

  const Json& offsets = entry.at("data_offsets");
  EMBER_CHECK(offsets.is_array() && offsets.size() == 2, where, "tensor ", q, ": data_offsets is ",
              brief(offsets), ", expected [begin, end]");
  info.begin = read_uint(offsets[0], where, name, "data_offsets");
  info.end = read_uint(offsets[1], where, name, "data_offsets");
  EMBER_CHECK(info.begin <= info.end, where, "tensor ", q, ": data_offsets [", info.begin, ", ",
              info.end, "] end before they begin");
  EMBER_CHECK(info.end - info.begin == nbytes, where, "tensor ", q, ": data_offsets [", info.begin,
              ", ", info.end, "] hold ", info.end - info.begin, " bytes, but shape ", info.shape,
              " of ", info.format_dtype, " needs ", nbytes);
  EMBER_CHECK(info.end <= data_size, where, "tensor ", q, ": data_offsets [", info.begin, ", ",
              info.end, "] lie outside the data area, which has ", data_size,
              " bytes (is the file truncated?)");
  return info;
}

void parse_metadata(const Json& j, const std::string& where,
                    std::map<std::string, std::string>& out) {
  if (j.is_null()) return;  // the Python library reads null as no metadata
  EMBER_CHECK(j.is_object(), where, "__metadata__ is a JSON ", j.type_name(),
              ", expected an object of strings");
  for (auto it = j.begin(); it != j.end(); ++it) {
    EMBER_CHECK(it->is_string(), where, "__metadata__ value of ", quoted(it.key()), " is ",
                brief(*it), "; metadata maps strings to strings");
    out.emplace(it.key(), it->get<std::string>());
  }
}

// The Python library requires the tensors to tile the data area exactly: no overlap, no gap and
// no trailing bytes. Ember follows it, so files that load here load there.
void check_coverage(const std::vector<std::string>& names,
                    const std::unordered_map<std::string, TensorInfo>& infos,
                    const std::string& where, uint64_t data_size) {
  std::vector<std::pair<const TensorInfo*, const std::string*>> order;
  order.reserve(names.size());
  for (const std::string& n : names) order.emplace_back(&infos.at(n), &n);
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.first->begin != b.first->begin ? a.first->begin < b.first->begin
                                            : a.first->end < b.first->end;
  });
  uint64_t covered = 0;
  const std::pair<const TensorInfo*, const std::string*>* last = nullptr;
  for (const auto& entry : order) {
    const TensorInfo& t = *entry.first;
    if (t.begin < covered) {
      EMBER_FAIL(where, "tensors ", quoted(*last->second), " (bytes [", last->first->begin, ", ",
                 last->first->end, ")) and ", quoted(*entry.second), " (bytes [", t.begin, ", ",
                 t.end, ")) overlap");
    }
    EMBER_CHECK(t.begin == covered, where, "bytes [", covered, ", ", t.begin,
                ") of the data area belong to no tensor; the format requires the tensors to "
                "cover the data area without gaps");
    covered = t.end;
    last = &entry;
  }
  EMBER_CHECK(covered == data_size, where, "the data area has ", data_size,
              " bytes but the tensors end at byte ", covered, ": ", data_size - covered,
              " trailing bytes belong to no tensor, which the format does not allow");
}

void release_owner(void* context, void*, size_t) {
  delete static_cast<std::shared_ptr<const detail::Bytes>*>(context);
}

}  // namespace

SafetensorsFile SafetensorsFile::parse(std::shared_ptr<const detail::Bytes> bytes,
                                       std::string label) {
  const std::string where = std::string(kWhat) + " " + label + ": ";
  const size_t size = bytes->size();
  EMBER_CHECK(size >= 8, where, "the file is ", size,
              " bytes, shorter than the 8-byte header length every safetensors file starts with");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(bytes->data()[i]) << (8 * i);
  EMBER_CHECK(n <= kMaxHeaderBytes, where, "header length ", n, " exceeds the limit of ",
              kMaxHeaderBytes, " bytes (is this a safetensors file?)");
  EMBER_CHECK(n <= size - 8, where, "header length ", n, " is larger than the ", size - 8,
              " bytes that follow it in the file (is the file truncated?)");

  const Json header = parse_header(
      {reinterpret_cast<const char*>(bytes->data()) + 8, static_cast<size_t>(n)}, where);
  EMBER_CHECK(header.is_object(), where, "the header is a JSON ", header.type_name(),
              ", expected an object");

  SafetensorsFile f;
  f.path_ = std::move(label);
  f.data_start_ = 8 + n;
  const uint64_t data_size = size - 8 - n;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      parse_metadata(*it, where, f.metadata_);
      continue;
    }
    check_name(it.key(), where);
    f.infos_.emplace(it.key(), parse_entry(it.key(), *it, where, data_size));
    f.names_.push_back(it.key());
  }
  check_coverage(f.names_, f.infos_, where, data_size);
  f.bytes_ = std::move(bytes);
  return f;
}

const TensorInfo& SafetensorsFile::info(const std::string& name) const {
  const auto it = infos_.find(name);
  EMBER_CHECK(it != infos_.end(), kWhat, " ", path_, ": no tensor named ", quoted(name));
  return it->second;
}

DType SafetensorsFile::dtype(const std::string& name) const {
  const TensorInfo& t = info(name);
  EMBER_CHECK(t.supported, kWhat, " ", path_, ": tensor ", quoted(name), " has dtype ",
              t.format_dtype, ", which Ember has no dtype for");
  return t.dtype;
}

bool SafetensorsFile::zero_copy(const std::string& name) const {
  const TensorInfo& t = info(name);
  if (!t.supported) return false;
  const auto address = reinterpret_cast<uintptr_t>(bytes_->data() + data_start_ + t.begin);
  return address % dtype_size(t.dtype) == 0;
}

DynTensor SafetensorsFile::tensor(const std::string& name, Device device) const {
  const DType type = dtype(name);
  const TensorInfo& t = info(name);
  const unsigned char* src = bytes_->data() + data_start_ + t.begin;
  const auto nbytes = static_cast<size_t>(t.end - t.begin);
  if (type == DType::boolean) {  // any other byte would be undefined behaviour as a C++ bool
    for (size_t i = 0; i < nbytes; ++i) {
      EMBER_CHECK(src[i] <= 1, kWhat, " ", path_, ": tensor ", quoted(name), " is BOOL but byte ",
                  i, " holds ", static_cast<int>(src[i]), " (only 0 and 1 are booleans)");
    }
  }
  DynTensor cpu;
  if (nbytes > 0 && zero_copy(name)) {
    // The storage shares the mapping: its release callback drops one owner of the bytes.
    auto owner = std::make_unique<std::shared_ptr<const detail::Bytes>>(bytes_);
    RawTensor raw;
    raw.storage = std::make_shared<Storage>(const_cast<unsigned char*>(src), nbytes, Device::cpu(),
                                            &release_owner, owner.get());
    owner.release();
    raw.shape = t.shape;
    raw.strides = contiguous_strides(t.shape);
    raw.dtype = type;
    cpu = DynTensor(std::move(raw));
  } else {
    cpu = empty(t.shape, type, Device::cpu());
    if (nbytes > 0) std::memcpy(cpu.raw().data(), src, nbytes);
  }
  return to_device(cpu, device);
}

DynTensor SafetensorsFile::tensor(const std::string& name, Device device, DType dtype) const {
  return to_device(cast(tensor(name, Device::cpu()), dtype), device);
}

SafetensorsFile load_safetensors(const std::string& path) {
  return SafetensorsFile::parse(detail::map_file(path, kWhat), path);
}

SafetensorsFile parse_safetensors(std::vector<unsigned char> bytes, std::string label) {
  return SafetensorsFile::parse(std::make_shared<detail::BufferBytes>(std::move(bytes)),
                                std::move(label));
}

void save_safetensors(const std::vector<std::pair<std::string, DynTensor>>& tensors,
                      const std::string& path, const std::map<std::string, std::string>& metadata) {
  const std::string where = std::string(kWhat) + " " + path + ": ";
  std::unordered_set<std::string> seen;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, t] = tensors[i];
    EMBER_CHECK(!name.empty(), where, "tensor ", i, " has an empty name");
    EMBER_CHECK(name.find('\0') == std::string::npos, where, "tensor name ", quoted(name),
                " contains a NUL byte");
    EMBER_CHECK(name != "__metadata__", where,
                "\"__metadata__\" is reserved for the metadata and cannot name a tensor");
    EMBER_CHECK(seen.insert(name).second, where, "tensor name ", quoted(name), " appears twice");
    EMBER_CHECK(t.defined(), where, "tensor ", quoted(name), " is undefined");
  }

  // Data goes largest dtype first: every offset is then a multiple of its dtype's size (the data
  // area starts 8-aligned), so a reader can map every tensor without copying.
  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return dtype_size(tensors[a].second.dtype()) > dtype_size(tensors[b].second.dtype());
  });
  std::vector<uint64_t> begin(tensors.size());
  uint64_t offset = 0;
  for (size_t i : order) {
    begin[i] = offset;
    offset += tensors[i].second.raw().nbytes();
  }

  Json header = Json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const DynTensor& t = tensors[i].second;
    header[tensors[i].first] = {
        {"dtype", format_name(t.dtype())},
        {"shape", t.shape().vec()},
        {"data_offsets", Json::array({begin[i], begin[i] + t.raw().nbytes()})}};
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const Json::exception& e) {
    EMBER_FAIL(where, "cannot encode the header (names and metadata must be UTF-8): ", e.what());
  }
  text.append((8 - text.size() % 8) % 8, ' ');  // data then starts 8-aligned, as Python pads

  detail::AtomicFile file(path, kWhat);
  unsigned char length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(text.size() >> (8 * i));
  file.write(length, sizeof length);
  file.write(text.data(), text.size());
  for (size_t i : order) {
    const DynTensor& t = tensors[i].second;
    if (t.device().is_cpu() && t.is_contiguous()) {
      file.write(t.raw().data(), t.raw().nbytes());
    } else {
      const TensorData host = t.to_data();  // row-major, synchronised with the device
      file.write(host.bytes.data(), host.bytes.size());
    }
  }
  file.commit();
}

}  // namespace ember::io
