// Gradient rules of reductions, arg-reductions, scans, sort/topk and the fused logsumexp.
#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
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

}  // namespace

void record_reduce(ReduceOp op, const DynTensor& x, uint32_t mask, DynTensor& out) {
  const Shape shape = x.shape();
  switch (op) {
    case ReduceOp::Sum:
      record("sum", {&x}, out,
             [shape](BackwardArgs& a) { a.input_grads[0] = expand(a.grad, shape); });
      return;
    case ReduceOp::Mean: {
      const double n = static_cast<double>(shape.numel()) / static_cast<double>(out.numel());
      record("mean", {&x}, out,
             [shape, n](BackwardArgs& a) { a.input_grads[0] = expand(div(a.grad, n), shape); });
      return;
    }
    case ReduceOp::Prod:
      record("prod", {&x}, out, [x, mask](BackwardArgs& a) {
        a.input_grads[0] = mul(expand(a.grad, x.shape()), product_of_others(x, mask));
      });
      return;
    case ReduceOp::Amax:
    case ReduceOp::Amin: {
      // Ties share the gradient evenly (PyTorch's amax/amin).
      const RawTensor y = out.raw();
      record(op_name(op).data(), {&x}, out, [x, y, mask](BackwardArgs& a) {
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

void record_take_along(const char* name, const DynTensor& x, int dim, const DynTensor& indices,
                       DynTensor& values) {
  const Shape shape = x.shape();
  const DType dtype = x.dtype();
  record(name, {&x}, values, [shape, dtype, dim, indices](BackwardArgs& a) {
    const DynTensor z = zeros(shape, dtype, a.grad.device());
    a.input_grads[0] = scatter_add(z, dim, indices, a.grad);
  });
}

void record_scan(ScanOp op, const DynTensor& x, int dim, DynTensor& out) {
  if (op == ScanOp::CumSum) {
    record("cumsum", {&x}, out,
           [dim](BackwardArgs& a) { a.input_grads[0] = reverse_cumsum(a.grad, dim); });
    return;
  }
  const RawTensor y = out.raw();
  record("cumprod", {&x}, out, [x, y, dim](BackwardArgs& a) {
    const bool exact = a.options.create_graph && x.rank() > 0 && any(eq(x, 0)).item<bool>();
    a.input_grads[0] =
        exact ? cumprod_grad_quadratic(x, a.grad, dim) : cumprod_grad(x, a.output(y), a.grad, dim);
  });
}

void record_logsumexp(const DynTensor& x, DynTensor& out) {
  const RawTensor y = out.raw();
  record("logsumexp", {&x}, out,
         [x, y](BackwardArgs& a) { a.input_grads[0] = mul(a.grad, exp(sub(x, a.output(y)))); });
}

}  // namespace ember::autodiff
