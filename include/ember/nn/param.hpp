// Parameters and buffers: the tensors a module owns. A Param is a trainable leaf with an id that
// survives updates (optimizers key their state by it); a Buffer is state that is saved and moved
// with the module but never trained (BatchNorm's running statistics).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <vector>

#include "ember/tensor/tensor.hpp"

namespace ember::nn {

/// Stable identity of a parameter: the same across set(), freeze(), device moves and copies of
/// the module; a deep_copy() gets new ones.
using ParamId = uint64_t;
ParamId next_param_id();

/// What the module machinery sees of Param<D> and Buffer<D>: a rank-erased tensor and flags.
class TensorSlot {
 public:
  enum class Kind : uint8_t { Param, Buffer };

  Kind kind() const { return kind_; }
  ParamId id() const { return id_; }
  /// The current value: a leaf that requires grad when this is a trainable Param.
  const DynTensor& dyn() const { return value_; }
  /// Replaces the value (same id); a trainable Param's new value becomes a fresh leaf.
  void set_dyn(const DynTensor& value);
  /// set_dyn for users (Param::set, Buffer::set): a value of another shape is refused at once,
  /// naming `op` and both shapes, rather than failing in a later forward.
  void set_checked(const DynTensor& value, const char* op);
  /// Writes `value` into the held tensor's storage where it fits (same shape, dtype and device;
  /// contiguous; not a trainable Param): the in-place update PyTorch makes to running statistics,
  /// which keeps the address a captured step (DeviceGraph) reads and writes. Otherwise set_dyn.
  void assign(const DynTensor& value);
  bool trainable() const { return trainable_; }
  /// Frozen parameters are detached: backward computes nothing for them.
  void set_trainable(bool on);
  /// A new id (deep copies).
  void renew_id() { id_ = next_param_id(); }

  // The held tensor's metadata and data, so that a parameter reads as a torch.nn.Parameter
  // does: p.to_vector<float>(), p.dtype(), std::cout << p.
  const Shape& shape() const { return value_.shape(); }
  int64_t size(int dim) const { return value_.size(dim); }
  int64_t numel() const { return value_.numel(); }
  int rank() const { return value_.rank(); }
  DType dtype() const { return value_.dtype(); }
  Device device() const { return value_.device(); }
  template <class T>
  T item() const {
    return value_.item<T>();
  }
  template <class T>
  std::vector<T> to_vector() const {
    return value_.to_vector<T>();
  }

 protected:
  TensorSlot(Kind kind, const DynTensor& value, bool trainable);
  TensorSlot() = default;

 private:
  DynTensor value_;
  ParamId id_ = 0;
  Kind kind_ = Kind::Param;
  bool trainable_ = false;
};

/// A trainable tensor of rank D (Float).
template <int D>
class Param : public TensorSlot {
 public:
  Param() = default;
  explicit Param(const Tensor<D>& value, bool trainable = true)
      : TensorSlot(Kind::Param, value.dyn(), trainable) {}

  /// The value, tracked when trainable: use it in forward().
  Tensor<D> value() const { return Tensor<D>(dyn()); }
  operator Tensor<D>() const { return value(); }
  void set(const Tensor<D>& value) { set_checked(value.dyn(), "Param::set"); }
  // The most used tensor members, so that a Param reads like its tensor in forward().
  Tensor<D> t() const requires(D == 2) { return value().t(); }
  typename Tensor<D>::Dims dims() const { return value().dims(); }
};

/// A tensor of rank D and kind K saved and moved with the module, never trained.
template <int D, class K = Float>
class Buffer : public TensorSlot {
 public:
  Buffer() = default;
  explicit Buffer(const Tensor<D, K>& value) : TensorSlot(Kind::Buffer, value.dyn(), false) {}

  Tensor<D, K> value() const { return Tensor<D, K>(dyn()); }
  operator Tensor<D, K>() const { return value(); }
  void set(const Tensor<D, K>& value) { set_checked(value.dyn(), "Buffer::set"); }
  typename Tensor<D, K>::Dims dims() const { return value().dims(); }
};

/// Prints the held tensor, as printing the tensor would (ember/tensor/print.hpp).
std::ostream& operator<<(std::ostream& os, const TensorSlot& p);

/// Training or evaluation mode of a module that behaves differently in each (Dropout,
/// BatchNorm). train()/eval() on any enclosing module set every flag below it.
struct ModeFlag {
  bool training = true;
};

}  // namespace ember::nn
