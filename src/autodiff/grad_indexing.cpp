// Gradient rules of the indexing ops: each is the adjoint of its forward (gather <-> scatter_add,
// index_select <-> index_add, a masked or sliced write <-> zeroing the written positions).
// Index tensors and masks are constants: they are captured, never differentiated.
#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
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

}  // namespace

void record_gather(const DynTensor& x, int dim, const DynTensor& index, DynTensor& out) {
  const Shape shape = x.shape();
  record("gather", {&x}, out, [shape, dim, index](BackwardArgs& a) {
    a.input_grads[0] = gather_grad(a.grad, shape, dim, index);
  });
}

void record_scatter(const DynTensor& x, int dim, const DynTensor& index, const DynTensor& src,
                    DynTensor& out) {
  const Shape src_shape = src.shape();
  record("scatter", {&x, &src}, out, [dim, index, src_shape](BackwardArgs& a) {
    // Scattered positions were overwritten: x gets nothing there, src what landed there.
    if (a.needs(0)) a.input_grads[0] = scatter(a.grad, dim, index, 0);
    if (a.needs(1)) a.input_grads[1] = pad_to(gather(a.grad, dim, index), src_shape);
  });
}

void record_scatter_add(const DynTensor& x, int dim, const DynTensor& index, const DynTensor& src,
                        DynTensor& out) {
  const Shape src_shape = src.shape();
  record("scatter_add", {&x, &src}, out, [dim, index, src_shape](BackwardArgs& a) {
    a.input_grads[0] = a.grad;
    if (a.needs(1)) a.input_grads[1] = pad_to(gather(a.grad, dim, index), src_shape);
  });
}

void record_index_select(const DynTensor& x, int dim, const DynTensor& index, DynTensor& out) {
  const Shape shape = x.shape();
  record("index_select", {&x}, out, [shape, dim, index](BackwardArgs& a) {
    a.input_grads[0] = index_add(zeros(shape, a.grad.dtype(), a.grad.device()), dim, index, a.grad);
  });
}

void record_index_add(const DynTensor& x, int dim, const DynTensor& index, const DynTensor& src,
                      double alpha, DynTensor& out) {
  record("index_add", {&x, &src}, out, [dim, index, alpha](BackwardArgs& a) {
    a.input_grads[0] = a.grad;
    if (a.needs(1)) {
      const DynTensor g = index_select(a.grad, dim, index);
      a.input_grads[1] = alpha == 1.0 ? g : mul(g, alpha);
    }
  });
}

void record_masked_fill(const DynTensor& x, const DynTensor& mask, DynTensor& out) {
  const Shape shape = x.shape();
  record("masked_fill", {&x}, out, [shape, mask](BackwardArgs& a) {
    a.input_grads[0] = sum_to(where(mask, 0, a.grad), shape);
  });
}

void record_masked_select(const DynTensor& x, const DynTensor& mask, DynTensor& out) {
  // The mask broadcast to x (a view, no copy); its true positions are found again in backward
  // rather than keeping an index of every selected element.
  const Shape shape = x.shape();
  const Shape full_shape = broadcast_shapes(shape, mask.shape(), "masked_select");
  const DynTensor full_mask = expand(mask, full_shape);
  record("masked_select", {&x}, out, [shape, full_mask](BackwardArgs& a) {
    const int64_t n = full_mask.numel();
    const DynTensor idx = nonzero(reshape(full_mask, Shape{n}));  // [count, 1]
    const DynTensor zero = zeros(Shape{n}, a.grad.dtype(), a.grad.device());
    const DynTensor flat = index_add(zero, 0, reshape(idx, Shape{idx.size(0)}), a.grad);
    a.input_grads[0] = sum_to(reshape(flat, full_mask.shape()), shape);
  });
}

void record_slice_assign(const DynTensor& x, const std::vector<Slice>& slices,
                         const DynTensor& value, DynTensor& out) {
  const Shape value_shape = value.shape();
  record("slice_assign", {&x, &value}, out, [slices, value_shape](BackwardArgs& a) {
    if (a.needs(0)) {
      const DynTensor zero = zeros(Shape{}, a.grad.dtype(), a.grad.device());
      a.input_grads[0] = slice_assign(a.grad, slices, zero);
    }
    if (a.needs(1)) a.input_grads[1] = sum_to(slice(a.grad, slices), value_shape);
  });
}

}  // namespace ember::autodiff
