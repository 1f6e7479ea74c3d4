// The backward engine: counts each node's consumers, then walks the graph in topological order
// (Kahn), summing the gradients that reach a node before running its rule. Saved tensors are
// dropped as soon as a node has run, so memory falls while backward proceeds.
#include <algorithm>
#include <atomic>
#include <optional>
#include <unordered_map>

#include "../tensor/internal.hpp"
#include "ember/autodiff/node.hpp"
#include "ember/tensor/autocast.hpp"
#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "ember/tensor/ops/reduce.hpp"
#include "engine.hpp"

namespace ember {
namespace {

#if defined(EMBER_NO_THREADS)
LeafGradHook g_leaf_hook;
bool g_grad_enabled = true;
uint64_t g_next_id = 1;
uint64_t next_node_id() { return g_next_id++; }
#else
thread_local LeafGradHook g_leaf_hook;
thread_local bool g_grad_enabled = true;
std::atomic<uint64_t> g_next_id{1};
uint64_t next_node_id() { return g_next_id.fetch_add(1, std::memory_order_relaxed); }
#endif

class LeafNode final : public autodiff::Node {
 public:
  explicit LeafNode(const DynTensor& x) : Node("leaf", std::span<const autodiff::NodePtr>(), x) {
    leaf_ = true;
  }
  void backward(autodiff::BackwardArgs&) override {}
};

const autodiff::NodePtr& tracked_node(const DynTensor& t, const char* op) {
  EMBER_CHECK(t.defined(), "[", op, "] the tensor is undefined (default-constructed)");
  EMBER_CHECK(t.requires_grad(), "[", op,
              "] the tensor does not require grad: it was not computed from tensors made with "
              "require_grad(), or only through ops without a gradient (comparisons, argmax, "
              "Int and Bool results), or under no_grad");
  return t.node();
}

}  // namespace

bool grad_enabled() { return g_grad_enabled; }
void set_grad_enabled(bool enabled) { g_grad_enabled = enabled; }

namespace autodiff {

Node::Node(const char* name, std::span<const NodePtr> inputs, const DynTensor& out)
    : name_(name), id_(next_node_id()), shape_(out.shape()), dtype_(out.dtype()) {
  if (inputs.size() <= 3) {
    std::copy(inputs.begin(), inputs.end(), inline_inputs_);
    num_inputs_ = static_cast<uint32_t>(inputs.size());
  } else {
    more_inputs_.assign(inputs.begin(), inputs.end());
  }
}

Node::~Node() = default;

bool BackwardArgs::needs(size_t i) const { return self->inputs()[i] != nullptr; }

DynTensor BackwardArgs::output(const RawTensor& saved) const {
  return options.create_graph ? DynTensor(saved, self) : DynTensor(saved);
}

DynTensor sum_to(const DynTensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  const int lead = g.rank() - shape.rank();
  Dims dims;
  for (int i = 0; i < g.rank(); ++i) {
    // Size-1 dims of g need no sum (a batch of one): the reshape below drops them.
    if (g.size(i) != 1 && (i < lead || shape[i - lead] == 1)) dims.push_back(i);
  }
  const DynTensor s = dims.empty() ? g : sum(g, dims, true);
  return reshape(s, shape);
}

namespace {

struct Slot {
  DynTensor grad;
  std::vector<GradPiece> pieces;  // sparse parts of the gradient, added into it when taken
  int pending = 0;                // consumers that have not yet passed their gradient on
};

// Whether the pieces tile a tensor of `shape` exactly: each a box of its contiguous layout (its
// strides the layout's), no two overlapping, together covering every element. Then each piece
// is copied into place, without zeros first and without adds: split's or chunk's gradient.
bool pieces_tile(const std::vector<GradPiece>& pieces, const Shape& shape) {
  constexpr size_t kMaxPieces = 64;  // the pairwise overlap test is quadratic
  if (pieces.size() > kMaxPieces) return false;
  const int r = shape.rank();
  const Strides layout = contiguous_strides(shape);
  std::vector<std::vector<int64_t>> starts;
  int64_t covered = 0;
  for (const GradPiece& p : pieces) {
    if (p.part.rank() != r || p.offset < 0) return false;
    std::vector<int64_t> start(static_cast<size_t>(r));
    int64_t rest = p.offset;
    for (int d = 0; d < r; ++d) {
      const int64_t size = p.part.shape()[d];
      if (size > 1 && p.strides[d] != layout[d]) return false;
      start[static_cast<size_t>(d)] = layout[d] > 0 ? rest / layout[d] : 0;
      rest -= start[static_cast<size_t>(d)] * layout[d];
      if (start[static_cast<size_t>(d)] + size > shape[d]) return false;
    }
    if (rest != 0) return false;
    starts.push_back(std::move(start));
    covered += p.part.numel();
  }
  for (size_t i = 0; i < pieces.size(); ++i) {
    for (size_t j = i + 1; j < pieces.size(); ++j) {
      bool apart = false;  // boxes overlap unless some dim separates them
      for (int d = 0; d < r && !apart; ++d) {
        const int64_t a = starts[i][static_cast<size_t>(d)], b = starts[j][static_cast<size_t>(d)];
        apart = a + pieces[i].part.shape()[d] <= b || b + pieces[j].part.shape()[d] <= a;
      }
      if (!apart) return false;
    }
  }
  return covered == shape.numel();
}

// When tiling pieces already sit where they belong in one buffer of the slot's dtype (the
// gradients of q, k and v that fused attention wrote into one buffer laid out as the packed qkv
// projection), that buffer is the gradient: a view of it, with no copy.
std::optional<RawTensor> pieces_in_place(const std::vector<GradPiece>& pieces, const Shape& shape,
                                         DType dtype) {
  const RawTensor& first = pieces.front().part.raw();
  const int64_t base = first.offset - pieces.front().offset;
  if (base < 0) return std::nullopt;
  for (const GradPiece& p : pieces) {
    const RawTensor& t = p.part.raw();
    if (t.storage != first.storage || t.dtype != dtype || t.offset - p.offset != base) {
      return std::nullopt;
    }
    for (int d = 0; d < t.shape.rank(); ++d) {
      if (t.shape[d] > 1 && t.strides[d] != p.strides[d]) return std::nullopt;
    }
  }
  return first.view(shape, contiguous_strides(shape), base);
}

// The slot's whole gradient: the dense part plus every piece, added in place into one fresh
// buffer (a copy of the dense part, or zeros), or the pieces copied into place when they tile it.
DynTensor take_gradient(Slot& slot, const Node& n) {
  DynTensor g = std::move(slot.grad);
  if (slot.pieces.empty()) return g;
  const bool tiled = !g.defined() && pieces_tile(slot.pieces, n.shape());
  if (tiled) {
    if (auto whole = pieces_in_place(slot.pieces, n.shape(), n.dtype())) {
      slot.pieces.clear();
      return DynTensor(std::move(*whole));
    }
  }
  const Device device = slot.pieces.front().part.device();
  DynTensor out = detail::make_empty(n.shape(), n.dtype(), device, "backward");
  Backend& be = detail::backend_of(out);
  if (tiled) {
    detail::check_supported(be, OpFamily::Copy, n.dtype(), "backward");
    for (GradPiece& p : slot.pieces) {
      be.copy(p.part.raw(), out.raw().view(p.part.shape(), p.strides, p.offset));  // casts too
    }
    slot.pieces.clear();
    return out;
  }
  detail::check_supported(be, g.defined() ? OpFamily::Copy : OpFamily::Fill, n.dtype(), "backward");
  detail::check_supported(be, OpFamily::Binary, n.dtype(), "backward");
  if (g.defined()) {
    be.copy(g.raw(), out.raw());
  } else {
    be.fill(out.raw(), Scalar(0));
  }
  for (GradPiece& p : slot.pieces) {
    if (p.part.numel() == 0) continue;
    const DynTensor part = p.part.dtype() == n.dtype() ? p.part : cast(p.part, n.dtype());
    const RawTensor view = out.raw().view(part.shape(), p.strides, p.offset);
    be.binary(BinaryOp::Add, view, part.raw(), view);  // out aliases the first operand exactly
  }
  slot.pieces.clear();
  return out;
}

}  // namespace

void BackwardArgs::add_piece(size_t i, GradPiece piece) const {
  EMBER_CHECK(!options.create_graph,
              "[backward] internal error: a gradient piece under create_graph (from ", self->name(),
              ")");
  input_pieces[i].push_back(std::move(piece));
}

std::vector<DynTensor> run_backward(const NodePtr& root, const DynTensor& seed,
                                    const BackwardOptions& options, std::span<const NodePtr> stops,
                                    Gradients& sink) {
  auto stop_index = [&](const Node* n) -> int {
    for (size_t i = 0; i < stops.size(); ++i) {
      if (stops[i].get() == n) return static_cast<int>(i);
    }
    return -1;
  };
  // 1. Consumers of every node reachable from the root (not beyond the stops).
  std::unordered_map<const Node*, Slot> slots;
  slots.reserve(64);
  slots[root.get()];
  std::vector<const Node*> stack{root.get()};
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    if (stop_index(n) >= 0) continue;
    for (const NodePtr& in : n->inputs()) {
      if (!in) continue;
      auto [it, fresh] = slots.try_emplace(in.get());
      ++it->second.pending;
      if (fresh) stack.push_back(in.get());
    }
  }

