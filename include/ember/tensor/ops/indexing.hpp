// Indexing ops on the rank-erased tensor (PyTorch semantics). Index tensors are Int; negative
// indices count from the end where PyTorch allows it; out-of-range indices are errors.
#pragma once

#include <string_view>
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

// ---- scatter_reduce, take_along_dim, index_put, masked_scatter, searchsorted, bucketize ----
// (src/tensor/indexing_extra.cpp). PyTorch's semantics; where Ember pins down what PyTorch leaves
// open, the comment says so.

/// x with src folded in at index along dim (as scatter_add's addressing), `reduce` one of "sum",
/// "prod", "mean", "amax", "amin". include_self = false leaves x's value out of the reduction at
/// every position that receives an update (others keep x). "mean" divides by the number of
/// values reduced (x's own counted when include_self); on Int tensors it rounds down, as
/// PyTorch's. amax/amin propagate NaN. Differentiable on floats as PyTorch defines it (amax/amin:
/// the gradient is split evenly among the elements equal to the result; prod: exact with zeros
/// too). src must have x's dtype.
DynTensor scatter_reduce(const DynTensor& x, int64_t dim, const DynTensor& index,
                         const DynTensor& src, std::string_view reduce, bool include_self = true);
/// gather with x and indices broadcast against each other outside dim (same rank required).
DynTensor take_along_dim(const DynTensor& x, const DynTensor& indices, int64_t dim);
/// dim = None: x and indices flattened; a 1-D result.
DynTensor take_along_dim(const DynTensor& x, const DynTensor& indices);
/// x with x[indices] = values (or += with accumulate), PyTorch's advanced indexing: indices[j]
/// indexes dim j; an undefined DynTensor is a full slice (`:`); the Int index tensors broadcast
/// together, negative ones count from the end; a Bool index stands for its nonzero() coordinates.
/// The indexed dims' result goes where PyTorch puts it (in place when the indexed dims are
/// adjacent, else first) and `values` broadcasts to that shape. With accumulate, duplicates
/// add up; without it, PyTorch leaves duplicates unspecified and Ember's last write wins on
/// Cpu and Cuda (LibTorch: as ATen does).
DynTensor index_put(const DynTensor& x, const std::vector<DynTensor>& indices,
                    const DynTensor& values, bool accumulate = false);
/// x with its elements where mask is true replaced, in row-major order, by source's first
/// elements (x and mask broadcast together, as PyTorch's; source any shape, with at least as
/// many elements as true mask values: else a deferred error, raised at the next
/// synchronisation).
DynTensor masked_scatter(const DynTensor& x, const DynTensor& mask, const DynTensor& source);
/// For each value, the index where it would be inserted in the innermost dim of
/// `sorted_sequence` to keep it sorted: the first such index (side "left", right = false) or the
/// last ("right"). A 1-D sequence serves any shape of values; an N-D one matches values' leading
/// dims. `sorter` (Int, the sequence's shape) sorts an unsorted sequence as argsort gives it.
/// Result i64, or i32 with out_int32. Computed by one stable sort of the sequence and values
/// merged, O((n + m) log(n + m)) per row, on every backend.
DynTensor searchsorted(const DynTensor& sorted_sequence, const DynTensor& values,
                       bool out_int32 = false, bool right = false, std::string_view side = {},
                       const DynTensor& sorter = {});
DynTensor searchsorted(const DynTensor& sorted_sequence, const Scalar& value,
                       bool out_int32 = false, bool right = false, std::string_view side = {},
                       const DynTensor& sorter = {});
/// The bucket of each element of x among the sorted 1-D `boundaries`: searchsorted(boundaries,
/// x), right = false giving boundaries[i-1] < x <= boundaries[i].
DynTensor bucketize(const DynTensor& x, const DynTensor& boundaries, bool out_int32 = false,
                    bool right = false);
DynTensor bucketize(const Scalar& x, const DynTensor& boundaries, bool out_int32 = false,
                    bool right = false);

}  // namespace ember
