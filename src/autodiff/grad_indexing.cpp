// Gradient rules of the indexing ops: each is the adjoint of its forward (gather <-> scatter_add,
// index_select <-> index_add, a masked or sliced write <-> zeroing the written positions).
// Index tensors and masks are constants: they are captured, never differentiated.
#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/indexing.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "ember/tensor/ops/reduce.hpp"
#include "rules.hpp"

namespace ember::autodiff {
namespace {

// `g` (of the index's shape) as a gradient of src's shape: src may be larger than the index
// in any dim, and its elements beyond the index were never read, so they get zeros.
DynTensor pad_to(const DynTensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  if (shape.rank() == 0) return sum_to(g, shape);  // a 0-d src is read once per index
  std::vector<int64_t> pads;
  for (int d = shape.rank() - 1; d >= 0; --d) {
    pads.push_back(0);
    pads.push_back(shape[d] - g.size(d));
  }
  return pad(g, pads);
}

// The gradient of gather(x, dim, index) for x: gy added back at the gathered positions.
DynTensor gather_grad(const DynTensor& gy, const Shape& shape, int dim, const DynTensor& index) {
  if (shape.rank() == 0) return sum_to(gy, shape);  // every index is 0
  return scatter_add(zeros(shape, gy.dtype(), gy.device()), dim, index, gy);
}

void gather_rule(const Recording& r) {
  const Shape shape = r.input(0).shape();
  const IndexParams& p = r.param<IndexParams>();
  record(r, [shape, dim = p.dim, index = p.index](BackwardArgs& a) {
    a.input_grads[0] = gather_grad(a.grad, shape, dim, index);
  });
}

void scatter_rule(const Recording& r) {
  const Shape src_shape = r.input(1).shape();
  const IndexParams& p = r.param<IndexParams>();
  record(r, [dim = p.dim, index = p.index, src_shape](BackwardArgs& a) {
    // Scattered positions were overwritten: x gets nothing there, src what landed there.
    if (a.needs(0)) a.input_grads[0] = scatter(a.grad, dim, index, 0);
    if (a.needs(1)) a.input_grads[1] = pad_to(gather(a.grad, dim, index), src_shape);
  });
}

void scatter_add_rule(const Recording& r) {
  const Shape src_shape = r.input(1).shape();
  const IndexParams& p = r.param<IndexParams>();
  record(r, [dim = p.dim, index = p.index, src_shape](BackwardArgs& a) {
    a.input_grads[0] = a.grad;
    if (a.needs(1)) a.input_grads[1] = pad_to(gather(a.grad, dim, index), src_shape);
  });
}

void index_select_rule(const Recording& r) {
  const Shape shape = r.input(0).shape();
  const IndexParams& p = r.param<IndexParams>();
  record(r, [shape, dim = p.dim, index = p.index](BackwardArgs& a) {
    a.input_grads[0] = index_add(zeros(shape, a.grad.dtype(), a.grad.device()), dim, index, a.grad);
  });
}

void index_add_rule(const Recording& r) {
  const IndexParams& p = r.param<IndexParams>();
  record(r, [dim = p.dim, index = p.index, alpha = p.alpha](BackwardArgs& a) {
    a.input_grads[0] = a.grad;
    if (a.needs(1)) {
      const DynTensor g = index_select(a.grad, dim, index);
      a.input_grads[1] = alpha == 1.0 ? g : mul(g, alpha);
    }
  });
}

void masked_fill_rule(const Recording& r) {
  const Shape shape = r.input(0).shape();
  record(r, [shape, mask = r.param<DynTensor>()](BackwardArgs& a) {
    a.input_grads[0] = sum_to(where(mask, 0, a.grad), shape);
  });
}

void masked_select_rule(const Recording& r) {
  const DynTensor& mask = r.param<DynTensor>();
  // The mask broadcast to x (a view, no copy); its true positions are found again in backward
  // rather than keeping an index of every selected element.
  const Shape shape = r.input(0).shape();
  const Shape full_shape = broadcast_shapes(shape, mask.shape(), "masked_select");
  const DynTensor full_mask = expand(mask, full_shape);
  record(r, [shape, full_mask](BackwardArgs& a) {
    const int64_t n = full_mask.numel();
    const DynTensor idx = nonzero(reshape(full_mask, Shape{n}));  // [count, 1]
    const DynTensor zero = zeros(Shape{n}, a.grad.dtype(), a.grad.device());
    const DynTensor flat = index_add(zero, 0, reshape(idx, Shape{idx.size(0)}), a.grad);
    a.input_grads[0] = sum_to(reshape(flat, full_mask.shape()), shape);
  });
}

void slice_assign_rule(const Recording& r) {
  const Shape value_shape = r.input(1).shape();
  record(r, [slices = r.param<std::vector<Slice>>(), value_shape](BackwardArgs& a) {
    if (a.needs(0)) {
      const DynTensor zero = zeros(Shape{}, a.grad.dtype(), a.grad.device());
      a.input_grads[0] = slice_assign(a.grad, slices, zero);
    }
    if (a.needs(1)) a.input_grads[1] = sum_to(slice(a.grad, slices), value_shape);
  });
}

}  // namespace
}  // namespace ember::autodiff

namespace ember {

const OpDef ops::gather{"gather", autodiff::gather_rule};
const OpDef ops::scatter{"scatter", autodiff::scatter_rule};
const OpDef ops::scatter_add{"scatter_add", autodiff::scatter_add_rule};
const OpDef ops::index_select{"index_select", autodiff::index_select_rule};
const OpDef ops::index_add{"index_add", autodiff::index_add_rule};
const OpDef ops::masked_fill{"masked_fill", autodiff::masked_fill_rule};
const OpDef ops::masked_select{"masked_select", autodiff::masked_select_rule};
const OpDef ops::slice_assign{"slice_assign", autodiff::slice_assign_rule};

}  // namespace ember
