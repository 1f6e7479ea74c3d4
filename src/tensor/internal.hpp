// Shared helpers of the tensor layer's .cpp files (not installed).
#pragma once

#include "ember/core/backend.hpp"
#include "ember/core/error.hpp"
#include "ember/tensor/dyn_tensor.hpp"

namespace ember::detail {

/// The backend that owns `device`; a clear error when it was not built.
Backend& backend_for(Device device);
inline Backend& backend_of(const DynTensor& t) { return backend_for(t.device()); }

/// A fresh contiguous tensor for the op `op`: the shape is checked (checked_nbytes) and an
/// allocation failure is an ember::Error naming `op`, the shape and the bytes.
DynTensor make_empty(const Shape& shape, DType dtype, Device device, const char* op);
/// A view of `x`'s storage with new geometry.
inline DynTensor make_view(const DynTensor& x, const Shape& shape, const Strides& strides,
                           int64_t offset) {
  return DynTensor(x.raw().view(shape, strides, offset));
}

/// `x` viewed as `shape`, which it broadcasts to (already checked): stride 0 on the broadcast
/// dims. Untracked, without expand()'s validation: the inner loop of every broadcasting op.
inline DynTensor broadcast_view(const DynTensor& x, const Shape& shape) {
  const int lead = shape.rank() - x.rank();
  Strides st = Shape::filled(shape.rank(), 0);
  for (int i = lead; i < shape.rank(); ++i) {
    if (x.size(i - lead) == shape[i]) st[i] = x.strides()[i - lead];
  }
  return make_view(x, shape, st, x.raw().offset);
}

/// Fails unless `t` is defined; `op` and `what` name it in the message.
void check_defined(const DynTensor& t, const char* op, const char* what = "input");
void check_same_device(const DynTensor& a, const DynTensor& b, const char* op);
/// Fails with "[op] no kernel on <backend> for <dtype>" unless the backend supports `family` on
/// `dtype`. Every backend call of the front end is preceded by one (a virtual call).
inline void check_supported(const Backend& be, OpFamily family, DType dtype, const char* op) {
  if (!be.supports(family, dtype)) [[unlikely]]
    be.no_kernel(op, dtype);
}
void check_supported(const DynTensor& t, OpFamily family, DType dtype, const char* op);
/// A copy (or cast) reads one dtype and writes another: the Copy kernel must cover both.
inline void check_copy(const Backend& be, DType src, DType dst, const char* op) {
  check_supported(be, OpFamily::Copy, dst, op);
  if (src != dst) check_supported(be, OpFamily::Copy, src, op);
}

/// The one place where the host waits for `device` (docs/ARCHITECTURE.md, "Asynchrony"): counts
/// it, synchronises the backend and raises the first range error deferred on the device.
void host_sync(Device device);

/// Bit mask of the dims to reduce (all when `dims` is empty); fails on duplicates.
uint32_t dims_mask(const std::vector<int64_t>& dims, int rank, const char* op);

}  // namespace ember::detail
