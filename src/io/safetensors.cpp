#include "ember/io/safetensors.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <string_view>
#include <unordered_set>

#include "ember/core/embedded.hpp"
#include "ember/core/error.hpp"
#include "ember/tensor/ops/creation.hpp"
#include "file.hpp"

namespace ember::io {
namespace {

using Json = nlohmann::json;

// The header's length, as the Python and Rust libraries bound it (MAX_HEADER_SIZE): a real header
// is a few hundred bytes per tensor, so 100 MB holds over a million tensors, and a bound here is
// what keeps a 16-exabyte length field from being believed.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
constexpr int kMaxJsonDepth = 64;  // a valid header nests 3 deep
// __metadata__ is kept in memory (a std::map): its entries are bounded so that a header of tiny
// entries cannot cost ~100 bytes of nodes per 8 bytes of file. Real files hold tens of entries.
constexpr size_t kMaxMetadataEntries = 65'536;
constexpr size_t kMaxMetadataBytes = 64 << 20;  // keys and values together
// Values kept of a shape or data_offsets array before the parser gives up on it (rank <= 12).
constexpr size_t kMaxArrayValues = 16;
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

[[maybe_unused]] std::string_view format_name(DType t) {
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
std::string json_quoted(const std::string& s) { return brief(Json(s)); }

uint64_t read_uint(const Json& j, const std::string& where, const std::string& name,
                   const char* field) {
  if (j.is_number_unsigned()) return j.get<uint64_t>();
  EMBER_CHECK(!j.is_number_integer(), where, "tensor ", json_quoted(name), ": ", field,
              " holds the negative value ", j.get<int64_t>());
  EMBER_FAIL(where, "tensor ", json_quoted(name), ": ", field, " holds ", brief(j),
             ", expected a non-negative integer");
}

void check_name(const std::string& name, const std::string& where) {
  EMBER_CHECK(!name.empty(), where, "the header has a tensor with an empty name");
  EMBER_CHECK(name.find('\0') == std::string::npos, where, "tensor name ", json_quoted(name),
              " contains a NUL byte");
}

TensorInfo parse_entry(const std::string& name, const Json& entry, const std::string& where,
                       uint64_t data_size) {
  EMBER_CHECK(entry.is_object(), where, "tensor ", json_quoted(name), " is a JSON ",
              entry.type_name(), ", expected an object with dtype, shape and data_offsets");
  for (const char* field : {"dtype", "shape", "data_offsets"}) {
    EMBER_CHECK(entry.contains(field), where, "tensor ", json_quoted(name), " has no \"", field,
                "\"");
  }
  TensorInfo info;

  const Json& dtype = entry.at("dtype");
  EMBER_CHECK(dtype.is_string(), where, "tensor ", json_quoted(name), ": dtype is ", brief(dtype),
              ", expected a string such as \"F32\"");
  const FormatDType* format = find_format_dtype(dtype.get_ref<const std::string&>());
  EMBER_CHECK(format != nullptr, where, "tensor ", json_quoted(name), " has unknown dtype ",
              brief(dtype),
              " (safetensors dtypes: F64 F32 F16 BF16 I64 I32 I16 I8 U64 U32 U16 U8 BOOL C64 "
              "F8_E5M2 F8_E4M3 F8_E8M0 F6_E2M3 F6_E3M2 F4)");
  info.format_dtype = std::string(format->name);
  info.dtype = format->dtype;
  info.supported = format->supported;

  const Json& shape = entry.at("shape");
  EMBER_CHECK(shape.is_array(), where, "tensor ", json_quoted(name), ": shape is ", brief(shape),
              ", expected an array of sizes");
  EMBER_CHECK(shape.size() <= static_cast<size_t>(kMaxRank), where, "tensor ", json_quoted(name),
              " has rank ", shape.size(), ", more than Ember's maximum of ", kMaxRank);
  // Sizes multiply in order with an overflow check, as in the Python library.
  int64_t numel = 1;
  for (const Json& d : shape) {
    const uint64_t size = read_uint(d, where, name, "shape");
    EMBER_CHECK(size <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) &&
                    !__builtin_mul_overflow(numel, static_cast<int64_t>(size), &numel),
                where, "tensor ", json_quoted(name), ": shape ", brief(shape),
                " has more elements than an int64 can count");
    info.shape.push_back(static_cast<int64_t>(size));
  }
  // An empty tensor's other sizes still make its strides: they must fit an int64 too.
  int64_t stride = 1;
  for (int64_t d : info.shape) {
    EMBER_CHECK(!__builtin_mul_overflow(stride, std::max<int64_t>(d, 1), &stride), where, "tensor ",
                json_quoted(name), ": shape ", brief(shape),
                " is too large for Ember's strides (the product of its sizes other than 0 "
                "overflows an int64)");
  }
  // numel * bits / 8 as (numel / 8) * bits + (numel % 8) * bits / 8: no 128-bit product, which
  // 32-bit targets lack.
  const auto count = static_cast<uint64_t>(numel);
  const uint64_t rest_bits = count % 8 * format->bits;
  uint64_t nbytes = 0;
  const bool overflows =
      __builtin_mul_overflow(count / 8, static_cast<uint64_t>(format->bits), &nbytes) ||
      __builtin_add_overflow(nbytes, rest_bits / 8, &nbytes);
  EMBER_CHECK(!overflows && nbytes <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()),
              where, "tensor ", json_quoted(name), ": shape ", brief(shape), " of ",
              info.format_dtype, " needs more bytes than an int64 can count");
  EMBER_CHECK(rest_bits % 8 == 0, where, "tensor ", json_quoted(name), ": ", numel, " elements of ",
              info.format_dtype, " do not fill a whole number of bytes");

