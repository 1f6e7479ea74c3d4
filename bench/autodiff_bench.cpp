// Autodiff cost: a 3-layer MLP (784-256-256-10, softmax cross-entropy) forward alone, forward
// while recording, and forward + backward, at batch 64 and 1, on 1 and 2 threads; beside
// LibTorch doing the same (autodiff_torch.cpp, linked in when LibTorch is found). Plus the cost
// of recording one op: `a + b` on 1-element tensors, tracked and not.
#include <benchmark/benchmark.h>

#include <ember/ember.hpp>

namespace {

using namespace ember;

struct Mlp {
  Tensor<2> w1, w2, w3;
  Tensor<1> b1, b2, b3;

  explicit Mlp(Generator& gen)
      : w1((Tensor<2>::randn({784, 256}, Device::cpu(), &gen) * 0.035f).require_grad()),
        w2((Tensor<2>::randn({256, 256}, Device::cpu(), &gen) * 0.06f).require_grad()),
        w3((Tensor<2>::randn({256, 10}, Device::cpu(), &gen) * 0.06f).require_grad()),
        b1(Tensor<1>::zeros({256}).require_grad()),
        b2(Tensor<1>::zeros({256}).require_grad()),
        b3(Tensor<1>::zeros({10}).require_grad()) {}

  Tensor<0> loss(const Tensor<2>& x, const Tensor<1, Int>& target) const {
    const auto h1 = relu(matmul(x, w1) + b1);
    const auto h2 = relu(matmul(h1, w2) + b2);
    const auto logp = (matmul(h2, w3) + b3).log_softmax(1);
    return -logp.gather(1, target.unsqueeze(1)).mean();
  }
};

enum class Mode { Inference, Recording, Step };

void run_mlp(benchmark::State& state, Mode mode) {
  const int64_t batch = state.range(0);
  cpu::set_num_threads(static_cast<int>(state.range(1)));
  Generator gen(1);
  const Mlp mlp(gen);
  const auto x = Tensor<2>::randn({batch, 784}, Device::cpu(), &gen);
  const auto target = Tensor<1, Int>::randint(0, 10, {batch}, Device::cpu(), &gen);
  for (auto _ : state) {
    if (mode == Mode::Inference) {
      const auto guard = no_grad();
      auto loss = mlp.loss(x, target);
      benchmark::DoNotOptimize(loss);
    } else {
      auto loss = mlp.loss(x, target);
      if (mode == Mode::Step) {
        Gradients grads = loss.backward();
        benchmark::DoNotOptimize(grads);
      }
      benchmark::DoNotOptimize(loss);
    }
  }
  state.SetItemsProcessed(state.iterations() * batch);
}

void BM_ember_mlp_forward_no_grad(benchmark::State& s) { run_mlp(s, Mode::Inference); }
void BM_ember_mlp_forward(benchmark::State& s) { run_mlp(s, Mode::Recording); }
void BM_ember_mlp_forward_backward(benchmark::State& s) { run_mlp(s, Mode::Step); }

#define EMBER_MLP_ARGS ArgNames({"batch", "thr"})->ArgsProduct({{1, 64}, {1, 2}})
BENCHMARK(BM_ember_mlp_forward_no_grad)->EMBER_MLP_ARGS;
BENCHMARK(BM_ember_mlp_forward)->EMBER_MLP_ARGS;
BENCHMARK(BM_ember_mlp_forward_backward)->EMBER_MLP_ARGS;

// The fixed cost of recording: the same 1-element add with and without a tracked input.
void BM_ember_add_1elem_untracked(benchmark::State& state) {
  cpu::set_num_threads(1);
  const auto a = Tensor<1>::from_vector<float>({1.5f});
  const auto b = Tensor<1>::from_vector<float>({2.5f});
  for (auto _ : state) {
    auto c = a + b;
    benchmark::DoNotOptimize(c);
  }
}
BENCHMARK(BM_ember_add_1elem_untracked);

void BM_ember_add_1elem_tracked(benchmark::State& state) {
  cpu::set_num_threads(1);
  const auto a = Tensor<1>::from_vector<float>({1.5f}).require_grad();
  const auto b = Tensor<1>::from_vector<float>({2.5f});
  for (auto _ : state) {
    auto c = a + b;
    benchmark::DoNotOptimize(c);
  }
}
BENCHMARK(BM_ember_add_1elem_tracked);

// Backward through a chain of 32 1-element multiplies: the engine's cost per node.
void BM_ember_backward_chain32_1elem(benchmark::State& state) {
  cpu::set_num_threads(1);
  const auto a = Tensor<1>::from_vector<float>({1.0f}).require_grad();
  for (auto _ : state) {
    state.PauseTiming();
    auto c = a;
    for (int i = 0; i < 32; ++i) c = c * 1.001f;
    auto loss = c.sum();
    state.ResumeTiming();
    Gradients grads = loss.backward();
    benchmark::DoNotOptimize(grads);
  }
  state.SetItemsProcessed(state.iterations() * 32);
}
BENCHMARK(BM_ember_backward_chain32_1elem);

}  // namespace

BENCHMARK_MAIN();
