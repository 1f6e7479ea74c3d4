// The ONNX operator table: one function per (domain, op type), written with Ember's tensor ops
// so that every operator runs on every backend and under autodiff. Families live in
// ops_<family>.cpp, each adding its rows in a register_<family>() function (registry.cpp
// calls them all once). An op reads its inputs, attributes and opset through an OpContext.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ember/core/error.hpp"
#include "ir.hpp"

namespace ember::onnx {

/// A value flowing through the graph: a tensor, a sequence of tensors, or nothing (an omitted
/// optional input, an empty optional).
struct Value {
  enum class Kind : uint8_t { None, Tensor, Sequence };
  Kind kind = Kind::None;
  DynTensor tensor;
  std::vector<DynTensor> sequence;

  static Value of(DynTensor t) { return {Kind::Tensor, std::move(t), {}}; }
  static Value of_sequence(std::vector<DynTensor> s) { return {Kind::Sequence, {}, std::move(s)}; }
};

class Executor;
struct Scope;

class OpContext {
 public:
  OpContext(const Node& node, int64_t opset, Device device, std::vector<Value> inputs,
            const Executor& executor, const Scope& scope)
      : node_(node),
        opset_(opset),
        device_(device),
        inputs_(std::move(inputs)),
        exec_(executor),
        scope_(scope) {}

  const Node& node() const { return node_; }
  int64_t opset() const { return opset_; }
  Device device() const { return device_; }
  /// Runs a subgraph (If's branches, Loop's body) with `inputs` bound to its inputs in order,
  /// seeing this node's scope (ONNX subgraphs read outer values by name).
  std::vector<Value> run_graph(const Graph& g, std::vector<Value> inputs) const;

  // Inputs. has(i): present (not omitted, not an empty optional).
  size_t num_inputs() const { return inputs_.size(); }
  bool has(size_t i) const { return i < inputs_.size() && inputs_[i].kind != Value::Kind::None; }
  const Value& value(size_t i) const;
  /// Input i as a tensor; raises naming the node when it is missing or a sequence.
  const DynTensor& in(size_t i) const;
  /// Input i (an integer tensor of any rank) read to the host: shapes, axes, pads, repeats.
  std::vector<int64_t> ints(size_t i) const;
  /// Input i (one element) read to the host as a double.
  double scalar(size_t i) const;

  // Attributes; the defaults are ONNX's.
  bool has_attr(const std::string& name) const;
  const Attribute& attr(const std::string& name) const;  // raises when absent
  int64_t attr_int(const std::string& name, int64_t fallback) const;
  double attr_float(const std::string& name, double fallback) const;
  std::string attr_string(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(const std::string& name,
                                 const std::vector<int64_t>& fallback = {}) const;
  std::vector<double> attr_floats(const std::string& name,
                                  const std::vector<double>& fallback = {}) const;

  /// "node 'conv1' (Conv)" for messages.
  std::string label() const;
  template <class... Args>
  [[noreturn]] void fail(const Args&... args) const {
    EMBER_FAIL("[onnx] ", label(), ": ", args...);
  }

 private:
  const Node& node_;
  int64_t opset_;
  Device device_;
  std::vector<Value> inputs_;
  const Executor& exec_;
  const Scope& scope_;
};

using OpFn = std::function<std::vector<Value>(OpContext&)>;

class Registry {
 public:
  /// Adds `op_type` of `domain` ("" for ONNX's), valid from opset `since` on.
  void add(const std::string& domain, const std::string& op_type, OpFn fn, int64_t since = 1);
  void add(const std::string& op_type, OpFn fn) { add("", op_type, std::move(fn)); }
  /// The function for a node at the model's opset for its domain, or null.
  const OpFn* find(const std::string& domain, const std::string& op_type, int64_t opset) const;

 private:
  struct Entry {
    int64_t since;
    OpFn fn;
  };
  std::map<std::pair<std::string, std::string>, std::vector<Entry>> table_;
};

/// The table, built on first use.
const Registry& registry();

/// The domain of the executor's fused steps (fusion.cpp): ops no model names, each the same as
/// the chain of ONNX nodes it replaces ("Conv+Relu").
inline constexpr const char* kFusedDomain = "ember.fused";

// One per family file.
void register_elementwise_ops(Registry& r);  // ops_elementwise.cpp: math, logic, activations, Cast
void register_shape_ops(Registry& r);        // ops_shape.cpp: shapes, slicing, gather/scatter
void register_nn_ops(Registry& r);           // ops_nn.cpp: conv, pools, norms, Gemm, RNNs
void register_reduce_ops(Registry& r);       // ops_reduce.cpp: reductions, arg/top-k, scans
void register_control_ops(Registry& r);      // ops_control.cpp: If, Loop, Scan, sequences
void register_text_ops(Registry& r);         // ops_text.cpp: TfIdfVectorizer
void register_attention_ops(Registry& r);    // ops_attention.cpp: Attention, RoPE, RMSNorm (23+)

/// Wraps a one-tensor result.
inline std::vector<Value> one(DynTensor t) { return {Value::of(std::move(t))}; }

using Ints = std::vector<int64_t>;

/// An element-type attribute (Cast's `to`, `dtype`, `output_dtype`) as Ember's dtype; raises
/// "unsupported: <what> element type UINT16 ..." for types Ember has none of.
DType dtype_from_onnx(const OpContext& c, int64_t onnx_type, const char* what);

/// `axis` in [-rank, rank) made non-negative; raises naming the node otherwise.
inline int64_t axis_of(const OpContext& c, int64_t axis, int rank) {
  if (axis < -rank || axis >= rank) c.fail("axis ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

}  // namespace ember::onnx
