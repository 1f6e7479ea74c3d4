#!/usr/bin/env bash
# The install test: installs the built Ember into a temporary prefix, then configures, builds and
# runs tests/install/consumer, which finds it with find_package(Ember CONFIG REQUIRED).
# Usage: run.sh <ember build dir> <cmake generator> <c++ compiler> [consumer cmake args...]
set -euo pipefail
build=$1 generator=$2 compiler=$3
shift 3
consumer=$(cd "$(dirname "$0")/consumer" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cmake --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log"
cmake -S "$consumer" -B "$tmp/build" -G "$generator" -DCMAKE_CXX_COMPILER="$compiler" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$tmp/prefix" "$@"
cmake --build "$tmp/build"
"$tmp/build/app"
