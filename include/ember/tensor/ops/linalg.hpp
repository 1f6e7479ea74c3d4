// Matrix products and the softmax family on the rank-erased tensor.
#pragma once

#include "ember/tensor/dyn_tensor.hpp"

namespace ember {

/// torch.matmul: 1-D and N-D operands, batch dims broadcast.
DynTensor matmul(const DynTensor& a, const DynTensor& b);
/// int8 times int8, every product summed in int32 (quantized layers: nn::Int8Linear): a [M, K] or
/// [B, M, K], b [K, N] or [B, K, N] (a 2-D operand serves every batch entry), k up to 131071.
/// Like torch._int_mm; one kernel where the backend has OpFamily::MatmulInt8, else int32 matmul.
DynTensor matmul_int8(const DynTensor& a, const DynTensor& b);
DynTensor dot(const DynTensor& a, const DynTensor& b);
DynTensor outer(const DynTensor& a, const DynTensor& b);
DynTensor softmax(const DynTensor& x, int64_t dim);
DynTensor log_softmax(const DynTensor& x, int64_t dim);

}  // namespace ember
