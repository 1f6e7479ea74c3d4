// ONNX protobuf -> Ember's graph (ir.hpp), with Debian's generated onnx-ml.pb.h. Every size and
// count in the file is checked before it is trusted: element counts against the bytes present,
// dims against overflow, external data against the model's folder.
#include <sys/stat.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <type_traits>

#include "ember/io/file.hpp"
#include "ir.hpp"
#include "onnx/onnx-data_pb.h"
#include "onnx/onnx_pb.h"

namespace ember::onnx {
namespace {

namespace pb = ::onnx;

// Names the file in every error.
struct Reader {
  std::string path;  // the .onnx file
  std::string dir;   // its folder: external data must stay inside
  LoadOptions options;

  [[noreturn]] void fail(const std::string& what) const { EMBER_FAIL("[onnx] ", path, ": ", what); }
};

std::string parent_dir(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// The bytes of a regular file, refusing others and files over `max_bytes`.
std::string read_bytes(const std::string& path, int64_t max_bytes, const char* what) {
  const std::string kind = io::non_regular_kind(path);
  EMBER_CHECK(kind.empty(), "[onnx] ", path, ": not a regular file (", kind, ")");
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  EMBER_CHECK(in.good(), "[onnx] cannot open ", what, " ", path, ": ", std::strerror(errno));
  const std::streamoff size = in.tellg();
  EMBER_CHECK(size >= 0 && size <= max_bytes, "[onnx] ", path, ": ", what, " of ", size,
              " bytes is over the limit of ", max_bytes, " bytes");
  std::string bytes(static_cast<size_t>(size), '\0');
  in.seekg(0);
  in.read(bytes.data(), size);
  EMBER_CHECK(in.good() || size == 0, "[onnx] cannot read ", what, " ", path);
  return bytes;
}

}  // namespace

// ONNX's element type -> Ember's dtype (false: none).
bool dtype_of(int64_t t, DType* out) {
  switch (t) {
    case pb::TensorProto::FLOAT:
      *out = DType::f32;
      return true;
    case pb::TensorProto::DOUBLE:
      *out = DType::f64;
      return true;
    case pb::TensorProto::FLOAT16:
      *out = DType::f16;
      return true;
    case pb::TensorProto::BFLOAT16:
      *out = DType::bf16;
      return true;
    case pb::TensorProto::INT64:
      *out = DType::i64;
      return true;
    case pb::TensorProto::INT32:
      *out = DType::i32;
      return true;
    case pb::TensorProto::INT8:
      *out = DType::i8;
      return true;
    case pb::TensorProto::UINT8:
      *out = DType::u8;
      return true;
    case pb::TensorProto::BOOL:
      *out = DType::boolean;
      return true;
    default:
      return false;
  }
}

std::string type_name(int64_t t) {
  const bool known = pb::TensorProto::DataType_IsValid(static_cast<int>(t));
  const std::string n =
      known ? pb::TensorProto::DataType_Name(static_cast<pb::TensorProto::DataType>(t)) : "";
  return n.empty() ? "type " + std::to_string(t) : n;
}

namespace {

// External data must be a plain file under the model's folder: a relative name without "..",
// reached through no symbolic link, with one hard link (CVE-2022-25882, CVE-2024-27318).
std::string external_path(const Reader& r, const std::string& location, const std::string& tensor) {
  auto refuse = [&](const char* why) {
    r.fail("external data '" + location + "' of tensor '" + tensor + "' " + why +
           " (it must be a file in the model's folder)");
  };
  if (location.empty()) refuse("has no location");
  if (location[0] == '/' || location.find('\\') != std::string::npos) refuse("is an absolute path");
  std::string walked = r.dir;
  std::stringstream parts(location);
  for (std::string part; std::getline(parts, part, '/');) {
    if (part == "..") refuse("leaves the model's folder");
    if (part.empty() || part == ".") continue;
    walked += "/" + part;
    struct stat st {};
    if (::lstat(walked.c_str(), &st) != 0) refuse("does not exist");
    if (S_ISLNK(st.st_mode)) refuse("goes through a symbolic link");
  }
  struct stat st {};
  if (::stat(walked.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) refuse("is not a regular file");
  if (st.st_nlink > 1) refuse("has other hard links");
  char dir_real[PATH_MAX], file_real[PATH_MAX];
  if (::realpath(r.dir.c_str(), dir_real) == nullptr ||
      ::realpath(walked.c_str(), file_real) == nullptr) {
    refuse("cannot be resolved");
  }
  // Under the folder: its path, then a separator ("/a/bc" is not under "/a/b").
  const size_t n = std::strlen(dir_real);
  const bool root = n == 1;  // "/": every absolute path is under it
  if (std::strncmp(file_real, dir_real, n) != 0 || (!root && file_real[n] != '/')) {
    refuse("leaves the model's folder");
  }
  return walked;
}

template <class Src, class Dst>
void convert_into(const Src* src, int64_t n, unsigned char* out) {
  Dst* d = reinterpret_cast<Dst*>(out);
  for (int64_t i = 0; i < n; ++i) d[i] = static_cast<Dst>(src[i]);
}

TensorData convert_tensor(const pb::TensorProto& t, const Reader& r) {
  const std::string name = t.name().empty() ? "(unnamed)" : t.name();
  DType dtype{};
  if (!dtype_of(t.data_type(), &dtype)) {
    r.fail("unsupported element type " + type_name(t.data_type()) + " (tensor '" + name + "')");
  }
  if (t.has_segment()) r.fail("unsupported: segmented tensor '" + name + "'");
  Shape shape;
  int64_t numel = 1;
  for (int64_t d : t.dims()) {
    if (d < 0) r.fail("tensor '" + name + "' has a negative dim " + std::to_string(d));
    if (d > 0 && numel > std::numeric_limits<int64_t>::max() / 8 / d) {
      r.fail("tensor '" + name + "' is absurdly large (dims overflow)");
    }
    numel *= d;
    shape.push_back(d);
  }
  const size_t esize = dtype_size(dtype);
  const int64_t nbytes = numel * static_cast<int64_t>(esize);
  auto expect_count = [&](int64_t got, const char* field) {
    if (got != numel) {
      r.fail("tensor '" + name + "' of shape " + to_string(shape) + " has " + std::to_string(got) +
             " values in " + field + ", expected " + std::to_string(numel));
    }
  };
  std::vector<unsigned char> bytes;
  if (t.data_location() == pb::TensorProto::EXTERNAL) {
    std::string location;
    int64_t offset = 0, length = -1;
    for (const auto& kv : t.external_data()) {
      char* end = nullptr;
      if (kv.key() == "location") location = kv.value();
      if (kv.key() == "offset") offset = std::strtoll(kv.value().c_str(), &end, 10);
      if (kv.key() == "length") length = std::strtoll(kv.value().c_str(), &end, 10);
    }
    const std::string file = external_path(r, location, name);
    const std::string data = read_bytes(file, r.options.max_file_bytes, "external data");
    if (length < 0) length = static_cast<int64_t>(data.size()) - offset;
    if (offset < 0 || offset > static_cast<int64_t>(data.size()) ||
        length > static_cast<int64_t>(data.size()) - offset || length != nbytes) {
      r.fail("external data of tensor '" + name + "' (offset " + std::to_string(offset) +
             ", length " + std::to_string(length) + ") does not fit its file " + file + " of " +
             std::to_string(data.size()) + " bytes or its " + std::to_string(nbytes) +
             " bytes of data");
    }
    bytes.assign(data.begin() + offset, data.begin() + offset + length);
  } else if (t.has_raw_data()) {
    if (static_cast<int64_t>(t.raw_data().size()) != nbytes) {
      r.fail("tensor '" + name + "' of shape " + to_string(shape) + " has " +
             std::to_string(t.raw_data().size()) + " bytes of raw data, expected " +
             std::to_string(nbytes));
    }
    bytes.assign(t.raw_data().begin(), t.raw_data().end());
  } else {
    // One typed field: its count is checked before the buffer is sized, so that a tensor that
    // claims a huge shape without the values to match fails instead of allocating it.
    auto take = [&](const auto& values, const char* field, auto dst) {
      using Src = typename std::decay_t<decltype(values)>::value_type;
      expect_count(values.size(), field);
      bytes.resize(static_cast<size_t>(nbytes));
      convert_into<Src, decltype(dst)>(values.data(), numel, bytes.data());
    };
    switch (t.data_type()) {
      case pb::TensorProto::FLOAT:
        take(t.float_data(), "float_data", float{});
        break;
      case pb::TensorProto::DOUBLE:
        take(t.double_data(), "double_data", double{});
        break;
      case pb::TensorProto::INT64:
        take(t.int64_data(), "int64_data", int64_t{});
        break;
      case pb::TensorProto::INT32:
        take(t.int32_data(), "int32_data", int32_t{});
        break;
      case pb::TensorProto::INT8:
        take(t.int32_data(), "int32_data", int8_t{});
        break;
      case pb::TensorProto::UINT8:
      case pb::TensorProto::BOOL:
        take(t.int32_data(), "int32_data", uint8_t{});
        break;
      case pb::TensorProto::FLOAT16:
      case pb::TensorProto::BFLOAT16:  // bit patterns in int32_data
        take(t.int32_data(), "int32_data", uint16_t{});
        break;
      default:
        r.fail("unsupported element type " + type_name(t.data_type()) + " (tensor '" + name + "')");
    }
  }
  if (dtype == DType::boolean) {
    for (unsigned char& b : bytes) b = b != 0;
  }
  return TensorData(std::move(bytes), shape, dtype);
}

ValueInfo convert_value_info(const pb::ValueInfoProto& v) {
  ValueInfo info;
  info.name = v.name();
  if (!v.has_type()) {
    info.known_dtype = false;
    info.dtype_name = "unknown";
    return info;
  }
  const pb::TypeProto& type = v.type();
  if (!type.has_tensor_type()) {
    info.known_dtype = false;
    info.dtype_name = type.has_sequence_type()   ? "sequence"
                      : type.has_optional_type() ? "optional"
                      : type.has_map_type()      ? "map"
                                                 : "non-tensor";
    return info;
  }
  const auto& tt = type.tensor_type();
  info.dtype_name = type_name(tt.elem_type());
  info.elem_type = tt.elem_type();
  info.known_dtype = dtype_of(tt.elem_type(), &info.dtype);
  if (tt.has_shape()) {
    info.has_shape = true;
    for (const auto& d : tt.shape().dim()) {
      Dim dim;
      if (d.has_dim_value()) dim.size = d.dim_value();
      if (d.has_dim_param()) dim.symbol = d.dim_param();
      info.shape.push_back(dim);
    }
  }
  return info;
}

std::shared_ptr<Graph> convert_graph(const pb::GraphProto& g, const Reader& r);

// "tensor(FLOAT)", "seq(tensor(INT64))", "optional(seq(tensor(FLOAT)))", as ONNX writes types.
std::string type_description(const pb::TypeProto& t) {
  if (t.has_tensor_type()) return "tensor(" + type_name(t.tensor_type().elem_type()) + ")";
  if (t.has_sequence_type()) return "seq(" + type_description(t.sequence_type().elem_type()) + ")";
  if (t.has_optional_type()) {
    return "optional(" + type_description(t.optional_type().elem_type()) + ")";
  }
  return t.has_map_type() ? "map" : "unknown";
}

Attribute convert_attribute(const pb::AttributeProto& a, const Reader& r, const std::string& node) {
  Attribute out;
  using K = Attribute::Kind;
  switch (a.type()) {
    case pb::AttributeProto::FLOAT:
      out.kind = K::Float;
      out.f = a.f();
      break;
    case pb::AttributeProto::INT:
      out.kind = K::Int;
      out.i = a.i();
      break;
    case pb::AttributeProto::STRING:
      out.kind = K::String;
      out.s = a.s();
      break;
    case pb::AttributeProto::TENSOR:
      out.kind = K::Tensor;
      out.t = convert_tensor(a.t(), r);
      break;
    case pb::AttributeProto::GRAPH:
      out.kind = K::Graph;
      out.g = convert_graph(a.g(), r);
      break;
    case pb::AttributeProto::FLOATS:
      out.kind = K::Floats;
      out.floats.assign(a.floats().begin(), a.floats().end());
      break;
    case pb::AttributeProto::INTS:
      out.kind = K::Ints;
      out.ints.assign(a.ints().begin(), a.ints().end());
      break;
    case pb::AttributeProto::STRINGS:
      out.kind = K::Strings;
      out.strings.assign(a.strings().begin(), a.strings().end());
      break;
    case pb::AttributeProto::TENSORS:
      out.kind = K::Tensors;
      for (const auto& t : a.tensors()) out.tensors.push_back(convert_tensor(t, r));
      break;
    case pb::AttributeProto::GRAPHS:
      out.kind = K::Graphs;
      for (const auto& g : a.graphs()) out.graphs.push_back(convert_graph(g, r));
      break;
    case pb::AttributeProto::TYPE_PROTO:
      out.kind = K::Type;
      out.s = type_description(a.tp());
      break;
    default:
      r.fail("unsupported: attribute '" + a.name() + "' of node '" + node + "' has type " +
             pb::AttributeProto::AttributeType_Name(a.type()));
  }
  return out;
}

std::shared_ptr<Graph> convert_graph(const pb::GraphProto& g, const Reader& r) {
  auto out = std::make_shared<Graph>();
  out->name = g.name();
  for (const auto& t : g.initializer()) {
    if (t.name().empty()) r.fail("graph '" + g.name() + "' has an initialiser without a name");
    out->initializers[t.name()] = convert_tensor(t, r);
  }
  if (g.sparse_initializer_size() > 0) {
    r.fail("unsupported: sparse initialisers (graph '" + g.name() + "')");
  }
  for (const auto& v : g.input()) out->inputs.push_back(convert_value_info(v));
  for (const auto& v : g.output()) out->outputs.push_back(convert_value_info(v));
  out->nodes.reserve(static_cast<size_t>(g.node_size()));
  for (const auto& n : g.node()) {
    Node node;
    node.name = n.name();
    node.op_type = n.op_type();
    node.domain = normal_domain(n.domain());
    node.inputs.assign(n.input().begin(), n.input().end());
    node.outputs.assign(n.output().begin(), n.output().end());
    const std::string label = n.name().empty() ? n.op_type() : n.name();
    for (const auto& a : n.attribute()) {
      if (!a.ref_attr_name().empty()) {
        r.fail("unsupported: attribute '" + a.name() + "' of node '" + label +
               "' refers to a function attribute");
      }
      node.attributes[a.name()] = convert_attribute(a, r, label);
    }
    out->nodes.push_back(std::move(node));
  }
  return out;
}

}  // namespace

const char* kind_name(Attribute::Kind kind) {
  static const char* const kNames[] = {"float", "int",     "string",  "tensor", "graph", "floats",
                                       "ints",  "strings", "tensors", "graphs", "type"};
  return kNames[static_cast<int>(kind)];
}

ModelIR read_model(const std::string& path, const LoadOptions& options) {
  const Reader r{path, parent_dir(path), options};
  pb::ModelProto proto;
  {  // the file's bytes go once parsed: a model's weights are then in memory twice, not three times
    const std::string bytes = read_bytes(path, options.max_file_bytes, "model");
    if (!proto.ParseFromString(bytes)) {
      r.fail("not a valid ONNX model (the protobuf is truncated or corrupt)");
    }
  }
  ModelIR m;
  m.ir_version = proto.ir_version();
  if (m.ir_version < 3 || m.ir_version > 14) {
    r.fail("unsupported IR version " + std::to_string(m.ir_version) + " (Ember reads 3 to 14)");
  }
  for (const auto& o : proto.opset_import()) m.opsets[normal_domain(o.domain())] = o.version();
  if (proto.functions_size() > 0) {
    r.fail("unsupported: model-local functions (" + proto.functions(0).name() + ", ...)");
  }
  m.producer = proto.producer_name();
  if (!proto.has_graph()) r.fail("the model has no graph");
  m.graph = convert_graph(proto.graph(), r);
  return m;
}

TensorData read_tensor_file(const std::string& path, std::string* name, bool uint16_as_bf16) {
  const Reader r{path, parent_dir(path), LoadOptions{}};
  const std::string bytes = read_bytes(path, r.options.max_file_bytes, "tensor");
  pb::TensorProto proto;
  if (!proto.ParseFromString(bytes)) r.fail("not a valid ONNX TensorProto");
  if (name) *name = proto.name();
  // ONNX 1.12's backend tests store bfloat16 data as UINT16 bit patterns.
  if (uint16_as_bf16 && proto.data_type() == pb::TensorProto::UINT16) {
    proto.set_data_type(pb::TensorProto::BFLOAT16);
  }
  return convert_tensor(proto, r);
}

namespace {
std::vector<TensorData> convert_sequence(const pb::SequenceProto& proto, const Reader& r) {
  // An empty sequence may leave its element type undefined.
  if (proto.elem_type() == pb::SequenceProto::UNDEFINED && proto.tensor_values_size() == 0) {
    return {};
  }
  if (proto.elem_type() != pb::SequenceProto::TENSOR) {
    r.fail("unsupported: a sequence of non-tensors");
  }
  std::vector<TensorData> out;
  for (const auto& t : proto.tensor_values()) out.push_back(convert_tensor(t, r));
  return out;
}
}  // namespace

std::vector<TensorData> read_sequence_file(const std::string& path) {
  const Reader r{path, parent_dir(path), LoadOptions{}};
  const std::string bytes = read_bytes(path, r.options.max_file_bytes, "sequence");
  pb::SequenceProto proto;
  if (!proto.ParseFromString(bytes)) r.fail("not a valid ONNX SequenceProto");
  return convert_sequence(proto, r);
}

OptionalData read_optional_file(const std::string& path) {
  const Reader r{path, parent_dir(path), LoadOptions{}};
  const std::string bytes = read_bytes(path, r.options.max_file_bytes, "optional");
  pb::OptionalProto proto;
  if (!proto.ParseFromString(bytes)) r.fail("not a valid ONNX OptionalProto");
  OptionalData out;
  switch (proto.elem_type()) {
    case pb::OptionalProto::UNDEFINED:  // an empty optional
      break;
    case pb::OptionalProto::TENSOR:
      out.kind = OptionalData::Kind::Tensor;
      out.tensor = convert_tensor(proto.tensor_value(), r);
      break;
    case pb::OptionalProto::SEQUENCE:
      out.kind = OptionalData::Kind::Sequence;
      out.sequence = convert_sequence(proto.sequence_value(), r);
      break;
    default:
      r.fail("unsupported: an optional of a map, sparse tensor or optional");
  }
  return out;
}

}  // namespace ember::onnx
