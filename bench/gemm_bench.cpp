// SGEMM, square n x n, on 1 and 2 threads: Ember's matmul beside the GEMM library it calls
// (oneDNN's dnnl_sgemm; OpenBLAS's cblas_sgemm where built with it), and beside the machine's
// measured FMA peak. Counters: FLOPS (2 n^3 per call, as a rate) and pct_peak (% of the FMA peak
// measured on the same number of threads).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include <ember/ember.hpp>

#include "peak.hpp"

#if defined(EMBER_BENCH_DNNL)
#include <oneapi/dnnl/dnnl.h>
#endif
#if defined(EMBER_BENCH_OPENBLAS)
#include <cblas.h>
#endif

namespace {

using Clock = std::chrono::steady_clock;

// Times the benchmark loop around `call` and sets the FLOPS and pct_peak counters.
template <class F>
void run_gemm(benchmark::State& state, int64_t n, int threads, F&& call) {
  const double peak = ember::bench::fma_peak_gflops(threads);
  const auto t0 = Clock::now();
  for (auto _ : state) call();
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  const double flops =
      2.0 * static_cast<double>(n) * n * n * static_cast<double>(state.iterations());
  state.counters["FLOPS"] = benchmark::Counter(flops, benchmark::Counter::kIsRate);
  state.counters["pct_peak"] = 100.0 * flops / s * 1e-9 / peak;
  state.counters["peak_GFLOPS"] = peak;
}

// The peak the sgemm rows that follow are compared with (pct_peak).
void BM_fma_peak(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  double flops = 0;
  const auto t0 = Clock::now();
  for (auto _ : state) flops += ember::bench::fma_burst(threads, 1'000'000);
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  state.counters["FLOPS"] = benchmark::Counter(flops, benchmark::Counter::kIsRate);
  ember::bench::record_fma_peak(threads, flops / s * 1e-9);
}

// Checks 64 sampled entries of c = a b against a double-precision dot product; a benchmark of a
// wrong result is worthless.
bool gemm_ok(const float* a, const float* b, const float* c, int64_t n) {
  for (int64_t s = 0; s < 64; ++s) {
    const int64_t i = (s * 7919) % n, j = (s * 104729) % n;
    double ref = 0, mag = 0;
    for (int64_t k = 0; k < n; ++k) {
      ref += static_cast<double>(a[i * n + k]) * b[k * n + j];
      mag += std::abs(static_cast<double>(a[i * n + k]) * b[k * n + j]);
    }
    if (std::abs(c[i * n + j] - ref) > 1e-5 * mag + 1e-6) return false;
  }
  return true;
}

void BM_sgemm_ember(benchmark::State& state) {
  const int64_t n = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  ember::cpu::set_num_threads(threads);
  ember::Generator gen(1);
  const auto a = ember::Tensor<2>::randn({n, n}, ember::Device::cpu(), &gen);
  const auto b = ember::Tensor<2>::randn({n, n}, ember::Device::cpu(), &gen);
  {  // warm: the output buffer lands in the allocator's cache
    const auto c = ember::matmul(a, b);
    if (!gemm_ok(a.to_vector<float>().data(), b.to_vector<float>().data(),
                 c.to_vector<float>().data(), n)) {
      state.SkipWithError("matmul gave a wrong result");
      return;
    }
  }
  run_gemm(state, n, threads, [&] {
    auto c = ember::matmul(a, b);
    benchmark::DoNotOptimize(c);
  });
}

// A 64-byte-aligned float buffer, as Ember's allocator hands out: small GEMMs are sensitive to
// alignment, and the peers should not be measured on worse-aligned memory than Ember.
struct AlignedFloats {
  float* p = nullptr;
  explicit AlignedFloats(const std::vector<float>& v) {
    const size_t bytes = (v.size() * sizeof(float) + 63) / 64 * 64;
    p = static_cast<float*>(std::aligned_alloc(64, bytes));
    std::copy(v.begin(), v.end(), p);
  }
  ~AlignedFloats() { std::free(p); }
  AlignedFloats(const AlignedFloats&) = delete;
  AlignedFloats& operator=(const AlignedFloats&) = delete;
  float* data() const { return p; }
};

// The peers get the same random operands as Ember and a pre-touched output.
struct HostOperands {
  AlignedFloats a, b, c;
  explicit HostOperands(int64_t n)
      : a(operand(n, 0)), b(operand(n, 1)), c(std::vector<float>(static_cast<size_t>(n * n))) {}
  static std::vector<float> operand(int64_t n, int which) {
    ember::Generator gen(1);
    auto x = ember::Tensor<2>::randn({n, n}, ember::Device::cpu(), &gen);
    if (which == 1) x = ember::Tensor<2>::randn({n, n}, ember::Device::cpu(), &gen);
    return x.to_vector<float>();
  }
};

#if defined(EMBER_BENCH_DNNL)
void BM_sgemm_onednn(benchmark::State& state) {
  const int64_t n = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  ember::cpu::set_num_threads(threads);  // sets omp_set_num_threads, which oneDNN reads
  HostOperands h(n);
  auto call = [&] {
    const dnnl_status_t st =
        dnnl_sgemm('N', 'N', n, n, n, 1.0f, h.a.data(), n, h.b.data(), n, 0.0f, h.c.data(), n);
    if (st != dnnl_success) state.SkipWithError("dnnl_sgemm failed");
    benchmark::DoNotOptimize(h.c.data());
    benchmark::ClobberMemory();
  };
  call();
  if (!gemm_ok(h.a.data(), h.b.data(), h.c.data(), n)) {
    state.SkipWithError("dnnl_sgemm gave a wrong result");
    return;
  }
  run_gemm(state, n, threads, call);
}
#endif

#if defined(EMBER_BENCH_OPENBLAS)
void BM_sgemm_openblas(benchmark::State& state) {
  const int64_t n = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  ember::cpu::set_num_threads(threads);
  openblas_set_num_threads(threads);
  HostOperands h(n);
  const int ni = static_cast<int>(n);
  auto call = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ni, ni, ni, 1.0f, h.a.data(), ni,
                h.b.data(), ni, 0.0f, h.c.data(), ni);
    benchmark::DoNotOptimize(h.c.data());
    benchmark::ClobberMemory();
  };
  call();
  if (!gemm_ok(h.a.data(), h.b.data(), h.c.data(), n)) {
    state.SkipWithError("cblas_sgemm gave a wrong result");
    return;
  }
  run_gemm(state, n, threads, call);
}
#endif

