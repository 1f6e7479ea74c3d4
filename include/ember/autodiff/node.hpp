// The recorded graph: one Node per op result that requires grad. A node keeps edges to the nodes
// of its inputs and what its gradient rule needs; backward() calls the rule with the output's
// gradient and the rule returns the inputs' gradients, written with ordinary ops (so that
// create_graph can record them too). Ops and fused composites record through record().
#pragma once

#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "ember/autodiff/autodiff.hpp"

namespace ember::autodiff {

using NodePtr = std::shared_ptr<Node>;

/// A gradient that is zero outside one view of its input (a slice's): `part` lands at the view
/// with part's shape, `strides` and `offset` in the input's contiguous layout.
struct GradPiece {
  DynTensor part;
  Strides strides;
  int64_t offset = 0;
};

/// What a gradient rule gets: the output's gradient and one slot per input to fill.
struct BackwardArgs {
  const DynTensor& grad;
  std::span<DynTensor> input_grads;
  const NodePtr& self;
  const BackwardOptions& options;
  Gradients& sink;  // where leaf gradients go (checkpoint's inner backward uses it)
  std::span<std::vector<GradPiece>> input_pieces;

  /// Gives input i the gradient `piece` (zero elsewhere) instead of a tensor of the input's
  /// whole shape: the engine adds all the pieces an input gets into one buffer, so slicing L
  /// steps costs O(input) in backward, not O(L x input). The adding is not recorded: rules use
  /// it only when !options.create_graph.
  void add_piece(size_t i, GradPiece piece) const;

  /// True when input i is tracked, so its gradient is wanted.
  bool needs(size_t i) const;
  /// The node's own output, saved as a RawTensor (a tracked copy would keep the node alive
  /// forever); tracked again here when the backward pass is itself recorded.
  DynTensor output(const RawTensor& saved) const;
};

class Node {
 public:
  Node(const char* name, std::span<const NodePtr> inputs, const DynTensor& out);
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  const char* name() const { return name_; }
  /// Unique for the life of the process: Gradients are keyed by it.
  uint64_t id() const { return id_; }
  std::span<const NodePtr> inputs() const {
    return more_inputs_.empty() ? std::span<const NodePtr>(inline_inputs_, num_inputs_)
                                : std::span<const NodePtr>(more_inputs_);
  }
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  bool is_leaf() const { return leaf_; }
  bool retains_grad() const { return retain_grad_; }
  void set_retain_grad() { retain_grad_ = true; }
  bool released() const { return released_; }

  virtual void backward(BackwardArgs& args) = 0;
  /// Drops what the rule saved; a later backward through this node is an error.
  virtual void release() { released_ = true; }

 protected:
  bool leaf_ = false;

 private:
  const char* name_;
  uint64_t id_;
  // Up to three edges inline (every primitive but cat and checkpoint): no allocation for them.
  NodePtr inline_inputs_[3];
  std::vector<NodePtr> more_inputs_;
  uint32_t num_inputs_ = 0;
  Shape shape_;
  DType dtype_;
  bool retain_grad_ = false;
  bool released_ = false;
};

/// A node whose rule is a callable (usually a lambda capturing the saved tensors).
template <class Rule>
class RuleNode final : public Node {
 public:
  RuleNode(const char* name, std::span<const NodePtr> inputs, const DynTensor& out, Rule rule)
      : Node(name, inputs, out), rule_(std::move(rule)) {}
  void backward(BackwardArgs& args) override { (*rule_)(args); }
  void release() override {
    rule_.reset();
    Node::release();
  }

 private:
  std::optional<Rule> rule_;
};

/// True when an op on these inputs must be recorded.
inline bool should_record(std::initializer_list<const DynTensor*> inputs) {
  bool any = false;
  for (const DynTensor* t : inputs) any = any || (t && t->requires_grad());
  return any && grad_enabled();
}

/// Makes `out` tracked by a node named `name` over `inputs` (null entries are constants), whose
/// backward runs rule(BackwardArgs&). Non-floating outputs are never tracked.
template <class Rule>
void record(const char* name, std::span<const DynTensor* const> inputs, DynTensor& out,
            Rule&& rule) {
  if (!is_floating(out.dtype())) return;
  NodePtr inline_edges[3];
  std::vector<NodePtr> more;  // cat: any number of inputs
  if (inputs.size() > 3) more.resize(inputs.size());
  NodePtr* edges = inputs.size() > 3 ? more.data() : inline_edges;
  for (size_t i = 0; i < inputs.size(); ++i) edges[i] = inputs[i] ? inputs[i]->node() : nullptr;
  auto node = std::make_shared<RuleNode<std::decay_t<Rule>>>(
      name, std::span<const NodePtr>(edges, inputs.size()), out, std::forward<Rule>(rule));
  out = DynTensor(out.raw(), std::move(node));
}
template <class Rule>
void record(const char* name, std::initializer_list<const DynTensor*> inputs, DynTensor& out,
            Rule&& rule) {
  record(name, std::span<const DynTensor* const>(inputs.begin(), inputs.size()), out,
         std::forward<Rule>(rule));
}
/// Sums `g` down to `shape`, undoing the broadcast that made an input of that shape.
DynTensor sum_to(const DynTensor& g, const Shape& shape);

}  // namespace ember::autodiff
