#include <gtest/gtest.h>

#include <cstdint>
#include <new>
#include <string>

#include "ember/core/error.hpp"
#include "ember/core/shape.hpp"

namespace ember {
namespace {

TEST(Shape, NumelAndPrinting) {
  EXPECT_EQ(Shape({2, 3, 4}).numel(), 24);
  EXPECT_EQ(Shape{}.numel(), 1);
  EXPECT_EQ(Shape({3, 0}).numel(), 0);
  EXPECT_EQ(to_string(Shape({2, 3})), "[2, 3]");
  EXPECT_EQ(to_string(Shape{}), "[]");
}

TEST(Shape, ContiguousStrides) {
  EXPECT_EQ(contiguous_strides(Shape({2, 3, 4})), Shape({12, 4, 1}));
  EXPECT_EQ(contiguous_strides(Shape({2, 0, 4})), Shape({4, 4, 1}));
}

TEST(Shape, Broadcast) {
  EXPECT_EQ(broadcast_shapes(Shape({3, 1}), Shape({4}), "add"), Shape({3, 4}));
  EXPECT_EQ(broadcast_shapes(Shape{}, Shape({2, 2}), "add"), Shape({2, 2}));
  EXPECT_EQ(broadcast_shapes(Shape({0, 1}), Shape({1, 5}), "add"), Shape({0, 5}));
}

TEST(Shape, BroadcastErrorNamesOpAndShapes) {
  try {
    broadcast_shapes(Shape({2, 3}), Shape({4}), "add");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "[add] shapes cannot be broadcast: [2, 3] and [4] (dimension 1: 3 vs 4)");
  }
}

TEST(Shape, WrapDim) {
  EXPECT_EQ(wrap_dim(-1, 3, "sum"), 2);
  EXPECT_EQ(wrap_dim(0, 0, "sum"), 0);
  EXPECT_THROW(wrap_dim(3, 3, "sum"), Error);
  try {
    wrap_dim(-4, 3, "sum");
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "[sum] dimension -4 out of range for a tensor of rank 3 (expected -3 to 2)");
  }
}

// The message of the ember::Error `f` raises ("" when it raises none).
template <class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Shape, CheckedNumel) {
  EXPECT_EQ(checked_numel(Shape({2, 3, 4}), "zeros"), 24);
  EXPECT_EQ(checked_numel(Shape{}, "zeros"), 1);
  EXPECT_EQ(checked_numel(Shape({3, 0}), "zeros"), 0);
  EXPECT_EQ(checked_numel(Shape({int64_t{1} << 31, int64_t{1} << 31}), "zeros"), int64_t{1} << 62);
  EXPECT_EQ(message_of([] {
              checked_numel(Shape({int64_t{1} << 32, int64_t{1} << 32}), "zeros");
            }),
            "[zeros] shape [4294967296, 4294967296] has more than 2^63 - 1 elements");
  EXPECT_EQ(message_of([] {
              checked_numel(Shape({2, -3}), "zeros");
            }),
            "[zeros] negative dimension -3 in shape [2, -3]");
  // Zero elements, but the strides of [2^32, 2^32] would not fit int64.
  EXPECT_EQ(message_of([] {
              checked_numel(Shape({0, int64_t{1} << 32, int64_t{1} << 32}), "x");
            }),
            "[x] shape [0, 4294967296, 4294967296] is too large: its nonzero dimensions multiply "
            "past 2^63 - 1, so its strides would overflow");
}

TEST(Shape, CheckedNbytes) {
  EXPECT_EQ(checked_nbytes(Shape({2, 3}), 4, "zeros"), 24u);
  // 2^62 floats are 2^64 bytes: the product used to wrap to 0 and allocate 64 bytes.
  EXPECT_EQ(message_of([] { checked_nbytes(Shape({int64_t{1} << 62}), 4, "zeros"); }),
            "[zeros] shape [4611686018427387904] of 4-byte elements needs more than "
            "9223372036854775807 bytes, the most this machine can address");
  int64_t out = 0;
  EXPECT_FALSE(checked_mul(INT64_MAX, 2, &out));
  EXPECT_TRUE(checked_mul(int64_t{1} << 31, int64_t{1} << 31, &out));
  EXPECT_EQ(out, int64_t{1} << 62);
  EXPECT_FALSE(checked_add(INT64_MAX, 1, &out));
}

TEST(Shape, ContiguousStridesNeverWrap) {
  EXPECT_EQ(contiguous_strides(Shape({int64_t{1} << 62, 1})), Shape({1, 1}));
  EXPECT_EQ(message_of([] {
              contiguous_strides(Shape({0, int64_t{1} << 32, int64_t{1} << 32}));
            }),
            "[strides] shape [0, 4294967296, 4294967296] is too large: its nonzero dimensions "
            "multiply past 2^63 - 1, so its strides would overflow");
}

// as_op: the error of an inner op, or a std::bad_alloc, is raised as the error of the op the
// user called.
TEST(Error, AsOpNamesTheOuterOp) {
  EXPECT_EQ(
      message_of([] { as_op("softmax", [] { EMBER_FAIL("[amax] dimension 5 out of range"); }); }),
      "[softmax] dimension 5 out of range (in amax)");
  EXPECT_EQ(
      message_of([] { as_op("softmax", [] { EMBER_FAIL("[softmax] needs a floating tensor"); }); }),
      "[softmax] needs a floating tensor");
  // Nested composites keep the innermost op's name, where the check failed.
  EXPECT_EQ(message_of([] {
              as_op("cross_entropy",
                    [] { as_op("log_softmax", [] { EMBER_FAIL("[amax] bad"); }); });
            }),
            "[cross_entropy] bad (in amax)");
  EXPECT_EQ(message_of([] { as_op("linspace", [] { throw std::bad_alloc(); }); }),
            "[linspace] out of memory (std::bad_alloc)");
  EXPECT_EQ(as_op("x", [] { return 7; }), 7);
}

TEST(Shape, RankLimit) {
  Shape s = Shape::filled(kMaxRank, 1);
  EXPECT_THROW(s.push_back(1), Error);
}

}  // namespace
}  // namespace ember
