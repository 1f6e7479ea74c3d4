// cross_entropy with class-index targets: the fused node (log_softmax + gather forward,
// softmax - one-hot backward in one rule) against the composite it replaces,
// nll_loss(log_softmax(x)), forward + backward, at MNIST, ImageNet and language-model shapes.
#include <benchmark/benchmark.h>

#include <ember/ember.hpp>

namespace {

using namespace ember;

void run(benchmark::State& state, bool fused, bool smoothing) {
  const int64_t batch = state.range(0), classes = state.range(1);
  cpu::set_num_threads(static_cast<int>(state.range(2)));
  Generator gen(1);
  const DynTensor x = require_grad(randn({batch, classes}, DType::f32, Device::cpu(), &gen));
  const DynTensor t = randint(0, classes, {batch}, DType::i64, Device::cpu(), &gen);
  const double eps = smoothing ? 0.1 : 0.0;
  for (auto _ : state) {
    const DynTensor loss = fused ? nn::cross_entropy(x, t, {.label_smoothing = eps})
                                 : nn::nll_loss(log_softmax(x, 1), t);
    Gradients grads = backward(loss);
    benchmark::DoNotOptimize(grads);
  }
  state.SetItemsProcessed(state.iterations() * batch);
}

void BM_cross_entropy_fused(benchmark::State& s) { run(s, true, false); }
void BM_cross_entropy_composite(benchmark::State& s) { run(s, false, false); }
void BM_cross_entropy_fused_smoothing(benchmark::State& s) { run(s, true, true); }

void shapes(benchmark::internal::Benchmark* b) {
  for (int threads : {1, 2}) {
    b->Args({64, 10, threads})->Args({256, 1000, threads})->Args({1024, 8192, threads});
  }
  b->ArgNames({"batch", "classes", "threads"})->Unit(benchmark::kMicrosecond);
}

}  // namespace

BENCHMARK(BM_cross_entropy_fused)->Apply(shapes);
BENCHMARK(BM_cross_entropy_composite)->Apply(shapes);
BENCHMARK(BM_cross_entropy_fused_smoothing)->Apply(shapes);
BENCHMARK_MAIN();
