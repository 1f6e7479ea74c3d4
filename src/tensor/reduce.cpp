// Reduction front end: dims and dtypes are settled here, kernels only accumulate. var, std,
// norm and logsumexp are composites of the primitive reductions.
#include "ember/tensor/ops/reduce.hpp"

#include <cmath>
#include <limits>

#include "ember/tensor/autocast.hpp"
#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "internal.hpp"
#include "record.hpp"

namespace ember {
namespace {

Shape keepdim_shape(const Shape& s, uint32_t mask) {
  Shape out = s;
  for (int d = 0; d < s.rank(); ++d) {
    if (mask & (1u << d)) out[d] = 1;
  }
  return out;
}

Shape dropped_shape(const Shape& s, uint32_t mask) {
  Shape out;
  for (int d = 0; d < s.rank(); ++d) {
    if (!(mask & (1u << d))) out.push_back(s[d]);
  }
  return out;
}

DType reduce_dtype(ReduceOp op, DType in) {
  switch (op) {
    case ReduceOp::All:
    case ReduceOp::Any:
      return DType::boolean;
    case ReduceOp::Sum:
    case ReduceOp::Prod:
      return is_floating(in) ? in : DType::i64;
    default:
      return in;
  }
}

int64_t reduced_count(const Shape& s, uint32_t mask) {
  int64_t n = 1;
  for (int d = 0; d < s.rank(); ++d) {
    if (mask & (1u << d)) n *= s[d];
  }
  return n;
}

// Composites of several reductions run in f32 for the 16-bit floats, whose range cannot hold
// intermediate sums (PyTorch accumulates them in f32 too); the result is rounded back once.
DynTensor widen(const DynTensor& x) {
  return x.dtype() == DType::f16 || x.dtype() == DType::bf16 ? cast(x, DType::f32) : x;
}

}  // namespace

DynTensor reduce(ReduceOp op, const DynTensor& x, const Dims& dims, bool keepdim) {
  const char* name = op_name(op).data();
  detail::check_defined(x, name);
  const uint32_t mask = detail::dims_mask(dims, x.rank(), name);
  if ((op == ReduceOp::Sum || op == ReduceOp::Prod) && detail::autocast_widens(x)) {
    return reduce(op, cast(x, DType::f32), dims, keepdim);  // autocast's float32 list
  }
  if (op == ReduceOp::Mean) {
    EMBER_CHECK(is_floating(x.dtype()), "[mean] needs a floating tensor, got ", x.dtype(),
                " (cast it first)");
  }
  if (op == ReduceOp::Amax || op == ReduceOp::Amin) {
    EMBER_CHECK(reduced_count(x.shape(), mask) > 0, "[", name,
                "] cannot reduce over a zero-size dimension: input shape ", x.shape());
  }
  const DType out_dtype = reduce_dtype(op, x.dtype());
  detail::check_supported(x, OpFamily::Reduce, x.dtype(), name);
  DynTensor out = detail::make_empty(keepdim_shape(x.shape(), mask), out_dtype, x.device(), name);
  detail::backend_of(out).reduce(op, x.raw(), mask, out.raw());
  detail::record(op_def(op), {&x}, out, mask);
  return keepdim ? out : reshape(out, dropped_shape(x.shape(), mask));
}

DynTensor sum(const DynTensor& x, const Dims& dims, bool keepdim) {
  return reduce(ReduceOp::Sum, x, dims, keepdim);
}
DynTensor mean(const DynTensor& x, const Dims& dims, bool keepdim) {
  return reduce(ReduceOp::Mean, x, dims, keepdim);
}
DynTensor prod(const DynTensor& x, const Dims& dims, bool keepdim) {
  return reduce(ReduceOp::Prod, x, dims, keepdim);
}
DynTensor amax(const DynTensor& x, const Dims& dims, bool keepdim) {
  return reduce(ReduceOp::Amax, x, dims, keepdim);
}
DynTensor amin(const DynTensor& x, const Dims& dims, bool keepdim) {
  return reduce(ReduceOp::Amin, x, dims, keepdim);
}
DynTensor all(const DynTensor& x, const Dims& dims, bool keepdim) {
  return reduce(ReduceOp::All, x, dims, keepdim);
}
DynTensor any(const DynTensor& x, const Dims& dims, bool keepdim) {
  return reduce(ReduceOp::Any, x, dims, keepdim);
}
DynTensor max(const DynTensor& x) { return amax(x); }
DynTensor min(const DynTensor& x) { return amin(x); }

DynTensor var(const DynTensor& x, const Dims& dims, int64_t correction, bool keepdim) {
  detail::check_defined(x, "var");
  EMBER_CHECK(is_floating(x.dtype()), "[var] needs a floating tensor, got ", x.dtype());
  const uint32_t mask = detail::dims_mask(dims, x.rank(), "var");
  const int64_t n = reduced_count(x.shape(), mask);
  // Two passes (mean, then squared deviations): stable where E[x^2] - E[x]^2 is not.
  const DynTensor xw = widen(x);
  const DynTensor centered = sub(xw, mean(xw, dims, true));
  const DynTensor ss = sum(square(centered), dims, keepdim);
  const double denom = static_cast<double>(std::max<int64_t>(n - correction, 0));
  return cast(div(ss, denom), x.dtype());  // 0 / 0 = NaN when n <= correction, as in PyTorch
}

namespace {
// sqrt (p = 2) or the p-th root of a non-negative reduction, recorded as one node whose gradient
// is 0 where the result is 0: PyTorch's norm and std backward, where sqrt's would be inf * 0.
DynTensor root_of(const DynTensor& s, double p) {
  UnaryParams params;
  params.a = p;
  return detail::recorded(ops::root, {&s}, params,
                          [&] { return p == 2.0 ? sqrt(s) : pow(s, 1.0 / p); });
}
}  // namespace

DynTensor std(const DynTensor& x, const Dims& dims, int64_t correction, bool keepdim) {
  return as_op("std", [&] {
    return cast(root_of(var(widen(x), dims, correction, keepdim), 2.0), x.dtype());
  });
}

DynTensor norm(const DynTensor& x, double p, const Dims& dims, bool keepdim) {
  detail::check_defined(x, "norm");
  EMBER_CHECK(is_floating(x.dtype()), "[norm] needs a floating tensor, got ", x.dtype());
  detail::dims_mask(dims, x.rank(), "norm");  // here, not in the inner sum or amax
  if (widen(x).dtype() != x.dtype()) return cast(norm(widen(x), p, dims, keepdim), x.dtype());
  const DynTensor a = abs(x);
  if (std::isinf(p)) return p > 0 ? amax(a, dims, keepdim) : amin(a, dims, keepdim);
  if (p == 0.0) return sum(cast(ne(x, 0), x.dtype()), dims, keepdim);
  if (p == 1.0) return sum(a, dims, keepdim);
  if (p == 2.0) return root_of(sum(square(x), dims, keepdim), 2.0);
  return root_of(sum(pow(a, p), dims, keepdim), p);
}

DynTensor logsumexp(const DynTensor& x, const Dims& dims, bool keepdim) {
  detail::check_defined(x, "logsumexp");
  detail::dims_mask(dims, x.rank(), "logsumexp");  // here, not in the inner amax
  if (detail::autocast_widens(x)) return logsumexp(cast(x, DType::f32), dims, keepdim);
  if (widen(x).dtype() != x.dtype()) return cast(logsumexp(widen(x), dims, keepdim), x.dtype());
  if (is_floating(x.dtype()) && !keepdim) {
    // Recorded with the reduced dims kept, so its rule broadcasts against x directly.
    return reshape(logsumexp(x, dims, true),
                   dropped_shape(x.shape(), detail::dims_mask(dims, x.rank(), "logsumexp")));
  }
  // One fused node: the gradient is softmax(x) times the output's gradient.
  return detail::recorded(ops::logsumexp, {&x}, NoParams{}, [&] {
    const DynTensor xf = is_floating(x.dtype()) ? x : cast(x, default_dtype(KindId::Float));
    if (xf.numel() == 0) return log(sum(exp(xf), dims, keepdim));
    // Shift by the max so exp never overflows; infinite maxima are replaced by 0.
    DynTensor m = amax(xf, dims, true);
    m = where(isinf(m), zeros_like(m), m);
    const DynTensor s = log(sum(exp(sub(xf, m)), dims, true));
    const DynTensor r = add(s, m);
    return keepdim ? r
                   : reshape(r, dropped_shape(x.shape(),
                                              detail::dims_mask(dims, x.rank(), "logsumexp")));
  });
}

namespace {

ValuesIndices arg_reduce_impl(ArgReduceOp op, const DynTensor& x, int64_t dim, bool keepdim) {
  const char* name = op_name(op).data();
  detail::check_defined(x, name);
  const int d = wrap_dim(dim, x.rank(), name);
  const DynTensor xr = x.rank() == 0 ? reshape(x, Shape{1}) : x;
  EMBER_CHECK(xr.size(d) > 0, "[", name, "] cannot reduce over a zero-size dimension: input shape ",
              x.shape());
  detail::check_supported(x, OpFamily::ArgReduce, x.dtype(), name);
  Shape kshape = xr.shape();
  kshape[d] = 1;
  DynTensor values = detail::make_empty(kshape, x.dtype(), x.device(), name);
  DynTensor indices = detail::make_empty(kshape, DType::i64, x.device(), name);
  detail::backend_of(x).arg_reduce(op, xr.raw(), d, values.raw(), indices.raw());
  detail::record(op_def(op), {&xr}, values, IndexParams{d, indices});
  if (x.rank() == 0) return {reshape(values, Shape{}), reshape(indices, Shape{})};
  if (keepdim) return {values, indices};
  return {squeeze(values, d), squeeze(indices, d)};
}

}  // namespace

ValuesIndices max(const DynTensor& x, int64_t dim, bool keepdim) {
  return arg_reduce_impl(ArgReduceOp::ArgMax, x, dim, keepdim);
}
ValuesIndices min(const DynTensor& x, int64_t dim, bool keepdim) {
  return arg_reduce_impl(ArgReduceOp::ArgMin, x, dim, keepdim);
}
DynTensor argmax(const DynTensor& x, int64_t dim, bool keepdim) {
  return max(x, dim, keepdim).indices;
}
DynTensor argmin(const DynTensor& x, int64_t dim, bool keepdim) {
  return min(x, dim, keepdim).indices;
}
DynTensor argmax(const DynTensor& x) { return argmax(flatten(x), 0); }
DynTensor argmin(const DynTensor& x) { return argmin(flatten(x), 0); }

namespace {
DynTensor scan_impl(ScanOp op, const DynTensor& x, int64_t dim) {
  const char* name = op_name(op).data();
  detail::check_defined(x, name);
  const int d = wrap_dim(dim, x.rank(), name);
  if (detail::autocast_widens(x)) return scan_impl(op, cast(x, DType::f32), dim);
  const DType out_dtype = is_floating(x.dtype()) ? x.dtype() : DType::i64;
  detail::check_supported(x, OpFamily::Scan, x.dtype(), name);
  DynTensor out = detail::make_empty(x.shape(), out_dtype, x.device(), name);
  if (x.numel() == 0) return out;
  const DynTensor xr = x.rank() == 0 ? reshape(x, Shape{1}) : x;
  const DynTensor outr = x.rank() == 0 ? reshape(out, Shape{1}) : out;
  detail::backend_of(x).scan(op, xr.raw(), d, outr.raw());
  detail::record(op_def(op), {&x}, out, d);
  return out;
}
}  // namespace

DynTensor cumsum(const DynTensor& x, int64_t dim) { return scan_impl(ScanOp::CumSum, x, dim); }
DynTensor cumprod(const DynTensor& x, int64_t dim) { return scan_impl(ScanOp::CumProd, x, dim); }

// Every backend's sort is stable (equal elements keep their input order, ascending and
// descending), so `stable` changes nothing: PyTorch's stable=true result either way.
ValuesIndices sort(const DynTensor& x, int64_t dim, bool descending, bool /*stable*/) {
  detail::check_defined(x, "sort");
  const int d = wrap_dim(dim, x.rank(), "sort");
  detail::check_supported(x, OpFamily::Sort, x.dtype(), "sort");
  DynTensor values = detail::make_empty(x.shape(), x.dtype(), x.device(), "sort");
  DynTensor indices = detail::make_empty(x.shape(), DType::i64, x.device(), "sort");
  if (x.numel() == 0) return {values, indices};
  if (x.rank() == 0) {
    detail::backend_of(x).fill(indices.raw(), 0);
    return {clone(x), indices};  // clone records the gradient when x is tracked
  }
  as_op("sort", [&] {  // the kernel sorts each row in a host buffer
    detail::backend_of(x).sort(x.raw(), d, descending, values.raw(), indices.raw());
  });
  detail::record(ops::sort, {&x}, values, IndexParams{d, indices});
  return {values, indices};
}

DynTensor argsort(const DynTensor& x, int64_t dim, bool descending, bool stable) {
  return sort(x, dim, descending, stable).indices;
}

// sorted = false lets PyTorch return any order; Ember always returns the sorted one.
ValuesIndices topk(const DynTensor& x, int64_t k, int64_t dim, bool largest, bool /*sorted*/) {
  detail::check_defined(x, "topk");
  const int d = wrap_dim(dim, x.rank(), "topk");
  const int64_t n = x.rank() == 0 ? 1 : x.size(d);
  EMBER_CHECK(k >= 0 && k <= n, "[topk] k = ", k, " is out of range for dimension ", dim,
              " of size ", n, " (input shape ", x.shape(), ")");
  if (x.rank() == 0) return sort(x, 0, largest);
  detail::check_supported(x, OpFamily::TopK, x.dtype(), "topk");
  Shape shape = x.shape();
  shape[d] = k;
  DynTensor values = detail::make_empty(shape, x.dtype(), x.device(), "topk");
  DynTensor indices = detail::make_empty(shape, DType::i64, x.device(), "topk");
  if (values.numel() == 0) return {values, indices};
  as_op("topk",
        [&] { detail::backend_of(x).topk(x.raw(), k, d, largest, values.raw(), indices.raw()); });
  detail::record(ops::topk, {&x}, values, IndexParams{d, indices});
  return {values, indices};
}

}  // namespace ember
