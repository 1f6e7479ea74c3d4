// The GPU suite of issue 13 on Device::cuda(0): matmul (f32, f32 with TF32, bf16), memory-bound
// ops on 64M f32 beside a device-to-device copy, the per-op overhead of a 1-element add, and the
// Fashion-MNIST CNN's training step. bench/cuda_torch.py runs the same workloads in PyTorch under
// the same names; scripts/gpu_bench.sh runs both and bench/cuda_report.py writes the table.
//
// Work on the GPU is queued, so every benchmark runs its op `per_sync` times and then waits for
// the device (ember::synchronize) inside the timed batch: the time counts the queued work, and
// one wait is spread over the batch. Counters: FLOPS (matmul, CNN step) and BW (bytes read +
// written per second), as rates.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include <ember/ember.hpp>

#include <ember/models/fashion_cnn.hpp>
#include <ember/optim/optim.hpp>

#include "guarded.hpp"
#include "peak.hpp"

// launch_floor.cu: an empty kernel on a stream of its own.
namespace ember::bench {
void* launch_floor_stream();
void launch_empty(void* stream);
void wait_for(void* stream);
}  // namespace ember::bench

namespace {

using namespace ember;
using bench::guarded;

constexpr int64_t kN = int64_t{64} << 20;  // elements of the memory-bound rows (256 MiB f32)

Device gpu() { return Device::cuda(0); }

// Runs `op` per_sync times per timed batch, each batch ending with a wait for the device. A few
// calls first, untimed: cuBLAS/cuDNN plans, the caching allocator's buffers, lazy module loads.
// Counter enqueue_us: the host's time per op without the waits (its dispatch and launches, unless
// the device's queue is full).
template <class F>
void run_batched(benchmark::State& state, int64_t per_sync, F&& op) {
  for (int i = 0; i < 3; ++i) op();
  synchronize(gpu());
  double enqueue = 0;
  while (state.KeepRunningBatch(per_sync)) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < per_sync; ++i) op();
    enqueue += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    synchronize(gpu());
  }
  state.counters["enqueue_us"] = 1e6 * enqueue / static_cast<double>(state.iterations());
}

// True the first time a row asks: Google Benchmark calls a row several times (estimating its
// iteration count, then each repetition), and its result is checked once.
bool first_call(const std::string& row) {
  static std::set<std::string> seen;
  return seen.insert(row).second;
}

void set_rate(benchmark::State& state, const char* name, double per_iteration) {
  state.counters[name] = benchmark::Counter(per_iteration * static_cast<double>(state.iterations()),
                                            benchmark::Counter::kIsRate);
}

// ---- matmul: n x n x n, 2 n^3 FLOPs ----

// Checks 64 sampled entries of c = a b against double-precision dot products of the operands as
// stored (so bf16 inputs are exact), relative to sum |a_ik b_kj|.
bool matmul_ok(const Tensor<2>& a, const Tensor<2>& b, const Tensor<2>& c, double tol) {
  const int64_t n = a.dims()[0];
  const auto host = [](const Tensor<2>& t) { return t.to(DType::f32).to_vector<float>(); };
  const std::vector<float> va = host(a), vb = host(b), vc = host(c);
  for (int64_t s = 0; s < 64; ++s) {
    const int64_t i = (s * 7919) % n, j = (s * 104729 + 13) % n;
    double ref = 0, mag = 0;
    for (int64_t k = 0; k < n; ++k) {
      const double p =
          double(va[static_cast<size_t>(i * n + k)]) * vb[static_cast<size_t>(k * n + j)];
      ref += p;
      mag += std::abs(p);
    }
    if (!(std::abs(vc[static_cast<size_t>(i * n + j)] - ref) <= tol * mag + 1e-30)) return false;
  }
  return true;
}

