// nn::linear's fused kernels (OpFamily::Linear: on Cuda, cuBLASLt GEMMs with the bias in their
// epilogue) over x [M, K], w [N, K] and bias [N] of one float dtype. Values only: nn::linear
// records one node around them and runs its composite wherever fused_linear_supported() says no.
#pragma once

#include <array>

#include "ember/tensor/dyn_tensor.hpp"

namespace ember {

/// Whether x [..., K], w [N, K] and b ([N] or undefined) take the fused kernels: one device and
/// one dtype that its backend has OpFamily::Linear for (Cuda: f32, f16, bf16), no empty dim.
bool fused_linear_supported(const DynTensor& x, const DynTensor& w, const DynTensor& b);
/// x2d [M, K] w^T + b as [M, N], one GEMM with the bias in its epilogue (b may be undefined).
DynTensor fused_linear(const DynTensor& x2d, const DynTensor& w, const DynTensor& b);
/// Whether the fused kernels read w [N, K] as it is in column-major order: the transpose of a
/// row-major [K, N] (a Conv1D or tied weight passed as w.t()), with no transposing copy.
bool fused_linear_column_major(const DynTensor& w);
/// {dw [N, K] = g2d^T x2d, db [N] = g2d summed over its rows (undefined unless has_bias)} from
/// the gradient g2d [M, N] of fused_linear's result, in one GEMM; dw column-major when asked
/// (laid out as a column-major weight, so its gradient needs no transposing copy either).
std::array<DynTensor, 2> fused_linear_weight_grad(const DynTensor& g2d, const DynTensor& x2d,
                                                  bool has_bias, bool dw_column_major = false);

}  // namespace ember
