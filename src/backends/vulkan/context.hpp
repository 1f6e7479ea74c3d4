// The Vulkan backend's per-device state: the logical device and its compute queue, the memory it
// sub-allocates tensors from, the command buffer being recorded and the submissions in flight,
// and the compute pipelines built from the embedded SPIR-V. Internal to src/backends/vulkan.
#pragma once

#include <vulkan/vulkan.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "ember/core/backend.hpp"
#include "ember/core/device.hpp"

namespace ember::vulkan {

/// A Vulkan info struct, zeroed, with its sType.
template <class T>
T make(VkStructureType type) {
  T t{};
  t.sType = type;
  return t;
}

/// "[op] vulkan: <what> failed (VK_ERROR_...)" unless r is VK_SUCCESS.
void check(VkResult r, const char* op, const char* what);

/// Bytes of shared memory gemm_coop.glsl takes for bm x bn tiles of `subgroups` subgroups, bk
/// deep: two slices of A and of B (rows padded by 8 halves), or the subgroups' float32 scratch,
/// which reuses them.
constexpr uint32_t coop_shared_bytes(uint32_t bm, uint32_t bn, uint32_t bk, uint32_t subgroups) {
  const uint32_t slices = 2 * (bm * (bk + 8) / 8 + bk * (bn + 8) / 8), scratch = subgroups * 80;
  return 16 * (slices > scratch ? slices : scratch);
}

/// One large VkDeviceMemory with one VkBuffer over all of it; tensors are ranges of it. Its
/// `base` is an address in Ember's private address space: a Storage's data() is base + offset,
/// so RawTensor's pointer arithmetic works and the backend maps an address back to its block.
struct Block {
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkBuffer buffer = VK_NULL_HANDLE;
  size_t size = 0;
  uintptr_t base = 0;
  void* mapped = nullptr;         // staging blocks, mapped for the host
  bool staging = false;           // for transfers: host-visible, reused only once idle
  std::map<size_t, size_t> free;  // offset -> size of each free range, coalesced
};

/// A compute pipeline and its layout (push descriptors: bindings are pushed per dispatch).
struct Pipeline {
  const std::string* name = nullptr;  // its cache key, the profile's label
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
};

/// A buffer range bound to one binding of a dispatch.
struct Binding {
  VkBuffer buffer;
  VkDeviceSize offset, range;
};

class DeviceContext {
 public:
  DeviceContext(VkPhysicalDevice physical, int index);
  ~DeviceContext();
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;

  // Everything below holds `mu` (the backend's entries lock it once per call).
  std::recursive_mutex mu;

  /// A tensor's bytes in device memory, or with `staging` host-visible bytes for a transfer.
  uintptr_t allocate(size_t nbytes, bool staging);
  /// Marks a range just allocated as the backend's own for good (the range checks' slots):
  /// reserved, but not counted as memory in use.
  void keep(size_t nbytes);
  /// Returns a range (a staging one is reused once the work recorded so far has completed).
  void release(uintptr_t address, size_t nbytes);
  /// The block and byte offset of an address from allocate().
  std::pair<Block*, size_t> locate(uintptr_t address) const;

  /// Records a dispatch of `p` over `groups` workgroups with these bindings and push constants,
  /// followed by a barrier so that the next command sees its writes.
  void dispatch(const Pipeline& p, std::span<const Binding> bindings, const void* push,
                uint32_t push_size, uint32_t groups);
  /// Records a buffer copy (and a barrier).
  void copy_buffer(VkBuffer src, size_t src_offset, VkBuffer dst, size_t dst_offset, size_t nbytes);
  /// Submits what was recorded and waits for all of it.
  void finish();
  /// Submits what was recorded without waiting: the staging ranges released before it are
  /// reused once it completes (an upload in pieces).
  void submit();

  /// The pipeline of an embedded shader, built on first use; `constants` are its specialisation
  /// constants 0, 1, ... (32-bit each). `name` alone keys the cache, so it must name the
  /// constants too (gemm_pipeline's tiles, unary's op).
  const Pipeline& pipeline(const std::string& name, std::span<const uint32_t> spirv,
                           uint32_t bindings, uint32_t push_size,
                           std::span<const uint32_t> constants = {});

  const VkPhysicalDeviceProperties& properties() const { return props_; }
  /// maxStorageBufferRange, or less where EMBER_VULKAN_MAX_BINDING says (to test the pieces
  /// of wider tensors with small ones).
  size_t max_binding() const { return max_binding_; }
  size_t binding_alignment() const { return props_.limits.minStorageBufferOffsetAlignment; }
  /// Range checks queued (check_range): check i writes slot i of `range_slots` (four 64-bit
  /// words), read back at synchronize; a failure found when the slots filled up waits in
  /// `range_failed`.
  static constexpr size_t kRangeSlots = 256;
  uintptr_t range_slots = 0;
  std::vector<RangeCheck> range_checks;
  RangeError range_failed;