  // 2. Run the rules in topological order; rules are recorded only under create_graph.
  const GradModeGuard mode(options.create_graph);
  const detail::AutocastSuspend no_autocast;  // gradients run in the forward's types
  BackwardOptions opts = options;
  opts.retain_graph = options.retain_graph || options.create_graph;
  std::vector<DynTensor> results(stops.size());
  std::vector<DynTensor> input_grads;
  std::vector<std::vector<GradPiece>> input_pieces;
  slots[root.get()].grad = seed;
  std::vector<NodePtr> ready{root};
  while (!ready.empty()) {
    const NodePtr n = std::move(ready.back());
    ready.pop_back();
    const DynTensor g = take_gradient(slots[n.get()], *n);
    if (const int s = stop_index(n.get()); s >= 0) {
      results[static_cast<size_t>(s)] = g;
      continue;
    }
    if (n->is_leaf() || n->retains_grad()) {
      if (g.defined()) {
        const DynTensor& total = sink.accumulate(n->id(), g);
        if (n->is_leaf() && g_leaf_hook) g_leaf_hook(n->id(), total);
      }
      if (n->is_leaf()) continue;
    }
    input_grads.assign(n->inputs().size(), DynTensor());
    input_pieces.resize(n->inputs().size());
    for (std::vector<GradPiece>& v : input_pieces) v.clear();
    if (g.defined()) {
      EMBER_CHECK(!n->released(), "[backward] the graph through ", n->name(),
                  " was freed by an earlier backward(); pass retain_graph = true to the first "
                  "backward to walk a graph twice");
      BackwardArgs args{g, input_grads, n, opts, sink, input_pieces};
      n->backward(args);
      if (!opts.retain_graph) n->release();
    }
    for (size_t i = 0; i < n->inputs().size(); ++i) {
      const NodePtr& in = n->inputs()[i];
      if (!in) continue;
      Slot& slot = slots[in.get()];
      DynTensor& gi = input_grads[i];
      if (gi.defined()) {
        EMBER_CHECK(gi.shape() == in->shape(), "[backward] internal error: the gradient rule of ",
                    n->name(), " gave input ", i, " a gradient of shape ", gi.shape(),
                    " for an input of shape ", in->shape());
        if (gi.dtype() != in->dtype()) gi = cast(gi, in->dtype());
        slot.grad = slot.grad.defined() ? add(slot.grad, gi) : std::move(gi);
      }
      for (GradPiece& p : input_pieces[i]) slot.pieces.push_back(std::move(p));
      input_pieces[i].clear();
      if (--slot.pending == 0) ready.push_back(in);
    }
  }
  return results;
}

}  // namespace autodiff

