// The text of onnx2cpp's output: C++ identifiers from ONNX names, C++ literals of values and
// attributes that compile to exactly the importer's values.
#include "codegen_text.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

namespace ember::onnx {
namespace {

// PyTorch's scoped names without their repeats: "/layer1/layer1.0/conv1/Conv" names the module
// layer1.0's conv1, so "layer1/" goes: "layer1.0/conv1/Conv".
std::string drop_scope_repeats(std::string_view raw) {
  if (raw.find('/') == std::string_view::npos) return std::string(raw);
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= raw.size()) {
    const size_t end = std::min(raw.find('/', start), raw.size());
    if (end > start) parts.emplace_back(raw.substr(start, end - start));
    start = end + 1;
  }
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    const bool repeated = i + 1 < parts.size() && parts[i + 1].rfind(parts[i] + ".", 0) == 0;
    if (!repeated) out += (out.empty() ? "" : "/") + parts[i];
  }
  return out;
}

template <class T>
std::string shortest(T v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

}  // namespace

// Identifiers the generated code must not declare: C++ keywords, GNU's predefined macros, the
// names it uses (types, functions it calls, the module's members).
const std::set<std::string>& reserved_names() {
  // clang-format off
  static const std::set<std::string> r = {
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break",
      "case", "catch", "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept",
      "const", "consteval", "constexpr", "constinit", "const_cast", "continue", "co_await",
      "co_return", "co_yield", "decltype", "default", "delete", "do", "double", "dynamic_cast",
      "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto",
      "if", "import", "inline", "int", "long", "module", "mutable", "namespace", "new", "noexcept",
      "not", "not_eq", "nullptr", "operator", "or", "or_eq", "private", "protected", "public",
      "register", "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static",
      "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local",
      "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using",
      "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq", "final", "override",
      "linux", "unix", "i386", "NULL", "errno", "assert", "INT64_MIN", "INT64_MAX", "std", "ember",
      "nn", "onnx", "DynTensor", "Tensor", "TensorData", "Shape", "DType", "Int", "Bool", "Float",
      "Device", "Outputs", "forward", "device", "kOpset", "num_params", "train", "eval", "to",
      "freeze", "unfreeze", "valid", "deep_copy", "summary", "ember_visit", "ember_visitor",
      "ember_module_name", "relu", "sigmoid", "tanh", "exp", "log", "abs", "neg", "sqrt", "floor",
      "ceil", "reciprocal", "sin", "cos", "erf", "add", "sub", "mul", "div", "pow", "matmul",
      "main"};
  // clang-format on
  return r;
}

// A C identifier from an ONNX name: other characters become '_' (runs of them one), PyTorch's
// "_output_0" suffix goes, a leading digit gets a 'v' before it, a reserved word a '_' after.
std::string sanitize(std::string_view name) {
  const std::string raw = drop_scope_repeats(name);
  std::string s;
  for (const char c : raw) {
    const bool ok =
        std::isalnum(static_cast<unsigned char>(c)) != 0 && static_cast<unsigned char>(c) < 128;
    if (ok) {
      s += c;
    } else if (!s.empty() && s.back() != '_') {
      s += '_';
    }
  }
  while (!s.empty() && s.back() == '_') s.pop_back();
  const std::string suffix = "_output_0";
  if (s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0)
    s.resize(s.size() - suffix.size());
  if (s.empty()) return "v";
  if (std::isdigit(static_cast<unsigned char>(s[0]))) s = "v" + s;
  if (reserved_names().count(s)) s += "_";
  return s;
}

// ---- Literals ---------------------------------------------------------------------------------

// A double as ONNX gave it: a float literal when it is a float's value (ONNX's FLOAT attributes
// are), so that the compiled value is exactly the importer's.
std::string float_literal(double v, bool in_float_list) {
  const char* type = in_float_list ? "float" : "double";
  if (std::isnan(v)) return std::string("std::numeric_limits<") + type + ">::quiet_NaN()";
  if (std::isinf(v))
    return std::string(v > 0 ? "" : "-") + "std::numeric_limits<" + type + ">::infinity()";
  const float f = static_cast<float>(v);
  if (in_float_list || static_cast<double>(f) == v) return shortest(f) + "f";
  return shortest(v);
}

std::string int_literal(int64_t v) {
  return v == std::numeric_limits<int64_t>::min() ? "INT64_MIN" : std::to_string(v);
}

