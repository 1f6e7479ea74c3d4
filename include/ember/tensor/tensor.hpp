// Tensor<D, K>: the typed front end. Rank D is fixed at compile time and kind K is Float (default),
// Int or Bool; the element type (DType) and the device are run-time values. Every method is a thin
// inline forward to a DynTensor function compiled once in the library.
#pragma once

#include <array>
#include <type_traits>
#include <vector>

#include "ember/autodiff/autodiff.hpp"
#include "ember/tensor/autocast.hpp"
#include "ember/tensor/dyn_tensor.hpp"
#include "ember/tensor/ops/conv.hpp"
#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/indexing.hpp"
#include "ember/tensor/ops/linalg.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "ember/tensor/ops/reduce.hpp"

namespace ember {

/// Tag for reductions that keep the reduced dims with size 1: x.sum(1, keepdim).
struct KeepDim {};
inline constexpr KeepDim keepdim{};

template <int D, class K = Float>
class Tensor;

namespace detail {
/// Fails unless `t` has rank `rank` and kind `kind`; names the op-less conversion.
void check_typed(const DynTensor& t, int rank, KindId kind);

template <class K, OpKinds k>
constexpr bool kind_accepts() {
  constexpr KindId id = kind_id<K>();
  switch (k) {
    case OpKinds::F:
      return id == KindId::Float;
    case OpKinds::N:
      return id != KindId::Bool;
    case OpKinds::A:
      return true;
    case OpKinds::I:
      return id != KindId::Float;
  }
  return false;
}
/// Sum and prod of Bool count in Int, as in PyTorch.
template <class K>
using SumKind = std::conditional_t<std::is_same_v<K, Bool>, Int, K>;

constexpr int drop1(int d) { return d > 0 ? d - 1 : 0; }

inline Shape to_shape(std::span<const int64_t> dims) { return Shape(dims); }
}  // namespace detail

/// Values and indices of max(dim), min(dim), sort, topk.
template <int D, class K>
struct TypedValuesIndices {
  Tensor<D, K> values;
  Tensor<D, Int> indices;
};

template <int D, class K>
class Tensor {
  static_assert(D >= 0 && D <= kMaxRank, "tensor rank must be 0..kMaxRank");

 public:
  using Kind = K;
  static constexpr int kRank = D;
  using Dims = std::array<int64_t, static_cast<size_t>(D)>;

  Tensor() = default;
  /// Wraps a rank-erased tensor; fails unless its rank is D and its kind is K.
  explicit Tensor(DynTensor t) : t_(std::move(t)) { detail::check_typed(t_, D, kind_id<K>()); }

  const DynTensor& dyn() const& { return t_; }
  DynTensor dyn() && { return std::move(t_); }

  // Creation. `dtype` defaults to the kind's default (f32, i64, bool).
  static Tensor empty(const Dims& shape, Device dev = default_device(),
                      DType dtype = default_of_kind()) {
    return Tensor(ember::empty(Shape(shape), dtype, dev));
  }
  static Tensor zeros(const Dims& shape, Device dev = default_device(),
                      DType dtype = default_of_kind()) {
    return Tensor(ember::zeros(Shape(shape), dtype, dev));
  }
  static Tensor ones(const Dims& shape, Device dev = default_device(),
                     DType dtype = default_of_kind()) {
    return Tensor(ember::ones(Shape(shape), dtype, dev));
  }
  static Tensor full(const Dims& shape, const Scalar& value, Device dev = default_device(),
                     DType dtype = default_of_kind()) {
    return Tensor(ember::full(Shape(shape), value, dtype, dev));
  }
  static Tensor rand(const Dims& shape, Device dev = default_device(), Generator* gen = nullptr,
                     DType dtype = default_of_kind()) requires std::is_same_v<K, Float> {
    return Tensor(ember::rand(Shape(shape), dtype, dev, gen));
  }
  static Tensor randn(const Dims& shape, Device dev = default_device(), Generator* gen = nullptr,
                      DType dtype = default_of_kind()) requires std::is_same_v<K, Float> {
    return Tensor(ember::randn(Shape(shape), dtype, dev, gen));
  }
  static Tensor randint(int64_t low, int64_t high, const Dims& shape, Device dev = default_device(),
                        Generator* gen = nullptr,
                        DType dtype = default_of_kind()) requires(!std::is_same_v<K, Bool>) {
    return Tensor(ember::randint(low, high, Shape(shape), dtype, dev, gen));
  }
  static Tensor bernoulli(const Dims& shape, double p, Device dev = default_device(),
                          Generator* gen = nullptr, DType dtype = default_of_kind()) {
    return Tensor(ember::bernoulli(Shape(shape), p, dtype, dev, gen));
  }
  static Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1,
                       Device dev = default_device(),
                       DType dtype = default_of_kind()) requires(D == 1) {
    return Tensor(ember::arange(start, end, step, dtype, dev));
  }
  static Tensor arange(const Scalar& end, Device dev = default_device(),
                       DType dtype = default_of_kind()) requires(D == 1) {
    return Tensor(ember::arange(0, end, 1, dtype, dev));
  }
  static Tensor linspace(double start, double end, int64_t steps, Device dev = default_device(),
                         DType dtype = default_of_kind()) requires(D == 1 &&
                                                                   std::is_same_v<K, Float>) {
    return Tensor(ember::linspace(start, end, steps, dtype, dev));
  }
  static Tensor eye(int64_t n, int64_t m = -1, Device dev = default_device(),
                    DType dtype = default_of_kind()) requires(D == 2) {
    return Tensor(ember::eye(n, m, dtype, dev));
  }
  /// From host values of type T; the tensor takes T's dtype when it is of kind K, else K's default.
  template <class T>
  static Tensor from_vector(const std::vector<T>& values, const Dims& shape,
                            Device dev = default_device()) {
    return Tensor(typed_from(TensorData::from(values, Shape(shape)), dev));
  }
  template <class T>
  static Tensor from_vector(const std::vector<T>& values,
                            Device dev = default_device()) requires(D == 1) {
    return from_vector(values, Dims{static_cast<int64_t>(values.size())}, dev);
  }
  static Tensor from_data(const TensorData& data, Device dev = default_device()) {
    return Tensor(ember::from_data(data, dev));
  }

