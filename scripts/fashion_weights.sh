#!/usr/bin/env bash
# Prints the path of FashionCnn weights for the deployment examples (scripts/static.sh,
# scripts/cross.sh): the file given as $1, else one epoch trained by the `ember` of
# $EMBER_BUILD_DIR (default: build), kept in that build directory for the next caller.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -n ${1:-} ]]; then
  realpath "$1"
  exit
fi
main=${EMBER_BUILD_DIR:-build}
out=$main/fashion-one-epoch
if [[ ! -f $out/model.safetensors ]]; then
  cmake -S . -B "$main" -G Ninja > /dev/null
  cmake --build "$main" -j2 --target ember_cli >&2
  "$main/tools/ember/ember" train fashion-mnist --epochs 1 --out "$out" --show 0 --overwrite |
    tail -2 >&2
fi
realpath "$out/model.safetensors"
