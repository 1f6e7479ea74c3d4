// DESIGN.md's first program, as written.
#include <gtest/gtest.h>

#include <ember/ember.hpp>
#include <sstream>

using namespace ember;

TEST(UserView, FirstProgramRunsAsWritten) {
  Device dev = Device::cpu();
  auto x = Tensor<2>::randn({64, 784}, dev);
  auto w = Tensor<2>::zeros({784, 10}, dev).require_grad();
  auto loss = relu(matmul(x, w) + 1.0f).mean();
  Gradients grads = loss.backward();
  Tensor<2> gw = w.grad(grads);               // gradients come back in a container, as in Burn
  EXPECT_FLOAT_EQ(loss.item<float>(), 1.0f);  // w = 0, so relu(0 + 1) = 1 everywhere

  auto a = Tensor<2>::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}, dev);
  auto [rows, cols] = a.dims();
  EXPECT_EQ(rows, 2);
  EXPECT_EQ(cols, 3);
  float total = a.sum().item<float>();
  EXPECT_EQ(total, 21.0f);
  std::vector<float> flat = gw.to_vector<float>();
  EXPECT_EQ(flat.size(), 7840u);
  std::ostringstream os;
  os << a << "\n";
  EXPECT_EQ(os.str(), "tensor([[1., 2., 3.],\n        [4., 5., 6.]])\n");
}

TEST(UserView, CompileTimeRanksAndKinds) {
  auto a = Tensor<2>::ones({2, 3});
  static_assert(std::is_same_v<decltype(a.sum()), Tensor<0>>);
  static_assert(std::is_same_v<decltype(a.sum(1)), Tensor<1>>);
  static_assert(std::is_same_v<decltype(a.sum(1, keepdim)), Tensor<2>>);
  static_assert(std::is_same_v<decltype(a > 1.0f), Tensor<2, Bool>>);
  static_assert(std::is_same_v<decltype(a.argmax(1)), Tensor<1, Int>>);
  static_assert(std::is_same_v<decltype(a.reshape({3, 2, 1})), Tensor<3>>);
  static_assert(std::is_same_v<decltype(a.unsqueeze(0)), Tensor<3>>);
  static_assert(std::is_same_v<decltype(a + Tensor<1>::ones({3})), Tensor<2>>);
  static_assert(std::is_same_v<decltype(matmul(a, Tensor<1>::ones({3}))), Tensor<1>>);
  static_assert(std::is_same_v<decltype(Tensor<1, Int>::arange(4) / Tensor<1, Int>::arange(4)),
                               Tensor<1>>);  // true division gives Float
  // Run-time checks guard conversions from the rank-erased tensor.
  EXPECT_THROW(Tensor<3>(a.dyn()), Error);
  EXPECT_THROW((Tensor<2, Int>(a.dyn())), Error);
  EXPECT_EQ(a.to<Int>().dtype(), DType::i64);
  EXPECT_EQ(a.to(DType::f64).dtype(), DType::f64);
}

// The rank-erased tensor has Tensor<D, K>'s operators (issue 14's ergonomics): each is its named
// op, with tensors or numbers on either side.
TEST(UserView, DynTensorHasTheOperatorsOfTensor) {
  const DynTensor a = from_data(TensorData::from(std::vector<float>{1, -2, 3}, Shape{3}));
  const DynTensor b = from_data(TensorData::from(std::vector<float>{4, 5, -6}, Shape{3}));
  EXPECT_EQ((a + b).to_vector<float>(), (std::vector<float>{5, 3, -3}));
  EXPECT_EQ((a - 1.0).to_vector<float>(), (std::vector<float>{0, -3, 2}));
  EXPECT_EQ((2.0 * a).to_vector<float>(), (std::vector<float>{2, -4, 6}));
  EXPECT_EQ((b / a).to_vector<float>(), (std::vector<float>{4, -2.5, -2}));
  EXPECT_EQ((-a).to_vector<float>(), (std::vector<float>{-1, 2, -3}));
  EXPECT_EQ((a < b).to_vector<bool>(), (std::vector<bool>{true, true, false}));
  EXPECT_EQ((a == 3.0).dtype(), DType::boolean);
  const DynTensor i = from_data(TensorData::from(std::vector<int64_t>{6, 3, 12}, Shape{3}));
  EXPECT_EQ((i & 5).to_vector<int64_t>(), (std::vector<int64_t>{4, 1, 4}));
  EXPECT_EQ((i << 1).to_vector<int64_t>(), (std::vector<int64_t>{12, 6, 24}));
  EXPECT_EQ((~(a > 0.0)).to_vector<bool>(), (std::vector<bool>{false, true, false}));
}
