#!/usr/bin/env bash
# Compile time of one model file with Ember's one include (ember/ember.hpp) against the same
# model with LibTorch's (torch/torch.h) and a file with only <iostream>, in one run: g++ -O2
# -std=c++20 -c, each compiled 3 times, the fastest wall time kept (docs/PERFORMANCE.md).
#   bash bench/include_cost.sh
set -euo pipefail
cd "$(dirname "$0")/.."
dir=bench/include_cost
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
torch_inc=(-I/usr/include/torch/csrc/api/include)

best() {  # best NAME FLAGS... : the fastest of 3 compiles, in seconds
  local name=$1 best=999
  shift
  for _ in 1 2 3; do
    local start end
    start=$(date +%s.%N)
    g++ -std=c++20 -O2 "$@" -c -o "$out/object.o"
    end=$(date +%s.%N)
    best=$(echo "$best $start $end" | awk '{t = $3 - $2; print (t < $1 ? t : $1)}')
  done
  printf "%-44s %6.2f s\n" "$name" "$best"
}

echo "g++ $(g++ -dumpfullversion), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
best "hello.cpp (<iostream> only)" "$dir/hello.cpp"
best "ember_model.cpp (ember/ember.hpp)" -Iinclude "$dir/ember_model.cpp"
if [[ -f /usr/include/torch/csrc/api/include/torch/torch.h ]]; then
  best "torch_model.cpp (torch/torch.h, LibTorch)" "${torch_inc[@]}" -D_GLIBCXX_USE_CXX11_ABI=1 \
    "$dir/torch_model.cpp"
else
  echo "torch_model.cpp: skipped (apt-get install libtorch-dev)"
fi