  // Metadata.
  Dims dims() const {
    Dims d{};
    for (int i = 0; i < D; ++i) d[static_cast<size_t>(i)] = t_.shape()[i];
    return d;
  }
  const Shape& shape() const { return t_.shape(); }
  int64_t size(int dim) const { return t_.size(dim); }
  int64_t numel() const { return t_.numel(); }
  DType dtype() const { return t_.dtype(); }
  Device device() const { return t_.device(); }
  bool is_contiguous() const { return t_.is_contiguous(); }
  bool defined() const { return t_.defined(); }

  // Data out.
  template <class T>
  T item() const {
    return t_.template item<T>();
  }
  template <class T>
  std::vector<T> to_vector() const {
    return t_.template to_vector<T>();
  }
  TensorData to_data() const { return t_.to_data(); }

  // Conversion.
  Tensor to(Device dev) const { return Tensor(to_device(t_, dev)); }
  /// Another dtype of the same kind.
  Tensor to(DType dtype) const { return Tensor(cast(t_, dtype)); }
  /// Another kind: x.to<Int>(), x.to<Float>(DType::f64).
  template <class K2>
  Tensor<D, K2> to(DType dtype = default_dtype(kind_id<K2>())) const {
    return Tensor<D, K2>(cast(t_, dtype));
  }
  Tensor contiguous() const { return Tensor(ember::contiguous(t_)); }
  Tensor clone() const { return Tensor(ember::clone(t_)); }

  // Autodiff (autodiff/autodiff.hpp).
  /// A leaf whose gradient backward() computes; shares storage with this tensor.
  Tensor require_grad() const requires std::is_same_v<K, Float> {
    return Tensor(ember::require_grad(t_));
  }
  bool requires_grad() const { return t_.requires_grad(); }
  /// The same values, not tracked.
  Tensor detach() const { return Tensor(ember::detach(t_)); }
  /// Keep this non-leaf's gradient in the Gradients of a later backward().
  Tensor retain_grad() const { return Tensor(ember::retain_grad(t_)); }
  /// Gradients of this one-element output with respect to every leaf it depends on.
  Gradients backward(const BackwardOptions& options = {}) const {
    return ember::backward(t_, options);
  }
  /// For outputs of any shape: `seed` is the gradient flowing into this tensor.
  Gradients backward(const Tensor& seed, const BackwardOptions& options = {}) const {
    return ember::backward(t_, seed.t_, options);
  }
  /// This tensor's gradient in `grads` (fails when it has none).
  Tensor grad(const Gradients& grads) const { return Tensor(grads.get(t_)); }

