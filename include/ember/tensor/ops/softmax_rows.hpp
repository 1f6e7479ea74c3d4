// cross_entropy's row building blocks over [N, C] logits, computed in f32 whatever the logits'
// float type: the backend's fused kernels (OpFamily::SoftmaxRows: one read of the logits forward,
// one read and one write backward, never a widened copy) where it has them, else the composites
// below. Values only: nothing is recorded (nn::cross_entropy records one node around them).
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

namespace detail {
/// The same values from tensor ops (unchecked): what the functions above run without the kernels.
DynTensor logsumexp_rows_composite(const DynTensor& x);
DynTensor cross_entropy_rows_grad_composite(const DynTensor& x, const DynTensor& lse,
                                            const DynTensor& target, const DynTensor& coef);
}  // namespace detail

}  // namespace ember
