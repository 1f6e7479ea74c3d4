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
  zlib1g-dev libpng-dev libjpeg-dev libsqlite3-dev       # data sources: .gz IDX, images, SQLite
  dataset-fashion-mnist                                  # the main job's data: /usr/share/datasets/fashion-mnist
  libcli11-dev                                           # the ember command line's argument parser
  libonnx-dev libprotobuf-dev libonnx-testdata           # ONNX import and its conformance suite
  clang-14 libclang-rt-14-dev libomp-14-dev              # fuzz builds: libFuzzer, ASan/UBSan (scripts/fuzz.sh)
)

# Python's safetensors (PyPI) lets the tests check that Python reads the files Ember writes;
# without it that one test is skipped, so a failure here is only a note.
if ! python3 -c "import safetensors, numpy" 2> /dev/null; then
  timeout 180 python3 -m pip install --quiet safetensors numpy > /dev/null 2>&1 ||
    echo "setup.sh: note: pip could not install safetensors and numpy; the Python" \
      "cross-check test (io_python_reads_ember) will be skipped"
fi

# The LibTorch backend's dependency: CI runs every table on it. It is optional to the build (the
# backend is skipped without it), so a failure to install it is a loud note, not the end of setup.
optional=(libtorch-dev)

missing=()
for p in "${packages[@]}" "${optional[@]}"; do
  [[ $(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null) == installed ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

sudo=""
[[ $(id -u) -eq 0 ]] || sudo=sudo
echo "setup.sh: installing ${missing[*]}"
$sudo apt-get update
required=()
for p in "${missing[@]}"; do [[ " ${optional[*]} " == *" $p "* ]] || required+=("$p"); done
if [[ ${#required[@]} -gt 0 ]]; then
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${required[@]}"
fi
for p in "${optional[@]}"; do
  [[ " ${missing[*]} " == *" $p "* ]] || continue
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$p" ||
    echo "setup.sh: WARNING: could not install $p; the build will skip what needs it"
done
