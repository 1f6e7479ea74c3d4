#include "ember/core/dtype.hpp"

#include "ember/core/error.hpp"

namespace ember {
namespace {
DType g_default_float = DType::f32;

// Rank within a category for promotion; bool < int < float.
int int_rank(DType t) {
  switch (t) {
    case DType::u8:
      return 1;
    case DType::i8:
      return 1;
    case DType::i32:
      return 3;
    case DType::i64:
      return 4;
    default:
      return 0;
  }
}
int float_rank(DType t) {
  switch (t) {
    case DType::f16:
    case DType::bf16:
      return 1;
    case DType::f32:
      return 2;
    case DType::f64:
      return 3;
    default:
      return 0;
  }
}
}  // namespace

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "float32";
    case DType::f64:
      return "float64";
    case DType::f16:
      return "float16";
    case DType::bf16:
      return "bfloat16";
    case DType::i64:
      return "int64";
    case DType::i32:
      return "int32";
    case DType::i8:
      return "int8";
    case DType::u8:
      return "uint8";
    case DType::boolean:
      return "bool";
  }
  return "?";
}

std::string_view kind_name(KindId k) {
  switch (k) {
    case KindId::Float:
      return "Float";
    case KindId::Int:
      return "Int";
    case KindId::Bool:
      return "Bool";
  }
  return "?";
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::boolean) return b;
  if (b == DType::boolean) return a;
  const bool fa = is_floating(a), fb = is_floating(b);
  if (fa && !fb) return a;
  if (fb && !fa) return b;
  if (fa && fb) {
    // f16 with bf16 has no common 16-bit type; PyTorch goes to f32 as well.
    if (float_rank(a) == 1 && float_rank(b) == 1) return DType::f32;
    return float_rank(a) > float_rank(b) ? a : b;
  }
  // Two different integer types: u8 with i8 needs i16, which Ember lacks; use i32 (next wider).
  if (int_rank(a) == 1 && int_rank(b) == 1) return DType::i32;
  return int_rank(a) > int_rank(b) ? a : b;
}

DType default_dtype(KindId k) {
  switch (k) {
    case KindId::Float:
      return g_default_float;
    case KindId::Int:
      return DType::i64;
    case KindId::Bool:
      return DType::boolean;
  }
  return DType::f32;
}

void set_default_float_dtype(DType t) {
  EMBER_CHECK(is_floating(t), "[set_default_float_dtype] expected a floating dtype, got ",
              dtype_name(t));
  g_default_float = t;
}

void append(std::string& out, DType t) { out.append(dtype_name(t)); }

}  // namespace ember