void BM_matmul(benchmark::State& state, DType dtype, bool tf32, double tol) {
  guarded(state, [&] {
    const int64_t n = state.range(0);
    Generator gen(1);
    const auto a = Tensor<2>::randn({n, n}, gpu(), &gen).to(dtype);
    const auto b = Tensor<2>::randn({n, n}, gpu(), &gen).to(dtype);
    set_allow_tf32(tf32);
    const std::string row =
        std::to_string(static_cast<int>(dtype)) + (tf32 ? "tf32" : "") + std::to_string(n);
    if (first_call(row) && !matmul_ok(a, b, matmul(a, b), tol)) {
      set_allow_tf32(false);
      state.SkipWithError("matmul gave a wrong result");
      return;
    }
    // A wait for every 5 products of 8192 (f32: ~20 ms each), 20 of 4096.
    run_batched(state, n >= 8192 ? 5 : 20, [&] {
      auto c = matmul(a, b);
      benchmark::DoNotOptimize(c);
    });
    set_allow_tf32(false);
    set_rate(state, "FLOPS", 2.0 * double(n) * double(n) * double(n));
  });
}

// ---- memory-bound ops on 64M f32 (256 MiB per tensor), 50 per wait ----

constexpr int64_t kPerSyncMem = 50;
constexpr double kBytes = 4.0 * double(kN);

using ember::bench::sampled_ok;

Tensor<1> random_input(uint64_t seed) {
  Generator gen(seed);
  return Tensor<1>::randn({kN}, gpu(), &gen);
}

// The peer: a device-to-device copy (2 x 256 MiB moved).
void BM_clone(benchmark::State& state) {
  guarded(state, [&] {
    const auto x = random_input(1);
    run_batched(state, kPerSyncMem, [&] {
      auto y = x.clone();
      benchmark::DoNotOptimize(y);
    });
    set_rate(state, "BW", 2 * kBytes);
  });
}

void BM_add(benchmark::State& state) {
  guarded(state, [&] {
    const auto a = random_input(2), b = random_input(3);
    if (first_call("add")) {
      const auto va = a.to_vector<float>(), vb = b.to_vector<float>();
      if (!sampled_ok((a + b).to_vector<float>(),
                      [&](size_t i) { return double(va[i]) + vb[i]; })) {
        state.SkipWithError("a + b gave a wrong result");
        return;
      }
    }
    run_batched(state, kPerSyncMem, [&] {
      auto c = a + b;
      benchmark::DoNotOptimize(c);
    });
    set_rate(state, "BW", 3 * kBytes);
  });
}

void BM_exp(benchmark::State& state) {
  guarded(state, [&] {
    const auto x = random_input(4);
    if (first_call("exp")) {
      const auto vx = x.to_vector<float>();
      if (!sampled_ok(ember::exp(x).to_vector<float>(),
                      [&](size_t i) { return std::exp(double(vx[i])); })) {
        state.SkipWithError("exp(x) gave a wrong result");
        return;
      }
    }
    run_batched(state, kPerSyncMem, [&] {
      auto y = ember::exp(x);
      benchmark::DoNotOptimize(y);
    });
    set_rate(state, "BW", 2 * kBytes);
  });
}

void BM_sum(benchmark::State& state) {
  guarded(state, [&] {
    const auto x = random_input(5);
    if (first_call("sum")) {
      double ref = 0, mag = 0;
      for (float v : x.to_vector<float>()) {
        ref += v;
        mag += std::abs(v);
      }
      if (!(std::abs(x.sum().item<float>() - ref) <= 1e-5 * mag)) {
        state.SkipWithError("x.sum() gave a wrong result");
        return;
      }
    }
    run_batched(state, kPerSyncMem, [&] {
      auto s = x.sum();
      benchmark::DoNotOptimize(s);
    });
    set_rate(state, "BW", kBytes);
  });
}

// ---- per-op overhead: c = c + b on 1-element tensors, 10,000 ops per wait ----

// Each op depends on the last and allocates its output; the time per op is the host's dispatch
// and launch, unless the GPU runs the tiny kernels slower than they are queued.
void BM_add_1elem(benchmark::State& state) {
  guarded(state, [&] {
    auto c = Tensor<1>::from_vector<float>({1.5f}, gpu());
    const auto b = Tensor<1>::from_vector<float>({2.5f}, gpu());
    run_batched(state, 10000, [&] { c = c + b; });
    benchmark::DoNotOptimize(c);
  });
}