DynTensor Gradients::find(const DynTensor& t) const {
  if (!t.requires_grad()) return {};
  auto it = grads_.find(t.node()->id());
  return it == grads_.end() ? DynTensor() : it->second;
}

DynTensor Gradients::get(const DynTensor& t) const {
  tracked_node(t, "grad");
  DynTensor g = find(t);
  EMBER_CHECK(g.defined(), "[grad] no gradient for this tensor of shape ", t.shape(),
              ": the output does not depend on it, it is not a leaf (call retain_grad() on it "
              "before backward), or it was removed");
  return g;
}

DynTensor Gradients::remove(const DynTensor& t) {
  if (!t.requires_grad()) return {};
  auto it = grads_.find(t.node()->id());
  if (it == grads_.end()) return {};
  DynTensor g = std::move(it->second);
  grads_.erase(it);
  return g;
}

const DynTensor& Gradients::accumulate(uint64_t id, const DynTensor& g) {
  auto [it, fresh] = grads_.try_emplace(id, g);
  if (!fresh) it->second = add(it->second, g);
  return it->second;
}

void Gradients::set(const DynTensor& t, const DynTensor& g) {
  const autodiff::NodePtr& n = tracked_node(t, "Gradients::set");
  EMBER_CHECK(g.defined() && g.shape() == t.shape(), "[Gradients::set] a gradient of shape ",
              g.defined() ? g.shape() : Shape{}, " for a tensor of shape ", t.shape());
  grads_[n->id()] = g;
}

