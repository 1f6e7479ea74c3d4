// cross_entropy's row building blocks over [N, C] logits, computed in f32 whatever the logits'
// float type: the backend's fused kernels (OpFamily::SoftmaxRows: one read of the logits forward,
// one read and one write backward, never a widened copy) where it has them, else the composites
// below. Values only: nothing is recorded (nn::cross_entropy records one node around them; softmax
// and log_softmax record theirs in src/tensor/linalg.cpp).
#pragma once

#include "ember/tensor/dyn_tensor.hpp"

namespace ember {

/// Whether x's backend has the fused row kernels for x's dtype.
bool fused_softmax_rows(const DynTensor& x);
/// [N] f32: log(sum_k exp(x[i, k])) of each row of x [N, C].
DynTensor logsumexp_rows(const DynTensor& x);
/// [N, C] in x's dtype: coef[i] * (exp(x[i, k] - lse[i]) - [k == target[i]]), with lse and coef
/// [N] f32 and target [N] i64 holding classes in [0, C).
DynTensor cross_entropy_rows_grad(const DynTensor& x, const DynTensor& lse, const DynTensor& target,
                                  const DynTensor& coef);

/// Whether softmax / log_softmax over `dim` of x run on the fused row kernels: the last dim of a
/// float tensor with elements, of a dtype the backend's SoftmaxRows kernels take, and enough rows
/// (or short enough ones) to fill the device.
bool fused_softmax_dim(const DynTensor& x, int64_t dim);
/// softmax (log false) or log_softmax over x's last dim, in `out` (x's dtype or f32): one read of
/// x for the row's log-sum-exp, one more to write y. Values only.
DynTensor softmax_last(const DynTensor& x, bool log, DType out);
/// Their input gradient from the output y and its gradient gy, in `dtype` (y's, or the 16-bit
/// input's type when y is f32). Values only.
DynTensor softmax_last_backward(const DynTensor& y, const DynTensor& gy, bool log, DType dtype);

namespace detail {
/// The same values from tensor ops (unchecked): what the functions above run without the kernels.
DynTensor logsumexp_rows_composite(const DynTensor& x);
DynTensor cross_entropy_rows_grad_composite(const DynTensor& x, const DynTensor& lse,
                                            const DynTensor& target, const DynTensor& coef);
}  // namespace detail

}  // namespace ember
