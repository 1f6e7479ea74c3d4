// Gradient rules of reductions, arg-reductions, scans, sort/topk and the fused logsumexp.
#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/indexing.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "ember/tensor/ops/reduce.hpp"
#include "rules.hpp"

namespace ember::autodiff {
namespace {

Dims mask_dims(uint32_t mask, int rank) {
  Dims dims;
  for (int d = 0; d < rank; ++d) {
    if (mask & (1u << d)) dims.push_back(d);
  }
  return dims;
}

DynTensor reverse_cumsum(const DynTensor& t, int dim) {
  return flip(cumsum(flip(t, {dim}), dim), {dim});
}

// The product of every other element of each reduced group (exact with zeros): exclusive
// cumulative products from both ends, over the reduced dims moved to the back and flattened.
DynTensor product_of_others(const DynTensor& x, uint32_t mask) {
  std::vector<int64_t> perm, inverse(static_cast<size_t>(x.rank()));
  Shape kept_shape;
  for (int d = 0; d < x.rank(); ++d) {
    if (!(mask & (1u << d))) {
      perm.push_back(d);
      kept_shape.push_back(x.size(d));
    }
  }
  for (int d = 0; d < x.rank(); ++d) {
    if (mask & (1u << d)) perm.push_back(d);
  }
  for (size_t i = 0; i < perm.size(); ++i)
    inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  const DynTensor moved = permute(x, perm);
  Shape flat = kept_shape;
  flat.push_back(-1);
  const DynTensor xf = reshape(moved, flat);
  const int last = xf.rank() - 1;
  const int64_t n = xf.size(last);
  Shape one_shape = xf.shape();
  one_shape[last] = 1;
  const DynTensor one = ones(one_shape, x.dtype(), x.device());
  const DynTensor before = cat({one, slice(cumprod(xf, last), last, 0, n - 1)}, last);
  const DynTensor after =
      flip(cat({one, slice(cumprod(flip(xf, {last}), last), last, 0, n - 1)}, last), {last});
  return permute(reshape(mul(before, after), moved.shape()), inverse);
}

// d cumprod / dx, exact where x has zeros: before a row's first zero the usual formula holds;
// at the first zero the products skip it; after it the gradient is 0 (PyTorch's result).
DynTensor cumprod_grad(const DynTensor& x, const DynTensor& y, const DynTensor& gy, int dim) {
  const DynTensor zero = eq(x, 0);
  const DynTensor zeros_so_far = cumsum(zero, dim);
  const DynTensor before_zero = eq(zeros_so_far, 0);
  const DynTensor first_zero = logical_and(zero, eq(zeros_so_far, 1));
  const DynTensor plain = div(reverse_cumsum(mul(gy, y), dim), where(before_zero, x, 1));
  const DynTensor y_skip = cumprod(where(first_zero, 1, x), dim);
  const DynTensor at_zero = reverse_cumsum(mul(gy, y_skip), dim);
  return where(before_zero, plain, where(first_zero, at_zero, 0));
}

// The same as sum over m >= k of gy_m * prod(x_i, i <= m, i != k): O(n^2), but every term
// keeps its dependence on x, which create_graph needs where x has zeros (above, the terms
// after a zero are cut to a constant 0, whose derivative with respect to the zero is not 0).
DynTensor cumprod_grad_quadratic(const DynTensor& x, const DynTensor& gy, int dim) {
  const int64_t n = x.size(dim);
  const DynTensor xt = transpose(x, dim, -1);
  Shape square = xt.shape();
  square.insert(square.rank() - 1, n);  // [..., k, i]
  const DynTensor k = reshape(arange(0, n, 1, DType::i64, x.device()), Shape{n, 1});
  const DynTensor i = reshape(arange(0, n, 1, DType::i64, x.device()), Shape{1, n});
  // Row k: the cumulative product of x with x_k replaced by 1.
  const DynTensor others = cumprod(where(eq(k, i), 1, expand(unsqueeze(xt, -2), square)), -1);
  const DynTensor g = unsqueeze(transpose(gy, dim, -1), -2);  // [..., 1, m]
  return transpose(sum(where(ge(i, k), mul(others, g), 0), {-1}), dim, -1);
}

void reduce_rule(const Recording& r) {
  const auto op = static_cast<ReduceOp>(r.op.code);
  const DynTensor& x = r.input(0);
  const uint32_t mask = r.param<uint32_t>();
  const Shape shape = x.shape();
  switch (op) {
    case ReduceOp::Sum:
      record(r, [shape](BackwardArgs& a) { a.input_grads[0] = expand(a.grad, shape); });
      return;
    case ReduceOp::Mean: {
      const double n = static_cast<double>(shape.numel()) / static_cast<double>(r.out.numel());
      record(r, [shape, n](BackwardArgs& a) { a.input_grads[0] = expand(div(a.grad, n), shape); });
      return;
    }
    case ReduceOp::Prod:
      record(r, [x, mask](BackwardArgs& a) {
        a.input_grads[0] = mul(expand(a.grad, x.shape()), product_of_others(x, mask));
      });
      return;
    case ReduceOp::Amax:
    case ReduceOp::Amin: {
      // Ties share the gradient evenly (PyTorch's amax/amin).
      const RawTensor y = r.out.raw();
      record(r, [x, y, mask](BackwardArgs& a) {
        const DynTensor hit = eq(x, a.output(y));
        const DynTensor count = sum(cast(hit, x.dtype()), mask_dims(mask, x.rank()), true);
        a.input_grads[0] = where(hit, div(a.grad, count), 0);
      });
      return;
    }
    case ReduceOp::All:
    case ReduceOp::Any:
      return;  // Bool results
  }
}

// max/min along a dim, sort and topk: the values came from x at the indices along dim, so the
// gradient goes back to those indices.
void take_along_rule(const Recording& r) {
  const Shape shape = r.input(0).shape();
  const DType dtype = r.input(0).dtype();
  const IndexParams& p = r.param<IndexParams>();
  record(r, [shape, dtype, dim = p.dim, indices = p.index](BackwardArgs& a) {
    const DynTensor z = zeros(shape, dtype, a.grad.device());
    a.input_grads[0] = scatter_add(z, dim, indices, a.grad);
  });
}

void scan_rule(const Recording& r) {
  const int dim = r.param<int>();
  if (static_cast<ScanOp>(r.op.code) == ScanOp::CumSum) {
    record(r, [dim](BackwardArgs& a) { a.input_grads[0] = reverse_cumsum(a.grad, dim); });
    return;
  }
  const DynTensor x = r.input(0);
  const RawTensor y = r.out.raw();
  record(r, [x, y, dim](BackwardArgs& a) {
    const bool exact = a.options.create_graph && x.rank() > 0 && any(eq(x, 0)).item<bool>();
    a.input_grads[0] =
        exact ? cumprod_grad_quadratic(x, a.grad, dim) : cumprod_grad(x, a.output(y), a.grad, dim);
  });
}

// `out` keeps the reduced dims.
void logsumexp_rule(const Recording& r) {
  const DynTensor x = r.input(0);
  const RawTensor y = r.out.raw();
  record(r, [x, y](BackwardArgs& a) { a.input_grads[0] = mul(a.grad, exp(sub(x, a.output(y)))); });
}

// y = s^(1/p): dy/ds = y / (p s), taken as 0 where y is 0 (the norm of a zero vector, the std
// of a constant), as PyTorch's norm and std rules do.
void root_rule(const Recording& r) {
  const DynTensor s = r.input(0);
  const RawTensor y = r.out.raw();
  const double p = r.param<UnaryParams>().a;
  record(r, [s, y, p](BackwardArgs& a) {
    const DynTensor out = a.output(y);
    a.input_grads[0] = where(eq(out, 0), 0, div(mul(a.grad, out), mul(s, p)));
  });
}

// One descriptor per registry row; all and any have Bool results, which are never tracked.
#define EMBER_REDUCE_DEF(Name, name, ...) \
  {#name, reduce_rule, static_cast<uint8_t>(ReduceOp::Name)},
#define EMBER_ARG_REDUCE_DEF(Name, name, ...) {#name, take_along_rule},
#define EMBER_SCAN_DEF(Name, name, ...) {#name, scan_rule, static_cast<uint8_t>(ScanOp::Name)},
constexpr OpDef kReduceDefs[] = {EMBER_REDUCE_OPS(EMBER_REDUCE_DEF)};
constexpr OpDef kArgReduceDefs[] = {EMBER_ARG_REDUCE_OPS(EMBER_ARG_REDUCE_DEF)};
constexpr OpDef kScanDefs[] = {EMBER_SCAN_OPS(EMBER_SCAN_DEF)};
#undef EMBER_REDUCE_DEF
#undef EMBER_ARG_REDUCE_DEF
#undef EMBER_SCAN_DEF

}  // namespace
}  // namespace ember::autodiff

namespace ember {

const OpDef& op_def(ReduceOp op) { return autodiff::kReduceDefs[static_cast<int>(op)]; }
const OpDef& op_def(ArgReduceOp op) { return autodiff::kArgReduceDefs[static_cast<int>(op)]; }
const OpDef& op_def(ScanOp op) { return autodiff::kScanDefs[static_cast<int>(op)]; }

const OpDef ops::logsumexp{"logsumexp", autodiff::logsumexp_rule};
const OpDef ops::sort{"sort", autodiff::take_along_rule};
const OpDef ops::topk{"topk", autodiff::take_along_rule};
const OpDef ops::root{"root", autodiff::root_rule};

}  // namespace ember
