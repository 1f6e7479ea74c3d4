// The one recording entry point (src/tensor/record.hpp): it records only when an input is
// tracked and grad mode is on, and a rule that reads other parameters than its op recorded is a
// clear error rather than a misread.
#include <gtest/gtest.h>

#include <ember/autodiff/node.hpp>
#include <ember/ember.hpp>

#include "record.hpp"  // src/tensor

namespace ember {
namespace {

TEST(Recording, RecordsOnlyTrackedInputsInGradMode) {
  const DynTensor plain = ones(Shape{2, 3}, DType::f32);
  const DynTensor tracked = require_grad(plain);
  DynTensor out = ones(Shape{2, 3}, DType::f32);
  detail::record(ops::softmax, {&plain}, out, int64_t{1});
  EXPECT_FALSE(out.requires_grad());
  {
    auto guard = no_grad();
    detail::record(ops::softmax, {&tracked}, out, int64_t{1});
    EXPECT_FALSE(out.requires_grad());
  }
  detail::record(ops::softmax, {&tracked}, out, int64_t{1});
  EXPECT_TRUE(out.requires_grad());
  EXPECT_STREQ(out.node()->name(), "softmax");
}

TEST(Recording, ParametersOfAnotherTypeAreAClearError) {
  const DynTensor x = require_grad(ones(Shape{2, 3}, DType::f32));
  DynTensor out = ones(Shape{2, 3}, DType::f32);
  try {
    detail::record(ops::softmax, {&x}, out, 1.5f);  // softmax's rule reads an int64_t dim
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "[softmax] was recorded with other parameters than its rule reads");
  }
}

}  // namespace
}  // namespace ember
