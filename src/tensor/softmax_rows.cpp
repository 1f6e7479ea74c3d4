// cross_entropy's row building blocks (include/ember/tensor/ops/softmax_rows.hpp).
#include "ember/tensor/ops/softmax_rows.hpp"

#include <cmath>

#include "ember/autodiff/autodiff.hpp"
#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/indexing.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "ember/tensor/ops/reduce.hpp"
#include "internal.hpp"

namespace ember {

namespace {
void check_rows(const DynTensor& x, const char* op) {
  detail::check_defined(x, op);
  EMBER_CHECK(x.rank() == 2 && is_floating(x.dtype()), "[", op, "] needs float [N, C] logits, got ",
              x.dtype(), " ", x.shape());
}
}  // namespace

bool fused_softmax_rows(const DynTensor& x) {
  return x.defined() && detail::backend_of(x).supports(OpFamily::SoftmaxRows, x.dtype());
}

DynTensor logsumexp_rows(const DynTensor& x_in) {
  check_rows(x_in, "logsumexp_rows");
  if (!fused_softmax_rows(x_in)) return detail::logsumexp_rows_composite(x_in);
  const DynTensor x = contiguous(detach(x_in));
  if (x.size(1) == 0) return full(Shape{x.size(0)}, -INFINITY, DType::f32, x.device());  // log(0)
  DynTensor lse = detail::make_empty(Shape{x.size(0)}, DType::f32, x.device(), "logsumexp_rows");
  detail::backend_of(x).logsumexp_rows(x.raw(), lse.raw());
  return lse;
}

DynTensor cross_entropy_rows_grad(const DynTensor& x_in, const DynTensor& lse,
                                  const DynTensor& target, const DynTensor& coef) {
  check_rows(x_in, "cross_entropy_backward");
  const int64_t n = x_in.size(0);
  EMBER_CHECK(
      lse.dtype() == DType::f32 && coef.dtype() == DType::f32 && target.dtype() == DType::i64 &&
          lse.shape() == Shape{n} && coef.shape() == Shape{n} && target.shape() == Shape{n},
      "[cross_entropy_backward] lse and coef must be f32 [", n, "] and target i64 [", n, "]");
  if (!fused_softmax_rows(x_in))
    return detail::cross_entropy_rows_grad_composite(x_in, lse, target, coef);
  const DynTensor x = contiguous(detach(x_in));
  DynTensor dx = detail::make_empty(x.shape(), x.dtype(), x.device(), "cross_entropy_backward");
  if (dx.numel() == 0) return dx;
  detail::backend_of(x).cross_entropy_backward(
      x.raw(), contiguous(lse).raw(), contiguous(target).raw(), contiguous(coef).raw(), dx.raw());
  return dx;
}

bool fused_softmax_dim(const DynTensor& x, int64_t dim) {
  if (!x.defined() || x.rank() == 0 || x.numel() == 0 || !fused_softmax_rows(x)) return false;
  if (dim != x.rank() - 1 && dim != -1) return false;
  // The kernels give a row one block: a few very long rows would leave most of the device idle,
  // where the composite's reductions use all of it.
  const int64_t cols = x.size(-1), rows = x.numel() / cols;
  return rows >= 32 || cols <= 16384;
}

namespace {
// x's rows over its last dim, as contiguous [N, C].
DynTensor rows_of(const DynTensor& x) {
  return reshape(contiguous(detach(x)), Shape{x.numel() / x.size(-1), x.size(-1)});
}
}  // namespace

DynTensor softmax_last(const DynTensor& x, bool log, DType out) {
  const char* op = log ? "log_softmax" : "softmax";
  EMBER_CHECK(fused_softmax_dim(x, -1) && (out == x.dtype() || out == DType::f32), "[", op,
              "] the fused kernels do not take ", x.dtype(), " ", x.shape(), " on ", x.device(),
              " into ", out);
  const DynTensor rows = rows_of(x);
  const DynTensor lse = logsumexp_rows(rows);
  DynTensor y = detail::make_empty(rows.shape(), out, x.device(), op);
  detail::backend_of(x).softmax_rows(rows.raw(), lse.raw(), log, y.raw());
  return reshape(y, x.shape());
}

DynTensor softmax_last_backward(const DynTensor& y, const DynTensor& gy, bool log, DType dtype) {
  const char* op = log ? "log_softmax_backward" : "softmax_backward";
  EMBER_CHECK(fused_softmax_dim(y, -1) && gy.shape() == y.shape() &&
                  (dtype == y.dtype() || y.dtype() == DType::f32),
              "[", op, "] the fused kernels do not take y ", y.dtype(), " ", y.shape(), ", gy ",
              gy.dtype(), " ", gy.shape(), " into ", dtype);
  const DynTensor yr = rows_of(y), gr = rows_of(cast(gy, y.dtype()));
  DynTensor gx = detail::make_empty(yr.shape(), dtype, y.device(), op);
  detail::backend_of(y).softmax_rows_backward(yr.raw(), gr.raw(), log, gx.raw());
  return reshape(gx, y.shape());
}

namespace detail {

DynTensor logsumexp_rows_composite(const DynTensor& x) {
  return logsumexp(cast(detach(x), DType::f32), {1}, false);
}

DynTensor cross_entropy_rows_grad_composite(const DynTensor& x, const DynTensor& lse,
                                            const DynTensor& target, const DynTensor& coef) {
  const DynTensor c = unsqueeze(coef, 1);
  const DynTensor p = exp(sub(cast(detach(x), DType::f32), unsqueeze(lse, 1)));
  return cast(scatter_add(mul(p, c), 1, unsqueeze(target, 1), neg(c)), x.dtype());
}

}  // namespace detail
}  // namespace ember
