#!/usr/bin/env bash
# The README's second command: installs what is needed, builds everything with warnings as
# errors and runs the whole test suite. EMBER_BUILD_DIR picks the build directory (default: build).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${EMBER_BUILD_DIR:-build}

bash scripts/setup.sh
cmake -S . -B "$build" -G Ninja -DEMBER_WERROR=ON
cmake --build "$build" -j2
ctest --test-dir "$build" --output-on-failure -j2
