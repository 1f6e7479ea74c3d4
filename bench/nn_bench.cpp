// Layers, forward + backward, on 1 and 2 threads (issue 4's benchmarks): a ResNet basic block
// (64 channels, 56x56, batch 8 and 32), a 2-layer LSTM (hidden 256, seq 64, batch 32) and a
// TransformerEncoderLayer (d 256, 4 heads, feedforward 1024, seq 128, batch 16, dropout 0, train
// mode). A step is the forward while recording, the sum of the output as the loss, and
// loss.backward(): the gradients of every parameter and of the input. LibTorch does the same in
// nn_torch.cpp (linked in when it is found).
#include <benchmark/benchmark.h>

#include <ember/ember.hpp>
#include <ember/nn/nn.hpp>

namespace {

using namespace ember;

// Every parameter of the module and the input must get a gradient: checked once, untimed.
template <class M>
bool has_all_grads(const M& module, const Gradients& grads, const DynTensor& x) {
  for (const auto& p : nn::named_params(nn::module_tree(module))) {
    if (!grads.contains(p.slot->dyn())) return false;
  }
  return grads.contains(x);
}

// torchvision's BasicBlock without downsampling: conv3x3 (no bias) + BatchNorm2d + ReLU, conv3x3
// + BatchNorm2d, the identity added, ReLU. Training mode (batch statistics).
struct BasicBlock {
  nn::Conv2d conv1, conv2;
  nn::BatchNorm2d bn1, bn2;
  EMBER_MODULE(BasicBlock, conv1, bn1, conv2, bn2)

  explicit BasicBlock(Generator* gen)
      : conv1(nn::Conv2dConfig(64, 64, {3, 3}).padding({1}).bias(false), Device::cpu(), gen),
        conv2(nn::Conv2dConfig(64, 64, {3, 3}).padding({1}).bias(false), Device::cpu(), gen),
        bn1(64),
        bn2(64) {}

  Tensor<4> forward(const Tensor<4>& x) const {
    const auto h = relu(bn1(conv1(x)));
    return relu(bn2(conv2(h)) + x);
  }
};

void BM_ember_resnet_block(benchmark::State& state) {
  const int64_t batch = state.range(0);
  cpu::set_num_threads(static_cast<int>(state.range(1)));
  Generator gen(1);
  const BasicBlock block(&gen);
  const auto x = Tensor<4>::randn({batch, 64, 56, 56}, Device::cpu(), &gen).require_grad();
  if (!has_all_grads(block, block.forward(x).sum().backward(), x.dyn())) {
    state.SkipWithError("missing gradients");
    return;
  }
  for (auto _ : state) {
    auto loss = block.forward(x).sum();
    Gradients grads = loss.backward();
    benchmark::DoNotOptimize(grads);
  }
  state.SetItemsProcessed(state.iterations() * batch);
}
BENCHMARK(BM_ember_resnet_block)
    ->ArgNames({"batch", "thr"})
    ->ArgsProduct({{8, 32}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_ember_lstm(benchmark::State& state) {
  const int64_t batch = state.range(0);
  cpu::set_num_threads(static_cast<int>(state.range(1)));
  Generator gen(1);
  const nn::LSTM lstm(nn::LSTMConfig(256, 256).layers(2), Device::cpu(), &gen);
  const auto x = Tensor<3>::randn({64, batch, 256}, Device::cpu(), &gen).require_grad();
  if (!has_all_grads(lstm, lstm(x).sum().backward(), x.dyn())) {
    state.SkipWithError("missing gradients");
    return;
  }
  for (auto _ : state) {
    auto loss = lstm(x).sum();
    Gradients grads = loss.backward();
    benchmark::DoNotOptimize(grads);
  }
  state.SetItemsProcessed(state.iterations() * batch);
}
BENCHMARK(BM_ember_lstm)
    ->ArgNames({"batch", "thr"})
    ->ArgsProduct({{32}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_ember_transformer_encoder(benchmark::State& state) {
  const int64_t batch = state.range(0);
  cpu::set_num_threads(static_cast<int>(state.range(1)));
  Generator gen(1);
  const nn::TransformerEncoderLayer layer(
      nn::TransformerEncoderLayerConfig(256, 4).feedforward(1024).dropout(0.0), Device::cpu(),
      &gen);
  const auto x = Tensor<3>::randn({128, batch, 256}, Device::cpu(), &gen).require_grad();
  if (!has_all_grads(layer, layer(x).sum().backward(), x.dyn())) {
    state.SkipWithError("missing gradients");
    return;
  }
  for (auto _ : state) {
    auto loss = layer(x).sum();
    Gradients grads = loss.backward();
    benchmark::DoNotOptimize(grads);
  }
  state.SetItemsProcessed(state.iterations() * batch);
}
BENCHMARK(BM_ember_transformer_encoder)
    ->ArgNames({"batch", "thr"})
    ->ArgsProduct({{16}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
