#!/usr/bin/env bash
# Installs what Ember's build, tests and the arm-none-eabi cross-compile need (Debian bookworm,
# or Ubuntu). Idempotent: returns at once when every package is already installed.
set -euo pipefail

packages=(
  cmake ninja-build g++ ccache                           # toolchain
  libgtest-dev libgmock-dev libbenchmark-dev             # tests and benchmarks
  nlohmann-json3-dev                                     # JSON (safetensors headers), private
  libdnnl-dev ocl-icd-opencl-dev libopenblas-dev         # GEMM (dnnl's CMake package needs OpenCL)
  gcc-arm-none-eabi libstdc++-arm-none-eabi-newlib       # the embedded cross-compile
)

missing=()
for p in "${packages[@]}"; do
  [[ $(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null) == installed ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

sudo=""
[[ $(id -u) -eq 0 ]] || sudo=sudo
echo "setup.sh: installing ${missing[*]}"
$sudo apt-get update
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
