// onnx::call: one operator outside a graph, run by the registry's function through the same
// OpContext the executor builds for a node, so that its semantics are exactly the executor's.
#include "codegen.hpp"
#include "ember/core/device.hpp"
#include "ember/import/onnx_ops.hpp"
#include "executor.hpp"

namespace ember::onnx {
namespace {

// The executor an OpContext refers to, over an empty graph: run_graph is only reached through
// graph attributes, which a call cannot pass.
const Executor& detached_executor() {
  static const ModelIR ir = [] {
    ModelIR m;
    m.graph = std::make_shared<Graph>();
    return m;
  }();
  static const std::map<std::string, DynTensor> no_params;
  static const Executor e(ir, Device::cpu(), no_params, "onnx::call");
  return e;
}

Attribute to_attribute(const AttrValue& v) {
  Attribute a;
  if (const auto* i = std::get_if<int64_t>(&v)) {
    a.kind = Attribute::Kind::Int;
    a.i = *i;
  } else if (const auto* f = std::get_if<double>(&v)) {
    a.kind = Attribute::Kind::Float;
    a.f = *f;
  } else if (const auto* s = std::get_if<std::string>(&v)) {
    a.kind = Attribute::Kind::String;
    a.s = *s;
  } else if (const auto* is = std::get_if<Ints>(&v)) {
    a.kind = Attribute::Kind::Ints;
    a.ints = *is;
  } else if (const auto* fs = std::get_if<Floats>(&v)) {
    a.kind = Attribute::Kind::Floats;
    a.floats = *fs;
  } else if (const auto* ss = std::get_if<Strings>(&v)) {
    a.kind = Attribute::Kind::Strings;
    a.strings = *ss;
  } else {
    a.kind = Attribute::Kind::Tensor;
    a.t = std::get<TensorData>(v);
  }
  return a;
}

}  // namespace

std::vector<Value> run_node(const Node& node, int64_t opset, std::vector<Value> inputs,
                            Device device) {
  const OpFn* fn = registry().find(node.domain, node.op_type, opset);
  EMBER_CHECK(fn != nullptr, "[onnx] ", node_label(node), ": unsupported operator (",
              node.domain.empty() ? "ai.onnx" : node.domain, " opset ", opset, ")");
  const Scope scope;
  OpContext ctx(node, opset, device, std::move(inputs), detached_executor(), scope);
  try {
    return (*fn)(ctx);
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.rfind("[onnx]", 0) == 0) throw;  // already names its node
    EMBER_FAIL("[onnx] ", ctx.label(), ": ", what);
  }
}

std::vector<DynTensor> call(std::string_view op_type, const std::vector<DynTensor>& inputs,
                            const Attributes& attrs, int64_t opset, int num_outputs,
                            std::string_view domain) {
  EMBER_CHECK(num_outputs >= 1, "[onnx] call ", op_type, ": num_outputs must be at least 1, got ",
              num_outputs);
  Node node;
  node.name = "onnx::call";
  node.op_type = std::string(op_type);
  node.domain = normal_domain(std::string(domain));
  std::vector<Value> values;
  Device device = default_device();
  bool device_set = false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const bool given = inputs[i].defined();
    node.inputs.push_back(given ? "input" + std::to_string(i) : "");
    values.push_back(given ? Value::of(inputs[i]) : Value{});
    if (given && !device_set) {
      device = inputs[i].device();
      device_set = true;
    }
  }
  for (int j = 0; j < num_outputs; ++j) node.outputs.push_back("output" + std::to_string(j));
  for (const auto& [name, value] : attrs) node.attributes[name] = to_attribute(value);

  std::vector<Value> out = run_node(node, opset, std::move(values), device);
  std::vector<DynTensor> result;
  for (size_t j = 0; j < static_cast<size_t>(num_outputs); ++j) {
    EMBER_CHECK(j < out.size(), "[onnx] ", node_label(node), ": output ", j,
                " is not computed by Ember's ", node.op_type);
    EMBER_CHECK(out[j].kind != Value::Kind::Sequence, "[onnx] ", node_label(node), ": output ", j,
                " is a sequence; onnx::call returns tensors only");
    result.push_back(out[j].tensor);  // undefined for an omitted optional output
  }
  return result;
}

}  // namespace ember::onnx
