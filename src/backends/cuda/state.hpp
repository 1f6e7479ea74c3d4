// Per-device state of the Cuda backend: the allocator, the stream all work is queued on, the
// pinned staging buffer of host transfers, the library handles, and the range checks queued since
// the last synchronisation. Host C++ only (no kernels), shared by every family's file.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <mutex>
#include <vector>

#include "allocator.hpp"
#include "ember/core/backend.hpp"
#include "ember/core/raw_tensor.hpp"

struct cublasContext;
struct cudnnContext;

namespace ember::cuda {

/// The result slot of one queued range check, in device memory (check_range's kernels write it;
/// synchronize reads it back). Min and max of the bad values are kept as order-preserving 64-bit
/// keys so that atomicMin/atomicMax find the extremes: range_key of the double for float
/// operands, the exact int64 with its sign bit flipped for integer ones (`integral`).
struct RangeSlot {
  unsigned long long min_key;
  unsigned long long max_key;
  unsigned int nan;       // a NaN was seen
  unsigned int bad;       // any value was outside
  unsigned int integral;  // the operand is Int or Bool: the keys are integer keys
};

struct DeviceState {
  explicit DeviceState(int index);
  DeviceState(const DeviceState&) = delete;
  DeviceState& operator=(const DeviceState&) = delete;

  DeviceAllocator allocator;
  int index;
  cudaStream_t stream = nullptr;

  // Pinned staging for host transfers: chunks of kStagingChunk bytes, each with an event recorded
  // after the transfer that last used it, so an upload waits only when every chunk is still in
  // flight (not for the whole queue before it) and large transfers pin no more than the pool.
  static constexpr size_t kStagingChunk = size_t{4} << 20;
  static constexpr size_t kStagingChunks = 16;  // at most 64 MiB pinned
  struct StagingChunk {
    void* data = nullptr;
    cudaEvent_t done = nullptr;
  };
  std::mutex staging_mutex;  // DataLoader workers upload from several threads
  std::vector<StagingChunk> staging;
  size_t staging_cursor = 0;
  /// A chunk no queued transfer uses any more: a finished one, else a new one while the pool may
  /// grow, else the oldest once it has finished. Call with staging_mutex held; record `done`
  /// after queueing the transfer through it.
  StagingChunk& staging_chunk(const char* op);

  // Library handles, made on first use and bound to `stream`.
  cublasContext* cublas(const char* op);
  cudnnContext* cudnn(const char* op);
  /// Scratch device memory for library calls (cuBLAS/cuDNN workspaces), grown on demand and not
  /// counted in memory_stats (not tensor memory). Queued
  /// work is ordered on the one stream, so one buffer serves every call.
  void* workspace(size_t n, const char* op);

  // Range checks queued since the last synchronize (check_range, synchronize).
  std::mutex range_mutex;
  static constexpr int kRangeSlots = 256;
  RangeSlot* range_slots = nullptr;       // device, kRangeSlots
  RangeSlot* range_slots_host = nullptr;  // pinned mirror read at synchronize
  std::vector<RangeCheck> range_checks;   // the pending checks, slot i for range_checks[i]
  RangeError range_failed;  // a failure found when full slots were drained, for synchronize

  // Graph capture (graph.cpp): the pool of the capture under way (-1: none) and the number of
  // captured graphs alive, which may still read the workspace they were captured with.
  std::atomic<int> capture_pool{-1};
  std::atomic<int> graphs_alive{0};  // changed by a graph's destructor on any thread
  bool capturing() const { return capture_pool >= 0; }
  /// Raises "[op] ... inside a DeviceGraph capture" while one is under way: for the calls a
  /// graph cannot replay (host transfers, waits, host-seeded random numbers).
  void check_not_capturing(const char* op, const char* why) const;

 private:
  cublasContext* cublas_ = nullptr;
  cudnnContext* cudnn_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  std::vector<void*> retired_workspaces_;  // outgrown while graphs may still use them
};

/// The state of device `index`, made on its first use; makes it the calling thread's current
/// device (kernels launch there).
DeviceState& device_state(int index);
inline DeviceState& state_of(const RawTensor& t) { return device_state(t.storage->device().index); }
inline cudaStream_t stream_of(const RawTensor& t) { return state_of(t).stream; }

/// Device memory for a kernel's temporaries, released (stream-ordered) with the returned holder.
std::shared_ptr<Storage> scratch(size_t nbytes, Device device);

}  // namespace ember::cuda
