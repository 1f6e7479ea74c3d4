#!/usr/bin/env bash
# Builds Ember and runs its tests on the GPU machine (Ubuntu 24.04, g++ 13, CMake 4, nvcc 13; no
# SQLite, no oneDNN, no dataset-fashion-mnist, no network), with every core, and prints a summary
# last. It installs nothing (no apt-get, no scripts/setup.sh): what the machine lacks is skipped
# by the build and the tests, which say so. Exit status 0 only when configure, build and tests pass.
#
# Usage: bash scripts/gpu_test.sh [extra cmake arguments, e.g. -DEMBER_WERROR=ON]
# EMBER_FASHION_MNIST_DIR, when set, adds the main job on the GPU (scripts/gpu_job.sh: train,
# eval on both devices, resume across devices).
# EMBER_BUILD_DIR picks the build directory (default build-gpu); EMBER_LOG_DIR, when set, receives
# configure.log, build.log and ctest.log (they are in the build directory in any case).
# Later stages (the Cuda backend's tests) go after the `ctest` stage.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
build=${EMBER_BUILD_DIR:-build-gpu}
# The Vulkan loader, headers, glslangValidator and validation layer where
# scripts/vulkan_gpu_deps.sh fetched them into .dev/vk (the GPU machines have none of them).
vulkan_args=()
if [[ -d .dev/vk/root ]]; then
  source scripts/vulkan_gpu_deps.sh env
  read -ra vulkan_args <<< "$EMBER_VULKAN_CMAKE_ARGS"
fi
jobs=$(nproc)
generator=Ninja
command -v ninja > /dev/null || generator="Unix Makefiles"
mkdir -p "$build"

summary=()
note() { summary+=("$*"); }
finish() {
  [[ -n ${EMBER_LOG_DIR:-} ]] && mkdir -p "$EMBER_LOG_DIR" &&
    cp "$build"/{configure,build,ctest}.log "$EMBER_LOG_DIR"/ 2> /dev/null
  echo
  echo "==== gpu_test.sh summary ===="
  printf '%s\n' "${summary[@]}"
  exit "$1"
}

note "machine: $(nproc) cores; $(c++ --version | head -1); $(cmake --version | head -1)"
command -v nvcc > /dev/null && note "nvcc: $(nvcc --version | tail -1)"
command -v nvidia-smi > /dev/null &&
  note "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -4 | paste -sd';')"

# ---- configure ----
start=$SECONDS
if ! cmake -S . -B "$build" -G "$generator" -DEMBER_WITH_CUDA=ON "${vulkan_args[@]}" "$@" \
  > "$build/configure.log" 2>&1; then
  tail -40 "$build/configure.log"
  note "configure: FAILED (see $build/configure.log)"
  finish 1
fi
note "configure: ok in $((SECONDS - start)) s ($generator); found:"
while read -r line; do note "  $line"; done < <(grep -o 'Ember [A-Za-z ]*: .*' "$build/configure.log")

# ---- build ----
start=$SECONDS
# Keep going past a failed file (-k 0 / -k): one run shows every error a new compiler finds.
keep_going=(-k 0)
[[ $generator == Ninja ]] || keep_going=(-k)
if ! cmake --build "$build" -j "$jobs" -- "${keep_going[@]}" > "$build/build.log" 2>&1; then
  grep -E -A5 'error:|FAILED:' "$build/build.log" | head -60
  note "build: FAILED after $((SECONDS - start)) s (see $build/build.log)"
  finish 1
fi
note "build: ok in $((SECONDS - start)) s with $jobs jobs, $(grep -c 'warning:' "$build/build.log") compiler warnings"

# ---- ctest ----
start=$SECONDS
ctest --test-dir "$build" -j "$jobs" --timeout 300 --output-on-failure > "$build/ctest.log" 2>&1
status=$?
failed=$(sed -n '/The following tests FAILED:/,$p' "$build/ctest.log" | grep -E '^\s+[0-9]+ - ')
skipped=$(grep -E '^\s+[0-9]+ - .*\(Skipped\)' "$build/ctest.log")
if [[ -n $failed ]]; then
  sed -n '/The following tests FAILED:/,$p' "$build/ctest.log" | head -40
  # The output of each failure, so that one run gathers what an investigation needs.
  grep -E -B2 -A30 '\*\*\*Failed|\*\*\*Exception|\*\*\*Timeout' "$build/ctest.log" | tail -150
fi
note "ctest: $(grep -E '% tests passed' "$build/ctest.log" || echo 'no result line') in $((SECONDS - start)) s"
note "  cuda.* tables: $(grep -cE 'Test +#[0-9]+: cuda\..* Passed' "$build/ctest.log") passed, $(grep -cE 'Test +#[0-9]+: cuda\..*(Failed|Exception|Timeout)' "$build/ctest.log") failed"
note "  vulkan.* tables: $(grep -cE 'Test +#[0-9]+: vulkan\..* Passed' "$build/ctest.log") passed, $(grep -cE 'Test +#[0-9]+: vulkan\..*(Failed|Exception|Timeout)' "$build/ctest.log") failed"
[[ -n $skipped ]] && note "  skipped: $(echo "$skipped" | wc -l) ($(echo "$skipped" | sed -E 's/^\s+[0-9]+ - //; s/ \(Skipped\)//' | paste -sd, | cut -c1-300))"
[[ -n $failed ]] && note "  FAILED: $(echo "$failed" | sed -E 's/^\s+[0-9]+ - //' | paste -sd, | cut -c1-600)"
# ---- the main job on the GPU (when the Fashion-MNIST files are given: the machine has no
# dataset package, so they are carried) ----
if [[ -d ${EMBER_FASHION_MNIST_DIR:-} ]]; then
  while read -r line; do note "$line"; done < <(bash scripts/gpu_job.sh \
    "$build/tools/ember/ember" "$EMBER_FASHION_MNIST_DIR" "" "$build/gpu-job" 2>&1 | tail -40)
  grep -q FAILED < <(printf '%s\n' "${summary[@]}") && status=1
fi
finish "$status"