  const Json& offsets = entry.at("data_offsets");
  EMBER_CHECK(offsets.is_array() && offsets.size() == 2, where, "tensor ", json_quoted(name),
              ": data_offsets is ", brief(offsets), ", expected [begin, end]");
  info.begin = read_uint(offsets[0], where, name, "data_offsets");
  info.end = read_uint(offsets[1], where, name, "data_offsets");
  EMBER_CHECK(info.begin <= info.end, where, "tensor ", json_quoted(name), ": data_offsets [",
              info.begin, ", ", info.end, "] end before they begin");
  EMBER_CHECK(info.end - info.begin == nbytes, where, "tensor ", json_quoted(name),
              ": data_offsets [", info.begin, ", ", info.end, "] hold ", info.end - info.begin,
              " bytes, but shape ", info.shape, " of ", info.format_dtype, " needs ", nbytes);
  EMBER_CHECK(info.end <= data_size, where, "tensor ", json_quoted(name), ": data_offsets [",
              info.begin, ", ", info.end, "] lie outside the data area, which has ", data_size,
              " bytes (is the file truncated?)");
  return info;
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
      EMBER_FAIL(where, "tensors ", json_quoted(*last->second), " (bytes [", last->first->begin,
                 ", ", last->first->end, ")) and ", json_quoted(*entry.second), " (bytes [",
                 t.begin, ", ", t.end, ")) overlap");
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

// Reads the header with nlohmann's callback parser, keeping only what Ember uses: each tensor's
// entry is validated and dropped as soon as it ends, unknown fields are never stored and metadata
// strings go straight into the map. Memory is then a small multiple of what the file holds, and
// time linear in the header (the whole ordered_json DOM it replaces took 49 s for 100,000
// tensors, ordered_map's insert being linear, and 1.9 GB for 98 MB of ignored fields).
class HeaderReader {
 public:
  HeaderReader(const std::string& where, uint64_t data_size, std::vector<std::string>& names,
               std::unordered_map<std::string, TensorInfo>& infos,
               std::map<std::string, std::string>& metadata)
      : where_(where), data_size_(data_size), names_(names), infos_(infos), metadata_(metadata) {}

