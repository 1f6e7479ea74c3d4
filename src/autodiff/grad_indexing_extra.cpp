// The gradient of scatter_reduce, PyTorch's scatter_reduce_backward written with public ops (so
// second derivatives compose), for gy, self = x, the updates src (restricted to index's shape)
// and the result y:
//   sum   self: gy                         src: gather(gy)
//   mean  self: gy / n                     src: gather(gy / n)   n = values reduced (>= 1)
//   prod  self: gy * y' / self'            src: gather(gy * y) / src, with zeros handled exactly
//         (self' = self with 0 -> 1, y' its product; a src that is the only 0 of its group gets
//         the product of the others)
//   amax, amin: gy split evenly among the self and src elements equal to the result
// With include_self = false, self gets nothing where an update landed.
#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/indexing.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "ember/tensor/ops/reduce.hpp"
#include "rules.hpp"

namespace ember::autodiff {
namespace {

// src's elements that the index reads (src may be larger than the index in any dim).
DynTensor narrow_to(const DynTensor& src, const Shape& shape) {
  DynTensor out = src;
  for (int d = 0; d < shape.rank(); ++d) {
    if (out.size(d) != shape[d]) out = slice(out, d, 0, shape[d]);
  }
  return out;
}

// `g` (of the index's shape) as a gradient of src's shape, zeros where src was never read.
DynTensor pad_to(const DynTensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  std::vector<int64_t> pads;
  for (int d = shape.rank() - 1; d >= 0; --d) {
    pads.push_back(0);
    pads.push_back(shape[d] - g.size(d));
  }
  return pad(g, pads);
}

const char* reduce_name(ScatterMode m) {
  switch (m) {
    case ScatterMode::Sum:
      return "sum";
    case ScatterMode::Prod:
      return "prod";
    case ScatterMode::Mean:
      return "mean";
    case ScatterMode::Amax:
      return "amax";
    case ScatterMode::Amin:
      return "amin";
  }
  return "sum";
}

struct SelfSrc {
  DynTensor self, src;
};

SelfSrc scatter_reduce_grads(const DynTensor& g, const DynTensor& self, int dim,
                             const DynTensor& index, const DynTensor& src, const DynTensor& y,
                             ScatterMode mode, bool include_self) {
  SelfSrc out;
  switch (mode) {
    case ScatterMode::Sum:
      out = {g, gather(g, dim, index)};
      break;
    case ScatterMode::Mean: {
      DynTensor n = scatter_add(include_self ? ones_like(g) : zeros_like(g), dim, index,
                                ones(index.shape(), g.dtype(), g.device()));
      n = where(eq(n, 0), 1, n);
      const DynTensor share = div(g, n);
      out = {share, gather(share, dim, index)};
      break;
    }
    case ScatterMode::Prod: {
      const char* prod = reduce_name(mode);
      const DynTensor masked_self = where(eq(self, 0), 1, self);
      const DynTensor self_result =
          scatter_reduce(masked_self, dim, index, src, prod, include_self);
      const DynTensor src_zero = eq(src, 0);
      const DynTensor zeros_in_group = gather(
          scatter_add(zeros_like(self), dim, index, cast(src_zero, self.dtype())), dim, index);
      const DynTensor single_zero = logical_and(src_zero, eq(zeros_in_group, 1));
      const DynTensor others =
          scatter_reduce(self, dim, index, where(single_zero, 1, src), prod, include_self);
      out.self = div(mul(g, self_result), masked_self);
      out.src = where(single_zero, gather(mul(g, others), dim, index),
                      div(gather(mul(g, y), dim, index), where(src_zero, 1, src)));
      break;
    }
    case ScatterMode::Amax:
    case ScatterMode::Amin: {
      const DynTensor value = gather(y, dim, index);
      const DynTensor self_hit = eq(self, y), src_hit = eq(src, value);
      // As PyTorch, x's element is counted among the ties even when include_self = false.
      const DynTensor count =
          scatter_add(cast(self_hit, g.dtype()), dim, index, cast(src_hit, g.dtype()));
      const DynTensor share = div(g, count);
      out = {where(self_hit, share, 0), where(src_hit, gather(share, dim, index), 0)};
      break;
    }
  }
  if (!include_self) out.self = scatter(out.self, dim, index, 0);
  return out;
}

void scatter_reduce_rule(const Recording& r) {
  const ScatterReduceParams& p = r.param<ScatterReduceParams>();
  record(r, [x = r.input(0), src = r.input(1), y = r.out.raw(), p](BackwardArgs& a) {
    DynTensor self = x, s, g = a.grad, index = p.index, out = a.output(y);
    const bool scalar = x.rank() == 0;  // computed as a 1-element vector, as the forward
    if (scalar) {
      index = reshape(index, Shape{-1});
      self = reshape(x, Shape{1});
      s = expand(reshape(src, Shape{1}), index.shape());
      g = reshape(g, Shape{1});
      out = reshape(out, Shape{1});
    } else {
      s = narrow_to(src, index.shape());
    }
    const SelfSrc gs = scatter_reduce_grads(g, self, p.dim, index, s, out, p.mode, p.include_self);
    if (a.needs(0)) a.input_grads[0] = scalar ? reshape(gs.self, Shape{}) : gs.self;
    if (a.needs(1)) {
      a.input_grads[1] = scalar ? sum_to(gs.src, src.shape()) : pad_to(gs.src, src.shape());
    }
  });
}

}  // namespace
}  // namespace ember::autodiff

namespace ember {

const OpDef ops::scatter_reduce{"scatter_reduce", autodiff::scatter_reduce_rule};

}  // namespace ember
