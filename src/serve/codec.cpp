#include "codec.hpp"

#include <charconv>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "ember/tensor/ops/creation.hpp"

namespace ember::serve::detail {
namespace {

using Json = nlohmann::json;

[[noreturn]] void bad(int status, std::string message) {
  throw BadRequest{status, std::move(message)};
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    s += (i ? ", " : "") + (shape[i] < 0 ? std::string("any") : std::to_string(shape[i]));
  }
  return s + "]";
}

// [n, example...] against the spec: the rank, then every fixed size.
void check_shape(const TensorSpec& spec, const std::vector<int64_t>& got) {
  std::vector<int64_t> want{-1};
  want.insert(want.end(), spec.example_shape.begin(), spec.example_shape.end());
  // Every size at least 1: a 0 in a free dim would let n grow with no data behind it.
  bool ok = got.size() == want.size();
  for (size_t i = 0; ok && i < got.size(); ++i)
    ok = got[i] > 0 && (want[i] < 0 || want[i] == got[i]);
  if (!ok) {
    bad(400, "input '" + spec.name + "' has shape " + shape_text(got) + ", expected " +
                 shape_text(want) + " (a batch of one or more examples)");
  }
}

// The shape of a nested array, from its first elements; flatten() checks the rest.
std::vector<int64_t> nested_shape(const Json& j) {
  std::vector<int64_t> shape;
  const Json* at = &j;
  while (at->is_array()) {
    shape.push_back(static_cast<int64_t>(at->size()));
    if (at->empty()) break;
    at = &(*at)[0];
  }
  return shape;
}

void flatten(const Json& j, const std::vector<int64_t>& shape, size_t depth,
             const std::string& name, bool integral, std::vector<double>& out) {
  if (depth == shape.size()) {
    if (!j.is_number()) {  // the type only: dumping a value would recurse as deep as it nests
      bad(400,
          "input '" + name + "' holds " + std::string(j.type_name()) + " where a number belongs");
    }
    const double v = j.get<double>();
    if (integral && v != std::floor(v)) {
      bad(400, "input '" + name + "' takes integers, got " + j.dump());
    }
    out.push_back(v);
    return;
  }
  if (!j.is_array() || static_cast<int64_t>(j.size()) != shape[depth]) {
    bad(400,
        "input '" + name + "' is not rectangular: a " +
            (j.is_array() ? "list of " + std::to_string(j.size()) : std::string(j.type_name())) +
            " at depth " + std::to_string(depth) + " where the first has " +
            std::to_string(shape[depth]));
  }
  for (const Json& e : j) flatten(e, shape, depth + 1, name, integral, out);
}

template <class T>
void fill_json(const T* v, const int64_t* dims, int rank, std::string& out) {
  if (rank == 0) {
    if constexpr (std::is_floating_point_v<T>) {
      if (!std::isfinite(*v)) {
        out += "null";  // JSON has no NaN or infinity
        return;
      }
    }
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, *v);  // the shortest text that reads back
    out.append(buf, r.ptr);
    return;
  }
  int64_t stride = 1;
  for (int d = 1; d < rank; ++d) stride *= dims[d];
  out += '[';
  for (int64_t i = 0; i < dims[0]; ++i) {
    if (i) out += ',';
    fill_json(v + i * stride, dims + 1, rank - 1, out);
  }
  out += ']';
}

template <class T>
void tensor_json(const DynTensor& t, DType as, std::string& out) {
  const std::vector<T> v = cast(t, as).to_vector<T>();
  const std::vector<int64_t> dims = t.shape().vec();
  fill_json(v.data(), dims.data(), static_cast<int>(dims.size()), out);
}

}  // namespace

Inputs parse_json(std::string_view body, const std::vector<TensorSpec>& specs, int64_t* n) {
  const Json doc = Json::parse(body.begin(), body.end(), nullptr, false);
  if (doc.is_discarded()) bad(400, "the body is not valid JSON");
  if (!doc.is_object() || !doc.contains("inputs") || !doc["inputs"].is_object()) {
    bad(400, "the body must be a JSON object {\"inputs\": {\"<name>\": [...]}}");
  }
  const Json& given = doc["inputs"];
  for (const auto& item : given.items()) {
    bool known = false;
    for (const TensorSpec& s : specs) known = known || s.name == item.key();
    if (!known) bad(400, "the model has no input named '" + item.key() + "'");
  }
  Inputs inputs;
  *n = -1;
  for (const TensorSpec& spec : specs) {
    if (!given.contains(spec.name)) bad(400, "input '" + spec.name + "' is missing");
    const Json& j = given[spec.name];
    const std::vector<int64_t> shape = nested_shape(j);
    check_shape(spec, shape);
    std::vector<double> values;  // flatten checks every size; the body bounds the count
    flatten(j, shape, 0, spec.name, !is_floating(spec.dtype), values);
    if (*n >= 0 && shape[0] != *n) {
      bad(400, "inputs differ in batch size: " + std::to_string(*n) + " and " +
                   std::to_string(shape[0]) + " ('" + spec.name + "')");
    }
    *n = shape[0];
    inputs[spec.name] =
        cast(from_data(TensorData::from(values, Shape(shape)), Device::cpu()), spec.dtype);
  }
  return inputs;
}

