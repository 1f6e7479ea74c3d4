#include "ember/models/fashion_cnn.hpp"

#include "ember/tensor/conv_ops.hpp"

namespace ember::models {

FashionCnn::FashionCnn(Device device, Generator* gen, int64_t num_classes)
    : conv1(nn::Conv2dConfig(1, 32, {3}).relu(true), device, gen),
      conv2(nn::Conv2dConfig(32, 64, {3}).relu(true), device, gen),
      fc1(nn::LinearConfig(64 * 5 * 5, 128), device, gen),
      fc2(nn::LinearConfig(128, num_classes), device, gen) {}

Tensor<2> FashionCnn::forward(const Tensor<4>& x) const {
  // The convolutions apply their ReLU in the same pass (ConvConfig::relu).
  const Tensor<4> h1 = max_pool2d(conv1(x), {2});   // [N, 32, 13, 13]
  const Tensor<4> h2 = max_pool2d(conv2(h1), {2});  // [N, 64, 5, 5]
  return fc2(relu(fc1(h2.flatten<2>(1))));
}

FashionCnnInt8::FashionCnnInt8(Device device, int64_t num_classes)
    : conv1(nn::Conv2dConfig(1, 32, {3}).relu(true), device),
      conv2(nn::Conv2dConfig(32, 64, {3}).relu(true), device),
      fc1(64 * 5 * 5, 128, true, device),
      fc2(128, num_classes, true, device) {}

FashionCnnInt8::FashionCnnInt8(const FashionCnn& model)
    : conv1(model.conv1), conv2(model.conv2), fc1(model.fc1), fc2(model.fc2) {}

Tensor<2> FashionCnnInt8::forward(const Tensor<4>& x) const {
  const Tensor<4> h1 = max_pool2d(conv1(x), {2});
  const Tensor<4> h2 = max_pool2d(conv2(h1), {2});
  return fc2(relu(fc1(h2.flatten<2>(1))));
}

}  // namespace ember::models
