#include <gtest/gtest.h>

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

TEST(Shape, RankLimit) {
  Shape s = Shape::filled(kMaxRank, 1);
  EXPECT_THROW(s.push_back(1), Error);
}

}  // namespace
}  // namespace ember
