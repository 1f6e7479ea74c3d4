// The Vulkan backend beside its peers in one run (issue 18): f32 and f16 matmul, the
// Fashion-MNIST CNN's training step (batch 256, Adam), a ResNet-style 3x3 convolution in f32
// and f16, and an embedding's gradient (index_add), on vulkan:0, the Cpu backend and, in a Cuda
// build on a GPU machine, cuda:0. Rows are named op/device. On lavapipe (CI's Vulkan on the CPU)
// the numbers are reported against the Cpu backend with no goal; on an NVIDIA GPU the goals are f16
// matmul >= 60% of cuBLAS, f32 >= 70% of cuBLAS without TF32, and the training step within 2x of
// Cuda.
//
// Work on a device is queued: each timed batch runs the op `per_sync` times and then waits for
// the device (ember::synchronize), so the time counts the queued work.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <ember/backends/vulkan/vulkan.hpp>
#include <ember/ember.hpp>

#include <ember/models/fashion_cnn.hpp>
#include <ember/optim/optim.hpp>

#include "guarded.hpp"

namespace {

using namespace ember;
using bench::guarded;

// EMBER_VULKAN_PROFILE=1 times the Vulkan device's shaders (vulkan::profile).
bool profiling(Device dev) {
  return dev.type == DeviceType::Vulkan && vulkan::profiling(dev.index);
}

template <class F>
void run_batched(benchmark::State& state, Device dev, int64_t per_sync, F&& op) {
  for (int i = 0; i < 2; ++i) op();  // pipelines, plans and the allocator's ranges first
  synchronize(dev);
  if (profiling(dev)) vulkan::profile(dev.index, true);  // the timed loop's alone
  while (state.KeepRunningBatch(per_sync)) {
    for (int64_t i = 0; i < per_sync; ++i) op();
    synchronize(dev);
  }
}

// The timed loop's shaders, with EMBER_VULKAN_PROFILE=1.
void print_profile(const benchmark::State& state, Device dev, const char* what) {
  if (!profiling(dev)) return;
  std::fprintf(stderr, "%s: %lld runs\n%s", what, static_cast<long long>(state.iterations()),
               vulkan::profile(dev.index, true).c_str());
}

void BM_matmul(benchmark::State& state, Device dev, DType dtype) {
  guarded(state, [&] {
    const int64_t n = state.range(0);
    Generator gen(1);
    const DynTensor a = cast(randn(Shape{n, n}, DType::f32, dev, &gen), dtype);
    const DynTensor b = cast(randn(Shape{n, n}, DType::f32, dev, &gen), dtype);
    DynTensor c;
    run_batched(state, dev, 2, [&] { c = matmul(a, b); });
    state.counters["TFLOPS"] = benchmark::Counter(2e-12 * double(n) * double(n) * double(n),
                                                  benchmark::Counter::kIsIterationInvariantRate);
  });
}

// A ResNet-style 3x3 convolution, forward: [batch, 256, 14, 14] * [256, 256, 3, 3], padded,
// in float32 (tiled) or float16 (cooperative matrices where the device has them).
void BM_conv(benchmark::State& state, Device dev, DType dtype) {
  guarded(state, [&] {
    const int64_t batch = state.range(0), c = 256, hw = 14;
    Generator gen(1);
    const DynTensor x = cast(randn(Shape{batch, c, hw, hw}, DType::f32, dev, &gen), dtype);
    const DynTensor w = cast(mul(randn(Shape{c, c, 3, 3}, DType::f32, dev, &gen), 0.02), dtype);
    DynTensor y;
    run_batched(state, dev, 2, [&] { y = conv2d(x, w, {}, {1}, {1}); });
    state.counters["TFLOPS"] =
        benchmark::Counter(2e-12 * double(batch * c * hw * hw) * double(c * 9),
                           benchmark::Counter::kIsIterationInvariantRate);
  });
}

// An embedding's gradient: index_add of `tokens` rows of width 256 into a [vocabulary, 256]
// table (the Vulkan backend's scatter sorts the token ids, then each table element
// binary-searches them).
void BM_embedding_grad(benchmark::State& state, Device dev) {
  guarded(state, [&] {
    const int64_t tokens = state.range(0), vocabulary = state.range(1), width = 256;
    Generator gen(1);
    const DynTensor ids = randint(0, vocabulary, Shape{tokens}, DType::i64, dev, &gen);
    const DynTensor rows = randn(Shape{tokens, width}, DType::f32, dev, &gen);
    const DynTensor table = zeros(Shape{vocabulary, width}, DType::f32, dev);
    DynTensor grad;
    run_batched(state, dev, 2, [&] { grad = index_add(table, 0, ids, rows); });
    print_profile(state, dev, "embedding_grad");
    state.counters["rows_per_s"] =
        benchmark::Counter(double(tokens), benchmark::Counter::kIsIterationInvariantRate);
  });
}

// Forward FLOPs per image (2 per multiply-add), as bench_cuda's; a training step is about 3x.
constexpr double kCnnForwardFlops =
    2.0 * (26 * 26 * 32 * 9 + 11 * 11 * 64 * 288 + 128 * 1600 + 10 * 128);

void BM_cnn_train_step(benchmark::State& state, Device dev) {
  guarded(state, [&] {
    const int64_t batch = state.range(0);
    Generator gen(1);
    const auto x = Tensor<4>::randn({batch, 1, 28, 28}, dev, &gen);
    const auto y = Tensor<1, Int>::randint(0, 10, {batch}, dev, &gen);
    models::FashionCnn model(dev, &gen);
    optim::Optimizer opt = optim::AdamConfig().lr(1e-3).init();
    Tensor<0> loss;
    run_batched(state, dev, 1, [&] {
      loss = Tensor<0>(nn::cross_entropy(model(x).dyn(), y.dyn()));
      const Gradients grads = loss.backward();
      opt.step(model, grads);
    });
    print_profile(state, dev, "cnn_train_step");
    const float last = loss.item<float>();
    if (!std::isfinite(last)) return state.SkipWithError("the loss is not finite");
    state.counters["last_loss"] = last;
    state.counters["images_per_s"] =
        benchmark::Counter(double(batch), benchmark::Counter::kIsIterationInvariantRate);
    state.counters["TFLOPS"] = benchmark::Counter(1e-12 * 3.0 * kCnnForwardFlops * double(batch),
                                                  benchmark::Counter::kIsIterationInvariantRate);
  });
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  std::vector<Device> devices = {Device::cpu()};
  if (device_count(DeviceType::Vulkan) > 0) devices.push_back(Device::vulkan(0));
  if (device_count(DeviceType::Cuda) > 0) devices.push_back(Device::cuda(0));
  if (devices.size() == 1) std::fprintf(stderr, "bench_vulkan: no Vulkan device here\n");
  // A GPU gets the sizes; a machine whose devices are all CPUs (lavapipe) small ones.
  const bool gpu = device_count(DeviceType::Cuda) > 0 || std::getenv("EMBER_BENCH_LARGE");
  const char* min_time_env = std::getenv("EMBER_BENCH_MIN_TIME");
  const double min_time = min_time_env ? std::atof(min_time_env) : 0.5;
  for (const Device& dev : devices) {
    const std::string name = to_string(dev);
    auto* f32 =
        benchmark::RegisterBenchmark(("matmul_f32/" + name).c_str(), BM_matmul, dev, DType::f32);
    auto* f16 =
        benchmark::RegisterBenchmark(("matmul_f16/" + name).c_str(), BM_matmul, dev, DType::f16);
    auto* step =
        benchmark::RegisterBenchmark(("cnn_train_step/" + name).c_str(), BM_cnn_train_step, dev);
    auto* conv32 =
        benchmark::RegisterBenchmark(("conv_f32/" + name).c_str(), BM_conv, dev, DType::f32);
    auto* conv16 =
        benchmark::RegisterBenchmark(("conv_f16/" + name).c_str(), BM_conv, dev, DType::f16);
    auto* embedding =
        benchmark::RegisterBenchmark(("embedding_grad/" + name).c_str(), BM_embedding_grad, dev);
    f32->ArgName("n")->Arg(gpu ? 4096 : 512);
    embedding->ArgNames({"tokens", "vocabulary"})->Args({gpu ? 8192 : 1024, gpu ? 32000 : 4096});
    f16->ArgName("n")->Arg(gpu ? 8192 : 512);
    step->ArgName("batch")->Arg(256);
    conv32->ArgName("batch")->Arg(gpu ? 64 : 2);
    conv16->ArgName("batch")->Arg(gpu ? 64 : 2);
    for (auto* b : {f32, f16, step, conv32, conv16, embedding}) {
      b->UseRealTime()->MinTime(min_time)->Unit(benchmark::kMillisecond);
    }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
