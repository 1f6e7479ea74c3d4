// LibTorch's side of the layer benchmarks (nn_bench.cpp): the same ResNet basic block, LSTM and
// TransformerEncoderLayer, same shapes and thread counts, through torch::nn and
// torch::autograd::grad (gradients returned, not accumulated into .grad, as Ember's backward).
#include <benchmark/benchmark.h>
#include <torch/torch.h>

// Debian's LibTorch does its GEMMs in OpenBLAS, whose thread pool at::set_num_threads does not
// size: without this, "1 thread" would run its matrix products on every core.
extern "C" void openblas_set_num_threads(int n) __attribute__((weak));

namespace {

void set_torch_threads(int n) {
  at::set_num_threads(n);
  if (openblas_set_num_threads) openblas_set_num_threads(n);
}

// The loss (sum of the output), then the gradients of every parameter and of the input.
void step(const torch::Tensor& out, const std::vector<torch::Tensor>& inputs) {
  auto grads = torch::autograd::grad({out.sum()}, inputs);
  benchmark::DoNotOptimize(grads);
}

std::vector<torch::Tensor> with_input(const torch::nn::Module& m, const torch::Tensor& x) {
  auto all = m.parameters();
  all.push_back(x);
  return all;
}

struct BasicBlockImpl : torch::nn::Module {
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr}, bn2{nullptr};
  BasicBlockImpl() {
    const auto conv = torch::nn::Conv2dOptions(64, 64, 3).padding(1).bias(false);
    conv1 = register_module("conv1", torch::nn::Conv2d(conv));
    bn1 = register_module("bn1", torch::nn::BatchNorm2d(64));
    conv2 = register_module("conv2", torch::nn::Conv2d(conv));
    bn2 = register_module("bn2", torch::nn::BatchNorm2d(64));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    auto h = torch::relu(bn1(conv1(x)));
    return torch::relu(bn2(conv2(h)) + x);
  }
};

void BM_torch_resnet_block(benchmark::State& state) {
  const int64_t batch = state.range(0);
  set_torch_threads(static_cast<int>(state.range(1)));
  torch::manual_seed(1);
  BasicBlockImpl block;
  block.train();
  const auto x = torch::randn({batch, 64, 56, 56}).requires_grad_();
  const auto inputs = with_input(block, x);
  for (auto _ : state) step(block.forward(x), inputs);
  state.SetItemsProcessed(state.iterations() * batch);
}
BENCHMARK(BM_torch_resnet_block)
    ->ArgNames({"batch", "thr"})
    ->ArgsProduct({{8, 32}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_torch_lstm(benchmark::State& state) {
  const int64_t batch = state.range(0);
  set_torch_threads(static_cast<int>(state.range(1)));
  torch::manual_seed(1);
  torch::nn::LSTM lstm(torch::nn::LSTMOptions(256, 256).num_layers(2));
  lstm->train();
  const auto x = torch::randn({64, batch, 256}).requires_grad_();
  const auto inputs = with_input(*lstm, x);
  for (auto _ : state) step(std::get<0>(lstm->forward(x)), inputs);
  state.SetItemsProcessed(state.iterations() * batch);
}
BENCHMARK(BM_torch_lstm)
    ->ArgNames({"batch", "thr"})
    ->ArgsProduct({{32}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_torch_transformer_encoder(benchmark::State& state) {
  const int64_t batch = state.range(0);
  set_torch_threads(static_cast<int>(state.range(1)));
  torch::manual_seed(1);
  torch::nn::TransformerEncoderLayer layer(
      torch::nn::TransformerEncoderLayerOptions(256, 4).dim_feedforward(1024).dropout(0.0));
  layer->train();
  const auto x = torch::randn({128, batch, 256}).requires_grad_();
  const auto inputs = with_input(*layer, x);
  for (auto _ : state) step(layer->forward(x), inputs);
  state.SetItemsProcessed(state.iterations() * batch);
}
BENCHMARK(BM_torch_transformer_encoder)
    ->ArgNames({"batch", "thr"})
    ->ArgsProduct({{16}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
