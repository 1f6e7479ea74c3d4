// linalg.svd and linalg.svdvals: the batch flattened to one dim for the backend's kernel, the
// three outputs recorded as three nodes (src/autodiff/grad_svd.cpp).
#include <algorithm>

#include "ember/tensor/ops/movement.hpp"
#include "ember/tensor/ops/shape_linalg.hpp"
#include "internal.hpp"
#include "record.hpp"

namespace ember::linalg {
namespace {

Shape with_last(const DynTensor& a, std::initializer_list<int64_t> last) {
  Shape s(std::span<const int64_t>(a.shape().data(), static_cast<size_t>(a.rank() - 2)));
  for (int64_t d : last) s.push_back(d);
  return s;
}

// The kernel call; vectors = false leaves U and Vh undefined.
SVD decompose(const DynTensor& a, bool vectors, bool full, const char* op) {
  detail::check_defined(a, op);
  EMBER_CHECK(a.rank() >= 2, "[", op, "] expects a tensor with at least 2 dims, got shape ",
              a.shape());
  EMBER_CHECK(a.dtype() == DType::f32 || a.dtype() == DType::f64, "[", op,
              "] supports float32 and float64 tensors, got ", a.dtype());
  detail::check_supported(a, OpFamily::Svd, a.dtype(), op);
  const int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n);
  const int64_t ku = full ? m : k, kv = full ? n : k;
  GradModeGuard unrecorded(false);
  const int64_t batch = with_last(a, {}).numel();
  const DynTensor a3 = contiguous(reshape(a, Shape{batch, m, n}));
  SVD r;
  r.S = detail::make_empty(Shape{batch, k}, a.dtype(), a.device(), op);
  if (vectors) {
    r.U = detail::make_empty(Shape{batch, m, ku}, a.dtype(), a.device(), op);
    r.Vh = detail::make_empty(Shape{batch, kv, n}, a.dtype(), a.device(), op);
  }
  if (batch > 0) {
    as_op(op, [&] {
      detail::backend_of(a).svd(a3.raw(), vectors ? r.U.raw() : RawTensor{}, r.S.raw(),
                                vectors ? r.Vh.raw() : RawTensor{});
    });
  }
  r.S = reshape(r.S, with_last(a, {k}));
  if (vectors) {
    r.U = reshape(r.U, with_last(a, {m, ku}));
    r.Vh = reshape(r.Vh, with_last(a, {kv, n}));
  }
  return r;
}

}  // namespace

SVD svd(const DynTensor& a, bool full_matrices) {
  SVD r = decompose(a, true, full_matrices, "linalg.svd");
  const SvdSaved saved{r.U.raw(), r.S.raw(), r.Vh.raw(), full_matrices};
  detail::record(ops::svd_u, {&a}, r.U, saved);
  detail::record(ops::svd_s, {&a}, r.S, saved);
  detail::record(ops::svd_vh, {&a}, r.Vh, saved);
  return r;
}

DynTensor svdvals(const DynTensor& a) {
  detail::check_defined(a, "linalg.svdvals");
  // The gradient needs the vectors: compute them only when it will be asked for.
  const bool tracked = a.requires_grad() && grad_enabled();
  SVD r = decompose(a, tracked, false, "linalg.svdvals");
  if (tracked) detail::record(ops::svd_s, {&a}, r.S, SvdSaved{r.U.raw(), r.S.raw(), r.Vh.raw()});
  return r.S;
}

}  // namespace ember::linalg
