// Fused scaled-dot-product attention, the backend's kernels (OpFamily::Attention: on Cuda,
// cuDNN's flash-attention graphs) over q [B, H, L, E], k [B, H, S, E], v [B, H, S, Ev] of one
// 16-bit float type. Values only: nn::scaled_dot_product_attention records one node around them
// and runs its composite wherever fused_attention_supported() says no.
#pragma once

#include <array>

#include "ember/core/ops.hpp"
#include "ember/tensor/dyn_tensor.hpp"

namespace ember {

/// Whether q, k and v's backend runs the fused kernels on these dtypes, shapes and strides, with
/// the additive mask `bias` (undefined: none; else q's dtype, [B or 1, H or 1, L, S]).
bool fused_attention_supported(const DynTensor& q, const DynTensor& k, const DynTensor& v,
                               const DynTensor& bias = {});

struct FusedAttention {
  DynTensor out;   // [B, H, L, Ev], laid out as [B, L, H, Ev] (the heads' merge is a view)
  DynTensor lse;   // [B, H, L] f32: each query's log-sum-exp of its scaled, masked scores
  DynTensor bias;  // the additive mask the forward used (undefined: none), for the backward
};
FusedAttention fused_attention(const DynTensor& q, const DynTensor& k, const DynTensor& v,
                               const AttentionParams& p, const DynTensor& bias = {});
/// {dq, dk, dv} from the forward's inputs and results and the gradient of out.
std::array<DynTensor, 3> fused_attention_backward(const DynTensor& q, const DynTensor& k,
                                                  const DynTensor& v, const FusedAttention& fwd,
                                                  const DynTensor& grad_out,
                                                  const AttentionParams& p);

}  // namespace ember
