#!/usr/bin/env bash
# The sanitizer runs of CI (docs/RELIABILITY.md), with clang 14 and Debian's libclang-rt-14-dev:
#   asan  every target built with AddressSanitizer + UndefinedBehaviorSanitizer; the whole suite
#   tsan  ThreadSanitizer over the DataLoader, the threaded (OpenMP) kernel tests and the server
# Usage: scripts/sanitize.sh [asan] [tsan]   (both when none is named). Any finding fails the run.
# The builds are CMakePresets.json's asan and tsan, in build-asan and build-tsan unless
# EMBER_ASAN_BUILD_DIR / EMBER_TSAN_BUILD_DIR say otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

runs=("$@")
[[ ${#runs[@]} -gt 0 ]] || runs=(asan tsan)

# Findings are fatal (the build passes -fno-sanitize-recover=all); stacks are printed whole.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:detect_stack_use_after_return=1:strict_string_checks=1:check_initialization_order=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/sanitizers/lsan.supp:print_suppressions=0}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:ignore_noninstrumented_modules=1:suppressions=$PWD/tests/sanitizers/tsan.supp}

for run in "${runs[@]}"; do
  case $run in
    asan)
      dir=${EMBER_ASAN_BUILD_DIR:-build-asan}
      cmake --preset asan -B "$dir" > /dev/null
      cmake --build "$dir" -j2
      # Not the tables' vulkan.* runs (nor their coop_emulated., tiled. and direct. variants):
      # their kernels are shaders, which the sanitizers do not see; the Vulkan backend's host code
      # runs here in vulkan_test.
      ctest --test-dir "$dir" --output-on-failure -j2 --timeout 900 \
        -E '^((coop_emulated|tiled|direct)\.)?vulkan\.'
      ;;
    tsan)
      # Archer makes OpenMP's barriers and locks visible to ThreadSanitizer (without it every
      # parallel loop would read as a race). Each binary runs whole, in one process.
      dir=${EMBER_TSAN_BUILD_DIR:-build-tsan}
      cmake --preset tsan -B "$dir" > /dev/null
      # serve_test: the server's handler threads and batcher (built where cpp-httplib is found).
      tsan_tests=(data_test cpu_backend_test conv_test serve_test)
      cmake --build "$dir" -j2 --target "${tsan_tests[@]}"
      for t in "${tsan_tests[@]}"; do
        echo "sanitize.sh: $t under ThreadSanitizer"
        OMP_TOOL_LIBRARIES=/usr/lib/llvm-14/lib/libarcher.so EMBER_NUM_THREADS=2 \
          "$(find "$dir/tests" -type f -name "$t" | head -1)" --gtest_brief=1
      done
      ;;
    *)
      echo "sanitize.sh: unknown run '$run' (asan or tsan)" >&2
      exit 2
      ;;
  esac
done
