#include "ember/tensor/dyn_tensor.hpp"

#include "ember/tensor/ops/movement.hpp"
#include "ember/tensor/tensor.hpp"
#include "internal.hpp"

namespace ember {

TensorData::TensorData(std::vector<unsigned char> bytes_in, const Shape& shape_in, DType dtype_in)
    : bytes(std::move(bytes_in)), shape(shape_in), dtype(dtype_in) {
  const size_t expected = checked_nbytes(shape, dtype_size(dtype), "TensorData");
  EMBER_CHECK(bytes.size() == expected, "[TensorData] shape ", shape, " of ", dtype, " needs ",
              expected, " bytes, got ", bytes.size());
}

template <class T>
std::vector<T> TensorData::to_vector() const {
  std::vector<T> out(static_cast<size_t>(numel()));
  visit_dtype(dtype, [&](auto tag) {
    using S = decltype(tag);
    const S* src = reinterpret_cast<const S*>(bytes.data());
    for (size_t i = 0; i < out.size(); ++i) {
      if constexpr (std::is_same_v<T, S>) {
        out[i] = src[i];
      } else if constexpr (std::is_same_v<T, bool>) {
        out[i] = static_cast<float>(src[i]) != 0.0f;
      } else if constexpr (std::is_same_v<S, Half> || std::is_same_v<S, BFloat16>) {
        out[i] = static_cast<T>(static_cast<float>(src[i]));
      } else {
        out[i] = static_cast<T>(src[i]);
      }
    }
  });
  return out;
}

template std::vector<float> TensorData::to_vector<float>() const;
template std::vector<double> TensorData::to_vector<double>() const;
template std::vector<int64_t> TensorData::to_vector<int64_t>() const;
template std::vector<int32_t> TensorData::to_vector<int32_t>() const;
template std::vector<int8_t> TensorData::to_vector<int8_t>() const;
template std::vector<uint8_t> TensorData::to_vector<uint8_t>() const;
template std::vector<bool> TensorData::to_vector<bool>() const;
template std::vector<Half> TensorData::to_vector<Half>() const;
template std::vector<BFloat16> TensorData::to_vector<BFloat16>() const;

TensorData DynTensor::to_data() const {
  detail::check_defined(*this, "to_data");
  // A host copy of the whole tensor (an expanded view copies every element): failures name
  // to_data, which item, to_vector and printing call.
  return as_op("to_data", [&] {
    const DynTensor c = contiguous(*this);
    TensorData data;
    data.shape = shape();
    data.dtype = dtype();
    data.bytes.resize(c.raw().nbytes());
    detail::host_sync(c.device());
    detail::backend_of(c).read_to_host(c.raw(), data.bytes.data());
    return data;
  });
}

template <class T>
T DynTensor::item() const {
  detail::check_defined(*this, "item");
  EMBER_CHECK(numel() == 1, "[item] expected a tensor with one element, got shape ", shape());
  const DynTensor one = dtype() == dtype_of<T>() ? *this : cast(*this, dtype_of<T>());
  T v{};
  const RawTensor r = one.raw().view(Shape{}, Strides{}, one.raw().offset);
  detail::host_sync(one.device());
  detail::backend_of(one).read_to_host(r, &v);
  return v;
}

template float DynTensor::item<float>() const;
template double DynTensor::item<double>() const;
template int64_t DynTensor::item<int64_t>() const;
template int32_t DynTensor::item<int32_t>() const;
template int8_t DynTensor::item<int8_t>() const;
template uint8_t DynTensor::item<uint8_t>() const;
template bool DynTensor::item<bool>() const;
template Half DynTensor::item<Half>() const;
template BFloat16 DynTensor::item<BFloat16>() const;

namespace detail {
void check_typed(const DynTensor& t, int rank, KindId kind) {
  if (!t.defined()) return;  // default-constructed handles are allowed
  EMBER_CHECK(t.rank() == rank, "[Tensor] expected rank ", rank, ", got a tensor of shape ",
              t.shape());
  EMBER_CHECK(t.kind() == kind, "[Tensor] expected a ", kind_name(kind), " tensor, got ", t.dtype(),
              " (convert it with .to<", kind_name(kind), ">())");
}
}  // namespace detail

}  // namespace ember
