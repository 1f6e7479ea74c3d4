// LibTorch's side of the per-op overhead benchmark: `a + b` on 1-element f32 CPU tensors, with
// autograd's dispatch as a default C++ program has it, and under c10::InferenceMode.
#include <benchmark/benchmark.h>
#include <torch/torch.h>

namespace {

void BM_torch_add_1elem(benchmark::State& state) {
  at::set_num_threads(1);
  const auto a = torch::full({1}, 1.5f);
  const auto b = torch::full({1}, 2.5f);
  for (auto _ : state) {
    auto c = a + b;
    benchmark::DoNotOptimize(c);
  }
}
BENCHMARK(BM_torch_add_1elem);

void BM_torch_add_1elem_inference_mode(benchmark::State& state) {
  at::set_num_threads(1);
  c10::InferenceMode guard;
  const auto a = torch::full({1}, 1.5f);
  const auto b = torch::full({1}, 2.5f);
  for (auto _ : state) {
    auto c = a + b;
    benchmark::DoNotOptimize(c);
  }
}
BENCHMARK(BM_torch_add_1elem_inference_mode);

}  // namespace
