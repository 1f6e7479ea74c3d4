// The Ember half of pytorch_roundtrip.py: loads torchvision's resnet18 state dict (torch.save)
// into Ember's ResNet-18 with no renaming and compares the outputs, then saves a fresh Ember
// ResNet-18 and its output for torchvision to load. Usage: pytorch_roundtrip <scratch dir>
#include <cmath>
#include <cstdio>
#include <exception>

#include "ember/io/pytorch.hpp"
#include "ember/io/safetensors.hpp"
#include "ember/models/resnet.hpp"
#include "ember/nn/serialize.hpp"
#include "ember/tensor/tensor.hpp"

using namespace ember;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <scratch dir>\n", argv[0]);
    return 2;
  }
  try {
    const std::string dir = argv[1];
    const auto config = models::ResNetConfig::resnet18().classes(10);
    models::ResNet net(config);
    const nn::LoadReport report = load_pytorch(net, dir + "/resnet18.pt");  // strict
    const io::PytorchFile io = io::load_pytorch(dir + "/resnet18_io.pt");
    const Tensor<4> x(io.tensor("input"));
    const DynTensor got = net.valid()(x).dyn();
    const double diff = max(abs(sub(got, io.tensor("output")))).item<double>();
    std::printf("Ember with torchvision's weights (%zu tensors): max abs difference %.3g\n",
                report.loaded.size(), diff);
    if (!(diff < 1e-4)) return 1;

    Generator gen(16);
    models::ResNet fresh(config, default_device(), &gen);
    save(fresh, dir + "/ember_resnet18.safetensors");
    io::save_safetensors({{"output", fresh.valid()(x).dyn()}},
                         dir + "/ember_resnet18_io.safetensors");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pytorch_roundtrip: %s\n", e.what());
    return 1;
  }
}
