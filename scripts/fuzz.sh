#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang-14 (AddressSanitizer + UBSan, in its own
# build directory) and runs each for a bounded time from a copy of its committed seed corpus
# (tests/fuzz/corpus/<name>) plus its regression inputs (tests/fuzz/regressions/<name>). Fails if
# any target crashes, leaks, times out on an input or trips a sanitizer; the inputs are left in
# <build>/fuzz/<name>/ as crash-*, leak-*, timeout-* or oom-*.
#
#   scripts/fuzz.sh [seconds per target, default 60] [target ...]    (default: every target)
#   EMBER_FUZZ_BUILD=dir   build directory (default build-fuzz)
#   EMBER_FUZZ_JOBS=n      ninja's parallel jobs (default: nproc)
#
# A crash found: copy its input to tests/fuzz/regressions/<name>/ (the ctest fuzz_<name>_replay
# of every build replays it), fix the bug, and commit both.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
shift || true
build=${EMBER_FUZZ_BUILD:-build-fuzz}
jobs=${EMBER_FUZZ_JOBS:-$(nproc)}

if ! command -v clang++-14 > /dev/null; then
  echo "fuzz.sh: clang++-14 not found; run scripts/setup.sh (clang-14, libclang-rt-14-dev)" >&2
  exit 1
fi
mkdir -p "$build"
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DEMBER_BUILD_FUZZ=ON -DEMBER_BUILD_TESTS=ON -DEMBER_BUILD_EXAMPLES=OFF > "$build/fuzz-cmake.log" ||
  { cat "$build/fuzz-cmake.log" >&2; exit 1; }

# Every target with its -max_len, as tests/fuzz/CMakeLists.txt lists them.
declare -A max_len=()
all=()
while read -r name len; do
  [[ -z $name || $name == \#* ]] && continue
  max_len[$name]=$len
  all+=("$name")
done < "$build/tests/fuzz/targets.txt"
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=("${all[@]}")
for t in "${targets[@]}"; do
  [[ -n ${max_len[$t]:-} ]] || { echo "fuzz.sh: no fuzz target '$t' (targets: ${all[*]})" >&2; exit 1; }
done
ninja -C "$build" -j "$jobs" "${targets[@]/#/fuzz_}"

failed=()
for t in "${targets[@]}"; do
  work="$build/fuzz/$t"
  rm -rf "$work"
  mkdir -p "$work/corpus"
  cp tests/fuzz/corpus/"$t"/* "$work/corpus/"
  args=("$work/corpus")
  [[ -d tests/fuzz/regressions/$t ]] && args+=("tests/fuzz/regressions/$t")
  [[ -f tests/fuzz/$t.dict ]] && args+=("-dict=tests/fuzz/$t.dict")
  echo "== fuzz_$t: ${seconds}s, max_len ${max_len[$t]}"
  if "$build/tests/fuzz/fuzz_$t" "${args[@]}" -max_len="${max_len[$t]}" -rss_limit_mb=2048 \
    -timeout=10 -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$work/" \
    > "$work/log" 2>&1; then
    grep -E "^stat::number_of_executed_units|^stat::new_units_added" "$work/log" | tr '\n' ' '
    echo
  else
    tail -n 60 "$work/log"
    echo "fuzz.sh: fuzz_$t FAILED; its input: $(ls "$work"/{crash,leak,timeout,oom}-* 2> /dev/null)" >&2
    failed+=("$t")
  fi
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz.sh: ${#failed[@]} target(s) failed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz.sh: ${#targets[@]} target(s) clean, ${seconds}s each"
