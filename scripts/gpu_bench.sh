#!/usr/bin/env bash
# The GPU benchmarks of issue 13 on the H200 machine, in one call of under ~8 minutes: builds
# bench_cuda and the `ember` CLI (Release, sm_90), runs bench_cuda (Google Benchmark, JSON),
# bench/cuda_torch.py (the same workloads in PyTorch), then the 8-epoch Fashion-MNIST job in
# Ember (`ember train fashion-mnist --device cuda:0`) and in PyTorch (bench/train_torch_cuda.py),
# and prints one Markdown table (bench/cuda_report.py). Installs nothing.
#
# Usage: bash scripts/gpu_bench.sh [FASHION_MNIST_DIR]
#   FASHION_MNIST_DIR (else $EMBER_FASHION_MNIST_DIR): the folder of the four idx files (.gz or
#   plain); without one the job comparison is skipped.
# Settings (environment): EMBER_BENCH_BUILD (build directory, default build-gpu-bench),
# EMBER_BENCH_REPETITIONS (5; rows are medians), EMBER_BENCH_MIN_TIME (seconds per repetition,
# 0.3), EMBER_BENCH_EPOCHS (8), EMBER_BENCH_DEADLINE (seconds from the start after which stages
# are cut short, 540: the table still comes back inside a 10-minute call), EMBER_LOG_DIR
# (receives the table, the JSON and the logs: 8 files). Exit status 1 when a stage failed (its rows
# then say why); Ember's rows that fail (a kernel not written yet) still show in the table.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
build=${EMBER_BENCH_BUILD:-build-gpu-bench}
reps=${EMBER_BENCH_REPETITIONS:-5}
min_time=${EMBER_BENCH_MIN_TIME:-0.3}
epochs=${EMBER_BENCH_EPOCHS:-8}
deadline=${EMBER_BENCH_DEADLINE:-540}
data=${1:-${EMBER_FASHION_MNIST_DIR:-}}
out=$build/gpu-bench
failed=0  # a stage that failed: exit status 1, after the table
mkdir -p "$out"
rm -f "$out"/*.json "$out"/*.log "$out"/report.md
export PYTHONUNBUFFERED=1
commit=${EMBER_COMMIT:-$(git rev-parse --short HEAD 2> /dev/null || echo '?')}

say() { echo "gpu_bench.sh [$SECONDS s] $*" | tee -a "$out/run.log" >&2; }
# Seconds a stage may take: its own cap, or what is left before the deadline (at least 10).
budget() {
  local left=$((deadline - SECONDS))
  ((left < 10)) && left=10
  echo $((left < $1 ? left : $1))
}
finish() {
  python3 bench/cuda_report.py --ember "$out/bench_cuda.json" --torch "$out/torch.json" \
    --job "$out/job.json" --commit "$commit" > "$out/report.md" 2>> "$out/run.log"
  echo
  cat "$out/report.md"
  if [[ -n ${EMBER_LOG_DIR:-} ]]; then
    mkdir -p "$EMBER_LOG_DIR"
    local f
    for f in report.md bench_cuda.json torch.json job.json run.log build.log job_ember.log \
      job_torch.log; do
      [[ -f $out/$f ]] && cp "$out/$f" "$EMBER_LOG_DIR"/
    done
  fi
  exit "$1"
}

gpu=$(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>&1 | head -1)
say "$(nproc) cores; $gpu; commit $commit"

# ---- build: only the two programs (every library they link, no tests) ----
generator=Ninja
command -v ninja > /dev/null || generator="Unix Makefiles"
if ! cmake -S . -B "$build" -G "$generator" -DCMAKE_BUILD_TYPE=Release -DEMBER_WITH_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DEMBER_BUILD_BENCH=ON -DEMBER_BENCH_TORCH=OFF \
  -DEMBER_WITH_LIBTORCH=OFF -DEMBER_BUILD_TESTS=OFF -DEMBER_BUILD_EXAMPLES=OFF \
  > "$out/build.log" 2>&1; then
  tail -30 "$out/build.log"
  say "configure FAILED"
  finish 1
fi
if ! cmake --build "$build" --target bench_cuda ember_cli -j "$(nproc)" \
  >> "$out/build.log" 2>&1; then
  grep -E -A5 'error:|FAILED:' "$out/build.log" | head -60
  say "build FAILED"
  finish 1
fi
say "built bench_cuda and ember_cli"

# ---- bench_cuda: every row, medians of the repetitions ----
EMBER_BENCH_MIN_TIME=$min_time timeout "$(budget 180)" "$build/bench/bench_cuda" \
  --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true \
  --benchmark_out="$out/bench_cuda.json" --benchmark_out_format=json >> "$out/run.log" 2>&1
status=$?
say "bench_cuda: exit $status"
((status == 0)) || failed=1

# ---- the same workloads in PyTorch ----
timeout "$(budget 150)" python3 bench/cuda_torch.py --repetitions "$reps" \
  --min-time "$min_time" > "$out/torch.json" 2>> "$out/run.log"
status=$?
say "cuda_torch.py: exit $status"
((status == 0)) || failed=1

# ---- the 8-epoch job, Ember then PyTorch, each timed as a whole process ----
# Runs "$@" under a time limit; prints {"seconds", "status", "accuracy"} (accuracy from the
# program's last "test accuracy after N epochs: X%" line).
timed_job() {
  local log=$1 limit=$2
  shift 2
  local t0 t1 status acc
  t0=$(date +%s.%N)
  timeout "$limit" "$@" > "$log" 2>&1
  status=$?
  t1=$(date +%s.%N)
  acc=$(grep -o 'test accuracy after [0-9]* epochs: [0-9.]*%' "$log" | tail -1 | grep -o '[0-9.]*%$')
  printf '{"seconds": %s, "status": %d, "accuracy": "%s"}' \
    "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')" "$status" "${acc:-?}"
}
if [[ -z $data ]]; then
  say "no Fashion-MNIST folder given (argument or EMBER_FASHION_MNIST_DIR): job skipped"
elif [[ ! -d $data ]]; then
  say "Fashion-MNIST folder $data does not exist: job skipped"
else
  cat "$data"/* > /dev/null 2>&1  # both runs read the files from the page cache
  ember_cmd=("$build/tools/ember/ember" train fashion-mnist --device cuda:0 --epochs "$epochs"
    --data "$data" --out "$out/ember-run")
  torch_cmd=(python3 bench/train_torch_cuda.py --data "$data" --epochs "$epochs"
    --out "$out/torch-run")
  rm -rf "$out/ember-run" "$out/torch-run"
  ember_json=$(timed_job "$out/job_ember.log" "$(budget 180)" "${ember_cmd[@]}")
  say "ember job: $ember_json"
  torch_json=$(timed_job "$out/job_torch.log" "$(budget 180)" "${torch_cmd[@]}")
  say "pytorch job: $torch_json"
  [[ $ember_json$torch_json == *'"status": 0,'*'"status": 0,'* ]] || failed=1
  printf '{"ember": %s, "pytorch": %s, "ember_command": "%s", "pytorch_command": "%s"}\n' \
    "$ember_json" "$torch_json" "${ember_cmd[*]}" "${torch_cmd[*]}" > "$out/job.json"
fi
say "done"
finish "$failed"
