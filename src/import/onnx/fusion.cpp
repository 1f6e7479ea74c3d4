// The executor's fusions: a pass over a planned graph's steps that runs a chain of nodes as one
// step of a kFusedDomain op (registered beside the ops it joins) where the chain's inner values
// have no other reader: Conv -> Relu becomes one convolution with its relu fused
// (ConvParams::relu; backends without the fused kernel run the composite). The last node's
// outputs are written as before; the inner values are never made.
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
  std::unordered_map<std::string, size_t> reader;  // a step reading the value
  for (size_t k = 0; k < p.steps.size(); ++k) {
    for (const std::string& i : p.steps[k].node->inputs) reader[i] = k;
  }
  std::vector<bool> joined(p.steps.size(), false);
  for (Step& s : p.steps) {
    const Node& conv = *s.node;
    if (!is_onnx(conv, "Conv") || conv.outputs.size() != 1 || conv.outputs[0].empty()) continue;
    const std::string& y = conv.outputs[0];
    const auto r = reader.find(y);
    if (reads[y] != 1 || r == reader.end()) continue;
    Step& relu = p.steps[r->second];
    if (!is_onnx(*relu.node, "Relu")) continue;
    const OpFn* fn = registry().find(kFusedDomain, "Conv+Relu", s.opset);
    if (fn == nullptr) continue;
    Node fused = conv;
    fused.domain = kFusedDomain;
    fused.op_type = "Conv+Relu";
    fused.outputs = relu.node->outputs;
    p.fused.push_back(std::move(fused));
    // At the Conv's place: the Relu read only y, so no step between them reads its output.
    s.node = &p.fused.back();
    s.fn = fn;
    s.release.insert(s.release.end(), relu.release.begin(), relu.release.end());
    joined[r->second] = true;
  }
  std::vector<Step> kept;
  for (size_t k = 0; k < p.steps.size(); ++k) {
    if (!joined[k]) kept.push_back(std::move(p.steps[k]));
  }
  p.steps = std::move(kept);
}

}  // namespace ember::onnx