  void read(std::string_view text) {
    const auto callback = [this](int depth, Json::parse_event_t event, Json& parsed) {
      return on_event(depth, event, parsed);
    };
#if EMBER_HAS_EXCEPTIONS
    try {
      [[maybe_unused]] const Json root = Json::parse(text.begin(), text.end(), callback);
    } catch (const Json::exception& e) {
      EMBER_FAIL(where_, "header is not valid JSON: ", e.what());
    }
#else  // bare metal: the parser reports failure by a discarded value, without the reason
    const Json root = Json::parse(text.begin(), text.end(), callback, false);
    EMBER_CHECK(!root.is_discarded() || (!root_type_.empty() && root_type_ != "object"), where_,
                "header is not valid JSON");
#endif
    EMBER_CHECK(root_type_ == "object", where_, "the header is a JSON ", root_type_,
                ", expected an object");
  }

 private:
  enum class Field { none, dtype, shape, offsets, ignored };

  bool on_event(int depth, Json::parse_event_t event, Json& parsed) {
    using E = Json::parse_event_t;
    const bool starts = event == E::object_start || event == E::array_start;
    const char* type = event == E::object_start ? "object" : "array";
    if (starts) {
      EMBER_CHECK(depth < kMaxJsonDepth, where_, "header nests deeper than ", kMaxJsonDepth,
                  " levels");
    }
    if (depth == 0) {  // the root: anything but an object is refused after the parse
      if (starts) root_type_ = type;
      if (event == E::value) root_type_ = parsed.type_name();
      return event == E::object_start || event == E::object_end;
    }
    if (root_type_ != "object") return false;
    if (depth == 1) return on_top_level(event, parsed, starts, type);
    if (in_metadata_) return on_metadata(depth, event, parsed, starts, type);
    return on_entry(depth, event, parsed, starts, type);
  }

  // The root's keys (tensor names, "__metadata__") and their values.
  bool on_top_level(Json::parse_event_t event, Json& parsed, bool starts, const char* type) {
    using E = Json::parse_event_t;
    if (event == E::key) {
      key_ = parsed.get<std::string>();
      in_metadata_ = key_ == "__metadata__";
      if (in_metadata_) {
        EMBER_CHECK(!seen_metadata_, where_, "key \"__metadata__\" appears twice in the header");
        seen_metadata_ = true;
      } else {
        check_name(key_, where_);
        EMBER_CHECK(infos_.count(key_) == 0, where_, "tensor name ", json_quoted(key_),
                    " appears twice in the header");
      }
      fields_ = 0;
      // An entry is stored until it ends (then validated and dropped); metadata never is.
      return !in_metadata_;
    }
    if (in_metadata_) {
      if (event == E::object_start || event == E::object_end) return event == E::object_start;
      if (event == E::value && parsed.is_null()) return false;  // as Python: no metadata
      EMBER_FAIL(where_, "__metadata__ is a JSON ", starts ? type : parsed.type_name(),
                 ", expected an object of strings");
    }
    if (event == E::object_start) return true;
    if (event == E::object_end) {  // the entry is complete: validate it, keep the TensorInfo
      infos_.emplace(key_, parse_entry(key_, parsed, where_, data_size_));
      names_.push_back(key_);
      return false;
    }
    EMBER_FAIL(where_, "tensor ", json_quoted(key_), " is a JSON ",
               starts ? type : parsed.type_name(),
               ", expected an object with dtype, shape and data_offsets");
  }

  // Inside "__metadata__": string values go into the map, anything else is refused.
  bool on_metadata(int depth, Json::parse_event_t event, Json& parsed, bool starts,
                   const char* type) {
    using E = Json::parse_event_t;
    if (depth == 2 && event == E::key) {
      meta_key_ = parsed.get<std::string>();
      return false;
    }
    if (depth == 2 && event == E::value && parsed.is_string()) {
      std::string& value = parsed.get_ref<std::string&>();
      metadata_bytes_ += meta_key_.size() + value.size();
      EMBER_CHECK(metadata_.size() < kMaxMetadataEntries, where_, "__metadata__ holds more than ",
                  kMaxMetadataEntries, " entries (the limit)");
      EMBER_CHECK(metadata_bytes_ <= kMaxMetadataBytes, where_, "__metadata__ holds more than ",
                  kMaxMetadataBytes, " bytes of keys and values (the limit)");
      EMBER_CHECK(metadata_.emplace(meta_key_, std::move(value)).second, where_, "key ",
                  json_quoted(meta_key_), " appears twice in the header");
      return false;
    }
    EMBER_FAIL(where_, "__metadata__ value of ", json_quoted(meta_key_), " is ",
               starts ? std::string("a JSON ") + type : brief(parsed),
               "; metadata maps strings to strings");
  }

