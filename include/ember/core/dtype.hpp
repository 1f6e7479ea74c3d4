// Run-time element types. Tensor<D, K> fixes the kind (Float, Int, Bool) at compile time; the
// exact element type is a DType chosen at run time, as in PyTorch.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ember/core/half.hpp"

namespace ember {

enum class DType : uint8_t { f32, f64, f16, bf16, i64, i32, i8, u8, boolean };

inline constexpr int kNumDTypes = 9;

/// Kinds, the compile-time half of a tensor's type.
struct Float {};
struct Int {};
struct Bool {};

enum class KindId : uint8_t { Float, Int, Bool };

constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::f64:
    case DType::i64:
      return 8;
    case DType::f32:
    case DType::i32:
      return 4;
    case DType::f16:
    case DType::bf16:
      return 2;
    case DType::i8:
    case DType::u8:
    case DType::boolean:
      return 1;
  }
  return 0;
}

constexpr bool is_floating(DType t) {
  return t == DType::f32 || t == DType::f64 || t == DType::f16 || t == DType::bf16;
}
constexpr bool is_integral(DType t) {
  return t == DType::i64 || t == DType::i32 || t == DType::i8 || t == DType::u8;
}
constexpr KindId kind_of(DType t) {
  return is_floating(t) ? KindId::Float : (t == DType::boolean ? KindId::Bool : KindId::Int);
}

/// PyTorch's names: "float32", "int64", "bool", ...
std::string_view dtype_name(DType t);
std::string_view kind_name(KindId k);

/// Type promotion for two tensor operands (PyTorch's rules for dimensioned tensors).
DType promote_types(DType a, DType b);

template <class K>
constexpr KindId kind_id() {
  if constexpr (std::is_same_v<K, Float>) {
    return KindId::Float;
  } else if constexpr (std::is_same_v<K, Int>) {
    return KindId::Int;
  } else {
    static_assert(std::is_same_v<K, Bool>, "a tensor kind is Float, Int or Bool");
    return KindId::Bool;
  }
}

/// The default dtype of each kind (f32, i64, bool). set_default_float_dtype changes Float's.
DType default_dtype(KindId k);
void set_default_float_dtype(DType t);

/// C++ type for a DType, and back.
template <class T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() {
  return DType::f32;
}
template <>
constexpr DType dtype_of<double>() {
  return DType::f64;
}
template <>
constexpr DType dtype_of<Half>() {
  return DType::f16;
}
template <>
constexpr DType dtype_of<BFloat16>() {
  return DType::bf16;
}
template <>
constexpr DType dtype_of<int64_t>() {
  return DType::i64;
}
template <>
constexpr DType dtype_of<int32_t>() {
  return DType::i32;
}
template <>
constexpr DType dtype_of<int8_t>() {
  return DType::i8;
}
template <>
constexpr DType dtype_of<uint8_t>() {
  return DType::u8;
}
template <>
constexpr DType dtype_of<bool>() {
  return DType::boolean;
}

/// Message building (EMBER_CHECK): found by argument-dependent lookup.
void append(std::string& out, DType t);

/// Calls f(T{}) with T the C++ type of `t` (Half and BFloat16 for the 16-bit floats).
template <class F>
decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
    case DType::f32:
      return f(float{});
    case DType::f64:
      return f(double{});
    case DType::f16:
      return f(Half{});
    case DType::bf16:
      return f(BFloat16{});
    case DType::i64:
      return f(int64_t{});
    case DType::i32:
      return f(int32_t{});
    case DType::i8:
      return f(int8_t{});
    case DType::u8:
      return f(uint8_t{});
    case DType::boolean:
      return f(bool{});
  }
  return f(float{});
}

}  // namespace ember
