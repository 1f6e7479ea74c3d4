#!/usr/bin/env bash
# Cross-compiles the tensor core and the Cpu backend for a Cortex-M4F (arm-none-eabi, newlib,
# no exceptions, no RTTI), then links them into a bare-metal program (tests/embedded).
# EMBER_CROSS_BUILD_DIR picks the build directory (default: build-arm).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${EMBER_CROSS_BUILD_DIR:-build-arm}

bash scripts/setup.sh
cmake -S tests/embedded -B "$build" -G Ninja \
  -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/toolchains/arm-none-eabi.cmake" \
  -DEMBER_EMBEDDED=ON -DEMBER_BUILD_TESTS=OFF -DEMBER_WERROR=ON
cmake --build "$build" -j2 --target ember_core ember_cpu ember_tensor
cmake --build "$build" -j2 --target ember_firmware
arm-none-eabi-size "$build/ember_firmware"