LeafGradHookGuard::LeafGradHookGuard(LeafGradHook hook) : previous_(std::move(g_leaf_hook)) {
  g_leaf_hook = std::move(hook);
}
LeafGradHookGuard::~LeafGradHookGuard() { g_leaf_hook = std::move(previous_); }

DynTensor require_grad(const DynTensor& x) {
  EMBER_CHECK(x.defined(), "[require_grad] the tensor is undefined (default-constructed)");
  EMBER_CHECK(is_floating(x.dtype()),
              "[require_grad] only Float tensors can require gradients, "
              "got ",
              x.dtype());
  if (x.requires_grad()) return x;
  return DynTensor(x.raw(), std::make_shared<LeafNode>(x));
}

DynTensor detach(const DynTensor& x) { return DynTensor(x.raw()); }

DynTensor retain_grad(const DynTensor& x) {
  tracked_node(x, "retain_grad")->set_retain_grad();
  return x;
}

namespace {

DynTensor make_seed(const DynTensor& output, const DynTensor& seed) {
  if (!seed.defined()) {
    EMBER_CHECK(output.numel() == 1, "[backward] an output of shape ", output.shape(),
                " has more than one element: pass a seed gradient of that shape, "
                "backward(seed), or reduce it first (sum, mean)");
    return ones_like(output);
  }
  EMBER_CHECK(seed.shape() == output.shape(), "[backward] the seed's shape ", seed.shape(),
              " differs from the output's ", output.shape());
  EMBER_CHECK(seed.device() == output.device(), "[backward] the seed is on ", seed.device(),
              ", the output on ", output.device());
  return seed.dtype() == output.dtype() ? seed : cast(seed, output.dtype());
}

}  // namespace

Gradients backward(const DynTensor& output, const DynTensor& seed, const BackwardOptions& options) {
  const autodiff::NodePtr& root = tracked_node(output, "backward");
  Gradients grads;
  autodiff::run_backward(root, make_seed(output, seed), options, {}, grads);
  return grads;
}

Gradients backward(const DynTensor& output, const BackwardOptions& options) {
  return backward(output, DynTensor(), options);
}

std::vector<DynTensor> grad(const DynTensor& output, const std::vector<DynTensor>& inputs,
                            const DynTensor& seed, const BackwardOptions& options) {
  const autodiff::NodePtr& root = tracked_node(output, "grad");
  std::vector<autodiff::NodePtr> stops;
  for (const DynTensor& x : inputs) stops.push_back(tracked_node(x, "grad"));
  Gradients unused;
  const LeafGradHookGuard quiet{LeafGradHook()};  // grad() reports no leaves
  std::vector<DynTensor> by_stop =
      autodiff::run_backward(root, make_seed(output, seed), options, stops, unused);
  // The same input given twice gets its gradient once per mention.
  for (size_t i = 0; i < stops.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (stops[j] == stops[i]) by_stop[i] = by_stop[j];
    }
  }
  return by_stop;
}

}  // namespace ember
