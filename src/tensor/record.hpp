// The one entry point through which every primitive op is recorded for autodiff. An op hands
// its descriptor (core/ops.hpp), its inputs, its output and its parameters to record(); when an
// input is tracked and grad mode is on, the descriptor's rule (src/autodiff) attaches a node.
// Ops never name autodiff: a new op adds a descriptor and a rule, and calls record() once.
#pragma once

#include <initializer_list>
#include <span>

#include "ember/autodiff/autodiff.hpp"
#include "ember/core/error.hpp"
#include "ember/core/ops.hpp"

namespace ember {

namespace detail {
// A unique address per type: Recording::param<P>() checks the parameters' type with it.
template <class T>
const void* type_tag() {
  static const char tag = 0;
  return &tag;
}
}  // namespace detail

struct NoParams {};

/// max_pool and its backward: the window and the argmax of each window.
struct PoolIndices {
  PoolParams params;
  DynTensor indices;
};

/// slice: `dim`, `start`, `step`; select: `dim` and the index as `start`.
struct SliceParams {
  int dim = 0;
  int64_t start = 0, step = 1;
};

/// Parameters of the ops that read or write along `dim` at `index` (gather, scatter,
/// index_select, index_add with its alpha; sort, topk and max/min along a dim, whose values
/// were taken at `index`).
struct IndexParams {
  int dim = 0;
  DynTensor index;
  double alpha = 1.0;
};

/// scatter_reduce's parameters (its gradient reads the reduction and the index).
enum class ScatterMode : uint8_t { Sum, Prod, Mean, Amax, Amin };
struct ScatterReduceParams {
  int dim = 0;
  DynTensor index;
  ScatterMode mode = ScatterMode::Sum;
  bool include_self = true;
};

/// linalg.svd's outputs as its three nodes save them (storage only: a tracked copy would keep
/// the nodes alive), and whether U and Vh were full.
struct SvdSaved {
  RawTensor u, s, vh;
  bool full_matrices = false;
};

/// One op call as its gradient rule sees it.
struct Recording {
  const OpDef& op;
  std::span<const DynTensor* const> inputs;  // as the op computed them; null: a constant
  DynTensor& out;                            // the rule makes it tracked
  const void* params;
  const void* params_type;

  const DynTensor& input(size_t i) const { return *inputs[i]; }
  template <class P>
  const P& param() const {
    EMBER_CHECK(params_type == detail::type_tag<P>(), "[", op.name,
                "] was recorded with other parameters than its rule reads");
    return *static_cast<const P*>(params);
  }
};

namespace detail {

using Inputs = std::span<const DynTensor* const>;

inline bool any_tracked(Inputs inputs) {
  for (const DynTensor* t : inputs) {
    if (t && t->requires_grad()) return grad_enabled();
  }
  return false;
}

/// Records `out` as op(inputs; params) when an input is tracked and grad mode is on.
template <class P = NoParams>
void record(const OpDef& op, Inputs inputs, DynTensor& out, const P& params = {}) {
  if (op.grad == nullptr || !any_tracked(inputs)) return;
  op.grad(Recording{op, inputs, out, &params, type_tag<P>()});
}
template <class P = NoParams>
void record(const OpDef& op, std::initializer_list<const DynTensor*> inputs, DynTensor& out,
            const P& params = {}) {
  record(op, Inputs(inputs.begin(), inputs.size()), out, params);
}

/// For an op whose forward is made of other ops (matmul's reshapes, softmax's composite, the
/// conv kernels' layout moves): runs `forward` unrecorded and records its result as one node.
template <class P, class Forward>
DynTensor recorded(const OpDef& op, std::initializer_list<const DynTensor*> inputs, const P& params,
                   Forward&& forward) {
  const Inputs in(inputs.begin(), inputs.size());
  if (op.grad == nullptr || !any_tracked(in)) return forward();
  DynTensor out;
  {
    GradModeGuard unrecorded(false);
    out = forward();
  }
  record(op, in, out, params);
  return out;
}

}  // namespace detail
}  // namespace ember
