// DynTensor: the rank-erased tensor. Graph executors (ONNX) use it directly; Tensor<D, K> wraps
// one and adds a compile-time rank and kind. Copies share storage, as in PyTorch and Burn.
#pragma once

#include <memory>
#include <vector>

#include "ember/core/raw_tensor.hpp"
#include "ember/core/scalar.hpp"
#include "ember/tensor/tensor_data.hpp"

namespace ember {

namespace autodiff {
class Node;
}

class DynTensor {
 public:
  DynTensor() = default;
  explicit DynTensor(RawTensor raw) : raw_(std::move(raw)) {}
  /// A tensor recorded by autodiff: `node` made it (see autodiff/node.hpp).
  DynTensor(RawTensor raw, std::shared_ptr<autodiff::Node> node)
      : raw_(std::move(raw)), node_(std::move(node)) {}

  bool defined() const { return raw_.defined(); }
  const RawTensor& raw() const { return raw_; }
  const Shape& shape() const { return raw_.shape; }
  const Strides& strides() const { return raw_.strides; }
  int rank() const { return raw_.shape.rank(); }
  int64_t numel() const { return raw_.shape.numel(); }
  /// Size of one dim; negative dims count from the end.
  int64_t size(int dim) const { return raw_.shape.at(dim); }
  DType dtype() const { return raw_.dtype; }
  KindId kind() const { return kind_of(raw_.dtype); }
  Device device() const { return raw_.device(); }
  bool is_contiguous() const { return raw_.is_contiguous(); }
  /// True when no other handle or view shares this tensor's storage (its buffer may be reused).
  bool is_unique() const { return raw_.storage.use_count() == 1; }

  /// True when autodiff tracks this tensor: a leaf made by require_grad(), or the result of an
  /// op on tracked tensors while gradients are enabled.
  bool requires_grad() const { return node_ != nullptr; }
  /// The autodiff node that made this tensor (null when untracked).
  const std::shared_ptr<autodiff::Node>& node() const { return node_; }

  /// The single element of a one-element tensor, converted to T.
  template <class T>
  T item() const;
  /// All elements in row-major order, converted to T.
  template <class T>
  std::vector<T> to_vector() const {
    return to_data().to_vector<T>();
  }
  /// A host copy (synchronises with the device).
  TensorData to_data() const;

 private:
  RawTensor raw_;
  std::shared_ptr<autodiff::Node> node_;
};

extern template float DynTensor::item<float>() const;
extern template double DynTensor::item<double>() const;
extern template int64_t DynTensor::item<int64_t>() const;
extern template int32_t DynTensor::item<int32_t>() const;
extern template int8_t DynTensor::item<int8_t>() const;
extern template uint8_t DynTensor::item<uint8_t>() const;
extern template bool DynTensor::item<bool>() const;
extern template Half DynTensor::item<Half>() const;
extern template BFloat16 DynTensor::item<BFloat16>() const;

}  // namespace ember