  // Reductions: x.sum() (0-d), x.sum(dim), x.sum(dim, keepdim), x.sum({0, 2}), x.sum({0, 2},
  // keepdim).
#define EMBER_TENSOR_REDUCTION(name, OutK)                                                  \
  Tensor<0, OutK> name() const { return Tensor<0, OutK>(ember::name(t_)); }                 \
  Tensor<detail::drop1(D), OutK> name(int64_t dim) const requires(D >= 1) {                 \
    return Tensor<detail::drop1(D), OutK>(ember::name(t_, {dim}, false));                   \
  }                                                                                         \
  Tensor<D, OutK> name(int64_t dim, KeepDim) const {                                        \
    return Tensor<D, OutK>(ember::name(t_, {dim}, true));                                   \
  }                                                                                         \
  template <size_t N>                                                                       \
  Tensor<D - static_cast<int>(N), OutK> name(const int64_t(&dims)[N]) const {               \
    return Tensor<D - static_cast<int>(N), OutK>(ember::name(t_, {dims, dims + N}, false)); \
  }                                                                                         \
  template <size_t N>                                                                       \
  Tensor<D, OutK> name(const int64_t(&dims)[N], KeepDim) const {                            \
    return Tensor<D, OutK>(ember::name(t_, {dims, dims + N}, true));                        \
  }
  EMBER_TENSOR_REDUCTION(sum, detail::SumKind<K>)
  EMBER_TENSOR_REDUCTION(prod, detail::SumKind<K>)
  EMBER_TENSOR_REDUCTION(mean, K)
  EMBER_TENSOR_REDUCTION(amax, K)
  EMBER_TENSOR_REDUCTION(amin, K)
  EMBER_TENSOR_REDUCTION(all, Bool)
  EMBER_TENSOR_REDUCTION(any, Bool)
#undef EMBER_TENSOR_REDUCTION

  Tensor<0, K> max() const { return Tensor<0, K>(ember::max(t_)); }
  Tensor<0, K> min() const { return Tensor<0, K>(ember::min(t_)); }
  TypedValuesIndices<detail::drop1(D), K> max(int64_t dim) const requires(D >= 1) {
    return typed<detail::drop1(D)>(ember::max(t_, dim, false));
  }
  TypedValuesIndices<D, K> max(int64_t dim, KeepDim) const {
    return typed<D>(ember::max(t_, dim, true));
  }
  TypedValuesIndices<detail::drop1(D), K> min(int64_t dim) const requires(D >= 1) {
    return typed<detail::drop1(D)>(ember::min(t_, dim, false));
  }
  TypedValuesIndices<D, K> min(int64_t dim, KeepDim) const {
    return typed<D>(ember::min(t_, dim, true));
  }
  Tensor<0, Int> argmax() const { return Tensor<0, Int>(ember::argmax(t_)); }
  Tensor<0, Int> argmin() const { return Tensor<0, Int>(ember::argmin(t_)); }
  Tensor<detail::drop1(D), Int> argmax(int64_t dim) const requires(D >= 1) {
    return Tensor<detail::drop1(D), Int>(ember::argmax(t_, dim, false));
  }
  Tensor<D, Int> argmax(int64_t dim, KeepDim) const {
    return Tensor<D, Int>(ember::argmax(t_, dim, true));
  }
  Tensor<detail::drop1(D), Int> argmin(int64_t dim) const requires(D >= 1) {
    return Tensor<detail::drop1(D), Int>(ember::argmin(t_, dim, false));
  }
  Tensor<D, Int> argmin(int64_t dim, KeepDim) const {
    return Tensor<D, Int>(ember::argmin(t_, dim, true));
  }
  Tensor<0, K> var(int64_t correction = 1) const {
    return Tensor<0, K>(ember::var(t_, {}, correction));
  }
  Tensor<detail::drop1(D), K> var(int64_t dim, int64_t correction) const {
    return Tensor<detail::drop1(D), K>(ember::var(t_, {dim}, correction));
  }
  Tensor<D, K> var(int64_t dim, int64_t correction, KeepDim) const {
    return Tensor<D, K>(ember::var(t_, {dim}, correction, true));
  }
  Tensor<0, K> std(int64_t correction = 1) const {
    return Tensor<0, K>(ember::std(t_, {}, correction));
  }
  Tensor<detail::drop1(D), K> std(int64_t dim, int64_t correction) const {
    return Tensor<detail::drop1(D), K>(ember::std(t_, {dim}, correction));
  }
  Tensor<D, K> std(int64_t dim, int64_t correction, KeepDim) const {
    return Tensor<D, K>(ember::std(t_, {dim}, correction, true));
  }
  Tensor<0, K> norm(double p = 2.0) const { return Tensor<0, K>(ember::norm(t_, p)); }
  Tensor<detail::drop1(D), K> norm(double p, int64_t dim) const {
    return Tensor<detail::drop1(D), K>(ember::norm(t_, p, {dim}));
  }
  Tensor<D, K> norm(double p, int64_t dim, KeepDim) const {
    return Tensor<D, K>(ember::norm(t_, p, {dim}, true));
  }
  Tensor<detail::drop1(D), K> logsumexp(int64_t dim) const {
    return Tensor<detail::drop1(D), K>(ember::logsumexp(t_, {dim}));
  }
  Tensor<D, K> logsumexp(int64_t dim, KeepDim) const {
    return Tensor<D, K>(ember::logsumexp(t_, {dim}, true));
  }
  Tensor<D, detail::SumKind<K>> cumsum(int64_t dim) const {
    return Tensor<D, detail::SumKind<K>>(ember::cumsum(t_, dim));
  }
  Tensor<D, detail::SumKind<K>> cumprod(int64_t dim) const {
    return Tensor<D, detail::SumKind<K>>(ember::cumprod(t_, dim));
  }
  TypedValuesIndices<D, K> sort(int64_t dim = -1, bool descending = false,
                                bool stable = false) const {
    return typed<D>(ember::sort(t_, dim, descending, stable));
  }
  Tensor<D, Int> argsort(int64_t dim = -1, bool descending = false, bool stable = false) const {
    return Tensor<D, Int>(ember::argsort(t_, dim, descending, stable));
  }
  TypedValuesIndices<D, K> topk(int64_t k, int64_t dim = -1, bool largest = true,
                                bool sorted = true) const {
    return typed<D>(ember::topk(t_, k, dim, largest, sorted));
  }