// The floor under add_1elem: an empty kernel launched through the CUDA runtime, per launch.
void BM_launch_floor(benchmark::State& state) {
  void* stream = bench::launch_floor_stream();
  for (int i = 0; i < 3; ++i) bench::launch_empty(stream);
  bench::wait_for(stream);
  while (state.KeepRunningBatch(10000)) {
    for (int i = 0; i < 10000; ++i) bench::launch_empty(stream);
    bench::wait_for(stream);
  }
}

// The allocator's share of add_1elem: a 1-element tensor made and dropped (no kernel).
void BM_alloc_1elem(benchmark::State& state) {
  guarded(state, [&] {
    run_batched(state, 10000,
                [&] { benchmark::DoNotOptimize(empty(Shape{1}, DType::f32, gpu())); });
  });
}

// ---- the Fashion-MNIST CNN's training step, batch 256, Adam lr 1e-3, 10 steps per wait ----

// Forward FLOPs per image (2 per multiply-add): conv1 26x26x32 outputs of 9 terms, conv2 11x11x64
// of 288, fc1 128 of 1600, fc2 10 of 128. A training step is about 3x the forward.
constexpr double kCnnForwardFlops =
    2.0 * (26 * 26 * 32 * 9 + 11 * 11 * 64 * 288 + 128 * 1600 + 10 * 128);

void BM_cnn_train_step(benchmark::State& state) {
  guarded(state, [&] {
    const int64_t batch = state.range(0);
    Generator gen(1);
    const auto x = Tensor<4>::randn({batch, 1, 28, 28}, gpu(), &gen);
    const auto y = Tensor<1, Int>::randint(0, 10, {batch}, gpu(), &gen);
    models::FashionCnn model(gpu(), &gen);
    optim::Optimizer opt = optim::AdamConfig().lr(1e-3).init();
    Tensor<0> loss;
    run_batched(state, 10, [&] {
      loss = Tensor<0>(nn::cross_entropy(model(x).dyn(), y.dyn()));
      const Gradients grads = loss.backward();
      opt.step(model, grads);
    });
    const float last = loss.item<float>();
    if (!std::isfinite(last)) {
      state.SkipWithError("the loss is not finite");
      return;
    }
    state.counters["last_loss"] = last;
    set_rate(state, "FLOPS", 3.0 * kCnnForwardFlops * double(batch));
  });
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (device_count(DeviceType::Cuda) == 0) {  // each row then reports the error
    std::fprintf(stderr, "bench_cuda: no Cuda device (this build or this machine has none)\n");
  }
  // Seconds per repetition (the script sets it; flags' syntax differs between Google Benchmark
  // 1.7 and 1.8).
  const char* min_time_env = std::getenv("EMBER_BENCH_MIN_TIME");
  const double min_time = min_time_env ? std::atof(min_time_env) : 0.3;
  const auto setup = [&](benchmark::internal::Benchmark* b) {
    b->UseRealTime()->MinTime(min_time > 0 ? min_time : 0.3)->Unit(benchmark::kMicrosecond);
  };
  struct Matmul {
    const char* name;
    DType dtype;
    bool tf32;
    double tol;
  };
  for (const Matmul& m : {Matmul{"matmul_f32", DType::f32, false, 1e-4},
                          Matmul{"matmul_tf32", DType::f32, true, 5e-3},
                          Matmul{"matmul_bf16", DType::bf16, false, 1e-2}}) {
    setup(benchmark::RegisterBenchmark(m.name, BM_matmul, m.dtype, m.tf32, m.tol)
              ->ArgName("n")
              ->Arg(4096)
              ->Arg(8192));
  }
  setup(benchmark::RegisterBenchmark("clone_64M", BM_clone));
  setup(benchmark::RegisterBenchmark("add_64M", BM_add));
  setup(benchmark::RegisterBenchmark("exp_64M", BM_exp));
  setup(benchmark::RegisterBenchmark("sum_64M", BM_sum));
  setup(benchmark::RegisterBenchmark("add_1elem", BM_add_1elem));
  setup(benchmark::RegisterBenchmark("launch_floor", BM_launch_floor));
  setup(benchmark::RegisterBenchmark("alloc_1elem", BM_alloc_1elem));
  setup(benchmark::RegisterBenchmark("cnn_train_step", BM_cnn_train_step)
            ->ArgName("batch")
            ->Arg(256));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
