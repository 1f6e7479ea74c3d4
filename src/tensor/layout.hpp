// Memory layouts the tensor layer keeps (docs/ARCHITECTURE.md, "Memory formats"): elementwise
// ops give their output the dense layout of their operand, as PyTorch's preserve_format does, so
// a channels-last activation stays channels-last from one convolution to the next.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "ember/tensor/dyn_tensor.hpp"

namespace ember::detail {

/// The order of a dense, non-contiguous tensor's dims, outermost first: permuted by it the
/// tensor is contiguous. Identity (empty) for contiguous tensors, tensors with gaps, overlaps or
/// broadcast dims, and ranks below 2. An op keeps a layout by allocating its output in it and
/// handing the kernel every operand permuted into this order, where the output is contiguous, as
/// the backend interface wants it.
class MemoryOrder {
 public:
  static MemoryOrder of(const RawTensor& t);
  /// The order shared by every dense operand whose shape is `shape` (broadcast or gapped views
  /// do not count); identity when one of them is contiguous, two disagree, or none is dense.
  /// A mixed case stays contiguous, as before layouts were kept: a gradient summed from a
  /// transposed and a contiguous piece is what an optimizer reads contiguous.
  static MemoryOrder shared(std::initializer_list<const RawTensor*> operands, const Shape& shape);

  bool identity() const { return order_.empty(); }
  /// A fresh tensor of `shape` laid out in this order.
  DynTensor empty(const Shape& shape, DType dtype, Device device, const char* op) const;
  /// `t`'s dims permuted into this order (no copy).
  RawTensor apply(const RawTensor& t) const;

 private:
  static RawTensor apply_order(const std::vector<int>& order, const RawTensor& t);
  std::vector<int> order_;
};

/// A fresh channels-last tensor (channels_last_strides).
DynTensor make_empty_channels_last(const Shape& shape, DType dtype, Device device, const char* op);
/// `x` when it is channels-last or contiguous, else a contiguous copy (untracked).
DynTensor contiguous_or_channels_last(const DynTensor& x);
/// `x` copied into channels-last strides unless it already is (untracked).
DynTensor channels_last_copy(const DynTensor& x);
/// Channels-last and not also contiguous: the layouts a kernel must tell apart.
inline bool only_channels_last(const RawTensor& t) {
  return t.is_channels_last() && !t.is_contiguous();
}

}  // namespace ember::detail
