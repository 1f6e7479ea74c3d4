#!/usr/bin/env bash
# Data-parallel training on CPUs (issue 20, docs/PERFORMANCE.md "Several processes"): one
# Fashion-MNIST epoch of `ember train` in one process (batch 128, every core) against two
# processes under mpirun (batch 64 each, 128 a step in all, a core each), alternating, 3 runs
# each. Prints the training items/s (every rank's items over the epoch's training time) and the
# epoch's seconds (validation included: each rank scores the whole test set) from metrics.csv,
# and the test accuracy, the same but for float rounding over the epoch's steps.
#   bash bench/dist_cpu.sh [path/to/ember]
set -euo pipefail
ember=${1:-build/tools/ember/ember}
cores=$(nproc)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1  # root machines (CI's)
row() {  # row NAME DIR: the epoch's items/s, seconds and accuracy from metrics.csv
  awk -F, -v name="$1" 'NR == 2 {
    printf "%-26s %9.0f items/s  %6.2f s  test accuracy %.4f\n", name, $9, $11, $6 }' "$2/metrics.csv"
}
common=(train fashion-mnist --epochs 1 --show 0 --workers 1 --overwrite)
echo "machine: $cores cores, $(lscpu | sed -n 's/^Model name: *//p')"
for i in 1 2 3; do
  EMBER_NUM_THREADS=$cores "$ember" "${common[@]}" --batch-size 128 --out "$out/one" > /dev/null 2>&1
  row "1 process, $cores threads" "$out/one"
  EMBER_NUM_THREADS=$((cores / 2 > 0 ? cores / 2 : 1)) mpirun -np 2 -x EMBER_NUM_THREADS \
    "$ember" "${common[@]}" --batch-size 64 --out "$out/two" > /dev/null 2>&1
  row "2 processes, $((cores / 2)) thread(s) each" "$out/two"
done
