#!/usr/bin/env bash
# Installs the benchmark dependencies, builds Ember's benchmarks (bench/) and runs them all,
# writing console output, JSON and a Markdown report under out/bench/. docs/PERFORMANCE.md shows
# the results of one run and how to read them.
#
#   scripts/bench.sh                      # everything (apt-get needs root or sudo)
#   EMBER_BENCH_SKIP_DEPS=1 scripts/bench.sh
#   EMBER_BENCH_FILTER='sgemm' scripts/bench.sh   # only benchmarks whose name matches
#
# Settings (environment): EMBER_BENCH_BUILD (build dir, default build-bench),
# EMBER_BENCH_MIN_TIME (seconds per benchmark and repetition, default 0.3),
# EMBER_BENCH_REPETITIONS (default 5; the report uses the median), EMBER_BENCH_QUIET_WAIT
# (seconds to wait for the 1-minute load average to fall below 0.5 first, default 0).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${EMBER_BENCH_BUILD:-$root/build-bench}"
out="$root/out/bench"
min_time="${EMBER_BENCH_MIN_TIME:-0.3}"
reps="${EMBER_BENCH_REPETITIONS:-5}"
filter="${EMBER_BENCH_FILTER:-.}"
quiet_wait="${EMBER_BENCH_QUIET_WAIT:-0}"

if [[ "${EMBER_BENCH_SKIP_DEPS:-0}" != 1 ]]; then
  sudo=""
  if [[ "$(id -u)" != 0 ]]; then sudo="sudo"; fi
  # Google Benchmark, and LibTorch for the per-op overhead comparison (optional: the build
  # goes on without it). oneDNN and OpenBLAS are the library's own optional dependencies.
  $sudo apt-get install -y --no-install-recommends libbenchmark-dev libdnnl-dev libopenblas-dev \
    cmake ninja-build g++ python3
  $sudo apt-get install -y --no-install-recommends libtorch-dev ||
    echo "bench.sh: libtorch-dev not installed; bench_overhead will measure Ember alone" >&2
fi

generator=()
if command -v ninja > /dev/null; then generator=(-G Ninja); fi
cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DEMBER_BUILD_BENCH=ON -DEMBER_BUILD_TESTS=OFF -DEMBER_BUILD_EXAMPLES=OFF
cmake --build "$build" --target bench_gemm bench_elementwise bench_overhead bench_autodiff \
  bench_nn -j "$(nproc 2> /dev/null || echo 2)"

# Timings on a busy machine are meaningless: wait a while for it to be quiet, then say how it was.
load() { cut -d' ' -f1 /proc/loadavg; }
waited=0
while (( waited < quiet_wait )) && awk -v l="$(load)" 'BEGIN { exit !(l >= 0.5) }'; do
  sleep 10
  waited=$((waited + 10))
done
if awk -v l="$(load)" 'BEGIN { exit !(l >= 0.5) }'; then
  echo "bench.sh: warning: load average $(load) >= 0.5; timings will be disturbed" >&2
fi

mkdir -p "$out"
# Repetitions run in random order, interleaved across benchmarks, so that a slow spell of this
# (virtual) machine does not land on one implementation only; the report takes medians.
for b in bench_gemm bench_elementwise bench_overhead bench_autodiff bench_nn; do
  echo "== $b (load average $(load))"
  "$build/bench/$b" --benchmark_filter="$filter" --benchmark_min_time="$min_time" \
    --benchmark_repetitions="$reps" --benchmark_enable_random_interleaving=true \
    --benchmark_report_aggregates_only=true \
    --benchmark_out="$out/$b.json" --benchmark_out_format=json | tee "$out/$b.txt"
done
python3 "$root/bench/report.py" "$out"/bench_gemm.json "$out"/bench_elementwise.json \
  "$out"/bench_overhead.json "$out"/bench_autodiff.json "$out"/bench_nn.json | tee "$out/report.md"
echo "bench.sh: results in $out"
