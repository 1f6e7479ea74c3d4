// Memory-bound ops on 16M f32 (64 MB per tensor), on 1 and 2 threads, beside a plain memcpy of
// 64 MB on the same number of threads. Counters: BW (bytes read + written per second: memcpy
// 2 x 64 MB, add 3 x 64 MB, exp 2 x 64 MB, sum 64 MB) and pct_copy (BW as % of memcpy's BW
// measured earlier in this run on the same thread count). Reference rows (add_loop, add_stream,
// sum_loop) are plain loops, not Ember: what this machine allows a kernel.
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
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define EMBER_BENCH_X86 1
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

// Runs fn(t, lo, hi) for thread t over its piece of [0, kN), on `threads` std::threads (inline for
// one); pieces are multiples of 16 elements so vector loops stay aligned.
template <class F>
void on_threads(int threads, const F& fn) {
  if (threads <= 1) {
    fn(0, int64_t{0}, kN);
    return;
  }
  std::vector<std::thread> pool;
  const int64_t chunk = kN / threads / 16 * 16;
  for (int t = 0; t < threads; ++t) {
    const int64_t lo = t * chunk, hi = t + 1 == threads ? kN : lo + chunk;
    pool.emplace_back([&fn, t, lo, hi] { fn(t, lo, hi); });
  }
  for (auto& th : pool) th.join();
}

// References (not Ember): what plain loops reach on this machine, to tell a kernel's gap from the
// hardware's. A loop with ordinary stores reads each output line before writing it (4 x 64 MB
// move for the 3 x 64 MB counted); memcpy, like add_stream, writes with streaming stores.
void add_range(const float* __restrict a, const float* __restrict b, float* __restrict out,
               int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; ++i) out[i] = a[i] + b[i];
}

#if defined(EMBER_BENCH_X86)
__attribute__((target("avx"))) void add_stream_range(const float* a, const float* b, float* out,
                                                     int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; i += 8) {
    _mm256_stream_ps(out + i, _mm256_add_ps(_mm256_load_ps(a + i), _mm256_load_ps(b + i)));
  }
  _mm_sfence();
}
#endif

float sum_range(const float* __restrict x, int64_t lo, int64_t hi) {
  float lanes[32] = {};
  for (int64_t i = lo; i < hi; i += 32) {
    for (int k = 0; k < 32; ++k) lanes[k] += x[i + k];
  }
  float s = 0.f;
  for (float l : lanes) s += l;
  return s;
}

void BM_add_loop(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  HostBuffer a, b, out;
  run_timed(state, 3.0 * kBytes, threads, [&] {
    on_threads(threads, [&](int, int64_t lo, int64_t hi) { add_range(a.p, b.p, out.p, lo, hi); });
    benchmark::ClobberMemory();
  });
}

#if defined(EMBER_BENCH_X86)
void BM_add_stream(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  HostBuffer a, b, out;
  run_timed(state, 3.0 * kBytes, threads, [&] {
    on_threads(threads,
               [&](int, int64_t lo, int64_t hi) { add_stream_range(a.p, b.p, out.p, lo, hi); });
    benchmark::ClobberMemory();
  });
}
#endif

void BM_sum_loop(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  HostBuffer x;
  std::vector<float> partial(static_cast<size_t>(threads));
  run_timed(state, 1.0 * kBytes, threads, [&] {
    on_threads(threads, [&](int t, int64_t lo, int64_t hi) {
      partial[static_cast<size_t>(t)] = sum_range(x.p, lo, hi);
    });
    benchmark::DoNotOptimize(partial.data());
    benchmark::ClobberMemory();
  });
}

using ember::bench::sampled_ok;

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

// tanh over 16M f32 (2 x 64 MB), beside a plain loop over std::tanh (libm, scalar): the peer
// Ember's vectorised tanh replaced.
void BM_ember_tanh(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  ember::cpu::set_num_threads(threads);
  const auto x = random_input(7);
  {
    const auto vx = x.to_vector<float>();
    if (!sampled_ok(ember::tanh(x).to_vector<float>(),
                    [&](size_t i) { return std::tanh(double(vx[i])); })) {
      state.SkipWithError("tanh(x) gave a wrong result");
      return;
    }
  }
  run_timed(state, 2.0 * kBytes, threads, [&] {
    auto y = ember::tanh(x);
    benchmark::DoNotOptimize(y);
  });
}

void BM_tanh_libm(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  HostBuffer x, y;
  run_timed(state, 2.0 * kBytes, threads, [&] {
    on_threads(threads, [&](int, int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) y.p[i] = std::tanh(x.p[i]);
    });
    benchmark::ClobberMemory();
  });
}

// The same 16M f32 seen as a matrix: a transposed copy (contiguous() of x.t(): 2 x 64 MB, like
// memcpy) and reductions along rows (LayerNorm/softmax rows of 256) and down columns (a bias
// gradient over 65536 tokens), each reading 64 MB.
void BM_ember_transpose(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  ember::cpu::set_num_threads(threads);
  const auto x = random_input(5).reshape({4096, 4096});
  const auto t = x.t();
  {
    const auto c = t.contiguous();
    if (c.to_vector<float>()[1] != x.to_vector<float>()[4096]) {
      state.SkipWithError("transpose gave a wrong result");
      return;
    }
  }
  run_timed(state, 2.0 * kBytes, threads, [&] {
    auto c = t.contiguous();
    benchmark::DoNotOptimize(c);
  });
}

template <int kDim>
void ember_matrix_sum(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  ember::cpu::set_num_threads(threads);
  const auto x = random_input(6).reshape({kN / 256, 256});
  run_timed(state, 1.0 * kBytes, threads, [&] {
    auto s = x.sum(kDim);
    benchmark::DoNotOptimize(s);
  });
}
void BM_ember_rowsum(benchmark::State& state) { ember_matrix_sum<1>(state); }
void BM_ember_colsum(benchmark::State& state) { ember_matrix_sum<0>(state); }

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  // Per thread count: the memcpy peer first (the in-run pct_copy counter refers to the latest
  // memcpy row; the report computes its % from the medians), then every op, then references.
  const std::vector<std::pair<const char*, void (*)(benchmark::State&)>> impls = {
    {"memcpy", BM_memcpy},
    {"ember_add", BM_ember_add},
    {"ember_exp", BM_ember_exp},
    {"ember_sum", BM_ember_sum},
    {"ember_tanh", BM_ember_tanh},
    {"tanh_libm", BM_tanh_libm},
    {"ember_transpose", BM_ember_transpose},
    {"ember_rowsum", BM_ember_rowsum},
    {"ember_colsum", BM_ember_colsum},
    {"add_loop", BM_add_loop},
#if defined(EMBER_BENCH_X86)
    {"add_stream", BM_add_stream},
#endif
    {"sum_loop", BM_sum_loop}
  };
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
