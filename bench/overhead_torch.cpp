// LibTorch's side of the per-op overhead benchmark: `a + b` on 1-element f32 CPU tensors, with
// autograd's dispatch as a default C++ program has it, and under c10::InferenceMode.
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <ember/ember.hpp>

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

// Ember's `a + b` on Device::libtorch(): Ember's front end plus the adapter (two from_blob views,
// an InferenceMode guard, ATen's add into a temporary and its copy into Ember's output).
void BM_ember_libtorch_add_1elem(benchmark::State& state) {
  if (ember::device_count(ember::DeviceType::LibTorch) == 0) {
    state.SkipWithError("this Ember was built without the LibTorch backend");
    return;
  }
  at::set_num_threads(1);
  const auto a = ember::Tensor<1>::full({1}, 1.5f, ember::Device::libtorch());
  const auto b = ember::Tensor<1>::full({1}, 2.5f, ember::Device::libtorch());
  for (auto _ : state) {
    auto c = a + b;
    benchmark::DoNotOptimize(c);
  }
}
BENCHMARK(BM_ember_libtorch_add_1elem);

}  // namespace
