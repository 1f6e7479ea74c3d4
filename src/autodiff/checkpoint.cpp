// Gradient checkpointing: the segment runs without recording, and its node recomputes it (with
// recording) when backward reaches it, then walks the recomputed graph down to the segment's
// inputs. Leaves used inside the segment (weights) get their gradients through the same walk.
#include "ember/autodiff/node.hpp"
#include "ember/tensor/generator.hpp"
#include "engine.hpp"

namespace ember {
namespace {

class CheckpointNode final : public autodiff::Node {
 public:
  CheckpointNode(CheckpointFn fn, const std::vector<DynTensor>& inputs, const DynTensor& out,
                 uint64_t rng_offset)
      : Node("checkpoint", edges(inputs), out),
        fn_(std::move(fn)),
        inputs_(inputs),
        rng_offset_(rng_offset) {}

  void backward(autodiff::BackwardArgs& args) override {
    // Same random draws as the first run (dropout inside the segment), then the stream resumes.
    Generator& gen = default_generator();
    const uint64_t resume = gen.offset();
    gen.set_offset(rng_offset_);
    DynTensor out;
    {
      const GradModeGuard recording(true);
      out = fn_(inputs_);
    }
    gen.set_offset(resume);
    if (!out.requires_grad()) return;
    EMBER_CHECK(out.shape() == shape(), "[checkpoint] the segment returned shape ", out.shape(),
                " when recomputed, ", shape(), " the first time");
    std::vector<autodiff::NodePtr> stops;
    for (const DynTensor& x : inputs_) {
      if (x.requires_grad()) stops.push_back(x.node());
    }
    BackwardOptions inner = args.options;
    inner.retain_graph = false;  // the recomputed graph is used once
    const std::vector<DynTensor> g =
        autodiff::run_backward(out.node(), args.grad, inner, stops, args.sink);
    size_t s = 0;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      if (!inputs_[i].requires_grad()) continue;
      // An input given twice gets its gradient once: the stop list holds its node once each.
      bool seen = false;
      for (size_t j = 0; j < i; ++j) seen = seen || inputs_[j].node() == inputs_[i].node();
      if (!seen) args.input_grads[i] = g[s];
      ++s;
    }
  }

  void release() override {
    fn_ = nullptr;
    inputs_.clear();
    Node::release();
  }

 private:
  static std::vector<autodiff::NodePtr> edges(const std::vector<DynTensor>& inputs) {
    std::vector<autodiff::NodePtr> out;
    for (const DynTensor& x : inputs) out.push_back(x.node());
    return out;
  }

  CheckpointFn fn_;
  std::vector<DynTensor> inputs_;
  uint64_t rng_offset_;
};

}  // namespace

DynTensor checkpoint(const CheckpointFn& fn, const std::vector<DynTensor>& inputs) {
  EMBER_CHECK(static_cast<bool>(fn), "[checkpoint] the segment function is empty");
  if (!grad_enabled()) return fn(inputs);
  const uint64_t rng_offset = default_generator().offset();
  DynTensor out;
  {
    const GradModeGuard off(false);
    out = fn(inputs);
  }
  EMBER_CHECK(out.defined(), "[checkpoint] the segment returned an undefined tensor");
  if (!is_floating(out.dtype())) return out;
  // Recorded even when no input is tracked: the segment may use weights that are.
  return DynTensor(out.raw(), std::make_shared<CheckpointNode>(fn, inputs, out, rng_offset));
}

}  // namespace ember
