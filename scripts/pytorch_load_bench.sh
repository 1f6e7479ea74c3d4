#!/usr/bin/env bash
# Loading a 100M-parameter state dict: Ember from .pt and from safetensors beside PyTorch's
# torch.load + load_state_dict, in one run (bench/pytorch_load.py; docs/PERFORMANCE.md). Needs
# /usr/bin/python3 with torch (scripts/setup.sh). The 403 MB files are written once to
# out/pytorch_load/.
#
#   bash scripts/pytorch_load_bench.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${EMBER_BENCH_BUILD:-$root/build-bench}"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBER_BUILD_BENCH=ON \
  -DEMBER_BUILD_TESTS=OFF -DEMBER_BUILD_EXAMPLES=OFF > /dev/null
cmake --build "$build" --target bench_pytorch_load ember_cli -j "$(nproc)"
/usr/bin/python3 "$root/bench/pytorch_load.py" "$build/bench/bench_pytorch_load" \
  "$root/out/pytorch_load"
