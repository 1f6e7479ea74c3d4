// The text of onnx2cpp's output (codegen_text.cpp): C++ identifiers from ONNX names, and C++
// literals of values and attributes that compile to exactly the importer's values.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ir.hpp"

namespace ember::onnx {

/// Identifiers the generated code must not declare: C++ keywords, GNU's predefined macros, the
/// names it uses (types, functions it calls, the module's members).
const std::set<std::string>& reserved_names();

/// A C++ identifier from an ONNX name: other characters become '_' (runs of them one), PyTorch's
/// scopes lose their repeats ("/layer1/layer1.0/conv1/Conv" -> "layer1_0_conv1_Conv") and its
/// "_output_0" suffix goes, a leading digit gets a 'v' before it, a reserved word a '_' after.
std::string sanitize(std::string_view name);

/// The identifiers of one scope of generated code.
class Names {
 public:
  void reserve(const std::string& n) { used_.insert(n); }
  /// sanitize(raw), numbered from _2 on when already taken.
  std::string unique(std::string_view raw) {
    const std::string base = sanitize(raw);
    std::string n = base;
    for (int k = 2; used_.count(n); ++k) n = base + "_" + std::to_string(k);
    used_.insert(n);
    return n;
  }

 private:
  std::set<std::string> used_;
};

/// A double as ONNX gave it: a float literal (0.1f) when it is a float's value, as ONNX's FLOAT
/// attributes are, so that the compiled value is exactly the importer's. `in_float_list`: an
/// element of a std::vector<float>.
std::string float_literal(double v, bool in_float_list = false);
std::string int_literal(int64_t v);  // INT64_MIN by name
std::string string_literal(std::string_view s);
std::string join(const std::vector<std::string>& parts, const char* sep = ", ");
std::string ints_list(const std::vector<int64_t>& v);  // "{1, 2}"
std::vector<int64_t> dims_of(const Shape& s);
std::string dtype_expr(DType t);  // "DType::f32"
/// The C++ element type whose std::vector holds `t`'s values, or "" (f16, bf16: no literal).
const char* element_type(DType t);
/// "1.5f, -2.0f" / "1, -1" / "true": the values of `t` (one of element_type's dtypes).
std::string element_literals(const TensorData& t);
/// A TensorData expression (ConstantOfShape's value, ...).
std::string tensor_literal(const TensorData& t);
/// Attribute `name` of node `n` as a literal of onnx::call's AttrValue; raises for graphs.
std::string attribute_literal(const Node& n, const std::string& name, const Attribute& a);

}  // namespace ember::onnx
