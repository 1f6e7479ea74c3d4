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
