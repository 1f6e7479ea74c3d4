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

}  // namespace ember::models
