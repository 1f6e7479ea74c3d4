// Reference models: the Fashion-MNIST CNN and ResNet-18/50 build with PyTorch's (torchvision's)
// parameter names and counts, and run forward and backward on the Cpu backend.
#include <gtest/gtest.h>

#include <ember/ember.hpp>
#include <ember/models/fashion_cnn.hpp>
#include <ember/models/resnet.hpp>

using namespace ember;

namespace {

size_t count_tensors(const nn::ModuleTree& tree) { return nn::named_tensors(tree).size(); }

// Every parameter got a gradient of its own shape.
template <class M>
void expect_all_gradients(const M& model, const Gradients& grads) {
  for (const auto& p : nn::named_params(nn::module_tree(model))) {
    ASSERT_TRUE(grads.contains(p.slot->dyn())) << p.path;
    EXPECT_EQ(grads.get(p.slot->dyn()).shape(), p.slot->dyn().shape()) << p.path;
  }
}

}  // namespace

TEST(Models, FashionCnnForwardBackward) {
  Generator gen(1);
  models::FashionCnn cnn(Device::cpu(), &gen);
  EXPECT_EQ(cnn.num_params(), 320 + 18496 + 204928 + 1290);
  auto x = Tensor<4>::randn({4, 1, 28, 28}, Device::cpu(), &gen);
  auto logits = cnn(x);
  EXPECT_EQ(logits.shape(), Shape({4, 10}));
  auto target = Tensor<1, Int>::from_vector<int64_t>({3, 1, 4, 1});
  auto loss = -logits.log_softmax(1).gather(1, target.unsqueeze(1)).mean();
  expect_all_gradients(cnn, loss.backward());
}

TEST(Models, ResNet18NamesCountsForwardBackward) {
  Generator gen(2);
  models::ResNet net(models::ResNetConfig::resnet18(), Device::cpu(), &gen);
  EXPECT_EQ(net.num_params(), 11689512);  // torchvision.models.resnet18()
  const nn::ModuleTree tree = nn::module_tree(net);
  EXPECT_EQ(count_tensors(tree), 122u);  // len(resnet18().state_dict())
  EXPECT_EQ(nn::named_params(tree).size(), 62u);
  std::vector<std::string> paths;
  for (const auto& t : nn::named_tensors(tree)) paths.push_back(t.path);
  for (const char* p :
       {"conv1.weight", "bn1.running_var", "layer1.0.conv1.weight", "layer2.0.downsample.0.weight",
        "layer2.0.downsample.1.num_batches_tracked", "layer4.1.bn2.bias", "fc.weight", "fc.bias"}) {
    EXPECT_NE(std::find(paths.begin(), paths.end(), p), paths.end()) << p;
  }
  EXPECT_EQ(net.layer3[0].downsample->get<0>().weight.shape(), Shape({256, 128, 1, 1}));

  models::ResNet small(models::ResNetConfig::resnet18().classes(10), Device::cpu(), &gen);
  auto x = Tensor<4>::randn({2, 3, 64, 64}, Device::cpu(), &gen);
  auto logits = small(x);
  EXPECT_EQ(logits.shape(), Shape({2, 10}));
  expect_all_gradients(small, logits.sum().backward());
  // Evaluation mode uses (and training updated) the running statistics.
  EXPECT_EQ(small.bn1.num_batches_tracked->value().item<int64_t>(), 1);
  small.eval();
  EXPECT_FALSE(small.valid()(x).requires_grad());
}

TEST(Models, ResNet50NamesCountsForwardBackward) {
  Generator gen(3);
  models::ResNet net(models::ResNetConfig::resnet50(), Device::cpu(), &gen);
  EXPECT_EQ(net.num_params(), 25557032);  // torchvision.models.resnet50()
  EXPECT_EQ(count_tensors(nn::module_tree(net)), 320u);
  EXPECT_EQ(net.layer1[0].conv3->weight.shape(), Shape({256, 64, 1, 1}));
  auto x = Tensor<4>::randn({1, 3, 64, 64}, Device::cpu(), &gen);
  auto logits = net(x);
  EXPECT_EQ(logits.shape(), Shape({1, 1000}));
  expect_all_gradients(net, logits.sum().backward());
}