  // Movement.
  template <size_t N>
  Tensor<static_cast<int>(N), K> reshape(const int64_t (&shape)[N]) const {
    return Tensor<static_cast<int>(N), K>(
        ember::reshape(t_, Shape(std::span<const int64_t>(shape, N))));
  }
  template <size_t N>
  Tensor<static_cast<int>(N), K> view(const int64_t (&shape)[N]) const {
    return Tensor<static_cast<int>(N), K>(
        ember::view(t_, Shape(std::span<const int64_t>(shape, N))));
  }
  /// Rank given explicitly when the shape is a run-time value.
  template <int N>
  Tensor<N, K> reshape(const Shape& shape) const {
    return Tensor<N, K>(ember::reshape(t_, shape));
  }
  Tensor<1, K> flatten() const { return Tensor<1, K>(ember::flatten(t_)); }
  /// Flattens dims start..end (inclusive) into one; the result rank N is given explicitly.
  template <int N>
  Tensor<N, K> flatten(int64_t start_dim, int64_t end_dim = -1) const {
    return Tensor<N, K>(ember::flatten(t_, start_dim, end_dim));
  }
  Tensor<detail::drop1(D), K> squeeze(int64_t dim) const requires(D >= 1) {
    return Tensor<detail::drop1(D), K>(ember::squeeze(t_, dim));
  }
  /// Removes every size-1 dim; N is the expected resulting rank (checked).
  template <int N>
  Tensor<N, K> squeeze() const {
    return Tensor<N, K>(ember::squeeze(t_));
  }
  Tensor<D + 1, K> unsqueeze(int64_t dim) const {
    return Tensor<D + 1, K>(ember::unsqueeze(t_, dim));
  }
  Tensor transpose(int64_t dim0, int64_t dim1) const {
    return Tensor(ember::transpose(t_, dim0, dim1));
  }
  /// Matrix transpose of a 2-D tensor.
  Tensor t() const requires(D == 2) { return transpose(0, 1); }
  Tensor permute(const std::array<int64_t, static_cast<size_t>(D)>& dims) const {
    return Tensor(ember::permute(t_, {dims.begin(), dims.end()}));
  }
  template <size_t N>
  Tensor<static_cast<int>(N), K> expand(const int64_t (&shape)[N]) const {
    return Tensor<static_cast<int>(N), K>(
        ember::expand(t_, Shape(std::span<const int64_t>(shape, N))));
  }
  template <int N>
  Tensor<N, K> broadcast_to(const std::array<int64_t, static_cast<size_t>(N)>& shape) const {
    return Tensor<N, K>(ember::expand(t_, Shape(shape)));
  }
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const {
    return Tensor(ember::slice(t_, dim, start, end, step));
  }
  /// One Slice per leading dim: x.slice({{0, 2}, {1, 5, 2}}).
  Tensor slice(const std::vector<Slice>& slices) const { return Tensor(ember::slice(t_, slices)); }
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const {
    return Tensor(ember::narrow(t_, dim, start, length));
  }
  Tensor<detail::drop1(D), K> select(int64_t dim, int64_t index) const requires(D >= 1) {
    return Tensor<detail::drop1(D), K>(ember::select(t_, dim, index));
  }
  Tensor flip(const std::vector<int64_t>& dims) const { return Tensor(ember::flip(t_, dims)); }
  Tensor repeat(const std::array<int64_t, static_cast<size_t>(D)>& repeats) const {
    return Tensor(ember::repeat(t_, {repeats.begin(), repeats.end()}));
  }
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const {
    return wrap_all(ember::split(t_, split_size, dim));
  }
  std::vector<Tensor> split(const std::vector<int64_t>& sizes, int64_t dim) const {
    return wrap_all(ember::split(t_, sizes, dim));
  }
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const {
    return wrap_all(ember::chunk(t_, chunks, dim));
  }
  Tensor pad(const std::vector<int64_t>& pads, PadMode mode = PadMode::Constant,
             double value = 0.0) const {
    return Tensor(ember::pad(t_, pads, mode, value));
  }

