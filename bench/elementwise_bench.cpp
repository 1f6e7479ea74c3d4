// Memory-bound ops on 16M f32 (64 MB per tensor), on 1 and 2 threads, beside a plain memcpy of
// 64 MB on the same number of threads. Counters: BW (bytes read + written per second: memcpy
// 2 x 64 MB, add 3 x 64 MB, exp 2 x 64 MB, sum 64 MB) and pct_copy (BW as % of memcpy's BW
// measured earlier in this run on the same thread count).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
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

// Times the benchmark loop around `call`; sets BW and, once memcpy has run, pct_copy.
template <class F>
double run_timed(benchmark::State& state, double bytes_per_call, int threads, F&& call) {
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) call();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double bytes = bytes_per_call * static_cast<double>(state.iterations());
  state.counters["BW"] = benchmark::Counter(bytes, benchmark::Counter::kIsRate);
  if (auto it = g_copy_bw.find(threads); it != g_copy_bw.end()) {
    state.counters["pct_copy"] = 100.0 * bytes / s / it->second;
  }
  return bytes / s;
}

ember::Tensor<1> random_input(uint64_t seed) {
  ember::Generator gen(seed);
  return ember::Tensor<1>::randn({kN}, ember::Device::cpu(), &gen);
}

// The peer: memcpy of 64 MB, split over the threads.
void BM_memcpy(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  HostBuffer src, dst;
  g_copy_bw.erase(threads);  // this row is the reference, not compared with an older one
  g_copy_bw[threads] = run_timed(state, 2.0 * kBytes, threads, [&] {
    ember::bench::parallel_memcpy(dst.p, src.p, kBytes, threads);
    benchmark::ClobberMemory();
  });
}

// What a plain loop with ordinary stores reaches (each output line is read before it is written,
// so 4 x 64 MB move for the 3 x 64 MB counted): the ceiling for a kernel without streaming stores.
void add_range(const float* __restrict a, const float* __restrict b, float* __restrict out,
               int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; ++i) out[i] = a[i] + b[i];
}

void BM_add_loop(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  HostBuffer a, b, out;
  run_timed(state, 3.0 * kBytes, threads, [&] {
    if (threads == 1) {
      add_range(a.p, b.p, out.p, 0, kN);
    } else {
      std::vector<std::thread> pool;
      const int64_t chunk = kN / threads;
      for (int t = 0; t < threads; ++t) {
        const int64_t lo = t * chunk, hi = t + 1 == threads ? kN : lo + chunk;
        pool.emplace_back([&, lo, hi] { add_range(a.p, b.p, out.p, lo, hi); });
      }
      for (auto& th : pool) th.join();
    }
    benchmark::ClobberMemory();
  });
}

// Checks every 4099th element of `got` against f(i) in double precision (relative 1e-6).
template <class F>
bool sampled_ok(const std::vector<float>& got, F f) {
  for (size_t i = 0; i < got.size(); i += 4099) {
    const double ref = f(i);
    if (!(std::abs(got[i] - ref) <= 1e-6 * std::abs(ref) + 1e-30)) return false;
  }
  return true;
}

void BM_ember_add(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  ember::cpu::set_num_threads(threads);
  const auto a = random_input(1), b = random_input(2);
  {  // check, and warm: the output buffer lands in the allocator's cache
    const auto va = a.to_vector<float>(), vb = b.to_vector<float>();
    if (!sampled_ok((a + b).to_vector<float>(), [&](size_t i) { return double(va[i]) + vb[i]; })) {
      state.SkipWithError("a + b gave a wrong result");
      return;
    }
  }
  run_timed(state, 3.0 * kBytes, threads, [&] {
    auto c = a + b;
    benchmark::DoNotOptimize(c);
  });
}

void BM_ember_exp(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  ember::cpu::set_num_threads(threads);
  const auto x = random_input(3);
  {
    const auto vx = x.to_vector<float>();
    if (!sampled_ok(ember::exp(x).to_vector<float>(),
                    [&](size_t i) { return std::exp(double(vx[i])); })) {
      state.SkipWithError("exp(x) gave a wrong result");
      return;
    }
  }
  run_timed(state, 2.0 * kBytes, threads, [&] {
    auto y = ember::exp(x);
    benchmark::DoNotOptimize(y);
  });
}

void BM_ember_sum(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  ember::cpu::set_num_threads(threads);
  const auto x = random_input(4);
  {
    double ref = 0, mag = 0;
    for (float v : x.to_vector<float>()) {
      ref += v;
      mag += std::abs(v);
    }
    if (std::abs(x.sum().item<float>() - ref) > 1e-6 * mag) {
      state.SkipWithError("x.sum() gave a wrong result");
      return;
    }
  }
  run_timed(state, 1.0 * kBytes, threads, [&] {
    auto s = x.sum();
    benchmark::DoNotOptimize(s);
  });
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  // Per thread count: the memcpy peer first (pct_copy refers to it), then every op.
  const std::pair<const char*, void (*)(benchmark::State&)> impls[] = {{"memcpy", BM_memcpy},
                                                                       {"add_loop", BM_add_loop},
                                                                       {"ember_add", BM_ember_add},
                                                                       {"ember_exp", BM_ember_exp},
                                                                       {"ember_sum", BM_ember_sum}};
  for (int threads : {1, 2}) {
    for (auto [name, fn] : impls) {
      benchmark::RegisterBenchmark(name, fn)->ArgName("thr")->Arg(threads)->UseRealTime()->Unit(
          benchmark::kMillisecond);
    }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