  /// Whether shaders may use 64-bit integers and floats (shaderInt64 and shaderFloat64).
  bool wide() const { return wide_; }
  /// Whether float16 matmul and convolution run on tensor cores (VK_KHR_cooperative_matrix, or
  /// VK_NV_cooperative_matrix where the device lacks KHR; gemm_coop.glsl).
  bool cooperative() const { return cooperative_; }
  /// Whether through VK_KHR_cooperative_matrix (the *_khr shaders).
  bool cooperative_khr() const { return cooperative_khr_; }
  /// The columns of gemm_coop.glsl's B and accumulator fragments: 8 where the device lists
  /// 16x8x16 products (KHR; and for the emulation), else 16.
  uint32_t fragment_columns() const { return fragment_columns_; }
  /// Whether they run gemm_coop.glsl's EMULATE variant instead, without tensor cores
  /// (EMBER_VULKAN_COOPERATIVE=emulate on a device without them: CI's test of the tiling).
  bool emulated_cooperative() const { return emulated_cooperative_; }
  /// The subgroup size where gemm_lanes.glsl can run (4, 8 or 16 invocations, with subgroup
  /// broadcasts in compute shaders), else 0.
  uint32_t lanes() const { return lanes_; }
  size_t in_use() const { return in_use_; }
  size_t peak() const { return peak_; }
  size_t reserved() const { return reserved_; }
  void reset_peak() { peak_ = in_use_; }
  void empty_cache();

  /// Whether commands are timed (EMBER_VULKAN_PROFILE=1, or =groups to key each dispatch by its
  /// pipeline and workgroup count, which tells one shape from another), and the times so far per
  /// label as a table, longest total first, then the pipelines built and the host time their
  /// compilation took; `reset` starts the count again. Waits for the work queued.
  bool profiling() const { return profile_queries_ != 0; }
  std::string profile(bool reset);

 private:
  struct Submission {
    VkCommandBuffer cb = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
    uint64_t serial = 0;
    VkQueryPool queries = VK_NULL_HANDLE;  // profiling: a timestamp after each command
    std::vector<std::string> labels;
  };
  struct Timing {
    uint64_t count = 0;
    double ns = 0;
  };
  struct Pending {  // a released range, free once `serial` has completed
    uintptr_t address;
    size_t nbytes;
    uint64_t serial;
  };

  VkCommandBuffer recording();
  void retire(bool wait);
  void barrier(const std::string* label, uint32_t groups = 0);
  void collect(Submission& s);
  Block& new_block(size_t size, bool staging);
  void give_back(uintptr_t address, size_t nbytes);
  void count_in_use(bool staging, size_t nbytes);

  int index_;
  VkPhysicalDeviceProperties props_{};
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t family_ = 0;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  PFN_vkCmdPushDescriptorSetKHR push_descriptors_ = nullptr;
  uint32_t device_type_ = 0, host_type_ = 0;  // memory types: tensors, staging
  bool wide_ = false;
  size_t max_allocation_ = 0;  // maxMemoryAllocationSize: the largest tensor
  size_t max_binding_ = 0;
  bool cooperative_ = false;
  bool cooperative_khr_ = false;
  uint32_t fragment_columns_ = 16;
  bool emulated_cooperative_ = false;
  uint32_t lanes_ = 0;

  std::vector<std::unique_ptr<Block>> blocks_;
  std::map<uintptr_t, Block*> by_base_;
  uintptr_t next_base_ = uintptr_t{1} << 40;
  std::vector<Pending> pending_;
  size_t in_use_ = 0, peak_ = 0, reserved_ = 0;

  Submission current_;
  size_t recorded_ = 0;  // commands in current_
  std::deque<Submission> in_flight_;
  std::vector<Submission> spare_;
  uint64_t next_serial_ = 1, completed_ = 0;

  std::map<std::string, Pipeline> pipelines_;

  uint32_t profile_queries_ = 0;  // timestamps per submission; 0 when not profiling
  uint64_t timestamp_mask_ = 0;   // the queue's valid timestamp bits
  std::map<std::string, Timing> timings_;
  bool time_builds_ = false;              // EMBER_VULKAN_PROFILE=1, timestamps or not
  bool profile_groups_ = false;           // EMBER_VULKAN_PROFILE=groups
  std::map<std::string, double> builds_;  // pipeline name: ms to create it
};

/// The context of vulkan:index (made on first use); fails naming the index when there is none.
DeviceContext& context(int index);
int count_devices();

}  // namespace ember::vulkan
