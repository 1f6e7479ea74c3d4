#!/usr/bin/env bash
# The tensor API tour: installs what is needed, builds examples/demo.cpp and runs it (the README's
# first command is scripts/train.sh, the training job).
# EMBER_BUILD_DIR picks the build directory (default: build).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${EMBER_BUILD_DIR:-build}

bash scripts/setup.sh
cmake -S . -B "$build" -G Ninja
cmake --build "$build" -j2 --target ember_demo
"./$build/examples/ember_demo"
