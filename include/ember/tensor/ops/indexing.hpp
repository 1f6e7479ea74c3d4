// Indexing ops on the rank-erased tensor (PyTorch semantics). Index tensors are Int; negative
// indices count from the end where PyTorch allows it; out-of-range indices are errors.
#pragma once

#include <vector>

#include "ember/tensor/dyn_tensor.hpp"

namespace ember {

DynTensor gather(const DynTensor& x, int64_t dim, const DynTensor& index);
DynTensor scatter(const DynTensor& x, int64_t dim, const DynTensor& index, const DynTensor& src);
DynTensor scatter(const DynTensor& x, int64_t dim, const DynTensor& index, const Scalar& value);
DynTensor scatter_add(const DynTensor& x, int64_t dim, const DynTensor& index,
                      const DynTensor& src);
DynTensor index_select(const DynTensor& x, int64_t dim, const DynTensor& index);
/// x with alpha * src[i] added at index[i] along dim.
DynTensor index_add(const DynTensor& x, int64_t dim, const DynTensor& index, const DynTensor& src,
                    const Scalar& alpha = 1);
DynTensor masked_fill(const DynTensor& x, const DynTensor& mask, const Scalar& value);
/// The elements where mask is true, as a 1-D tensor (mask broadcasts against x).
DynTensor masked_select(const DynTensor& x, const DynTensor& mask);
/// [count, rank] Int tensor of the coordinates of non-zero elements.
DynTensor nonzero(const DynTensor& x);
/// Int tensor [..., num_classes]; num_classes < 0 means max(x) + 1.
DynTensor one_hot(const DynTensor& x, int64_t num_classes = -1);

/// A range along one dim, Python-style: start, end (exclusive), step. Ends are clamped.
struct Slice {
  int64_t start = 0;
  int64_t end = INT64_MAX;
  int64_t step = 1;
};
/// x with the region selected by `slices` (one per leading dim) replaced by `value`
/// (broadcast to the region). Burn's slice_assign; returns a new tensor.
DynTensor slice_assign(const DynTensor& x, const std::vector<Slice>& slices,
                       const DynTensor& value);
/// The region itself (a view).
DynTensor slice(const DynTensor& x, const std::vector<Slice>& slices);

}  // namespace ember
