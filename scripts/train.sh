#!/usr/bin/env bash
# The README's first command: installs what is needed (scripts/setup.sh, with Debian's
# dataset-fashion-mnist), builds the `ember` command line and trains the Fashion-MNIST CNN on the
# Cpu (Adam, lr 1e-3, batch 64), then reports the test accuracy, saves the model as safetensors
# and classifies a few test images. Extra arguments go to `ember train` (e.g. --epochs 1, or
# --resume to continue a stopped run). EMBER_BUILD_DIR picks the build directory (default:
# build); the run writes to runs/fashion-mnist.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${EMBER_BUILD_DIR:-build}

bash scripts/setup.sh
cmake -S . -B "$build" -G Ninja
cmake --build "$build" -j2 --target ember_cli
"./$build/tools/ember/ember" train fashion-mnist --epochs 8 --out runs/fashion-mnist "$@"
