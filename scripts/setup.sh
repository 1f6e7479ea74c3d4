#!/usr/bin/env bash
# Installs what Ember's build, tests and the arm-none-eabi cross-compile need (Debian bookworm,
# or Ubuntu). Idempotent: returns at once when every package is already installed.
set -euo pipefail

packages=(
  cmake ninja-build g++ ccache pkg-config                # toolchain (pkg-config: cpp-httplib)
  libgtest-dev libgmock-dev libbenchmark-dev             # tests and benchmarks
  nlohmann-json3-dev                                     # JSON (safetensors headers), private
  libdnnl-dev ocl-icd-opencl-dev libopenblas-dev         # GEMM (dnnl's CMake package needs OpenCL)
  gcc-arm-none-eabi libstdc++-arm-none-eabi-newlib       # the embedded cross-compile
  qemu-system-arm                                        # which runs on an emulated Cortex-M4 board
  zlib1g-dev libpng-dev libjpeg-dev libsqlite3-dev       # data sources: .gz IDX, images, SQLite
  dataset-fashion-mnist                                  # the main job's data: /usr/share/datasets/fashion-mnist
  libcli11-dev                                           # the ember command line's argument parser
  libcpp-httplib-dev wrk                                 # ember serve's HTTP server; its benchmark's load
  libopenmpi-dev openmpi-bin                             # data-parallel training: mpirun -np N ember train
  libonnx-dev libprotobuf-dev libonnx-testdata           # ONNX import and its conformance suite
  clang-14 libclang-rt-14-dev libomp-14-dev              # fuzz builds: libFuzzer, ASan/UBSan (scripts/fuzz.sh)
  libvulkan-dev glslang-tools                            # the Vulkan backend: loader, GLSL -> SPIR-V
  mesa-vulkan-drivers vulkan-validationlayers            # its tests: lavapipe (Vulkan on the CPU), validation
)

# NumPy (PyPI) is the deployment checks' reference (examples/classify/reference.py, run by
# scripts/static.sh and scripts/cross.sh: they fail without it); Python's safetensors lets one
# test check that Python reads the files Ember writes (skipped without it).
if ! python3 -c "import safetensors, numpy" 2> /dev/null; then
  timeout 180 python3 -m pip install --quiet safetensors numpy > /dev/null 2>&1 ||
    echo "setup.sh: note: pip could not install safetensors and numpy; the Python" \
      "cross-check test (io_python_reads_ember) will be skipped, and static.sh and cross.sh fail"
fi

# The LibTorch backend's dependency: CI runs every table on it. Debian's torch for Python exports
# the real architectures of the ONNX tests (tests/onnx/models/make_models.py). It is optional to the build (the
# backend is skipped without it), so a failure to install it is a loud note, not the end of setup.
optional=(libtorch-dev python3-torch python3-torchvision python3-pip)

missing=()
for p in "${packages[@]}" "${optional[@]}"; do
  [[ $(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null) == installed ]] || missing+=("$p")
done
# ONNX Runtime and onnx for /usr/bin/python3 (Debian's, where python3-torch lives): the ONNX
# architecture tests compare Ember with ONNX Runtime, and onnx writes ONNX's newest node tests
# (tests/onnx/latest); pinned, since pass_latest.txt lists that version's tests. Without them
# those tests are skipped.
torch_python_extras() {
  /usr/bin/python3 -c "import torch, torchvision" 2> /dev/null || return 0
  /usr/bin/python3 -c "import onnx, onnxruntime; assert onnx.__version__ == '1.23.2'" 2> /dev/null &&
    return 0
  timeout 300 /usr/bin/python3 -m pip install --quiet --break-system-packages onnx==1.23.2 onnxruntime==1.32.0 \
    > /dev/null 2>&1 ||
    echo "setup.sh: note: pip could not install onnx and onnxruntime for /usr/bin/python3; the" \
      "ONNX architecture tests will be skipped"
}

# cuDNN's C++ frontend (header-only; PyPI's wheel puts the headers in dist-packages/include): the
# Cuda backend's fused attention compiles with it (src/backends/cuda/CMakeLists.txt finds it).
# Only where nvcc is; without it attention runs as a composite on Cuda.
cudnn_frontend() {
  command -v nvcc > /dev/null || return 0
  compgen -G "/usr/local/lib/python3*/dist-packages/include/cudnn_frontend.h" > /dev/null && return 0
  timeout 300 /usr/bin/python3 -m pip install --quiet --break-system-packages --no-deps \
    nvidia-cudnn-frontend==1.32.0 > /dev/null 2>&1 ||
    echo "setup.sh: note: pip could not install nvidia-cudnn-frontend; the Cuda backend's" \
      "attention will be built as a composite"
}

if [[ ${#missing[@]} -eq 0 ]]; then
  torch_python_extras
  cudnn_frontend
  exit 0
fi

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
torch_python_extras
cudnn_frontend
