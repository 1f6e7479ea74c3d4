// The Vulkan backend's entry points (built when EMBER_WITH_VULKAN is on and the Vulkan loader and
// glslangValidator are found). No Vulkan header here: programs that use Ember need none.
#pragma once

#include <cstddef>
#include <string>

namespace ember {
class Backend;
}

namespace ember::vulkan {

/// Vulkan devices with a compute queue: 0 without a driver (Mesa's lavapipe is one on the CPU).
int device_count();

/// The Vulkan backend; one object serves every device index.
Backend& backend();

/// The device's name as its driver reports it ("llvmpipe (LLVM 15.0.6, 256 bits)").
std::string device_name(int index);

/// The most bytes a shader binds at once (its maxStorageBufferRange). Larger tensors are
/// allocated whole; host transfers, fill, copies, casts and the elementwise ops take them in
/// pieces that bind, and the other kernels refuse them, naming the limit.
size_t max_binding(int index);

/// Whether float16 matmul and convolution run on the device's tensor cores
/// (VK_NV_cooperative_matrix with 16x16x16 float16 fragments; EMBER_VULKAN_COOPERATIVE=0 turns
/// it off).
bool cooperative_matrix(int index);
/// Whether they run on an emulation of cooperative matrices instead, with the same tiling
/// (EMBER_VULKAN_COOPERATIVE=emulate on a device without them; for testing).
bool cooperative_matrix_emulated(int index);

/// Whether the device times its commands: EMBER_VULKAN_PROFILE=1 at its first use, and a queue
/// with timestamps.
bool profiling(int index);

/// The device's time per shader (and "copy") since the last reset, as a table, longest first:
/// commands, total and mean milliseconds, share. The device times its commands when the
/// environment has EMBER_VULKAN_PROFILE=1 at its first use (an error otherwise). Waits for the
/// work queued; `reset` starts the count again. Each command's time runs from the previous
/// command's end to its own (a barrier separates every two), so gaps are counted too.
std::string profile(int index, bool reset = false);

/// Error messages from Khronos's validation layer so far, and the first one's text. The layer
/// runs when the environment has EMBER_VULKAN_VALIDATION=1 (CI sets it for the Vulkan tests).
size_t validation_errors();
std::string first_validation_error();

}  // namespace ember::vulkan
