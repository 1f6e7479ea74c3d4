// One ONNX operator run on its own, with exactly the importer's semantics (the same function the
// executor runs for a node): what the C++ written by `ember onnx2cpp` calls for every operator
// Ember has no function of its own for.
//
//   DynTensor y = ember::onnx::call("Transpose", {x}, {{"perm", onnx::Ints{0, 2, 1}}}, 13)[0];
//   auto parts = ember::onnx::call("Split", {x}, {{"axis", 1}}, 13, 3);  // three outputs
//
// Attributes take ONNX's defaults when absent. An omitted optional input is an undefined
// DynTensor (`DynTensor()`). Operators taking graphs (If, Loop, Scan) or giving sequences and
// optionals are not callable this way. docs/ONNX.md lists the operators and their opsets.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ember/tensor/dyn_tensor.hpp"
#include "ember/tensor/tensor_data.hpp"

namespace ember::onnx {

using Ints = std::vector<int64_t>;
using Floats = std::vector<double>;
using Strings = std::vector<std::string>;

/// An attribute's value: ONNX's INT, FLOAT, STRING, INTS, FLOATS, STRINGS or TENSOR. FLOATs are
/// held as double, as the importer holds them: write ONNX's float value as a float literal
/// (`{"alpha", 0.2f}`) to keep it exact.
using AttrValue = std::variant<int64_t, double, std::string, Ints, Floats, Strings, TensorData>;
using Attributes = std::map<std::string, AttrValue, std::less<>>;

/// Runs `op_type` of `domain` ("" or "ai.onnx" for ONNX's own) as the importer runs it in a model
/// importing that domain at `opset`. `num_outputs` is how many outputs the node has (ops such as
/// Split and Dropout behave by it); every one is returned, an undefined DynTensor where the op
/// leaves an optional output out. Outputs are made on the first defined input's device
/// (default_device() for an op without inputs). Raises an ember::Error naming the op on an
/// unknown op, bad attributes or inputs.
std::vector<DynTensor> call(std::string_view op_type, const std::vector<DynTensor>& inputs,
                            const Attributes& attrs, int64_t opset, int num_outputs = 1,
                            std::string_view domain = "");

}  // namespace ember::onnx
