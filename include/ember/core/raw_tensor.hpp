// RawTensor: what a backend sees of a tensor — shared storage, shape, strides, offset and dtype.
// No autodiff, no rank in the type; the front end (tensor/) builds everything else on top.
#pragma once

#include <memory>

#include "ember/core/dtype.hpp"
#include "ember/core/shape.hpp"
#include "ember/core/storage.hpp"

namespace ember {

struct RawTensor {
  std::shared_ptr<Storage> storage;
  Shape shape;
  Strides strides;     // in elements; may be 0 (broadcast) and, inside kernels, negative (flip)
  int64_t offset = 0;  // in elements from storage->data()
  DType dtype = DType::f32;

  bool defined() const { return storage != nullptr; }
  Device device() const { return storage->device(); }
  int rank() const { return shape.rank(); }
  int64_t numel() const { return shape.numel(); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
  bool is_contiguous() const {
    if (shape.rank() == 0 || (shape.rank() == 1 && (strides[0] == 1 || shape[0] <= 1))) return true;
    return is_contiguous_nd();
  }

  void* data() const {
    return static_cast<char*>(storage->data()) + offset * static_cast<int64_t>(dtype_size(dtype));
  }
  template <class T>
  T* data_as() const {
    return static_cast<T*>(data());
  }

  bool is_contiguous_nd() const;
  /// Dense with channels_last_strides (size-1 dims ignored): [N, C, *] in NHWC memory order.
  /// A tensor may be both this and contiguous (one channel, or a 1x1 plane).
  bool is_channels_last() const;

  /// A view of the same storage with another shape/strides/offset.
  RawTensor view(const Shape& new_shape, const Strides& new_strides, int64_t new_offset) const {
    return RawTensor{storage, new_shape, new_strides, new_offset, dtype};
  }
};

}  // namespace ember