// Weight-gradient products C [m, n] = A^T B with A stored [k, m] (x^T g): the transposed left
// operand is where the GEMM libraries differ. (m, k, n): a Transformer's in_proj and
// feed-forward weight gradients over 2048 tokens, and a batch-64 MLP layer's.
struct TShape {
  int64_t m, k, n;
};
TShape tshape(const benchmark::State& state) {
  return {state.range(0), state.range(1), state.range(2)};
}

std::vector<float> random_floats(int64_t count, uint64_t seed) {
  ember::Generator gen(seed);
  return ember::randn(ember::Shape{count}, ember::DType::f32, ember::Device::cpu(), &gen)
      .to_vector<float>();
}

template <class F>
void run_tgemm(benchmark::State& state, const TShape& t, F&& call) {
  call();  // warm: buffers touched, primitives and packing set up
  for (auto _ : state) call();
  state.counters["FLOPS"] = benchmark::Counter(
      2.0 * static_cast<double>(t.m * t.n * t.k) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
}

void BM_tgemm_ember(benchmark::State& state) {
  const TShape t = tshape(state);
  ember::cpu::set_num_threads(static_cast<int>(state.range(3)));
  ember::Generator gen(1);
  const auto a = ember::Tensor<2>::randn({t.k, t.m}, ember::Device::cpu(), &gen);
  const auto b = ember::Tensor<2>::randn({t.k, t.n}, ember::Device::cpu(), &gen);
  run_tgemm(state, t, [&] {
    auto c = ember::matmul(a.t(), b);
    benchmark::DoNotOptimize(c);
  });
}

#if defined(EMBER_BENCH_DNNL)
void BM_tgemm_onednn(benchmark::State& state) {
  const TShape t = tshape(state);
  ember::cpu::set_num_threads(static_cast<int>(state.range(3)));  // oneDNN follows OpenMP
  AlignedFloats a(random_floats(t.k * t.m, 1)), b(random_floats(t.k * t.n, 2)),
      c(std::vector<float>(static_cast<size_t>(t.m * t.n)));
  run_tgemm(state, t, [&] {
    dnnl_sgemm('T', 'N', t.m, t.n, t.k, 1.0f, a.data(), t.m, b.data(), t.n, 0.0f, c.data(), t.n);
    benchmark::DoNotOptimize(c.data());
  });
}
#endif

#if defined(EMBER_BENCH_OPENBLAS)
void BM_tgemm_openblas(benchmark::State& state) {
  const TShape t = tshape(state);
  openblas_set_num_threads(static_cast<int>(state.range(3)));
  AlignedFloats a(random_floats(t.k * t.m, 1)), b(random_floats(t.k * t.n, 2)),
      c(std::vector<float>(static_cast<size_t>(t.m * t.n)));
  run_tgemm(state, t, [&] {
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, static_cast<int>(t.m),
                static_cast<int>(t.n), static_cast<int>(t.k), 1.0f, a.data(), static_cast<int>(t.m),
                b.data(), static_cast<int>(t.n), 0.0f, c.data(), static_cast<int>(t.n));
    benchmark::DoNotOptimize(c.data());
  });
}
#endif

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
#if defined(EMBER_BENCH_DNNL)
  const dnnl_version_t* v = dnnl_version();
  std::string onednn = std::to_string(v->major);
  onednn.append(".").append(std::to_string(v->minor)).append(".").append(std::to_string(v->patch));
  onednn.append(v->cpu_runtime == DNNL_RUNTIME_OMP ? " (OpenMP runtime)" : " (non-OpenMP runtime)");
  benchmark::AddCustomContext("onednn", onednn);
