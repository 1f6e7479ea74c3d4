// No hidden host synchronisation in a training step: forward, loss, backward and an optimizer
// step of the Fashion-MNIST CNN and of a small GPT-2 on the default device (Cpu, LibTorch) never
// wait for the device. A wait per step would stall an asynchronous device every batch.
#include <gtest/gtest.h>

#include <ember/ember.hpp>
#include <ember/models/fashion_cnn.hpp>
#include <ember/models/gpt2.hpp>
#include <ember/optim/optimizer.hpp>

#include "models/tiny_gpt2.hpp"

using namespace ember;

namespace {

// Host synchronisations of `steps` calls of `step` after a first one (which may set up state).
template <class F>
uint64_t syncs_per_steps(F&& step, int steps) {
  step();
  const uint64_t before = host_sync_count(default_device());
  for (int i = 0; i < steps; ++i) step();
  return host_sync_count(default_device()) - before;
}

}  // namespace

TEST(TrainStepSync, FashionCnnMakesNone) {
  Generator gen(1);
  models::FashionCnn model(default_device(), &gen);
  optim::Optimizer opt = optim::AdamConfig().lr(1e-3).init();
  const auto x = Tensor<4>::randn({8, 1, 28, 28}, default_device(), &gen);
  const auto y = Tensor<1, Int>::randint(0, 10, {8}, default_device(), &gen);
  auto step = [&] {
    const Tensor<0> loss = nn::cross_entropy(model(x), y);
    Gradients grads = loss.backward();
    opt.step(model, grads);
    grads = Gradients();  // Ember's zero_grad: the gradients are a value that is dropped
  };
  EXPECT_EQ(syncs_per_steps(step, 2), 0u);
}

TEST(TrainStepSync, Gpt2MakesNone) {
  const models::Gpt2Config cfg = test::tiny_gpt2_config();
  Generator gen(4);
  models::Gpt2 model(cfg, default_device(), &gen);
  optim::Optimizer opt = optim::AdamConfig().lr(1e-3).weight_decay(0.01).init();
  const auto ids = Tensor<2, Int>::randint(0, 50, {2, 8}, default_device(), &gen);
  const auto next = Tensor<2, Int>::randint(0, 50, {2, 8}, default_device(), &gen);
  auto step = [&] {
    const DynTensor logits = model(ids).dyn();
    const DynTensor loss =
        nn::cross_entropy(reshape(logits, Shape{16, 50}), reshape(next.dyn(), Shape{16}));
    Gradients grads = backward(loss);
    optim::ParamGrads g = optim::ParamGrads::from(model, grads);
    optim::clip_grad_norm(g, 1.0);
    opt.step(model, g);
  };
  EXPECT_EQ(syncs_per_steps(step, 2), 0u);
}
