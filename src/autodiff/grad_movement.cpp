// Gradient rules of the shape and layout ops: each moves the gradient back to the input's
// layout (reshape back, transpose back, sum over broadcast dims, scatter into the slice...).
#include <utility>

#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/indexing.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "ember/tensor/ops/reduce.hpp"
#include "rules.hpp"

namespace ember::autodiff {
namespace {

void reshape_rule(const Recording& r) {
  const Shape shape = r.input(0).shape();
  record(r, [shape](BackwardArgs& a) { a.input_grads[0] = reshape(a.grad, shape); });
}

void transpose_rule(const Recording& r) {
  const int dim0 = r.param<std::pair<int, int>>().first;
  const int dim1 = r.param<std::pair<int, int>>().second;
  record(r, [dim0, dim1](BackwardArgs& a) { a.input_grads[0] = transpose(a.grad, dim0, dim1); });
}

void permute_rule(const Recording& r) {
  const std::vector<int64_t>& dims = r.param<std::vector<int64_t>>();
  const int rank = r.input(0).rank();
  std::vector<int64_t> inverse(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = dims[i] < 0 ? dims[i] + rank : dims[i];
    inverse[static_cast<size_t>(d)] = static_cast<int64_t>(i);
  }
  record(r, [inverse](BackwardArgs& a) { a.input_grads[0] = permute(a.grad, inverse); });
}

void expand_rule(const Recording& r) {
  const Shape shape = r.input(0).shape();
  record(r, [shape](BackwardArgs& a) { a.input_grads[0] = sum_to(a.grad, shape); });
}

// Zeros of `shape` with `g` written at start, start + step, ... along `dim`: the adjoint of
// slicing. Step 1 is one pad (a single fill and copy); other steps assign into zeros.
DynTensor embed(const DynTensor& g, const Shape& shape, int dim, int64_t start, int64_t step) {
  if (step == 1) {
    std::vector<int64_t> pads(2 * static_cast<size_t>(shape.rank() - dim), 0);
    pads[pads.size() - 2] = start;
    pads[pads.size() - 1] = shape[dim] - start - g.size(dim);
    return pad(g, pads);
  }
  std::vector<Slice> slices(static_cast<size_t>(dim) + 1);
  slices.back() = Slice{start, start + (g.size(dim) - 1) * step + 1, step};
  return slice_assign(zeros(shape, g.dtype(), g.device()), slices, g);
}

void slice_rule(const Recording& r) {
  const Shape shape = r.input(0).shape();
  const SliceParams& p = r.param<SliceParams>();
  const int dim = p.dim;
  const int64_t start = p.start, step = p.step;
  record(r, [shape, dim, start, step](BackwardArgs& a) {
    if (a.options.create_graph) {
      a.input_grads[0] = embed(a.grad, shape, dim, start, step);
      return;
    }
    Strides st = contiguous_strides(shape);
    const int64_t offset = start * st[dim];
    st[dim] *= step;
    a.add_piece(0, {a.grad, st, offset});
  });
}

void select_rule(const Recording& r) {
  const Shape shape = r.input(0).shape();
  const int dim = r.param<SliceParams>().dim;
  const int64_t index = r.param<SliceParams>().start;
  record(r, [shape, dim, index](BackwardArgs& a) {
    if (a.options.create_graph) {
      a.input_grads[0] = embed(unsqueeze(a.grad, dim), shape, dim, index, 1);
      return;
    }
    const Strides full = contiguous_strides(shape);
    Strides st;
    for (int d = 0; d < shape.rank(); ++d) {
      if (d != dim) st.push_back(full[d]);
    }
    a.add_piece(0, {a.grad, st, index * full[dim]});
  });
}

void flip_rule(const Recording& r) {
  record(r, [dims = r.param<std::vector<int64_t>>()](BackwardArgs& a) {
    a.input_grads[0] = dims.empty() ? a.grad : flip(a.grad, dims);
  });
}

void repeat_rule(const Recording& r) {
  const Shape shape = r.input(0).shape();
  record(r, [shape, repeats = r.param<std::vector<int64_t>>()](BackwardArgs& a) {
    // The input as repeat() saw it: leading 1s up to one dim per repeat count.
    const int r = static_cast<int>(repeats.size());
    Shape padded = Shape::filled(r - shape.rank(), 1);
    for (int64_t d : shape) padded.push_back(d);
    DynTensor g = a.grad;
    if (2 * r <= kMaxRank) {
      // [r0 * d0, r1 * d1, ...] as [r0, d0, r1, d1, ...], summed over the repeat dims.
      Shape split;
      Dims repeat_dims;
      for (int i = 0; i < r; ++i) {
        repeat_dims.push_back(2 * i);
        split.push_back(repeats[static_cast<size_t>(i)]);
        split.push_back(padded[i]);
      }
      g = sum(reshape(g, split), repeat_dims);
    } else {
      // Too many dims to split them all at once: one dim at a time, as [before, r, d, after].
      for (int i = 0; i < r; ++i) {
        const int64_t n = repeats[static_cast<size_t>(i)];
        if (n == 1) continue;
        int64_t before = 1, after = 1;
        for (int j = 0; j < i; ++j) before *= g.size(j);
        for (int j = i + 1; j < r; ++j) after *= g.size(j);
        Shape reduced = g.shape();
        reduced[i] = padded[i];
        g = reshape(sum(reshape(g, Shape{before, n, padded[i], after}), {1}), reduced);
      }
    }
    a.input_grads[0] = reshape(g, shape);
  });
}

void cat_rule(const Recording& r) {
  const int dim = r.param<int>();
  const auto& xs = r.inputs;
  // Where each input lies along `dim`; 1-D empty inputs were skipped and get no gradient.
  std::vector<int64_t> starts(xs.size(), -1), sizes(xs.size(), 0);
  int64_t at = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (xs[i]->rank() == 1 && xs[i]->numel() == 0) continue;
    starts[i] = at;
    sizes[i] = xs[i]->size(dim);
    at += sizes[i];
  }
  record(r, [dim, starts, sizes](BackwardArgs& a) {
    for (size_t i = 0; i < starts.size(); ++i) {
      if (a.needs(i) && starts[i] >= 0) a.input_grads[i] = narrow(a.grad, dim, starts[i], sizes[i]);
    }
  });
}

void pad_rule(const Recording& r) {
  const std::vector<int64_t>& pads = r.param<std::vector<int64_t>>();
  // Constant padding only (reflect and replicate record through index_select): negative pads
  // crop, so padding by the negated pads is the adjoint.
  std::vector<int64_t> back(pads.size());
  for (size_t i = 0; i < pads.size(); ++i) back[i] = -pads[i];
  record(r, [back](BackwardArgs& a) { a.input_grads[0] = pad(a.grad, back); });
}

}  // namespace
}  // namespace ember::autodiff

namespace ember {

const OpDef ops::reshape{"reshape", autodiff::reshape_rule};
const OpDef ops::transpose{"transpose", autodiff::transpose_rule};
const OpDef ops::permute{"permute", autodiff::permute_rule};
const OpDef ops::expand{"expand", autodiff::expand_rule};
const OpDef ops::slice{"slice", autodiff::slice_rule};
const OpDef ops::select{"select", autodiff::select_rule};
const OpDef ops::flip{"flip", autodiff::flip_rule};
const OpDef ops::repeat{"repeat", autodiff::repeat_rule};
const OpDef ops::cat{"cat", autodiff::cat_rule};
const OpDef ops::pad{"pad", autodiff::pad_rule};

}  // namespace ember
