#!/usr/bin/env bash
# Ember's ONNX executor beside ONNX Runtime on the CPU, in one run, same .onnx files, same inputs,
# same thread count: ResNet-18 at batch 1 and 8, MobileNetV3-Small at batch 1, the MiniLM-shaped
# encoder at batch 1 and 32 with sequence 128. Latency per run (median of 20 after 3 warm-ups).
# Needs /usr/bin/python3 with torch, torchvision, onnx, onnxruntime (scripts/setup.sh).
#
#   bash scripts/onnx_bench.sh            # threads = nproc; EMBER_BENCH_THREADS=1 for one
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${EMBER_BENCH_BUILD:-$root/build-bench}"
out="$root/out/onnx_bench"
threads="${EMBER_BENCH_THREADS:-$(nproc)}"
py=/usr/bin/python3
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBER_BUILD_BENCH=ON \
  -DEMBER_BUILD_TESTS=OFF -DEMBER_BUILD_EXAMPLES=OFF > /dev/null
cmake --build "$build" --target bench_onnx -j "$(nproc)"
mkdir -p "$out"
"$py" "$root/tests/onnx/models/make_models.py" --out "$out/models" \
  --only resnet18,mobilenet_v3_small,minilm > /dev/null 2>&1
export OMP_NUM_THREADS="$threads"
printf "| model | input | threads | Ember ms | ONNX Runtime ms | Ember / ORT |\n|---|---|---|---|---|---|\n"
for row in "resnet18 image:1" "resnet18 image:8" "mobilenet_v3_small image:1" \
           "minilm tokens:1:128" "minilm tokens:32:128"; do
  set -- $row
  model="$out/models/$1/model.onnx"
  dir="$out/inputs/$1_${2//:/_}"
  ort_out=$("$py" "$root/bench/onnx_ort.py" "$model" "$dir" "$2" --threads "$threads")
  inputs=$(echo "$ort_out" | sed -n 's/^inputs //p')
  ort_ms=$(echo "$ort_out" | awk '/^ort /{print $3}')
  ember_ms=$("$build/bench/bench_onnx" "$model" $inputs | awk '{print $3}')
  ratio=$(awk -v a="$ember_ms" -v b="$ort_ms" 'BEGIN{printf "%.2f", a / b}')
  printf "| %s | %s | %s | %s | %s | %s |\n" "$1" "$2" "$threads" "$ember_ms" "$ort_ms" "$ratio"
done