std::string string_literal(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 32 || u >= 127) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\%03o", u);  // octal: never runs into the next char
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i) s += (i ? sep : "") + parts[i];
  return s;
}

std::string ints_list(const std::vector<int64_t>& v) {
  std::vector<std::string> p;
  for (const int64_t x : v) p.push_back(int_literal(x));
  std::string s = "{";  // (not "{" + join(p): GCC 12's -Wrestrict false positive)
  s += join(p);
  return s + "}";
}

std::vector<int64_t> dims_of(const Shape& s) {
  std::vector<int64_t> d;
  for (int i = 0; i < s.rank(); ++i) d.push_back(s[i]);
  return d;
}

std::string dtype_expr(DType t) {
  switch (t) {
    case DType::f32:
      return "DType::f32";
    case DType::f64:
      return "DType::f64";
    case DType::f16:
      return "DType::f16";
    case DType::bf16:
      return "DType::bf16";
    case DType::i64:
      return "DType::i64";
    case DType::i32:
      return "DType::i32";
    case DType::i8:
      return "DType::i8";
    case DType::u8:
      return "DType::u8";
    case DType::boolean:
      return "DType::boolean";
  }
  return "DType::f32";
}

// The C++ element type whose std::vector holds `t`'s values, or "" (f16, bf16: no literal).
const char* element_type(DType t) {
  switch (t) {
    case DType::f32:
      return "float";
    case DType::f64:
      return "double";
    case DType::i64:
      return "int64_t";
    case DType::i32:
      return "int32_t";
    case DType::i8:
      return "int8_t";
    case DType::u8:
      return "uint8_t";
    case DType::boolean:
      return "bool";
    default:
      return "";
  }
}

// "1.5f, -2.0f" / "1, -1" / "true": the values of `t` (one of element_type's dtypes).
std::string element_literals(const TensorData& t) {
  std::vector<std::string> p;
  if (t.dtype == DType::f32) {
    for (const float v : t.to_vector<float>()) p.push_back(float_literal(v, true));
  } else if (t.dtype == DType::f64) {
    for (const double v : t.to_vector<double>()) {
      p.push_back(std::isfinite(v) ? shortest(v) : float_literal(v));
    }
  } else if (t.dtype == DType::boolean) {
    for (const bool v : t.to_vector<bool>()) p.push_back(v ? "true" : "false");
  } else {
    for (const int64_t v : t.to_vector<int64_t>()) p.push_back(int_literal(v));
  }
  return join(p);
}

/// A TensorData expression for an attribute (ConstantOfShape's value, ...).
std::string tensor_literal(const TensorData& t) {
  const std::string shape = "Shape" + ints_list(dims_of(t.shape));
  const std::string type = element_type(t.dtype);
  if (!type.empty()) {
    return "TensorData::from(std::vector<" + type + ">{" + element_literals(t) + "}, " + shape +
           ")";
  }
  std::vector<std::string> bytes;
  for (const unsigned char b : t.bytes) bytes.push_back(std::to_string(b));
  return "TensorData(std::vector<unsigned char>{" + join(bytes) + "}, " + shape + ", " +
         dtype_expr(t.dtype) + ")";
}

std::string attribute_literal(const Node& n, const std::string& name, const Attribute& a) {
  switch (a.kind) {
    case Attribute::Kind::Int:
      return int_literal(a.i);
    case Attribute::Kind::Float:
      return float_literal(a.f);
    case Attribute::Kind::String:
      return string_literal(a.s);
    case Attribute::Kind::Ints:
      return "onnx::Ints" + ints_list(a.ints);
    case Attribute::Kind::Floats: {
      std::vector<std::string> p;
      for (const double f : a.floats) p.push_back(float_literal(f));
      return "onnx::Floats{" + join(p) + "}";
    }
    case Attribute::Kind::Strings: {
      std::vector<std::string> p;
      for (const std::string& s : a.strings) p.push_back(string_literal(s));
      return "onnx::Strings{" + join(p) + "}";
    }
    case Attribute::Kind::Tensor:
      return tensor_literal(a.t);
    default:
      EMBER_FAIL("onnx2cpp: ", node_label(n), ": attribute '", name, "' of kind ",
                 kind_name(a.kind), " is not supported yet");
  }
}

}  // namespace ember::onnx
