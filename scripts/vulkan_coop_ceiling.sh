#!/usr/bin/env bash
# shellcheck disable=SC2086,SC2017,SC2034  # configurations split into arguments; th / 32 is exact
# How fast NVIDIA's Vulkan driver can run float16 cooperative matrices at all, on a GPU machine,
# apart from Ember's build (docs/PERFORMANCE.md, "what NVIDIA's Vulkan driver can give float16"):
#   1. mma.sync m16n8k16 from CUDA on registers (bench/vulkan_ceiling/mma_sync.cu): the card;
#      then a CUDA GEMM on it under Vulkan's limits and with cp.async, beside cuBLAS
#      (gemm_staged.cu);
#   2. VK_NV_cooperative_matrix's multiply-add on registers, no memory traffic (registers.comp);
#   3. the tile loop alone, fragments from shared memory, no traffic, no barrier (shared.comp);
#   4. the backend's matmul_coop.comp at 8192³ over tilings, its outputs checked;
# each Vulkan row with the driver's register count (bench/vulkan_ceiling/probe.cpp). Needs nvcc
# and the Vulkan packages of scripts/vulkan_gpu_deps.sh fetch (carried in .dev); installs nothing.
# Usage: bash scripts/vulkan_coop_ceiling.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
if [[ ! -d .dev/vk/root ]]; then
  echo "vulkan_coop_ceiling.sh: run scripts/vulkan_gpu_deps.sh fetch first" >&2
  exit 1
fi
source scripts/vulkan_gpu_deps.sh env
vk=.dev/vk/root/usr
glslang=$vk/bin/glslangValidator
dir=bench/vulkan_ceiling
tmp=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | head -1
nvcc -O3 -arch=sm_90 -o "$tmp/mma_sync" $dir/mma_sync.cu || exit 1
nvcc -O3 -std=c++17 -arch=sm_90 -o "$tmp/gemm_staged" $dir/gemm_staged.cu -lcublas || exit 1
g++ -O2 -std=c++17 -I$vk/include -o "$tmp/probe" $dir/probe.cpp \
  $vk/lib/x86_64-linux-gnu/libvulkan.so.1 || exit 1
for s in registers shared; do
  $glslang -V --target-env vulkan1.1 --quiet -o "$tmp/$s.spv" $dir/$s.comp || exit 1
done
$glslang -V --target-env vulkan1.1 --quiet -o "$tmp/matmul_coop.spv" \
  src/backends/vulkan/shaders/matmul_coop.comp || exit 1

echo "== mma.sync from CUDA (blocks an SM, warps a block)"
for c in "2 8" "1 8" "4 8" "1 4" "2 4"; do "$tmp/mma_sync" $c; done
echo "== a CUDA GEMM, 8192^3: slices through registers (as Vulkan must) or by cp.async"
"$tmp/gemm_staged" 8192
groups=528  # 4 workgroups an SM of 132
echo "== multiply-add on registers (threads, fragments along rows and columns, iterations)"
for c in "256 4 2 2048" "256 4 4 1024" "128 4 4 2048" "256 2 2 4096" "512 4 2 1024"; do
  read -r th fm fn it <<< "$c"
  "$tmp/probe" "$tmp/registers.spv" 8192 $groups $((groups * th / 32 * it * fm * fn * 8192)) 0 $c
done
echo "== the tile loop on shared memory (threads, fragments, iterations, subgroups a row, depth)"
for c in "256 4 2 1024 4 32" "256 4 2 1024 4 16" "256 2 4 1024 2 32" "256 4 4 512 4 16" \
         "256 4 4 512 2 16" "128 4 4 512 2 32" "512 2 2 1024 4 32" "256 2 2 2048 4 32"; do
  read -r th fm fn it sgn bk <<< "$c"
  flop=$((groups * th / 32 * it * bk / 16 * fm * fn * 8192))
  "$tmp/probe" "$tmp/shared.spv" 8192 $groups $flop 0 $c
done
n=8192
echo "== matmul_coop.comp at ${n}³ (threads, subgroups, fragments, depth, band of tiles)"
for c in "256 2 4 4 2 16 8" "256 2 4 4 2 32 8" "256 2 4 4 2 16 4" "256 2 4 4 2 16 16" \
         "256 4 2 2 4 16 8" "256 2 4 4 4 16 8" "256 4 2 4 4 16 8" "512 4 4 2 2 32 8"; do
  read -r th sgm sgn fm fn bk band <<< "$c"
  tiles=$(( (n / (sgm * fm * 16)) * (n / (sgn * fn * 16)) ))
  "$tmp/probe" "$tmp/matmul_coop.spv" $n $tiles $((2 * n * n * n)) 1 $c
done
rm -rf "$tmp"
