#!/usr/bin/env bash
# Cross-compiles Ember for a Cortex-M4F (arm-none-eabi, newlib, no exceptions, no RTTI):
#   1. tests/embedded: the tensor core, autodiff and the Cpu backend linked into a bare-metal
#      program;
#   2. examples/mcu: the Fashion-MNIST CNN (nn, weights and 20 test images in flash), with
#      float32 weights and with int8 ones (ember quantize), run on QEMU's mps2-an386 board; the
#      logits are checked against the NumPy models of examples/classify/reference.py, and each
#      firmware prints its footprint (docs/DEPLOY.md).
#   scripts/cross.sh [model.safetensors]
# Without a file it trains one epoch first (scripts/fashion_weights.sh).
# EMBER_CROSS_BUILD_DIR picks the build directory (default: build-arm; the example's is
# <it>-mcu).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${EMBER_CROSS_BUILD_DIR:-build-arm}
toolchain=$PWD/cmake/toolchains/arm-none-eabi.cmake

bash scripts/setup.sh
cmake -S tests/embedded -B "$build" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$toolchain" \
  -DEMBER_EMBEDDED=ON -DEMBER_BUILD_TESTS=OFF -DEMBER_WERROR=ON
cmake --build "$build" -j2 --target ember_core ember_cpu ember_tensor
cmake --build "$build" -j2 --target ember_firmware
arm-none-eabi-size "$build/ember_firmware"

weights=$(bash scripts/fashion_weights.sh "${1:-}")
int8_weights=$(bash scripts/fashion_weights.sh --int8 "$weights")
mcu=$build-mcu
mkdir -p "$mcu"
images=$(realpath "$mcu")/images.u8  # absolute: the example's build reads it from its own folder
python3 examples/classify/reference.py raw "$images" 20
cmake -S examples/mcu -B "$mcu" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$toolchain" -DEMBER_WERROR=ON \
  -DEMBER_MCU_WEIGHTS="$weights" -DEMBER_MCU_INT8_WEIGHTS="$int8_weights" \
  -DEMBER_MCU_IMAGES="$images" > /dev/null
cmake --build "$mcu" -j2 --target fashion_mcu fashion_mcu_int8
for firmware in fashion_mcu fashion_mcu_int8; do
  file=$weights
  [[ $firmware == *int8 ]] && file=$int8_weights
  echo "cross.sh: $firmware ($(basename "$file")):"
  arm-none-eabi-size -A "$mcu/$firmware.elf" | grep -E '^\.(text|data|bss|arena|stack) '
  # -icount shift=0: each instruction takes one nanosecond of the board's time, so the times the
  # program prints count instructions. The timeout ends a program that hangs.
  timeout 300 qemu-system-arm -M mps2-an386 -nographic \
    -semihosting-config enable=on,target=native -icount shift=0 \
    -kernel "$mcu/$firmware.elf" | tee "$mcu/$firmware.txt" | tail -2
  python3 examples/classify/reference.py check "$file" "$mcu/$firmware.txt"
done
