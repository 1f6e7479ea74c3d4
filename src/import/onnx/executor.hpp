// Runs Ember's ONNX graphs: nodes in an order planned once at load (which also finds cycles and
// values nothing defines), each value dropped after its last reader so that a run hands its
// buffers back to the device allocator for the next nodes (the memory plan).
#pragma once

#include <deque>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "registry.hpp"

namespace ember::onnx {

/// The values one run of one graph sees: its own, then its parent's (a subgraph's outer scope).
struct Scope {
  const Scope* parent = nullptr;
  std::unordered_map<std::string, Value> values;
  const Value* find(const std::string& name) const;
};

class Executor {
 public:
  /// Plans every graph of `ir` (the main graph and all subgraphs) and moves the subgraphs'
  /// constants to `device`; `params` holds the main graph's initialisers (read at each run).
  Executor(const ModelIR& ir, Device device, const std::map<std::string, DynTensor>& params,
           const std::string& path);

  /// Runs `g` with `inputs` bound to g's inputs in order (missing trailing ones must have an
  /// initialiser), seeing `outer`'s values. Returns g's outputs in order.
  std::vector<Value> run(const Graph& g, std::vector<Value> inputs, const Scope* outer) const;

 private:
  struct Step {
    const Node* node;
    const OpFn* fn;
    int64_t opset;
    std::vector<std::string> release;  // values read for the last time here
  };
  struct Plan {
    std::vector<Step> steps;
    // Subgraph initialisers (the main graph's are params_) and folded values.
    std::map<std::string, DynTensor> constants;
    std::deque<Node> fused;  // the fused steps' nodes (fusion.cpp); a deque keeps their addresses
  };
  void plan(const Graph& g, const std::vector<std::string>& outer_names);
  void fold_constants(const Graph& g, Plan& p);
  void fuse(const Graph& g, Plan& p);  // fusion.cpp

  const ModelIR& ir_;
  Device device_;
  const std::map<std::string, DynTensor>& params_;
  std::string path_;
  std::unordered_map<const Graph*, Plan> plans_;
};

/// Model::run with any kind of value in and out (the conformance runner's sequences), inputs
/// unchecked; missing ones must have an initialiser.
std::vector<Value> run_values(const Model& model, const std::map<std::string, Value>& inputs);

/// Every (domain, op type) of `g` and its subgraphs that the registry has no function for at the
/// model's opsets, with counts; and the histogram of all op types.
void scan_ops(const ModelIR& ir, const Graph& g, std::map<std::string, int64_t>* histogram,
              std::vector<UnsupportedOp>* unsupported);

}  // namespace ember::onnx
