// ResNet-18/34/50/101 (He et al. 2016) with torchvision's parameter names (conv1, bn1,
// layer1.0.conv1, layer2.0.downsample.0, fc, ...), layouts and initialisation, so that a
// torchvision state dict saved as safetensors loads by name.
#pragma once

#include <vector>

#include "ember/nn/conv.hpp"
#include "ember/nn/linear.hpp"
#include "ember/nn/norm.hpp"
#include "ember/nn/sequential.hpp"

namespace ember::models {

/// torchvision's BasicBlock (two 3x3 convs) or Bottleneck (1x1, 3x3, 1x1 with 4x expansion):
/// conv3/bn3 exist only in bottlenecks, downsample only where the shape changes.
struct ResidualBlock {
  nn::Conv2d conv1;
  nn::BatchNorm2d bn1;
  nn::Conv2d conv2;
  nn::BatchNorm2d bn2;
  std::optional<nn::Conv2d> conv3;
  std::optional<nn::BatchNorm2d> bn3;
  std::optional<nn::Sequential<nn::Conv2d, nn::BatchNorm2d>> downsample;
  EMBER_MODULE(ResidualBlock, conv1, bn1, conv2, bn2, conv3, bn3, downsample)

  ResidualBlock(bool bottleneck, int64_t in_planes, int64_t planes, int64_t stride, Device device,
                Generator* gen);
  Tensor<4> forward(const Tensor<4>& x) const;
  Tensor<4> operator()(const Tensor<4>& x) const { return forward(x); }
};

struct ResNetConfig {
  bool bottleneck = false;
  std::vector<int64_t> blocks = {2, 2, 2, 2};
  int64_t num_classes = 1000;

  static ResNetConfig resnet18() { return {false, {2, 2, 2, 2}, 1000}; }
  static ResNetConfig resnet34() { return {false, {3, 4, 6, 3}, 1000}; }
  static ResNetConfig resnet50() { return {true, {3, 4, 6, 3}, 1000}; }
  static ResNetConfig resnet101() { return {true, {3, 4, 23, 3}, 1000}; }
  ResNetConfig& classes(int64_t n) {
    num_classes = n;
    return *this;
  }
};

struct ResNet {
  nn::Conv2d conv1;
  nn::BatchNorm2d bn1;
  std::vector<ResidualBlock> layer1, layer2, layer3, layer4;
  nn::Linear fc;
  EMBER_MODULE(ResNet, conv1, bn1, layer1, layer2, layer3, layer4, fc)

  explicit ResNet(const ResNetConfig& config, Device device = default_device(),
                  Generator* gen = nullptr);
  /// x [N, 3, H, W] -> logits [N, num_classes].
  Tensor<2> forward(const Tensor<4>& x) const;
  Tensor<2> operator()(const Tensor<4>& x) const { return forward(x); }
};

}  // namespace ember::models
