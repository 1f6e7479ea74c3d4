// nn::linear's fused kernels (include/ember/tensor/ops/linear_fused.hpp): operands brought to
// the layout the backend takes, outputs allocated. Nothing here records.
#include "ember/tensor/ops/linear_fused.hpp"

#include "ember/autodiff/autodiff.hpp"
#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "internal.hpp"

namespace ember {
namespace {

// A matrix as the backend reads it: unit column stride and rows at least a row apart (any row
// stride for one row), as a GEMM's leading dimension needs; a packed copy otherwise (a
// transposed or broadcast view, a gradient expanded from a sum).
RawTensor matrix(const DynTensor& t) {
  const DynTensor d = detach(t);
  const bool direct = d.strides()[1] == 1 && (d.size(0) == 1 || d.strides()[0] >= d.size(1));
  return direct ? d.raw() : contiguous(d).raw();
}

// The weight as the backend reads it: row-major or column-major as it is, else a packed copy.
RawTensor weight_matrix(const DynTensor& w) {
  return fused_linear_column_major(w) ? detach(w).raw() : matrix(w);
}

}  // namespace

bool fused_linear_column_major(const DynTensor& w) {
  if (!w.defined() || w.rank() != 2) return false;
  // Row-major wins where both hold (one row or one column).
  const bool row_major = w.strides()[1] == 1 && (w.size(0) == 1 || w.strides()[0] >= w.size(1));
  return !row_major && w.strides()[0] == 1 && (w.size(1) == 1 || w.strides()[1] >= w.size(0));
}

bool fused_linear_supported(const DynTensor& x, const DynTensor& w, const DynTensor& b) {
  if (!x.defined() || !w.defined() || x.rank() < 1 || w.rank() != 2) return false;
  if (x.size(-1) != w.size(1) || x.numel() == 0 || w.numel() == 0) return false;
  if (w.device() != x.device() || w.dtype() != x.dtype()) return false;
  if (b.defined() && (b.rank() != 1 || b.size(0) != w.size(0) || b.device() != x.device() ||
                      b.dtype() != x.dtype())) {
    return false;
  }
  return detail::backend_of(x).supports(OpFamily::Linear, x.dtype());
}

DynTensor fused_linear(const DynTensor& x2d, const DynTensor& w, const DynTensor& b) {
  constexpr const char* op = "linear";
  detail::check_defined(x2d, op);
  detail::check_defined(w, op, "weight");
  EMBER_CHECK(x2d.rank() == 2 && fused_linear_supported(x2d, w, b), "[", op,
              "] the fused kernel does not take input ", x2d.dtype(), " ", x2d.shape(), ", weight ",
              w.dtype(), " ", w.shape(), " and ", b.defined() ? "a bias" : "no bias", " on ",
              x2d.device());
  const DynTensor out =
      detail::make_empty(Shape{x2d.size(0), w.size(0)}, x2d.dtype(), x2d.device(), op);
  const RawTensor bias = b.defined() ? contiguous(detach(b)).raw() : RawTensor();
  detail::backend_of(out).linear(matrix(x2d), weight_matrix(w), bias, out.raw());
  return out;
}

std::array<DynTensor, 2> fused_linear_weight_grad(const DynTensor& g2d, const DynTensor& x2d,
                                                  bool has_bias, bool dw_column_major) {
  constexpr const char* op = "linear_backward";
  detail::check_defined(g2d, op, "grad");
  detail::check_defined(x2d, op);
  EMBER_CHECK(g2d.rank() == 2 && x2d.rank() == 2 && g2d.size(0) == x2d.size(0) && g2d.numel() > 0 &&
                  x2d.numel() > 0 && g2d.device() == x2d.device() &&
                  detail::backend_of(x2d).supports(OpFamily::Linear, x2d.dtype()),
              "[", op, "] the fused kernel does not take grad ", g2d.shape(), " and input ",
              x2d.dtype(), " ", x2d.shape(), " on ", x2d.device());
  // The gradient has the result's dtype, which is x's; a cast keeps the contract if it has not.
  const DynTensor g = cast(detach(g2d), x2d.dtype());
  const int64_t n = g.size(1), k = x2d.size(1);
  std::array<DynTensor, 2> d{
      dw_column_major
          ? transpose(detail::make_empty(Shape{k, n}, x2d.dtype(), x2d.device(), op), 0, 1)
          : detail::make_empty(Shape{n, k}, x2d.dtype(), x2d.device(), op)};
  if (has_bias) d[1] = detail::make_empty(Shape{n}, x2d.dtype(), x2d.device(), op);
  detail::backend_of(x2d).linear_backward_weight(matrix(g), matrix(x2d), d[0].raw(),
                                                 has_bias ? d[1].raw() : RawTensor());
  return d;
}

}  // namespace ember
