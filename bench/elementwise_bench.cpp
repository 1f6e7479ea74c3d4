// Memory-bound ops on 16M f32 (64 MB per tensor), on 1 and 2 threads, beside a plain memcpy of
// 64 MB on the same number of threads. Counters: BW (bytes read + written per second: memcpy
// 2 x 64 MB, add 3 x 64 MB, exp 2 x 64 MB, sum 64 MB) and pct_copy (BW as % of memcpy's BW
// measured earlier in this run on the same thread count).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>
#include <vector>

#include <ember/ember.hpp>

#include "peak.hpp"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace {

constexpr int64_t kN = int64_t{16} << 20;  // elements
constexpr int64_t kBytes = kN * 4;         // 64 MiB per tensor

std::map<int, double> g_copy_bw;  // memcpy bytes/s per thread count, from this run

// A 2 MiB-aligned, huge-page-advised, pre-touched host buffer, as Ember's allocator hands out.
struct HostBuffer {
  float* p = nullptr;
  HostBuffer() {
    p = static_cast<float*>(std::aligned_alloc(size_t{2} << 20, static_cast<size_t>(kBytes)));
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    madvise(p, static_cast<size_t>(kBytes), MADV_HUGEPAGE);
#endif
    for (int64_t i = 0; i < kN; ++i) p[i] = static_cast<float>(i % 1000) * 1e-3f;
  }
  ~HostBuffer() { std::free(p); }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
};

void set_bandwidth(benchmark::State& state, double bytes_per_call, int threads) {
  const double bytes = bytes_per_call * static_cast<double>(state.iterations());
  state.counters["BW"] = benchmark::Counter(bytes, benchmark::Counter::kIsRate);
  if (auto it = g_copy_bw.find(threads); it != g_copy_bw.end()) {
    // pct_copy = BW / copy BW; BW is bytes / elapsed, so it is formed as a rate as well.
    state.counters["pct_copy"] = benchmark::Counter(100.0 * bytes / it->second,
                                                    benchmark::Counter::kIsRate);
  }
}

ember::Tensor<1> random_input(uint64_t seed) {
  ember::Generator gen(seed);
  return ember::Tensor<1>::randn({kN}, ember::Device::cpu(), &gen);
}

// The peer: memcpy of 64 MB, split over the threads.
void BM_memcpy(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  HostBuffer src, dst;
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    ember::bench::parallel_memcpy(dst.p, src.p, kBytes, threads);
    benchmark::ClobberMemory();
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  g_copy_bw.erase(threads);  // so that this row's own pct_copy is not against an older run
  set_bandwidth(state, 2.0 * kBytes, threads);
  // The rows that follow compare with this rate.
  g_copy_bw[threads] = 2.0 * kBytes * static_cast<double>(state.iterations()) / s;
}

// The reference a kernel without streaming stores can reach: a plain loop, same threads.
void BM_add_loop(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  HostBuffer a, b, out;
  for (auto _ : state) {
    std::vector<std::thread> pool;
    const int64_t chunk = kN / threads;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        const int64_t lo = t * chunk, hi = t + 1 == threads ? kN : lo + chunk;
        for (int64_t i = lo; i < hi; ++i) out.p[i] = a.p[i] + b.p[i];
      });
    }
    for (auto& th : pool) th.join();
    benchmark::ClobberMemory();
  }
  set_bandwidth(state, 3.0 * kBytes, threads);
}

void BM_ember_add(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  ember::cpu::set_num_threads(threads);
  const auto a = random_input(1), b = random_input(2);
  benchmark::DoNotOptimize(a + b);  // warm: the output buffer lands in the allocator's cache
  for (auto _ : state) {
    auto c = a + b;
    benchmark::DoNotOptimize(c);
  }
  set_bandwidth(state, 3.0 * kBytes, threads);
}

void BM_ember_exp(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  ember::cpu::set_num_threads(threads);
  const auto x = random_input(3);
  benchmark::DoNotOptimize(ember::exp(x));
  for (auto _ : state) {
    auto y = ember::exp(x);
    benchmark::DoNotOptimize(y);
  }
  set_bandwidth(state, 2.0 * kBytes, threads);
}

void BM_ember_sum(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  ember::cpu::set_num_threads(threads);
  const auto x = random_input(4);
  benchmark::DoNotOptimize(x.sum());
  for (auto _ : state) {
    auto s = x.sum();
    benchmark::DoNotOptimize(s);
  }
  set_bandwidth(state, 1.0 * kBytes, threads);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  // Per thread count: the memcpy peer first (pct_copy refers to it), then every op.
  const std::pair<const char*, void (*)(benchmark::State&)> impls[] = {
      {"memcpy", BM_memcpy},         {"add_loop", BM_add_loop}, {"ember_add", BM_ember_add},
      {"ember_exp", BM_ember_exp},   {"ember_sum", BM_ember_sum}};
  for (int threads : {1, 2}) {
    for (auto [name, fn] : impls) {
      benchmark::RegisterBenchmark(name, fn)
          ->ArgName("thr")->Arg(threads)->UseRealTime()->Unit(benchmark::kMillisecond);
    }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