Inputs parse_raw(std::string_view body, const std::string& shape_text_in, const std::string& dtype,
                 const std::vector<TensorSpec>& specs, int64_t* n) {
  if (specs.size() != 1) {
    bad(400, "the raw endpoint takes models of one input; this one has " +
                 std::to_string(specs.size()) + ": use /v1/predict");
  }
  const TensorSpec& spec = specs[0];
  if (!dtype.empty() && dtype != dtype_name(spec.dtype)) {
    bad(415, "input '" + spec.name + "' is " + std::string(dtype_name(spec.dtype)) +
                 ", the body says X-Dtype: " + dtype);
  }
  const auto item = static_cast<int64_t>(dtype_size(spec.dtype));
  std::vector<int64_t> shape;
  if (shape_text_in.empty()) {
    int64_t example = item;
    for (int64_t d : spec.example_shape) {
      if (d < 0) bad(400, "input '" + spec.name + "' has a free size: give X-Shape");
      example *= d;
    }
    if (example == 0 || static_cast<int64_t>(body.size()) % example != 0) {
      bad(400, "the body's " + std::to_string(body.size()) + " bytes are not a whole number of " +
                   std::to_string(example) + "-byte examples of input '" + spec.name + "'");
    }
    shape.push_back(static_cast<int64_t>(body.size()) / example);
    shape.insert(shape.end(), spec.example_shape.begin(), spec.example_shape.end());
  } else {
    const char* p = shape_text_in.data();
    const char* end = p + shape_text_in.size();
    while (p < end) {
      int64_t v = 0;
      const auto r = std::from_chars(p, end, v);
      if (r.ec != std::errc() || v < 0 || (r.ptr != end && *r.ptr != ',')) {
        bad(400, "X-Shape '" + shape_text_in + "' is not sizes separated by commas");
      }
      shape.push_back(v);
      p = r.ptr == end ? end : r.ptr + 1;
    }
  }
  check_shape(spec, shape);
  int64_t want = item;  // bytes the shape takes; a product past int64 cannot match any body
  bool overflow = false;
  for (int64_t d : shape) overflow = overflow || __builtin_mul_overflow(want, d, &want);
  if (overflow || static_cast<int64_t>(body.size()) != want) {
    bad(400, "the body holds " + std::to_string(body.size()) + " bytes; " + shape_text(shape) +
                 " of " + std::string(dtype_name(spec.dtype)) + " takes " +
                 (overflow ? std::string("more than int64 counts") : std::to_string(want)));
  }
  std::vector<unsigned char> bytes(body.begin(), body.end());
  *n = shape[0];
  return {{spec.name,
           from_data(TensorData(std::move(bytes), Shape(shape), spec.dtype), Device::cpu())}};
}

std::string to_json(const std::map<std::string, DynTensor>& outputs) {
  std::string out = "{\"outputs\":{";
  bool first = true;
  for (const auto& [name, t] : outputs) {
    if (!first) out += ',';
    out += Json(name).dump();
    out += ':';
    first = false;
    if (t.dtype() == DType::f64) {
      tensor_json<double>(t, DType::f64, out);
    } else if (is_floating(t.dtype())) {
      tensor_json<float>(t, DType::f32, out);
    } else {
      tensor_json<int64_t>(t, DType::i64, out);  // integers, and booleans as 0 and 1
    }
  }
  return out + "}}";
}

std::string shape_header(const Shape& shape) {
  std::string s;
  for (int d = 0; d < shape.rank(); ++d) {
    if (d) s += ',';
    s += std::to_string(shape[d]);
  }
  return s;
}

std::string error_json(const std::string& message) { return Json{{"error", message}}.dump(); }

}  // namespace ember::serve::detail