#endif
#if defined(EMBER_BENCH_OPENBLAS)
  // OpenBLAS picks its kernels by core type (OPENBLAS_CORETYPE overrides the detection).
  std::string openblas = openblas_get_config();
  openblas.append(", core ").append(openblas_get_corename());
  benchmark::AddCustomContext("openblas", openblas);
#endif
  // Registered here so that each (threads, n) runs every implementation back to back.
  for (int threads : {1, 2}) {
    benchmark::RegisterBenchmark("fma_peak", BM_fma_peak)
        ->ArgName("thr")
        ->Arg(threads)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
    for (int64_t n : {256, 512, 1024, 2048}) {
      std::vector<std::pair<const char*, void (*)(benchmark::State&)>> impls = {
          {"sgemm_ember", BM_sgemm_ember}};
#if defined(EMBER_BENCH_DNNL)
      impls.emplace_back("sgemm_onednn", BM_sgemm_onednn);
#endif
#if defined(EMBER_BENCH_OPENBLAS)
      impls.emplace_back("sgemm_openblas", BM_sgemm_openblas);
#endif
      for (auto [name, fn] : impls) {
        benchmark::RegisterBenchmark(name, fn)
            ->Args({n, threads})
            ->ArgNames({"n", "thr"})
            ->UseRealTime()
            ->Unit(benchmark::kMillisecond);
      }
    }
  }
  for (int threads : {1, 2}) {
    for (const TShape& t :
         {TShape{256, 2048, 768}, TShape{1024, 2048, 256}, TShape{784, 64, 256}}) {
      std::vector<std::pair<const char*, void (*)(benchmark::State&)>> impls = {
          {"tgemm_ember", BM_tgemm_ember}};
#if defined(EMBER_BENCH_DNNL)
      impls.emplace_back("tgemm_onednn", BM_tgemm_onednn);
#endif
#if defined(EMBER_BENCH_OPENBLAS)
      impls.emplace_back("tgemm_openblas", BM_tgemm_openblas);
#endif
      for (auto [name, fn] : impls) {
        benchmark::RegisterBenchmark(name, fn)
            ->Args({t.m, t.k, t.n, threads})
            ->ArgNames({"m", "k", "n", "thr"})
            ->UseRealTime()
            ->Unit(benchmark::kMillisecond);
      }
    }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
