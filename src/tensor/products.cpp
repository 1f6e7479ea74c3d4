// bmm, baddbmm, addmm and cross: shape checks in PyTorch's terms, then matmul and elementwise
// ops (matmul's node carries the gradient).
#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/linalg.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "ember/tensor/ops/shape_linalg.hpp"
#include "internal.hpp"

namespace ember {
namespace {

bool is_one(const Scalar& s) { return s.to_double() == 1.0; }
bool is_zero(const Scalar& s) { return s.to_double() == 0.0; }

// beta * input + alpha * product, input broadcast to the product's shape `out`.
DynTensor add_scaled(const DynTensor& input, const DynTensor& product, const Scalar& beta,
                     const Scalar& alpha, const char* op) {
  EMBER_CHECK(can_broadcast_to(input.shape(), product.shape()), "[", op, "] input of shape ",
              input.shape(), " does not broadcast to the product's shape ", product.shape());
  const DynTensor p = is_one(alpha) ? product : mul(product, alpha);
  // beta = 0 ignores the input entirely (NaN and inf included), as PyTorch does.
  if (is_zero(beta)) return p;
  return add(is_one(beta) ? input : mul(input, beta), p);
}

void check_bmm(const DynTensor& a, const DynTensor& b, const char* op) {
  detail::check_defined(a, op);
  detail::check_defined(b, op);
  detail::check_same_device(a, b, op);
  EMBER_CHECK(a.rank() == 3 && b.rank() == 3, "[", op, "] expects two 3-D tensors, got ", a.shape(),
              " and ", b.shape());
  EMBER_CHECK(a.size(0) == b.size(0), "[", op, "] batch sizes differ: ", a.shape(), " and ",
              b.shape());
  EMBER_CHECK(a.size(2) == b.size(1), "[", op, "] inner dimensions differ: ", a.shape(), " and ",
              b.shape());
}

}  // namespace

DynTensor bmm(const DynTensor& a, const DynTensor& b) {
  check_bmm(a, b, "bmm");
  return as_op("bmm", [&] { return matmul(a, b); });
}

DynTensor baddbmm(const DynTensor& input, const DynTensor& batch1, const DynTensor& batch2,
                  const Scalar& beta, const Scalar& alpha) {
  detail::check_defined(input, "baddbmm");
  check_bmm(batch1, batch2, "baddbmm");
  detail::check_same_device(input, batch1, "baddbmm");
  return as_op("baddbmm",
               [&] { return add_scaled(input, matmul(batch1, batch2), beta, alpha, "baddbmm"); });
}

DynTensor addmm(const DynTensor& input, const DynTensor& mat1, const DynTensor& mat2,
                const Scalar& beta, const Scalar& alpha) {
  detail::check_defined(input, "addmm");
  detail::check_defined(mat1, "addmm");
  detail::check_defined(mat2, "addmm");
  detail::check_same_device(mat1, mat2, "addmm");
  detail::check_same_device(input, mat1, "addmm");
  EMBER_CHECK(mat1.rank() == 2 && mat2.rank() == 2, "[addmm] expects 2-D mat1 and mat2, got ",
              mat1.shape(), " and ", mat2.shape());
  EMBER_CHECK(mat1.size(1) == mat2.size(0), "[addmm] inner dimensions differ: ", mat1.shape(),
              " and ", mat2.shape());
  return as_op("addmm",
               [&] { return add_scaled(input, matmul(mat1, mat2), beta, alpha, "addmm"); });
}

DynTensor cross(const DynTensor& a, const DynTensor& b, int64_t dim) {
  detail::check_defined(a, "cross");
  detail::check_defined(b, "cross");
  detail::check_same_device(a, b, "cross");
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), "cross");
  const int d = wrap_dim(dim, shape.rank(), "cross");
  // Each input must itself have 3 there (a size 1 does not broadcast to 3 here, as in PyTorch).
  auto size_at = [&](const DynTensor& t) {
    const int i = d - (shape.rank() - t.rank());
    return i >= 0 ? t.size(i) : 1;
  };
  EMBER_CHECK(size_at(a) == 3 && size_at(b) == 3, "[cross] inputs must have size 3 in dim ", dim,
              ", got shapes ", a.shape(), " and ", b.shape());
  return as_op("cross", [&] {
    const DynTensor x = expand(a, shape), y = expand(b, shape);
    auto c = [&](const DynTensor& t, int64_t i) { return select(t, d, i); };
    return stack({sub(mul(c(x, 1), c(y, 2)), mul(c(x, 2), c(y, 1))),
                  sub(mul(c(x, 2), c(y, 0)), mul(c(x, 0), c(y, 2))),
                  sub(mul(c(x, 0), c(y, 1)), mul(c(x, 1), c(y, 0)))},
                 d);
  });
}

namespace linalg {
DynTensor cross(const DynTensor& a, const DynTensor& b, int64_t dim) {
  return ember::cross(a, b, dim);
}
}  // namespace linalg

}  // namespace ember
