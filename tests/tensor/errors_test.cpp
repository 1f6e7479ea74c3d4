// Every user-facing error path: each bad call throws ember::Error whose message names the op and
// the values involved. One row per check in the front end; nothing aborts the process.
// Not reachable in a Cpu-only build, so not here: tensors on two different devices, a backend
// without a kernel for a dtype, and allocating on a device the backend does not own.
#include <functional>

#include "test_util.hpp"

namespace ember::test {
namespace {

struct ErrorRow {
  const char* expected;  // the message, or its start when it ends with "..."
  std::function<void()> call;
};

DynTensor f32(const Shape& s) { return make_input(s, DType::f32, Layout::Contiguous, -1, 1, 3); }
DynTensor i64(const Shape& s, double hi = 3) {
  return make_input(s, DType::i64, Layout::Contiguous, 0, hi, 4);
}
DynTensor b8(const Shape& s) { return make_input(s, DType::boolean, Layout::Contiguous, 0, 2, 5); }

void expect_error(const ErrorRow& row) {
  std::string expected = row.expected;
  const bool prefix = expected.size() > 3 && expected.substr(expected.size() - 3) == "...";
  if (prefix) expected.resize(expected.size() - 3);
  try {
    row.call();
    synchronize(default_device());  // a range error of a queued check is raised here
    ADD_FAILURE() << "no error thrown; expected: " << row.expected;
  } catch (const Error& e) {
    const std::string got = e.what();
    if (prefix) {
      EXPECT_EQ(got.substr(0, expected.size()), expected);
    } else {
      EXPECT_EQ(got, expected);
    }
  }
}

TEST(Errors, CoreAndCreation) {
  // clang-format off: one row per op reads best as one line
  const std::vector<ErrorRow> rows = {
      {"[shape] rank 13 exceeds Ember's maximum rank 12",
       [] { Shape(std::vector<int64_t>(13, 1)); }},
      {"[sum] dimension 2 out of range for a tensor of rank 2 (expected -2 to 1)",
       [] {
         sum(f32({2, 3}), {2});
       }},
      {"[add] shapes cannot be broadcast: [2, 3] and [4] (dimension 1: 3 vs 4)",
       [] {
         add(f32({2, 3}), f32({4}));
       }},
      // "is not available" without the Cuda backend, "does not exist" on a build without a GPU.
      {"[device] cuda:99 ...", [] { Device::cuda(99); }},
      // Likewise; lavapipe is one Vulkan device, so vulkan:99 never exists.
      {"[device] vulkan:99 ...", [] { Device::vulkan(99); }},
      {"[device] unknown device 'tpu' (expected cpu, cuda[:N], vulkan[:N] or libtorch)",
       [] { Device::parse("tpu"); }},
      {"[device] cannot parse device index in 'cuda:x'", [] { Device::parse("cuda:x"); }},
      {"[device] the cpu device has index 0, got 'cpu:1'", [] { Device::parse("cpu:1"); }},
      {"[set_default_float_dtype] expected a floating dtype, got int32",
       [] { set_default_float_dtype(DType::i32); }},
      {"[set_num_threads] thread count must be at least 1, got 0", [] { cpu::set_num_threads(0); }},
      {"[zeros] negative dimension -1 in shape [2, -1]",
       [] {
         zeros(Shape{2, -1}, DType::f32);
       }},
      {"[arange] step must be nonzero", [] { arange(0, 5, 0, DType::i64); }},
      {"[arange] step must be nonzero", [] { arange(0.0, 5.0, 0.0, DType::f32); }},
      {"[arange] the range [5, 0) is inconsistent with step 1",
       [] { arange(5, 0, 1, DType::i64); }},
      {"[arange] the range [0, 1) is inconsistent with step -0.5",
       [] { arange(0.0, 1.0, -0.5, DType::f32); }},
      {"[arange] bounds must be finite, got 0 and inf",
       [] { arange(0.0, INFINITY, 1.0, DType::f32); }},
      {"[linspace] number of steps must be non-negative, got -1",
       [] { linspace(0, 1, -1, DType::f32); }},
      {"[eye] n must be non-negative, got -2", [] { eye(-2, 3, DType::f32); }},
      {"[rand] needs a floating dtype, got int64", [] { rand(Shape{2}, DType::i64); }},
      {"[rand] low must not exceed high, got [2, 1)",
       [] { rand(Shape{2}, DType::f32, default_device(), nullptr, 2, 1); }},
      {"[randn] needs a floating dtype, got bool", [] { randn(Shape{2}, DType::boolean); }},
      {"[randn] std must be non-negative, got -1",
       [] { randn(Shape{2}, DType::f32, default_device(), nullptr, 0, -1); }},
      {"[randint] low must be less than high, got [3, 3)",
       [] { randint(3, 3, Shape{2}, DType::i64); }},
      {"[randint] cannot draw into bool", [] { randint(0, 2, Shape{2}, DType::boolean); }},
      {"[bernoulli] p must be in [0, 1], got 1.5", [] { bernoulli(Shape{2}, 1.5, DType::f32); }},
      {"[bernoulli] needs a floating dtype, got int64", [] { bernoulli(i64({2})); }},
      {"[TensorData] negative dimension -1 in shape [-1]",
       [] { TensorData({}, Shape{-1}, DType::f32); }},
      {"[TensorData] shape [2, 2] of float32 needs 16 bytes, got 12",
       [] {
         TensorData(std::vector<unsigned char>(12), Shape{2, 2}, DType::f32);
       }},
      {"[TensorData] holds float32, asked for int64",
       [] { TensorData::from(std::vector<float>{1}, Shape{1}).as<int64_t>(); }},
      {"[from_data] shape [3] of float32 needs 12 bytes, got 4",
       [] {
         TensorData d = TensorData::from(std::vector<float>{1}, Shape{1});
         d.shape = Shape{3};
         from_data(d);
       }},
      {"[item] expected a tensor with one element, got shape [2, 3]",
       [] {
         f32({2, 3}).item<float>();
       }},
      {"[Tensor] expected rank 2, got a tensor of shape [3]", [] { Tensor<2>(f32({3})); }},
      {"[Tensor] expected a Float tensor, got int64 (convert it with .to<Float>())",
       [] { Tensor<1>(i64({3})); }},
      {"[add] input is an undefined (default-constructed) tensor",
       [] { add(DynTensor(), f32({1})); }},
      {"[clone] input is an undefined (default-constructed) tensor", [] { clone(DynTensor()); }},
  };
  // clang-format on
  for (const ErrorRow& row : rows) expect_error(row);
}

TEST(Errors, ElementwiseReduceLinalg) {
  // clang-format off: one row per check reads best as one line
  const std::vector<ErrorRow> rows = {
      {"[neg] expects Float or Int tensors, got bool", [] { neg(b8({3})); }},
      {"[add] expects Float or Int tensors, got bool", [] { add(b8({3}), b8({3})); }},
      {"[bitwise_and] expects Int or Bool tensors, got float32",
       [] { bitwise_and(f32({3}), f32({3})); }},
      {"[bitwise_not] expects Int or Bool tensors, got float32", [] { bitwise_not(f32({3})); }},
      {"[softplus] beta must be nonzero", [] { softplus(f32({3}), 0.0); }},
      {"[where] condition must be bool, got float32", [] { where(f32({3}), f32({3}), f32({3})); }},
      {"[where] shapes cannot be broadcast: [3] and [4] (dimension 0: 3 vs 4)",
       [] { where(b8({3}), f32({4}), f32({4})); }},
      {"[mean] needs a floating tensor, got int64 (cast it first)", [] { mean(i64({3})); }},
      {"[sum] dimension -1 appears more than once",
       [] {
         sum(f32({2, 3}), {1, -1});
       }},
      {"[amax] cannot reduce over a zero-size dimension: input shape [0, 3]",
       [] {
         amax(f32({0, 3}), {0});
       }},
      {"[amin] cannot reduce over a zero-size dimension: input shape [0]", [] { amin(f32({0})); }},
      {"[argmax] cannot reduce over a zero-size dimension: input shape [2, 0]",
       [] {
         argmax(f32({2, 0}), 1);
       }},
      {"[var] needs a floating tensor, got int64", [] { var(i64({3})); }},
      {"[norm] needs a floating tensor, got int64", [] { norm(i64({3})); }},
      {"[topk] k = 4 is out of range for dimension -1 of size 3 (input shape [2, 3])",
       [] {
         topk(f32({2, 3}), 4);
       }},
      {"[matmul] inner dimensions differ: lhs [2, 3], rhs [4, 5]",
       [] {
         matmul(f32({2, 3}), f32({4, 5}));
       }},
      {"[matmul] both operands need at least one dimension: lhs [], rhs [3]",
       [] { matmul(f32({}), f32({3})); }},
      {"[matmul] bool tensors are not supported",
       [] {
         matmul(b8({2, 2}), b8({2, 2}));
       }},
      {"[matmul] shapes cannot be broadcast: [2] and [3] (dimension 0: 2 vs 3)...",
       [] {
         matmul(f32({2, 4, 5}), f32({3, 5, 6}));
       }},
      {"[dot] expects two 1-D tensors of equal size, got [3] and [4]",
       [] { dot(f32({3}), f32({4})); }},
      {"[outer] expects two 1-D tensors, got [3, 1] and [4]",
       [] {
         outer(f32({3, 1}), f32({4}));
       }},
      {"[softmax] needs a floating tensor, got int64", [] { softmax(i64({3}), 0); }},
      {"[log_softmax] needs a floating tensor, got int64", [] { log_softmax(i64({3}), 0); }},
      {"[cumsum] dimension 1 out of range for a tensor of rank 1 (expected -1 to 0)",
       [] { cumsum(f32({3}), 1); }},
  };
  // clang-format on
  for (const ErrorRow& row : rows) expect_error(row);
}

TEST(Errors, Movement) {
  // clang-format off: one row per check reads best as one line
  const std::vector<ErrorRow> rows = {
      {"[reshape] only one dimension can be -1, got shape [-1, -1]",
       [] {
         reshape(f32({2, 3}), Shape{-1, -1});
       }},
      {"[reshape] invalid dimension -2 in shape [-2, 3]",
       [] {
         reshape(f32({2, 3}), Shape{-2, 3});
       }},
      {"[reshape] shape [4, -1] is invalid for input of size 6",
       [] {
         reshape(f32({2, 3}), Shape{4, -1});
       }},
      {"[reshape] shape [5] is invalid for input of size 6",
       [] {
         reshape(f32({2, 3}), Shape{5});
       }},
      {"[view] shape [6] is not compatible with the input's shape [3, 2] and strides [1, 3]; use "
       "reshape, which copies",
       [] {
         view(transpose(f32({2, 3}), 0, 1), Shape{6});
       }},
      {"[flatten] start_dim 2 comes after end_dim 1",
       [] {
         flatten(f32({2, 3, 4}), 2, 1);
       }},
      {"[permute] expected 2 dims for a tensor of shape [2, 3], got 3",
       [] {
         permute(f32({2, 3}), {0, 1, 2});
       }},
      {"[permute] dimension 0 repeats in the permutation",
       [] {
         permute(f32({2, 3}), {0, 0});
       }},
      {"[expand] cannot expand shape [2, 3] to [3]: fewer dimensions",
       [] {
         expand(f32({2, 3}), Shape{3});
       }},
      {"[expand] cannot expand shape [2, 3] to [4, 3] (dimension 0: 2 vs 4)",
       [] {
         expand(f32({2, 3}), Shape{4, 3});
       }},
      {"[expand] cannot expand shape [3] to [-1, 3]",
       [] {
         expand(f32({3}), Shape{-1, 3});
       }},
      {"[slice] cannot slice a 0-d tensor", [] { slice(f32({}), 0, 0, 1); }},
      {"[slice] step must be positive, got 0", [] { slice(f32({4}), 0, 0, 4, 0); }},
      {"[narrow] cannot narrow a 0-d tensor", [] { narrow(f32({}), 0, 0, 1); }},
      {"[narrow] start 2 and length 3 are out of range for dimension 0 of size 4 (shape [4])",
       [] { narrow(f32({4}), 0, 2, 3); }},
      {"[select] cannot select from a 0-d tensor", [] { select(f32({}), 0, 0); }},
      {"[select] index 3 is out of range for dimension 1 of size 3 (shape [2, 3])",
       [] {
         select(f32({2, 3}), 1, 3);
       }},
      {"[repeat] needs at least 2 repeat counts for a tensor of shape [2, 3], got 1",
       [] {
         repeat(f32({2, 3}), {2});
       }},
      {"[repeat] repeat counts must be non-negative, got -1", [] { repeat(f32({2}), {-1}); }},
      {"[cat] expects a non-empty list of tensors", [] { cat({}); }},
      {"[cat] zero-dimensional tensors cannot be concatenated",
       [] {
         cat({f32({}), f32({})});
       }},
      {"[cat] tensors must have the same rank: [2, 3] and [3]",
       [] {
         cat({f32({2, 3}), f32({3})});
       }},
      {"[cat] sizes must match except in dimension 0: [2, 3] and [2, 4]",
       [] {
         cat({f32({2, 3}), f32({2, 4})});
       }},
      {"[stack] expects a non-empty list of tensors", [] { stack({}); }},
      {"[stack] expects tensors of equal shape, got [2] and [3]",
       [] {
         stack({f32({2}), f32({3})});
       }},
      {"[split] split_size must be positive, got 0", [] { split(f32({4}), int64_t{0}); }},
      {"[split] sizes must be non-negative, got -1",
       [] {
         split(f32({4}), std::vector<int64_t>{5, -1});
       }},
      {"[split] sizes sum to 3 but dimension 0 has size 4",
       [] {
         split(f32({4}), std::vector<int64_t>{1, 2});
       }},
      {"[chunk] number of chunks must be positive, got 0", [] { chunk(f32({4}), 0); }},
      {"[pad] expects an even number of pads, at most twice the rank; got 3 for shape [2, 3]",
       [] {
         pad(f32({2, 3}), {1, 1, 1});
       }},
      {"[pad] pads -2, -2 remove more than dimension 1 of shape [2, 3]",
       [] {
         pad(f32({2, 3}), {-2, -2});
       }},
      {"[pad] reflect, replicate and circular pads must be non-negative, got -1, 0",
       [] {
         pad(f32({2, 3}), {-1, 0}, PadMode::Reflect);
       }},
      {"[pad] reflect padding (3, 0) must be smaller than dimension 1 of shape [2, 3]",
       [] {
         pad(f32({2, 3}), {3, 0}, PadMode::Reflect);
       }},
      {"[pad] cannot replicate-pad an empty dimension of shape [2, 0]",
       [] {
         pad(f32({2, 0}), {1, 1}, PadMode::Replicate);
       }},
  };
  // clang-format on
  for (const ErrorRow& row : rows) expect_error(row);
}

TEST(Errors, Indexing) {
  // clang-format off: one row per check reads best as one line
  const std::vector<ErrorRow> rows = {
      {"[gather] index must be an Int tensor, got float32",
       [] {
         gather(f32({2, 3}), 1, f32({2, 3}));
       }},
      {"[gather] index 3 is out of bounds for dimension 1 with size 3",
       [] {
         gather(f32({2, 3}), 1, full(Shape{2, 2}, 3, DType::i64));
       }},
      {"[gather] index -1 is out of bounds for dimension 1 with size 3",
       [] {
         gather(f32({2, 3}), 1, full(Shape{2, 2}, -1, DType::i64));
       }},
      {"[gather] index must have the input's rank: input [2, 3], index [2]",
       [] {
         gather(f32({2, 3}), 1, i64({2}));
       }},
      {"[gather] index shape [3, 1] is larger than input shape [2, 3] outside dimension 1",
       [] {
         gather(f32({2, 3}), 1, i64({3, 1}));
       }},
      {"[scatter] index shape [2, 4] is larger than src shape [2, 3]",
       [] {
         scatter(f32({2, 5}), 1, i64({2, 4}), f32({2, 3}));
       }},
      {"[scatter] src must have the input's rank: input [2, 3], src [3]",
       [] {
         scatter(f32({2, 3}), 1, i64({2, 1}), f32({3}));
       }},
      {"[scatter_add] index 7 is out of bounds for dimension 0 with size 2",
       [] {
         scatter_add(f32({2, 3}), 0, full(Shape{1, 3}, 7, DType::i64), f32({1, 3}));
       }},
      {"[index_select] index must be 0-d or 1-D, got shape [1, 2]",
       [] {
         index_select(f32({2, 3}), 0, i64({1, 2}));
       }},
      {"[index_select] index 5 is out of bounds for dimension 1 with size 3",
       [] {
         index_select(f32({2, 3}), 1, full(Shape{1}, 5, DType::i64));
       }},
      {"[index_add] index must be 0-d or 1-D, got shape [1, 2]",
       [] {
         index_add(f32({2, 3}), 0, i64({1, 2}), f32({2, 3}));
       }},
      {"[index_add] src shape [2, 3] should be [1, 3] for input [2, 3] and 1 indices",
       [] {
         index_add(f32({2, 3}), 0, i64({1}), f32({2, 3}));
       }},
      {"[masked_fill] mask must be bool, got float32",
       [] {
         masked_fill(f32({2, 3}), f32({2, 3}), 0);
       }},
      {"[masked_fill] mask shape [4, 2, 3] must broadcast to the input shape [2, 3]",
       [] {
         masked_fill(f32({2, 3}), b8({4, 2, 3}), 0);
       }},
      {"[masked_select] mask must be bool, got int64",
       [] {
         masked_select(f32({2, 3}), i64({2, 3}));
       }},
      {"[one_hot] expects an Int tensor, got float32", [] { one_hot(f32({3})); }},
      {"[one_hot] cannot infer the number of classes of an empty tensor",
       [] { one_hot(i64({0})); }},
      {"[one_hot] class values must be in [0, 2), got 2",
       [] { one_hot(full(Shape{2}, 2, DType::i64), 2); }},
      {"[slice] 3 slices given for a tensor of shape [2, 3]",
       [] {
         slice(f32({2, 3}), std::vector<Slice>{{}, {}, {}});
       }},
      {"[slice_assign] value shape [3, 3] does not broadcast to the region's shape [2, 3]",
       [] {
         slice_assign(f32({2, 3}), {{0, 2}}, f32({3, 3}));
       }},
  };
  // clang-format on
  for (const ErrorRow& row : rows) expect_error(row);
}

}  // namespace
}  // namespace ember::test
