// The small CNN for 28x28 grey images (Fashion-MNIST, MNIST) that the training job uses:
// conv 1->32 3x3, ReLU, 2x2 max-pool, conv 32->64 3x3, ReLU, 2x2 max-pool, linear 1600->128,
// ReLU, linear 128->10. Parameter names as the equivalent PyTorch module's fields.
#pragma once

#include "ember/nn/conv.hpp"
#include "ember/nn/linear.hpp"
#include "ember/nn/quantized.hpp"

namespace ember::models {

struct FashionCnn {
  nn::Conv2d conv1, conv2;
  nn::Linear fc1, fc2;
  EMBER_MODULE(FashionCnn, conv1, conv2, fc1, fc2)

  explicit FashionCnn(Device device = default_device(), Generator* gen = nullptr,
                      int64_t num_classes = 10);
  /// x [N, 1, 28, 28] -> logits [N, num_classes].
  Tensor<2> forward(const Tensor<4>& x) const;
  Tensor<2> operator()(const Tensor<4>& x) const { return forward(x); }
};

/// The same network with int8 weights (nn::Int8Conv2d, nn::Int8Linear): the names of FashionCnn
/// plus each layer's weight_scale. `ember quantize` writes its file from FashionCnn's.
struct FashionCnnInt8 {
  nn::Int8Conv2d conv1, conv2;
  nn::Int8Linear fc1, fc2;
  EMBER_MODULE(FashionCnnInt8, conv1, conv2, fc1, fc2)

  /// Zero weights, to load a quantized file into.
  explicit FashionCnnInt8(Device device = default_device(), int64_t num_classes = 10);
  /// Quantizes a trained FashionCnn.
  explicit FashionCnnInt8(const FashionCnn& model);
  /// x [N, 1, 28, 28] -> logits [N, num_classes] (f32).
  Tensor<2> forward(const Tensor<4>& x) const;
  Tensor<2> operator()(const Tensor<4>& x) const { return forward(x); }
};

}  // namespace ember::models