  // Indexing.
  Tensor gather(int64_t dim, const Tensor<D, Int>& index) const {
    return Tensor(ember::gather(t_, dim, index.dyn()));
  }
  Tensor scatter(int64_t dim, const Tensor<D, Int>& index, const Tensor& src) const {
    return Tensor(ember::scatter(t_, dim, index.dyn(), src.t_));
  }
  Tensor scatter(int64_t dim, const Tensor<D, Int>& index, const Scalar& value) const {
    return Tensor(ember::scatter(t_, dim, index.dyn(), value));
  }
  Tensor scatter_add(int64_t dim, const Tensor<D, Int>& index, const Tensor& src) const {
    return Tensor(ember::scatter_add(t_, dim, index.dyn(), src.t_));
  }
  Tensor index_select(int64_t dim, const Tensor<1, Int>& index) const {
    return Tensor(ember::index_select(t_, dim, index.dyn()));
  }
  Tensor index_add(int64_t dim, const Tensor<1, Int>& index, const Tensor& src,
                   const Scalar& alpha = 1) const {
    return Tensor(ember::index_add(t_, dim, index.dyn(), src.t_, alpha));
  }
  template <int M>
  Tensor masked_fill(const Tensor<M, Bool>& mask, const Scalar& value) const {
    return Tensor(ember::masked_fill(t_, mask.dyn(), value));
  }
  template <int M>
  Tensor<1, K> masked_select(const Tensor<M, Bool>& mask) const {
    return Tensor<1, K>(ember::masked_select(t_, mask.dyn()));
  }
  Tensor<2, Int> nonzero() const { return Tensor<2, Int>(ember::nonzero(t_)); }
  Tensor<D + 1, Int> one_hot(int64_t num_classes = -1) const requires std::is_same_v<K, Int> {
    return Tensor<D + 1, Int>(ember::one_hot(t_, num_classes));
  }
  Tensor slice_assign(const std::vector<Slice>& slices, const Tensor& value) const {
    return Tensor(ember::slice_assign(t_, slices, value.t_));
  }

  // Softmax family (Float).
  Tensor softmax(int64_t dim) const { return Tensor(ember::softmax(t_, dim)); }
  Tensor log_softmax(int64_t dim) const { return Tensor(ember::log_softmax(t_, dim)); }

 private:
  static DType default_of_kind() { return default_dtype(kind_id<K>()); }
  static DynTensor typed_from(const TensorData& data, Device dev) {
    DynTensor t = ember::from_data(data, dev);
    return kind_of(data.dtype) == kind_id<K>() ? t : cast(t, default_of_kind());
  }
  template <int R>
  static TypedValuesIndices<R, K> typed(ValuesIndices r) {
    return {Tensor<R, K>(std::move(r.values)), Tensor<R, Int>(std::move(r.indices))};
  }
  static std::vector<Tensor> wrap_all(std::vector<DynTensor> parts) {
    std::vector<Tensor> out;
    out.reserve(parts.size());
    for (auto& p : parts) out.emplace_back(std::move(p));
    return out;
  }

  DynTensor t_;
};

}  // namespace ember

#include "ember/tensor/conv_ops.hpp"
#include "ember/tensor/indexing_ops.hpp"
#include "ember/tensor/statistics_ops.hpp"
#include "ember/tensor/tensor_ops.hpp"
#include "ember/tensor/vision_ops.hpp"
// Matrix and shape ops (tril, einsum, diag, linalg norms, ...).
#include "ember/tensor/shape_ops.hpp"
