#!/usr/bin/env bash
# Prints the path of FashionCnn weights for the deployment examples (scripts/static.sh,
# scripts/cross.sh): the file given, else one epoch trained by the `ember` of $EMBER_BUILD_DIR
# (default: build), kept in that build directory for the next caller. With --int8, the same
# weights quantized by `ember quantize` (written into that build directory).
#   scripts/fashion_weights.sh [--int8] [model.safetensors]
set -euo pipefail
cd "$(dirname "$0")/.."
int8=0
if [[ ${1:-} == --int8 ]]; then
  int8=1
  shift
fi
main=${EMBER_BUILD_DIR:-build}
ember=$main/tools/ember/ember
if [[ ! -x $ember || -z ${1:-} ]]; then
  cmake -S . -B "$main" -G Ninja > /dev/null
  cmake --build "$main" -j2 --target ember_cli >&2
fi
if [[ -n ${1:-} ]]; then
  weights=$(realpath "$1")
else
  weights=$(realpath "$main")/fashion-one-epoch/model.safetensors
  if [[ ! -f $weights ]]; then
    "$ember" train fashion-mnist --epochs 1 --out "$main/fashion-one-epoch" --show 0 --overwrite |
      tail -2 >&2
  fi
fi
if ((int8)); then
  quantized=$(realpath "$main")/fashion-int8.safetensors
  "$ember" quantize "$weights" "$quantized" >&2
  weights=$quantized
fi
echo "$weights"
