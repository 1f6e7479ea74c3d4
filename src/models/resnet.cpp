#include "ember/models/resnet.hpp"

#include "ember/core/error.hpp"
#include "ember/nn/init.hpp"
#include "ember/tensor/conv_ops.hpp"

namespace ember::models {
namespace {

// torchvision's initialisation: convs kaiming_normal_(mode = fan_out, relu), no conv bias.
nn::Conv2d conv(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t pad, Device device,
                Generator* gen) {
  nn::Conv2d c(nn::Conv2dConfig(in, out, {k}).stride({stride}).padding({pad}).bias(false), device,
               gen);
  c.weight.set_dyn(nn::init::kaiming_normal(c.weight.shape(), DType::f32, device, gen, 0.0,
                                            nn::init::FanMode::FanOut,
                                            nn::init::Nonlinearity::Relu));
  return c;
}

nn::BatchNorm2d bn(int64_t channels, Device device) {
  return nn::BatchNorm2d(nn::BatchNormConfig(channels), device);
}

}  // namespace

ResidualBlock::ResidualBlock(bool bottleneck, int64_t in_planes, int64_t planes, int64_t stride,
                             Device device, Generator* gen)
    : conv1(bottleneck ? conv(in_planes, planes, 1, 1, 0, device, gen)
                       : conv(in_planes, planes, 3, stride, 1, device, gen)),
      bn1(bn(planes, device)),
      conv2(bottleneck ? conv(planes, planes, 3, stride, 1, device, gen)
                       : conv(planes, planes, 3, 1, 1, device, gen)),
      bn2(bn(planes, device)) {
  const int64_t out_planes = bottleneck ? planes * 4 : planes;
  if (bottleneck) {
    conv3 = conv(planes, out_planes, 1, 1, 0, device, gen);
    bn3 = bn(out_planes, device);
  }
  if (stride != 1 || in_planes != out_planes) {
    downsample.emplace(conv(in_planes, out_planes, 1, stride, 0, device, gen),
                       bn(out_planes, device));
  }
}

Tensor<4> ResidualBlock::forward(const Tensor<4>& x) const {
  Tensor<4> out = relu(bn1(conv1(x)));
  out = bn2(conv2(out));
  if (conv3) out = (*bn3)((*conv3)(relu(out)));
  const Tensor<4> identity = downsample ? (*downsample)(x) : x;
  return relu(out + identity);
}

ResNet::ResNet(const ResNetConfig& config, Device device, Generator* gen)
    : conv1(conv(3, 64, 7, 2, 3, device, gen)),
      bn1(bn(64, device)),
      fc(nn::LinearConfig((config.bottleneck ? 4 : 1) * 512, config.num_classes), device, gen) {
  EMBER_CHECK(config.blocks.size() == 4, "[ResNet] needs 4 stage sizes, got ",
              config.blocks.size());
  int64_t in_planes = 64;
  std::vector<ResidualBlock>* stages[] = {&layer1, &layer2, &layer3, &layer4};
  for (int s = 0; s < 4; ++s) {
    const int64_t planes = int64_t{64} << s;
    for (int64_t b = 0; b < config.blocks[static_cast<size_t>(s)]; ++b) {
      const int64_t stride = (b == 0 && s > 0) ? 2 : 1;
      stages[s]->emplace_back(config.bottleneck, in_planes, planes, stride, device, gen);
      in_planes = config.bottleneck ? planes * 4 : planes;
    }
  }
}

Tensor<2> ResNet::forward(const Tensor<4>& x) const {
  Tensor<4> h = max_pool2d(relu(bn1(conv1(x))), {3}, {2}, {1});
  for (const auto* stage : {&layer1, &layer2, &layer3, &layer4}) {
    for (const ResidualBlock& block : *stage) h = block(h);
  }
  return fc(adaptive_avg_pool2d(h, {1}).flatten<2>(1));
}

}  // namespace ember::models
