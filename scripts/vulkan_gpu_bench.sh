#!/usr/bin/env bash
# The Vulkan benchmarks of issue 18 on a GPU machine, beside the Cuda backend in the same binary:
# configures with the Vulkan packages that scripts/vulkan_gpu_deps.sh fetched into .dev/vk,
# builds bench_vulkan (Release, Cuda on), runs the f32 4096³ and f16 8192³ matmuls and the
# Fashion-MNIST CNN training step on vulkan:0 and cuda:0, float16 matmul once more on
# VK_NV_cooperative_matrix, then under each cooperative tiling given. Installs nothing; logs go to EMBER_LOG_DIR when set.
#
# Usage: bash scripts/vulkan_gpu_bench.sh [BM,BN,BK,TM,TN ...]   (EMBER_VULKAN_COOP_TILES values)
# Settings: EMBER_BENCH_BUILD (build directory, default build-gpu), EMBER_BENCH_MIN_TIME (0.3).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
[[ -d .dev/vk/root ]] || { echo "vulkan_gpu_bench.sh: run scripts/vulkan_gpu_deps.sh fetch first" >&2; exit 1; }
source scripts/vulkan_gpu_deps.sh env
read -ra vulkan_args <<< "$EMBER_VULKAN_CMAKE_ARGS"
build=${EMBER_BENCH_BUILD:-build-gpu}
logs=${EMBER_LOG_DIR:-$build}
mkdir -p "$build" "$logs"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2> /dev/null | head -1
start=$SECONDS
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBER_BUILD_BENCH=ON \
  -DEMBER_WITH_CUDA=ON -DEMBER_BUILD_EXAMPLES=OFF -DEMBER_BUILD_TESTS=OFF "${vulkan_args[@]}" \
  > "$logs/configure.log" 2>&1 || { tail -30 "$logs/configure.log"; exit 1; }
cmake --build "$build" -j "$(nproc)" --target bench_vulkan > "$logs/build.log" 2>&1 ||
  { grep -A5 'error:' "$logs/build.log" | head -40; exit 1; }
echo "vulkan_gpu_bench.sh: built in $((SECONDS - start)) s"
bench=$build/bench/bench_vulkan
EMBER_BENCH_MIN_TIME=${EMBER_BENCH_MIN_TIME:-0.3} "$bench" \
  --benchmark_filter='(matmul|cnn).*(vulkan|cuda)' > "$logs/bench.log" 2>&1
status=$?
grep -E '^(matmul|cnn)|rror' "$logs/bench.log"
# Float16 again through VK_NV_cooperative_matrix, the fallback where a device lacks KHR.
echo "matmul_f16 on VK_NV_cooperative_matrix: $(EMBER_VULKAN_COOPERATIVE=nv \
  EMBER_BENCH_MIN_TIME=0.3 "$bench" --benchmark_filter='matmul_f16/vulkan' 2>&1 |
  grep -E '^matmul|rror' | awk '{print $2, $3, $NF}')"
for tiles in "$@"; do
  echo "EMBER_VULKAN_COOP_TILES=$tiles: $(EMBER_VULKAN_COOP_TILES=$tiles EMBER_BENCH_MIN_TIME=0.2 \
    "$bench" --benchmark_filter='matmul_f16/vulkan' 2>&1 | grep -E '^matmul|rror' |
    awk '{print $2, $3, $NF}')"
done
exit "$status"
