#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ember/core/dtype.hpp"

namespace ember {
namespace {

TEST(DType, Promotion) {
  EXPECT_EQ(promote_types(DType::f32, DType::f64), DType::f64);
  EXPECT_EQ(promote_types(DType::i64, DType::f16), DType::f16);
  EXPECT_EQ(promote_types(DType::f16, DType::bf16), DType::f32);
  EXPECT_EQ(promote_types(DType::u8, DType::i8), DType::i32);
  EXPECT_EQ(promote_types(DType::boolean, DType::i32), DType::i32);
  EXPECT_EQ(promote_types(DType::i32, DType::i64), DType::i64);
}

TEST(DType, Names) {
  EXPECT_EQ(dtype_name(DType::bf16), "bfloat16");
  EXPECT_EQ(dtype_name(DType::boolean), "bool");
  EXPECT_EQ(dtype_size(DType::f16), 2u);
}

TEST(Half, RoundTripAndRounding) {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f, 0.333251953f}) {
    EXPECT_EQ(static_cast<float>(Half(f)), f) << f;
  }
  EXPECT_TRUE(std::isinf(static_cast<float>(Half(70000.0f))));
  EXPECT_TRUE(std::isnan(static_cast<float>(Half(std::numeric_limits<float>::quiet_NaN()))));
  // 1 + 2^-11 is halfway between two halves: rounds to even (1.0).
  EXPECT_EQ(static_cast<float>(Half(1.0f + 0x1p-11f)), 1.0f);
  EXPECT_EQ(static_cast<float>(Half(1.0f + 3 * 0x1p-11f)), 1.0f + 0x1p-9f);
}

TEST(BFloat16, RoundTripAndRounding) {
  EXPECT_EQ(static_cast<float>(BFloat16(1.0f)), 1.0f);
  EXPECT_EQ(static_cast<float>(BFloat16(-3.0f)), -3.0f);
  EXPECT_EQ(static_cast<float>(BFloat16(1.0f + 0x1p-8f)), 1.0f);  // halfway: to even
  EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16(std::numeric_limits<float>::quiet_NaN()))));
}

}  // namespace
}  // namespace ember
