// Int8 layers (nn/quantized.hpp) on every device: the quantisers' bounds, and each layer against
// the float64 arithmetic of the same int8 values (integer sums, rescale, padding, stride, ReLU),
// then against the float layer it came from. The accuracy on real data: train/fashion_test.cpp.
#include <gtest/gtest.h>

#include <ember/ember.hpp>
#include <ember/models/fashion_cnn.hpp>
#include <ember/nn/quantized.hpp>
#include <filesystem>

using namespace ember;

namespace {

double max_abs(const DynTensor& t) { return amax(abs(cast(t, DType::f64))).item<double>(); }

TEST(Quantized, PerChannelWeightsStayWithinHalfAStep) {
  manual_seed(3);
  DynTensor w = randn(Shape{6, 3, 3, 3}, DType::f32) * 0.2;
  w = cat({w, zeros(Shape{1, 3, 3, 3}, DType::f32)}, 0);  // an all-zero channel: scale 1
  const auto [q, scale] = nn::quantize_per_channel(w);
  ASSERT_EQ(q.dtype(), DType::i8);
  ASSERT_EQ(scale.shape(), Shape{7});
  const DynTensor q64 = cast(q, DType::f64),
                  s64 = reshape(cast(scale, DType::f64), Shape{7, 1, 1, 1});
  const DynTensor w64 = cast(w, DType::f64);
  EXPECT_LE(max_abs(q64), 127.0);
  // Each channel's largest |w| maps to exactly 127; every value to within half a step.
  const DynTensor per_channel_max = amax(abs(q64), {1, 2, 3});
  EXPECT_TRUE(equal(slice(per_channel_max, 0, 0, 6), full(Shape{6}, 127.0, DType::f64)));
  EXPECT_LE(max_abs((w64 - q64 * s64) / s64), 0.5 + 1e-5);
  EXPECT_EQ(scale.to_vector<float>()[6], 1.0f);
}

TEST(Quantized, PerTensorInputsMapTheirLargestValueTo127) {
  manual_seed(4);
  const DynTensor x = randn(Shape{4, 9}, DType::f32) * 3.0;
  const auto [q, scale] = nn::quantize_per_tensor(x);
  EXPECT_EQ(max_abs(q), 127.0);
  EXPECT_NEAR(scale.item<double>(), max_abs(x) / 127.0, 1e-7);
  EXPECT_LE(max_abs((cast(x, DType::f64) - cast(q, DType::f64) * scale.item<double>())),
            scale.item<double>() / 2 + 1e-6);
  const auto [zq, zscale] = nn::quantize_per_tensor(zeros(Shape{3}, DType::f32));
  EXPECT_EQ(max_abs(zq), 0.0);
  EXPECT_GT(zscale.item<double>(), 0.0);
}

// The float64 value of what an int8 layer computes: the dequantized operands through the float
// op, so integer sums, rescale, padding and ReLU are all checked.
DynTensor dequantized(const DynTensor& q, const DynTensor& scale, int64_t dim) {
  Shape s(std::vector<int64_t>(static_cast<size_t>(q.rank()), 1));
  s[static_cast<int>(dim)] = scale.numel();
  return cast(q, DType::f64) * reshape(cast(scale, DType::f64), s);
}

TEST(Quantized, Int8LinearIsItsInt8ArithmeticAndCloseToTheFloatLayer) {
  manual_seed(5);
  const nn::Linear fp(40, 12);
  const nn::Int8Linear q(fp);
  const DynTensor x = randn(Shape{2, 3, 40}, DType::f32);
  const DynTensor y = q.forward(x);
  ASSERT_EQ(y.shape(), (Shape{2, 3, 12}));
  ASSERT_EQ(y.dtype(), DType::f32);
  const auto [xq, xs] = nn::quantize_per_row(reshape(x, Shape{6, 40}));  // a scale per row
  const DynTensor want = nn::linear(reshape(dequantized(xq, xs, 0), Shape{2, 3, 40}),
                                    dequantized(q.weight.dyn(), q.weight_scale.dyn(), 0),
                                    cast(q.bias->dyn(), DType::f64));
  EXPECT_LE(max_abs(cast(y, DType::f64) - want), 1e-5 * (1 + max_abs(want)));
  const DynTensor reference = fp.forward(x);
  EXPECT_LE(max_abs(y - reference), 0.02 * max_abs(reference));
}

TEST(Quantized, Int8Conv2dIsItsInt8ArithmeticAndCloseToTheFloatLayer) {
  manual_seed(6);
  for (bool relu : {false, true}) {
    const nn::Conv2d fp(nn::Conv2dConfig(3, 5, {3, 2}).stride({2, 1}).padding({1, 0}).relu(relu));
    const nn::Int8Conv2d q(fp);
    const DynTensor x = randn(Shape{2, 3, 9, 7}, DType::f32);
    const DynTensor y = q.forward(x);
    const DynTensor reference = fp.forward(x);
    ASSERT_EQ(y.shape(), reference.shape());
    const auto [xq, xs] = nn::quantize_per_row(x);  // a scale per image
    DynTensor want =
        conv2d(dequantized(xq, xs, 0), dequantized(q.weight.dyn(), q.weight_scale.dyn(), 0),
               cast(q.bias->dyn(), DType::f64), {2, 1}, {1, 0});
    if (relu) want = ember::relu(want);
    EXPECT_LE(max_abs(cast(y, DType::f64) - want), 1e-5 * (1 + max_abs(want))) << relu;
    EXPECT_LE(max_abs(y - reference), 0.02 * max_abs(reference)) << relu;
  }
}

// A scale per example: an answer is the same alone or batched with anything else, even an
// example of huge values that a scale over the whole batch would let swamp the others.
TEST(Quantized, AnExamplesAnswerDoesNotDependOnItsBatch) {
  manual_seed(8);
  const nn::Int8Linear linear(nn::Linear(20, 4));
  const nn::Int8Conv2d conv(nn::Conv2d(nn::Conv2dConfig(2, 3, {3}).padding({1})));
  const DynTensor row = randn(Shape{1, 20}, DType::f32);
  const DynTensor image = randn(Shape{1, 2, 6, 6}, DType::f32);
  const DynTensor rows = cat({row, randn(Shape{1, 20}, DType::f32) * 1e30}, 0);
  const DynTensor images = cat({image, randn(Shape{1, 2, 6, 6}, DType::f32) * 1e30}, 0);
  EXPECT_TRUE(equal(linear.forward(row), slice(linear.forward(rows), 0, 0, 1)));
  EXPECT_TRUE(equal(conv.forward(image), slice(conv.forward(images), 0, 0, 1)));
  const auto [q, scale] = nn::quantize_per_row(rows);
  EXPECT_EQ(scale.shape(), Shape{2});
  EXPECT_EQ(max_abs(slice(q, 0, 0, 1)), 127.0);
}

TEST(Quantized, ErrorsNameTheLayer) {
  try {
    nn::Int8Conv2d(nn::Conv2d(nn::Conv2dConfig(4, 4, {3}).groups(2)));
    FAIL() << "a grouped convolution was quantized";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[Int8Conv2d]"), std::string::npos) << e.what();
  }
  const nn::Int8Linear layer(8, 3);
  try {
    layer.forward(zeros(Shape{2, 7}, DType::f32));
    FAIL() << "a wrong input size was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[Int8Linear] expects [..., 8], got [2, 7]"),
              std::string::npos)
        << e.what();
  }
}

TEST(Quantized, Int8ModelsSaveAndLoadTheirInt8Weights) {
  manual_seed(7);
  const models::FashionCnn fp;
  const models::FashionCnnInt8 q(fp);
  const std::string path =
      (std::filesystem::temp_directory_path() / "ember_int8_model.safetensors").string();
  save(q, path);
  EXPECT_EQ(io::load_safetensors(path).dtype("fc1.weight"), DType::i8);
  models::FashionCnnInt8 loaded;
  EXPECT_TRUE(load(loaded, path).complete());
  const Tensor<4> x = Tensor<4>::randn({2, 1, 28, 28});
  EXPECT_TRUE(equal(q(x), loaded(x)));
  std::remove(path.c_str());
}

}  // namespace
