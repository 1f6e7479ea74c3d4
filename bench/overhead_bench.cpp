// Per-op overhead: `a + b` on 1-element f32 tensors, in ns per op, beside LibTorch's C++ `a + b`
// (overhead_torch.cpp, linked in when LibTorch is found). Everything on this op is fixed cost:
// validation, dtype promotion, broadcasting, allocating the output, dispatch and the kernel call.
#include <benchmark/benchmark.h>

#include <ember/ember.hpp>

namespace {

// thr: Ember's thread count; one element never starts threads, so both rows should match.
void BM_ember_add_1elem(benchmark::State& state) {
  ember::cpu::set_num_threads(static_cast<int>(state.range(0)));
  const auto a = ember::Tensor<1>::from_vector<float>({1.5f});
  const auto b = ember::Tensor<1>::from_vector<float>({2.5f});
  for (auto _ : state) {
    auto c = a + b;
    benchmark::DoNotOptimize(c);
  }
}
BENCHMARK(BM_ember_add_1elem)->ArgName("thr")->Arg(1)->Arg(2);

// Parts of the op alone, to see where the time goes: allocating an empty 1-element output,
// and adding a Scalar (which builds a 0-d tensor for it first).
void BM_ember_empty_1elem(benchmark::State& state) {
  for (auto _ : state) {
    auto c = ember::Tensor<1>::empty({1});
    benchmark::DoNotOptimize(c);
  }
}
BENCHMARK(BM_ember_empty_1elem);

void BM_ember_add_scalar_1elem(benchmark::State& state) {
  ember::cpu::set_num_threads(1);
  const auto a = ember::Tensor<1>::from_vector<float>({1.5f});
  for (auto _ : state) {
    auto c = a + 2.5f;
    benchmark::DoNotOptimize(c);
  }
}
BENCHMARK(BM_ember_add_scalar_1elem);

}  // namespace

BENCHMARK_MAIN();
