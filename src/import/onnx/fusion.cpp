// The executor's fusions: a pass over a planned graph's steps that runs a chain of nodes as one
// step where the chain's inner values have no other reader and are no graph outputs.
//   Conv -> Relu                         one convolution with its relu fused (ConvParams::relu;
//                                        backends without the fused kernel run the composite)
//   x / sqrt(2) -> Erf -> + 1 -> * x -> * 0.5   (PyTorch's exported exact GELU) ONNX's Gelu, one
//                                        pass of Ember's gelu instead of five
// The fused step takes the chain's last place and the releases of all its steps (a value is
// only ever dropped later than planned), and writes the last node's outputs; the inner values
// are never made.
#include <cmath>
#include <optional>
#include <unordered_map>

#include "executor.hpp"

namespace ember::onnx {
namespace {

bool is_onnx(const Node& n, const char* op_type) {
  return (n.domain.empty() || n.domain == "ai.onnx") && n.op_type == op_type;
}

}  // namespace

void Executor::fuse(const Graph& g, Plan& p) {
  // How often each value is read: by nodes (and their subgraphs) and as a graph output.
  std::unordered_map<std::string, int> reads;
  for (const Node& n : g.nodes) {
    for (const std::string& r : reads_of(n)) ++reads[r];
  }
  for (const ValueInfo& v : g.outputs) ++reads[v.name];
  std::unordered_map<std::string, size_t> reader, producer;  // steps
  for (size_t k = 0; k < p.steps.size(); ++k) {
    for (const std::string& i : p.steps[k].node->inputs) reader[i] = k;
    for (const std::string& o : p.steps[k].node->outputs) producer[o] = k;
  }
  std::vector<bool> joined(p.steps.size(), false);
  // The step of `op_type` that alone reads `value`, the (one) output of a step.
  auto only_reader = [&](const std::string& value, const char* op_type) -> std::optional<size_t> {
    const auto r = reader.find(value);
    if (value.empty() || reads[value] != 1 || r == reader.end() || joined[r->second] ||
        !is_onnx(*p.steps[r->second].node, op_type)) {
      return std::nullopt;
    }
    return r->second;
  };
  // A folded constant of one element equal to `want` (to float precision).
  auto is_scalar = [&](const std::string& name, double want) {
    const auto c = p.constants.find(name);
    if (c == p.constants.end() || c->second.numel() != 1 || !is_floating(c->second.dtype())) {
      return false;
    }
    return std::fabs(c->second.item<double>() - want) <= 1e-6 * std::fabs(want);
  };
  // The operand of binary step k other than `value`, when the other one is `value`.
  auto other_input = [&](size_t k, const std::string& value) -> std::optional<std::string> {
    const std::vector<std::string>& in = p.steps[k].node->inputs;
    if (in.size() != 2 || (in[0] == value) == (in[1] == value)) return std::nullopt;
    return in[0] == value ? in[1] : in[0];
  };
  // Runs `chain` (plan order) as `node` at the last one's place.
  auto join = [&](const std::vector<size_t>& chain, Node node, const OpFn* fn, int64_t opset) {
    Step& last = p.steps[chain.back()];
    for (size_t k : chain) {
      joined[k] = true;
      if (k == chain.back()) continue;
      last.release.insert(last.release.end(), p.steps[k].release.begin(), p.steps[k].release.end());
    }
    joined[chain.back()] = false;
    node.outputs = last.node->outputs;
    p.fused.push_back(std::move(node));
    last.node = &p.fused.back();
    last.fn = fn;
    last.opset = opset;
  };

  for (size_t k = 0; k < p.steps.size(); ++k) {
    if (joined[k]) continue;
    const Node& n = *p.steps[k].node;
    if (n.outputs.size() != 1) continue;
    if (is_onnx(n, "Conv")) {
      const auto relu = only_reader(n.outputs[0], "Relu");
      const OpFn* fn = registry().find(kFusedDomain, "Conv+Relu", p.steps[k].opset);
      if (!relu || fn == nullptr) continue;
      Node fused = n;
      fused.domain = kFusedDomain;
      fused.op_type = "Conv+Relu";
      join({k, *relu}, std::move(fused), fn, p.steps[k].opset);
    } else if (is_onnx(n, "Erf")) {
      // Div(x, sqrt 2) -> Erf -> Add(., 1) -> Mul(x, .) -> Mul(., 0.5), operands in either order.
      const auto div = producer.find(n.inputs.empty() ? std::string() : n.inputs[0]);
      if (div == producer.end() || joined[div->second]) continue;
      const Node& d = *p.steps[div->second].node;
      if (!is_onnx(d, "Div") || d.inputs.size() != 2 || reads[n.inputs[0]] != 1 ||
          !is_scalar(d.inputs[1], std::sqrt(2.0))) {
        continue;
      }
      const std::string& x = d.inputs[0];
      const auto add = only_reader(n.outputs[0], "Add");
      const auto one = add ? other_input(*add, n.outputs[0]) : std::nullopt;
      if (!one || !is_scalar(*one, 1.0)) continue;
      const auto mul = only_reader(p.steps[*add].node->outputs[0], "Mul");
      if (!mul || other_input(*mul, p.steps[*add].node->outputs[0]) != x) continue;
      const auto half = only_reader(p.steps[*mul].node->outputs[0], "Mul");
      const auto c = half ? other_input(*half, p.steps[*mul].node->outputs[0]) : std::nullopt;
      const OpFn* fn = registry().find("", "Gelu", 20);
      if (!c || !is_scalar(*c, 0.5) || fn == nullptr) continue;
      Node fused;
      fused.name = p.steps[*half].node->name;
      fused.op_type = "Gelu";  // ONNX's (opset 20), approximate = "none"
      fused.inputs = {x};
      join({div->second, k, *add, *mul, *half}, std::move(fused), fn, 20);
    }
  }
  std::vector<Step> kept;
  for (size_t k = 0; k < p.steps.size(); ++k) {
    if (!joined[k]) kept.push_back(std::move(p.steps[k]));
  }
  p.steps = std::move(kept);
}

}  // namespace ember::onnx
