// Every expected string here was produced by PyTorch 2.15 (repr(t) with default print options
// unless a test sets others), so these tests pin Ember's printing to PyTorch's, character for
// character.
#include <gtest/gtest.h>

#include <limits>
#include <sstream>
#include <vector>

#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/print.hpp"

namespace ember {
namespace {

template <class T>
std::string print(const std::vector<T>& values, const Shape& shape) {
  std::ostringstream os;
  os << from_data(TensorData::from(values, shape), Device::cpu());
  return os.str();
}

// Restores the default options when a test that changes them ends, even on failure.
struct OptionsGuard {
  PrintOptions saved = print_options();
  ~OptionsGuard() { set_print_options(saved); }
};

const double kNan = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

TEST(Print, TypedTensor) {
  auto a = Tensor<2>::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  std::ostringstream os;
  os << a;
  EXPECT_EQ(os.str(),
            "tensor([[1., 2., 3.],\n"
            "        [4., 5., 6.]])");
  EXPECT_EQ(to_string(a), os.str());
}

TEST(Print, Ints) {
  EXPECT_EQ(print(std::vector<int64_t>{1, -22, 333}, {3}), "tensor([  1, -22, 333])");
  EXPECT_EQ(print(std::vector<int32_t>{1, 2, 300}, {3}),
            "tensor([  1,   2, 300], dtype=torch.int32)");
  EXPECT_EQ(print(std::vector<uint8_t>{0, 255}, {2}), "tensor([  0, 255], dtype=torch.uint8)");
}

TEST(Print, FloatsWithDecimals) {
  EXPECT_EQ(print(std::vector<float>{0.12345f, -1.5f, 2.25f}, {3}),
            "tensor([ 0.1235, -1.5000,  2.2500])");
}

TEST(Print, IntegerValuedFloats) {
  EXPECT_EQ(print(std::vector<float>{1, -2, 3}, {3}), "tensor([ 1., -2.,  3.])");
  EXPECT_EQ(print(std::vector<float>{1, 2, 3, 4}, {2, 2}),
            "tensor([[1., 2.],\n"
            "        [3., 4.]])");
}

TEST(Print, Scientific) {
  EXPECT_EQ(print(std::vector<float>{123456.789f, 0.5f, 3.0f}, {3}),
            "tensor([1.2346e+05, 5.0000e-01, 3.0000e+00])");
  EXPECT_EQ(print(std::vector<float>{1e-5f, 2.0f}, {2}), "tensor([1.0000e-05, 2.0000e+00])");
}

TEST(Print, NanAndInf) {
  // Non-finite values and zeros never widen the column or change the mode.
  EXPECT_EQ(print(std::vector<double>{kNan, kInf, -kInf, 1.5, 0.0}, {5}),
            "tensor([   nan,    inf,   -inf, 1.5000, 0.0000], dtype=torch.float64)");
  EXPECT_EQ(
      print(std::vector<float>{static_cast<float>(kNan), 1.0f, static_cast<float>(-kInf)}, {3}),
      "tensor([nan, 1., -inf])");
}

TEST(Print, Bool) {
  EXPECT_EQ(print(std::vector<bool>{true, false, true}, {3}), "tensor([ True, False,  True])");
}

TEST(Print, DTypeSuffixes) {
  EXPECT_EQ(print(std::vector<double>{1.5, 2.0}, {2}),
            "tensor([1.5000, 2.0000], dtype=torch.float64)");
  EXPECT_EQ(print(std::vector<Half>{0.1f, 2.0f, 3.3f}, {3}),
            "tensor([0.1000, 2.0000, 3.3008], dtype=torch.float16)");
  EXPECT_EQ(print(std::vector<BFloat16>{0.1f, 2.0f, 3.3f}, {3}),
            "tensor([0.1001, 2.0000, 3.2969], dtype=torch.bfloat16)");
}

TEST(Print, SuffixWrapsPastLinewidth) {
  std::vector<int32_t> v(14);
  for (int i = 0; i < 14; ++i) v[i] = i;
  EXPECT_EQ(print(v, {14}),
            "tensor([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13],\n"
            "       dtype=torch.int32)");
}

TEST(Print, Scalars) {
  EXPECT_EQ(print(std::vector<float>{3.5f}, {}), "tensor(3.5000)");
  EXPECT_EQ(print(std::vector<int64_t>{7}, {}), "tensor(7)");
  EXPECT_EQ(print(std::vector<double>{-2.0}, {}), "tensor(-2., dtype=torch.float64)");
  EXPECT_EQ(print(std::vector<bool>{true}, {}), "tensor(True)");
}

TEST(Print, Empty) {
  EXPECT_EQ(print(std::vector<float>{}, {0}), "tensor([])");
  // With no elements to infer the kind from, int64 is named too.
  EXPECT_EQ(print(std::vector<int64_t>{}, {0}), "tensor([], dtype=torch.int64)");
  EXPECT_EQ(print(std::vector<float>{}, {0, 3}), "tensor([], size=(0, 3))");
}

TEST(Print, Rank3HasBlankLinesBetweenBlocks) {
  std::vector<float> v(24);
  for (int i = 0; i < 24; ++i) v[i] = static_cast<float>(i);
  EXPECT_EQ(print(v, {2, 3, 4}),
            "tensor([[[ 0.,  1.,  2.,  3.],\n"
            "         [ 4.,  5.,  6.,  7.],\n"
            "         [ 8.,  9., 10., 11.]],\n"
            "\n"
            "        [[12., 13., 14., 15.],\n"
            "         [16., 17., 18., 19.],\n"
            "         [20., 21., 22., 23.]]])");
}

TEST(Print, Summarised1D) {
  // Only the shown elements pick the format: 0 and 1999 force scientific notation.
  std::vector<float> v(2000);
  for (int i = 0; i < 2000; ++i) v[i] = static_cast<float>(i);
  EXPECT_EQ(print(v, {2000}),
            "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n"
            "        1.9990e+03])");
}

TEST(Print, Summarised2D) {
  std::vector<float> v(2000);
  for (int i = 0; i < 2000; ++i) v[i] = static_cast<float>(i) / 7.0f;
  EXPECT_EQ(print(v, {40, 50}),
            "tensor([[0.0000e+00, 1.4286e-01, 2.8571e-01,  ..., 6.7143e+00, 6.8571e+00,\n"
            "         7.0000e+00],\n"
            "        [7.1429e+00, 7.2857e+00, 7.4286e+00,  ..., 1.3857e+01, 1.4000e+01,\n"
            "         1.4143e+01],\n"
            "        [1.4286e+01, 1.4429e+01, 1.4571e+01,  ..., 2.1000e+01, 2.1143e+01,\n"
            "         2.1286e+01],\n"
            "        ...,\n"
            "        [2.6429e+02, 2.6443e+02, 2.6457e+02,  ..., 2.7100e+02, 2.7114e+02,\n"
            "         2.7129e+02],\n"
            "        [2.7143e+02, 2.7157e+02, 2.7171e+02,  ..., 2.7814e+02, 2.7829e+02,\n"
            "         2.7843e+02],\n"
            "        [2.7857e+02, 2.7871e+02, 2.7886e+02,  ..., 2.8529e+02, 2.8543e+02,\n"
            "         2.8557e+02]])");
}

TEST(Print, LongRowWraps) {
  std::vector<float> v(40);
  for (int i = 0; i < 40; ++i) v[i] = static_cast<float>(i) / 3.0f;
  EXPECT_EQ(print(v, {40}),
            "tensor([ 0.0000,  0.3333,  0.6667,  1.0000,  1.3333,  1.6667,  2.0000,  2.3333,\n"
            "         2.6667,  3.0000,  3.3333,  3.6667,  4.0000,  4.3333,  4.6667,  5.0000,\n"
            "         5.3333,  5.6667,  6.0000,  6.3333,  6.6667,  7.0000,  7.3333,  7.6667,\n"
            "         8.0000,  8.3333,  8.6667,  9.0000,  9.3333,  9.6667, 10.0000, 10.3333,\n"
            "        10.6667, 11.0000, 11.3333, 11.6667, 12.0000, 12.3333, 12.6667, 13.0000])");
  std::vector<double> w(12);
  for (int i = 0; i < 12; ++i) w[i] = i / 3.0;
  EXPECT_EQ(print(w, {12}),
            "tensor([0.0000, 0.3333, 0.6667, 1.0000, 1.3333, 1.6667, 2.0000, 2.3333, 2.6667,\n"
            "        3.0000, 3.3333, 3.6667], dtype=torch.float64)");
}

TEST(Print, Options) {
  OptionsGuard guard;
  PrintOptions o;
  o.precision = 2;
  set_print_options(o);
  EXPECT_EQ(print(std::vector<float>{1.12345f, 2.5f}, {2}), "tensor([1.12, 2.50])");

  o = PrintOptions{};
  o.threshold = 5;
  o.edgeitems = 1;
  set_print_options(o);
  std::vector<int64_t> v(100);
  for (int i = 0; i < 100; ++i) v[i] = i;
  EXPECT_EQ(print(v, {10, 10}),
            "tensor([[ 0,  ...,  9],\n"
            "        ...,\n"
            "        [90,  ..., 99]])");

  o = PrintOptions{};
  o.linewidth = 40;
  set_print_options(o);
  std::vector<float> w(12);
  for (int i = 0; i < 12; ++i) w[i] = static_cast<float>(i);
  EXPECT_EQ(print(w, {12}),
            "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,\n"
            "         6.,  7.,  8.,  9., 10., 11.])");
}

TEST(Print, DeviceSuffix) {
  // Built through the formatting core: a Cuda tensor needs a Cuda build.
  const TensorData data = TensorData::from(std::vector<float>{1, 2}, Shape{2});
  EXPECT_EQ(detail::format_tensor_data(data, Device{DeviceType::Cuda, 0}, PrintOptions{}),
            "tensor([1., 2.], device='cuda:0')");
}

TEST(Print, DefaultFloatDTypeIsTheOneLeftUnnamed) {
  set_default_float_dtype(DType::f64);
  const std::string f32 = print(std::vector<float>{1.5f}, {1});
  const std::string f64 = print(std::vector<double>{1.5}, {1});
  const std::string empty32 = print(std::vector<float>{}, {0});
  set_default_float_dtype(DType::f32);
  EXPECT_EQ(f32, "tensor([1.5000], dtype=torch.float32)");
  EXPECT_EQ(f64, "tensor([1.5000])");
  EXPECT_EQ(empty32, "tensor([], dtype=torch.float32)");
}

}  // namespace
}  // namespace ember
