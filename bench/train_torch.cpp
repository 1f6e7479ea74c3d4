// LibTorch's side of bench_train (train_bench.cpp): the same CNN, the same batches in the same
// order, torch::optim::Adam (lr 1e-3), cross-entropy, backward, step, zero_grad.
#include <benchmark/benchmark.h>
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/torch.h>

#include <cstdlib>
#include <memory>
#include <string>

#include <ember/backends/cpu/cpu.hpp>

#include "train_data.hpp"

// Debian's LibTorch does its GEMMs in OpenBLAS, whose pool at::set_num_threads does not size.
extern "C" void openblas_set_num_threads(int n) __attribute__((weak));

namespace {

// EMBER_BENCH_TRACE=prefix: every ATen call of the row, timed by LibTorch's profiler, into
// prefix-<row>.json (bench/trace_ops.py sums two of them by op). The plugin's ATen calls are
// seen too: it shares this process's LibTorch. Slows the row down; not for timings.
std::unique_ptr<torch::autograd::profiler::RecordProfile> trace_ops(const char* row) {
  const char* prefix = std::getenv("EMBER_BENCH_TRACE");
  if (!prefix || !*prefix) return nullptr;
  return std::make_unique<torch::autograd::profiler::RecordProfile>(std::string(prefix) + "-" +
                                                                    row + ".json");
}

struct CnnImpl : torch::nn::Module {
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  CnnImpl() {
    conv1 = register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 32, 3)));
    conv2 = register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 64, 3)));
    fc1 = register_module("fc1", torch::nn::Linear(1600, 128));
    fc2 = register_module("fc2", torch::nn::Linear(128, 10));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    auto h = torch::max_pool2d(torch::relu(conv1(x)), 2);
    h = torch::max_pool2d(torch::relu(conv2(h)), 2);
    return fc2(torch::relu(fc1(h.flatten(1))));
  }
};

void BM_torch_epoch(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  // PyTorch's best setting here (issue 5): intra-op threads as asked, OpenBLAS on one thread
  // (two pools of spinning threads on 2 cores oversubscribe them).
  at::set_num_threads(threads);
  if (openblas_set_num_threads) openblas_set_num_threads(1);
  const ember::bench::TrainData& d = ember::bench::train_data();
  const auto images =
      torch::from_blob(const_cast<float*>(d.images.data()), {d.count, 1, 28, 28}, torch::kFloat32);
  const auto labels =
      torch::from_blob(const_cast<int64_t*>(d.labels.data()), {d.count}, torch::kInt64);
  const int64_t batch = 64, batches = (d.count + batch - 1) / batch;
  float last_loss = 0;
  const auto trace = trace_ops("torch");
  for (auto _ : state) {
    torch::manual_seed(1);
    CnnImpl model;
    model.train();
    torch::optim::Adam opt(model.parameters(), torch::optim::AdamOptions(1e-3));
    for (int64_t b = 0; b < batches; ++b) {
      const int64_t n = std::min(batch, d.count - b * batch);
      const auto x = images.narrow(0, b * batch, n);
      const auto y = labels.narrow(0, b * batch, n);
      opt.zero_grad();
      auto loss = torch::nn::functional::cross_entropy(model.forward(x), y);
      loss.backward();
      opt.step();
      if (b == batches - 1) last_loss = loss.item<float>();
    }
  }
  ember::bench::epoch_counters(state, last_loss);
}

// Ember's model code on Device::libtorch(): the same ATen kernels as BM_torch_epoch, through
// Ember's front end, autodiff and optimizer, so the difference is the adapter's overhead.
void BM_ember_libtorch_epoch(benchmark::State& state) {
  if (ember::device_count(ember::DeviceType::LibTorch) == 0) {
    state.SkipWithError("this Ember was built without the LibTorch backend");
    return;
  }
  // Ember's one thread setting sizes LibTorch's pools too, as BM_torch_epoch sets them by hand
  // (intra-op threads as asked, OpenBLAS on one thread: src/backends/cpu/threads.hpp).
  ember::cpu::set_num_threads(static_cast<int>(state.range(0)));
  float last_loss = 0;
  const auto trace = trace_ops("ember_libtorch");
  for (auto _ : state) last_loss = ember::bench::ember_epoch(ember::Device::libtorch());
  ember::bench::epoch_counters(state, last_loss);
}

}  // namespace

EMBER_EPOCH_BENCHMARK(BM_ember_libtorch_epoch);

EMBER_EPOCH_BENCHMARK(BM_torch_epoch);
