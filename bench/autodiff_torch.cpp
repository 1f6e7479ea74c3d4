// LibTorch's side of the autodiff benchmark: the same MLP and the same 1-element add, with the
// same thread counts, through LibTorch's autograd.
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

struct TorchMlp {
  torch::Tensor w1, w2, w3, b1, b2, b3;
  TorchMlp() {
    torch::manual_seed(1);
    w1 = (torch::randn({784, 256}) * 0.035).requires_grad_();
    w2 = (torch::randn({256, 256}) * 0.06).requires_grad_();
    w3 = (torch::randn({256, 10}) * 0.06).requires_grad_();
    b1 = torch::zeros({256}).requires_grad_();
    b2 = torch::zeros({256}).requires_grad_();
    b3 = torch::zeros({10}).requires_grad_();
  }
  torch::Tensor loss(const torch::Tensor& x, const torch::Tensor& target) const {
    auto h1 = torch::relu(torch::matmul(x, w1) + b1);
    auto h2 = torch::relu(torch::matmul(h1, w2) + b2);
    return torch::nn::functional::cross_entropy(torch::matmul(h2, w3) + b3, target);
  }
};

enum class Mode { Inference, Recording, Step };

void run_mlp(benchmark::State& state, Mode mode) {
  const int64_t batch = state.range(0);
  set_torch_threads(static_cast<int>(state.range(1)));
  const TorchMlp mlp;
  const auto x = torch::randn({batch, 784});
  const auto target = torch::randint(0, 10, {batch});
  for (auto _ : state) {
    if (mode == Mode::Inference) {
      torch::NoGradGuard guard;
      auto loss = mlp.loss(x, target);
      benchmark::DoNotOptimize(loss);
    } else {
      auto loss = mlp.loss(x, target);
      if (mode == Mode::Step) {
        // torch.autograd.grad: gradients returned, not accumulated into .grad (as Ember).
        auto grads =
            torch::autograd::grad({loss}, {mlp.w1, mlp.w2, mlp.w3, mlp.b1, mlp.b2, mlp.b3});
        benchmark::DoNotOptimize(grads);
      }
      benchmark::DoNotOptimize(loss);
    }
  }
  state.SetItemsProcessed(state.iterations() * batch);
}

void BM_torch_mlp_forward_no_grad(benchmark::State& s) { run_mlp(s, Mode::Inference); }
void BM_torch_mlp_forward(benchmark::State& s) { run_mlp(s, Mode::Recording); }
void BM_torch_mlp_forward_backward(benchmark::State& s) { run_mlp(s, Mode::Step); }

#define TORCH_MLP_ARGS ArgNames({"batch", "thr"})->ArgsProduct({{1, 64}, {1, 2}})
BENCHMARK(BM_torch_mlp_forward_no_grad)->TORCH_MLP_ARGS;
BENCHMARK(BM_torch_mlp_forward)->TORCH_MLP_ARGS;
BENCHMARK(BM_torch_mlp_forward_backward)->TORCH_MLP_ARGS;

void BM_torch_add_1elem_tracked(benchmark::State& state) {
  set_torch_threads(1);
  const auto a = torch::full({1}, 1.5f).requires_grad_();
  const auto b = torch::full({1}, 2.5f);
  for (auto _ : state) {
    auto c = a + b;
    benchmark::DoNotOptimize(c);
  }
}
BENCHMARK(BM_torch_add_1elem_tracked);

}  // namespace
