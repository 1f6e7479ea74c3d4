// Rewrites SPIR-V written for SPV_NV_cooperative_matrix into SPV_KHR_cooperative_matrix, so that
// shaders compiled by Debian's glslang 12 (which knows only GL_NV_cooperative_matrix) run on the
// KHR extension, which NVIDIA's driver runs up to 1.8x faster (docs/VULKAN.md). A build tool
// (spirv_khr_main.cpp) applies it to matmul_coop and conv_coop; the tests call it directly.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace ember::vulkan {

/// The same module with each NV cooperative-matrix instruction replaced by its KHR twin:
/// matrix types gain their use (A, B or accumulator, inferred from the multiply-adds that take
/// them: a type used as both A and B is an error), loads and stores take a row-major or
/// column-major layout constant instead of a boolean, and the capability and extension are
/// renamed. A module without NV cooperative matrices comes back unchanged. Malformed input, or
/// an instruction the rewrite cannot follow, raises ember::Error naming the instruction.
std::vector<uint32_t> cooperative_nv_to_khr(std::span<const uint32_t> spirv);

}  // namespace ember::vulkan
