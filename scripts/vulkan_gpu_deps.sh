#!/usr/bin/env bash
# The Vulkan backend on a GPU machine that has a driver but not the Vulkan packages (the lent
# H200 machines: NVIDIA's driver, no loader, headers, glslangValidator or validation layer, and
# no GLVND, without whose libGLdispatch NVIDIA's Vulkan driver, libGLX_nvidia, does not load:
# "Could not get 'vkCreateInstance' ... for ICD libGLX_nvidia.so.0", then no Vulkan device).
#   here:  bash scripts/vulkan_gpu_deps.sh fetch      Debian's packages, unpacked into .dev/vk
#   there: source scripts/vulkan_gpu_deps.sh env      the loader, the layer and NVIDIA's driver
#          cmake ... $EMBER_VULKAN_CMAKE_ARGS         the headers and glslangValidator
# .dev must be git-ignored (.git/info/exclude) and carried to the GPU machine.
_ember_vk="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.dev/vk"
case "${1:-}" in
  fetch)
    set -euo pipefail  # not for `env`, which is sourced into the caller's shell
    mkdir -p "$_ember_vk/debs" "$_ember_vk/root"
    (cd "$_ember_vk/debs" &&
      apt-get download libvulkan1 libvulkan-dev glslang-tools vulkan-validationlayers \
        libglvnd0 libglx0 libgl1 libegl1 libopengl0 libgles2)
    for f in "$_ember_vk"/debs/*.deb; do dpkg -x "$f" "$_ember_vk/root"; done
    # What travels to the GPU machine counts against its 64 MiB: no documentation, registry or
    # C++ bindings (Ember includes the C headers).
    rm -rf "$_ember_vk/debs" "$_ember_vk"/root/usr/share/{doc,man,vulkan/registry}
    rm -f "$_ember_vk"/root/usr/include/vulkan/*.hpp
    ;;
  env)
    _ember_lib="$_ember_vk/root/usr/lib/x86_64-linux-gnu"
    export LD_LIBRARY_PATH="$_ember_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export VK_LAYER_PATH="$_ember_vk/root/usr/share/vulkan/explicit_layer.d"
    _ember_icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
    if [ -f "$_ember_icd" ]; then export VK_DRIVER_FILES="$_ember_icd"; fi
    export EMBER_VULKAN_CMAKE_ARGS="-DVulkan_INCLUDE_DIR=$_ember_vk/root/usr/include \
-DVulkan_LIBRARY=$_ember_lib/libvulkan.so.1 -DEMBER_GLSLANG=$_ember_vk/root/usr/bin/glslangValidator"
    unset _ember_lib _ember_icd
    ;;
  *)
    echo "usage: $0 fetch | source $0 env" >&2
    return 2 2>/dev/null || exit 2
    ;;
esac
unset _ember_vk
