#!/usr/bin/env bash
# The Vulkan backend on a GPU machine that has a driver but not the Vulkan packages (the lent
# H200 machines: NVIDIA's driver, no loader, headers, glslangValidator or validation layer).
#   here:  bash scripts/vulkan_gpu_deps.sh fetch      Debian's packages, unpacked into .dev/vk
#   there: source scripts/vulkan_gpu_deps.sh env      the loader, the layer and NVIDIA's driver
#          cmake ... $EMBER_VULKAN_CMAKE_ARGS         the headers and glslangValidator
# .dev must be git-ignored (.git/info/exclude) and carried to the GPU machine.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.dev/vk"
case "${1:-}" in
  fetch)
    set -euo pipefail  # not for `env`, which is sourced into the caller's shell
    mkdir -p "$root/debs" "$root/root"
    (cd "$root/debs" &&
      apt-get download libvulkan1 libvulkan-dev glslang-tools vulkan-validationlayers)
    for f in "$root"/debs/*.deb; do dpkg -x "$f" "$root/root"; done
    # What travels to the GPU machine counts against its 64 MiB: no documentation, registry or
    # C++ bindings (Ember includes the C headers).
    rm -rf "$root/debs" "$root"/root/usr/share/{doc,man,vulkan/registry}
    rm -f "$root"/root/usr/include/vulkan/*.hpp
    ;;
  env)
    lib="$root/root/usr/lib/x86_64-linux-gnu"
    export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export VK_LAYER_PATH="$root/root/usr/share/vulkan/explicit_layer.d"
    nvidia=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
    if [ -f "$nvidia" ]; then export VK_DRIVER_FILES="$nvidia"; fi
    export EMBER_VULKAN_CMAKE_ARGS="-DVulkan_INCLUDE_DIR=$root/root/usr/include \
-DVulkan_LIBRARY=$lib/libvulkan.so.1 -DEMBER_GLSLANG=$root/root/usr/bin/glslangValidator"
    ;;
  *)
    echo "usage: $0 fetch | source $0 env" >&2
    return 2 2>/dev/null || exit 2
    ;;
esac
