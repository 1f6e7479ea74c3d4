// Matrix products and the softmax family on the rank-erased tensor.
#pragma once

#include "ember/tensor/dyn_tensor.hpp"

namespace ember {

/// torch.matmul: 1-D and N-D operands, batch dims broadcast.
DynTensor matmul(const DynTensor& a, const DynTensor& b);
DynTensor dot(const DynTensor& a, const DynTensor& b);
DynTensor outer(const DynTensor& a, const DynTensor& b);
DynTensor softmax(const DynTensor& x, int64_t dim);
DynTensor log_softmax(const DynTensor& x, int64_t dim);

}  // namespace ember