  // Inside a tensor's entry: dtype, shape and data_offsets are kept (bounded), the rest dropped.
  bool on_entry(int depth, Json::parse_event_t event, Json& parsed, bool starts, const char* type) {
    using E = Json::parse_event_t;
    if (depth == 2 && event == E::key) {
      const std::string& k = parsed.get_ref<const std::string&>();
      field_ = k == "dtype"          ? Field::dtype
               : k == "shape"        ? Field::shape
               : k == "data_offsets" ? Field::offsets
                                     : Field::ignored;
      if (field_ == Field::ignored) return false;  // unknown fields are ignored, as serde does
      const unsigned bit = 1u << static_cast<unsigned>(field_);
      EMBER_CHECK((fields_ & bit) == 0, where_, "key ", json_quoted(k),
                  " appears twice in the header (tensor ", json_quoted(key_), ")");
      fields_ |= bit;
      values_ = 0;
      return true;
    }
    if (field_ == Field::ignored) return false;
    const char* field = field_ == Field::dtype   ? "dtype"
                        : field_ == Field::shape ? "shape"
                                                 : "data_offsets";
    if (depth == 2) {
      if (!starts) return true;  // a scalar, or the end of shape's or data_offsets' array
      EMBER_CHECK(field_ != Field::dtype, where_, "tensor ", json_quoted(key_),
                  ": dtype is a JSON ", type, ", expected a string such as \"F32\"");
      EMBER_CHECK(event == E::array_start, where_, "tensor ", json_quoted(key_), ": ", field,
                  " is a JSON object, expected ",
                  field_ == Field::shape ? "an array of sizes" : "[begin, end]");
      return true;
    }
    // depth 3: the values of shape or data_offsets, kept up to a rank no tensor reaches.
    EMBER_CHECK(!starts, where_, "tensor ", json_quoted(key_), ": ", field, " holds a JSON ", type,
                ", expected a non-negative integer");
    EMBER_CHECK(++values_ <= kMaxArrayValues, where_, "tensor ", json_quoted(key_),
                field_ == Field::shape ? " has rank " : ": data_offsets holds ",
                field_ == Field::shape ? std::to_string(values_) +
                                             " or more, more than Ember's "
                                             "maximum of " +
                                             std::to_string(kMaxRank)
                                       : std::string("more than 2 values, expected [begin, end]"));
    return true;
  }

  const std::string& where_;
  const uint64_t data_size_;
  std::vector<std::string>& names_;
  std::unordered_map<std::string, TensorInfo>& infos_;
  std::map<std::string, std::string>& metadata_;
  std::string root_type_;  // "object", "array", or empty until the root's type is known
  std::string key_;        // the current key of the root
  std::string meta_key_;   // the current key of __metadata__
  bool in_metadata_ = false;
  bool seen_metadata_ = false;
  Field field_ = Field::none;  // the current field of a tensor's entry
  unsigned fields_ = 0;        // the fields seen in the current entry, a bit each
  size_t values_ = 0;          // values seen in the current shape or data_offsets
  size_t metadata_bytes_ = 0;
};

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

