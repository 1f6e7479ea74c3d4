#include "layout.hpp"

#include <algorithm>
#include <numeric>

#include "ember/tensor/ops/movement.hpp"
#include "internal.hpp"

namespace ember::detail {

MemoryOrder MemoryOrder::of(const RawTensor& t) {
  MemoryOrder m;
  const int rank = t.rank();
  if (rank < 2 || t.is_contiguous()) return m;
  std::vector<int> order(static_cast<size_t>(rank));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return t.strides[a] > t.strides[b]; });
  if (!m.apply_order(order, t).is_contiguous()) return m;
  m.order_ = std::move(order);
  return m;
}

MemoryOrder MemoryOrder::shared(std::initializer_list<const RawTensor*> operands,
                                const Shape& shape) {
  MemoryOrder found;
  bool any = false;
  for (const RawTensor* t : operands) {
    if (t->shape != shape) continue;
    if (t->is_contiguous()) return {};
    MemoryOrder m = of(*t);
    if (m.identity()) continue;  // a broadcast or gapped view: it does not vote
    if (any && m.order_ != found.order_) return {};
    found = std::move(m);
    any = true;
  }
  return found;
}

RawTensor MemoryOrder::apply_order(const std::vector<int>& order, const RawTensor& t) {
  Shape shape = t.shape;
  Strides strides = t.strides;
  for (size_t k = 0; k < order.size(); ++k) {
    shape[static_cast<int>(k)] = t.shape[order[k]];
    strides[static_cast<int>(k)] = t.strides[order[k]];
  }
  return t.view(shape, strides, t.offset);
}

RawTensor MemoryOrder::apply(const RawTensor& t) const {
  return identity() ? t : apply_order(order_, t);
}

DynTensor MemoryOrder::empty(const Shape& shape, DType dtype, Device device, const char* op) const {
  DynTensor t = make_empty(shape, dtype, device, op);
  if (identity()) return t;
  Shape in_order = shape;
  for (size_t k = 0; k < order_.size(); ++k) in_order[static_cast<int>(k)] = shape[order_[k]];
  const Strides dense = contiguous_strides(in_order);
  Strides strides = shape;
  for (size_t k = 0; k < order_.size(); ++k) strides[order_[k]] = dense[static_cast<int>(k)];
  return make_view(t, shape, strides, 0);
}

DynTensor make_empty_channels_last(const Shape& shape, DType dtype, Device device, const char* op) {
  const DynTensor t = make_empty(shape, dtype, device, op);
  return make_view(t, shape, channels_last_strides(shape), 0);
}

DynTensor contiguous_or_channels_last(const DynTensor& x) {
  if (x.is_contiguous() || x.raw().is_channels_last()) return x;
  return contiguous(DynTensor(x.raw()));
}

DynTensor channels_last_copy(const DynTensor& x) {
  if (x.raw().is_channels_last()) return x;
  DynTensor t = make_empty_channels_last(x.shape(), x.dtype(), x.device(), "channels_last");
  backend_of(t).copy(x.raw(), t.raw());
  return t;
}

}  // namespace ember::detail
