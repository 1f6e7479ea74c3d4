#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang-14 (AddressSanitizer + UBSan: the asan
# preset, in build-asan) and runs each for a bounded time from a copy of its committed seed corpus
# (tests/fuzz/corpus/<name>) plus its regression inputs (tests/fuzz/regressions/<name>). Fails if
# any target crashes, leaks, times out on an input or trips a sanitizer; the inputs are left in
# <build>/fuzz/<name>/ as crash-*, leak-*, timeout-* or oom-*.
#
#   scripts/fuzz.sh [seconds per target, default 60] [target ...]    (default: every target)
#   EMBER_FUZZ_BUILD=dir   build directory (default build-asan, the asan preset's)
#   EMBER_FUZZ_JOBS=n      ninja's parallel jobs and fuzzers run at once (default: nproc)
#
# A crash found: copy its input to tests/fuzz/regressions/<name>/ (the ctest fuzz_<name>_replay
# of every build replays it), fix the bug, and commit both.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
shift || true
build=${EMBER_FUZZ_BUILD:-${EMBER_ASAN_BUILD_DIR:-build-asan}}
jobs=${EMBER_FUZZ_JOBS:-$(nproc)}

bash scripts/setup.sh
# The asan preset of CMakePresets.json: the same build as scripts/sanitize.sh asan, so CI builds
# the libraries once for the sanitized suite and the fuzzers.
mkdir -p "$build"
cmake --preset asan -B "$build" > "$build/fuzz-cmake.log" ||
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

# One target: its own copy of the corpus and a log; "ok" or "FAILED" in $work/result.
fuzz_one() {
  local t=$1 work="$build/fuzz/$1"
  rm -rf "$work"
  mkdir -p "$work/corpus"
  cp tests/fuzz/corpus/"$t"/* "$work/corpus/"
  local args=("$work/corpus")
  [[ -d tests/fuzz/regressions/$t ]] && args+=("tests/fuzz/regressions/$t")
  [[ -f tests/fuzz/$t.dict ]] && args+=("-dict=tests/fuzz/$t.dict")
  if "$build/tests/fuzz/fuzz_$t" "${args[@]}" -max_len="${max_len[$t]}" -rss_limit_mb=2048 \
    -timeout=10 -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$work/" \
    > "$work/log" 2>&1; then
    echo ok > "$work/result"
  else
    echo FAILED > "$work/result"
  fi
}

# Each fuzzer is one process on one core: as many run at once as there are cores.
running=0
for t in "${targets[@]}"; do
  echo "== fuzz_$t: ${seconds}s, max_len ${max_len[$t]}"
  fuzz_one "$t" &
  running=$((running + 1))
  if [[ $running -ge $jobs ]]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait

failed=()
for t in "${targets[@]}"; do
  work="$build/fuzz/$t"
  if [[ $(cat "$work/result" 2> /dev/null) == ok ]]; then
    echo "fuzz_$t: $(grep -E "^stat::number_of_executed_units|^stat::new_units_added" "$work/log" | tr '\n' ' ')"
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
echo "fuzz.sh: ${#targets[@]} target(s) clean, ${seconds}s each, $jobs at a time"
