// TensorData: a host buffer with a shape and a dtype, for moving data into and out of tensors.
#pragma once

#include <cstring>
#include <span>
#include <vector>

#include "ember/core/dtype.hpp"
#include "ember/core/error.hpp"
#include "ember/core/shape.hpp"

namespace ember {

struct TensorData {
  std::vector<unsigned char> bytes;  // numel * dtype_size(dtype), row-major
  Shape shape;
  DType dtype = DType::f32;

  TensorData() = default;
  /// Raw constructor: checks that `bytes` holds exactly shape.numel() elements of `dtype`.
  TensorData(std::vector<unsigned char> bytes_in, const Shape& shape_in, DType dtype_in);

  template <class T>
  static TensorData from(std::span<const T> values, const Shape& shape) {
    std::vector<unsigned char> raw(values.size() * sizeof(T));
    if (!raw.empty()) std::memcpy(raw.data(), values.data(), raw.size());
    return TensorData(std::move(raw), shape, dtype_of<T>());
  }
  template <class T>
  static TensorData from(const std::vector<T>& values, const Shape& shape) {
    if constexpr (std::is_same_v<T, bool>) {  // std::vector<bool> is packed; unpack it
      std::vector<unsigned char> raw(values.begin(), values.end());
      return TensorData(std::move(raw), shape, DType::boolean);
    } else {
      return from(std::span<const T>(values), shape);
    }
  }

  int64_t numel() const { return shape.numel(); }

  /// The elements as T; fails unless T is exactly this data's dtype.
  template <class T>
  std::span<const T> as() const {
    EMBER_CHECK(dtype_of<T>() == dtype, "[TensorData] holds ", dtype, ", asked for ",
                dtype_of<T>());
    return {reinterpret_cast<const T*>(bytes.data()), static_cast<size_t>(numel())};
  }
  /// The elements converted to T (any dtype to any T).
  template <class T>
  std::vector<T> to_vector() const;
};

extern template std::vector<float> TensorData::to_vector<float>() const;
extern template std::vector<double> TensorData::to_vector<double>() const;
extern template std::vector<int64_t> TensorData::to_vector<int64_t>() const;
extern template std::vector<int32_t> TensorData::to_vector<int32_t>() const;
extern template std::vector<int8_t> TensorData::to_vector<int8_t>() const;
extern template std::vector<uint8_t> TensorData::to_vector<uint8_t>() const;
extern template std::vector<bool> TensorData::to_vector<bool>() const;
extern template std::vector<Half> TensorData::to_vector<Half>() const;
extern template std::vector<BFloat16> TensorData::to_vector<BFloat16>() const;

}  // namespace ember