  SafetensorsFile f;
  f.path_ = std::move(label);
  f.data_start_ = 8 + n;
  const uint64_t data_size = size - 8 - n;
  HeaderReader(where, data_size, f.names_, f.infos_, f.metadata_)
      .read({reinterpret_cast<const char*>(bytes->data()) + 8, static_cast<size_t>(n)});
  check_coverage(f.names_, f.infos_, where, data_size);
  f.bytes_ = std::move(bytes);
  return f;
}

const TensorInfo& SafetensorsFile::info(const std::string& name) const {
  const auto it = infos_.find(name);
  EMBER_CHECK(it != infos_.end(), kWhat, " ", path_, ": no tensor named ", json_quoted(name));
  return it->second;
}

DType SafetensorsFile::dtype(const std::string& name) const {
  const TensorInfo& t = info(name);
  EMBER_CHECK(t.supported, kWhat, " ", path_, ": tensor ", json_quoted(name), " has dtype ",
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
      EMBER_CHECK(src[i] <= 1, kWhat, " ", path_, ": tensor ", json_quoted(name),
                  " is BOOL but byte ", i, " holds ", static_cast<int>(src[i]),
                  " (only 0 and 1 are booleans)");
    }
  }
  DynTensor cpu;
  if (nbytes > 0 && zero_copy(name)) {
    RawTensor raw;
    raw.storage = detail::storage_over(bytes_, src, nbytes);
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

#ifndef EMBER_BARE_METAL  // no files on a microcontroller
SafetensorsFile load_safetensors(const std::string& path) {
  return SafetensorsFile::parse(detail::map_file(path, kWhat), path);
}
#endif

SafetensorsFile parse_safetensors(std::vector<unsigned char> bytes, std::string label) {
  return SafetensorsFile::parse(std::make_shared<detail::BufferBytes>(std::move(bytes)),
                                std::move(label));
}

SafetensorsFile view_safetensors(std::span<const unsigned char> bytes, std::string label) {
  return SafetensorsFile::parse(std::make_shared<detail::ViewBytes>(bytes.data(), bytes.size()),
                                std::move(label));
}

SafetensorsFile embedded_safetensors(std::string_view name) {
  return view_safetensors(embedded_file(name), "embedded file '" + std::string(name) + "'");
}

#ifndef EMBER_BARE_METAL
void save_safetensors(const std::vector<std::pair<std::string, DynTensor>>& tensors,
                      const std::string& path, const std::map<std::string, std::string>& metadata) {
  const std::string where = std::string(kWhat) + " " + path + ": ";
  std::unordered_set<std::string> seen;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, t] = tensors[i];
    EMBER_CHECK(!name.empty(), where, "tensor ", i, " has an empty name");
    EMBER_CHECK(name.find('\0') == std::string::npos, where, "tensor name ", json_quoted(name),
                " contains a NUL byte");
    EMBER_CHECK(name != "__metadata__", where,
                "\"__metadata__\" is reserved for the metadata and cannot name a tensor");
    EMBER_CHECK(seen.insert(name).second, where, "tensor name ", json_quoted(name),
                " appears twice");
    EMBER_CHECK(t.defined(), where, "tensor ", json_quoted(name), " is undefined");
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

  // The header is written as text: a JSON object built key by key would cost a linear search per
  // insert to keep the order (ordered_json), quadratic in the tensor count.
  std::string text = "{";
  try {
    if (!metadata.empty()) text.append("\"__metadata__\":").append(Json(metadata).dump());
    for (size_t i = 0; i < tensors.size(); ++i) {
      const DynTensor& t = tensors[i].second;
      text.append(text.size() > 1 ? "," : "").append(Json(tensors[i].first).dump());
      text.append(":{\"dtype\":\"").append(format_name(t.dtype())).append("\",\"shape\":");
      text.append(Json(t.shape().vec()).dump()).append(",\"data_offsets\":[");
      text.append(std::to_string(begin[i])).append(",");
      text.append(std::to_string(begin[i] + t.raw().nbytes())).append("]}");
    }
  } catch (const Json::exception& e) {
    EMBER_FAIL(where, "cannot encode the header (names and metadata must be UTF-8): ", e.what());
  }
  text.append("}");
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

#endif  // EMBER_BARE_METAL

}  // namespace ember::io
