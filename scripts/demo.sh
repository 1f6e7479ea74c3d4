#!/usr/bin/env bash
# The README's first command: installs what is needed, builds the demo and runs it.
# EMBER_BUILD_DIR picks the build directory (default: build).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${EMBER_BUILD_DIR:-build}

bash scripts/setup.sh
cmake -S . -B "$build" -G Ninja
cmake --build "$build" -j2 --target ember_demo
"./$build/examples/ember_demo"
