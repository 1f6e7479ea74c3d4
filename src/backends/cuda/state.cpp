#include "state.hpp"

#include <cublas_v2.h>
#include <cudnn.h>

#include <array>
#include <atomic>
#include <memory>

#include "check.hpp"

namespace ember::cuda {
namespace {

constexpr int kMaxDevices = 64;

void check_cublas(cublasStatus_t status, const char* op) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    EMBER_FAIL("[", op, "] cublas: ", cublasGetStatusString(status));
  }
}
void check_cudnn(cudnnStatus_t status, const char* op) {
  if (status != CUDNN_STATUS_SUCCESS) EMBER_FAIL("[", op, "] cudnn: ", cudnnGetErrorString(status));
}

}  // namespace

DeviceState::DeviceState(int i) : allocator(i), index(i) {
  EMBER_CUDA_CHECK(cudaSetDevice(i), "cuda");
  EMBER_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cuda");
  staging.reserve(kStagingChunks);  // chunks are handed out by reference
  EMBER_CUDA_CHECK(cudaMalloc(&range_slots, kRangeSlots * sizeof(RangeSlot)), "cuda");
  EMBER_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&range_slots_host),
                                 kRangeSlots * sizeof(RangeSlot), cudaHostAllocDefault),
                   "cuda");
  range_checks.reserve(kRangeSlots);
}

DeviceState::StagingChunk& DeviceState::staging_chunk(const char* op) {
  const size_t n = staging.size();
  for (size_t k = 0; k < n; ++k) {
    const size_t i = (staging_cursor + k) % n;
    const cudaError_t e = cudaEventQuery(staging[i].done);
    if (e == cudaSuccess) {
      staging_cursor = (i + 1) % n;
      return staging[i];
    }
    if (e != cudaErrorNotReady) EMBER_CUDA_CHECK(e, op);
  }
  if (n < kStagingChunks) {
    StagingChunk c;
    EMBER_CUDA_CHECK(cudaHostAlloc(&c.data, kStagingChunk, cudaHostAllocDefault), op);
    EMBER_CUDA_CHECK(cudaEventCreateWithFlags(&c.done, cudaEventDisableTiming), op);
    staging.push_back(c);
    return staging.back();
  }
  StagingChunk& oldest = staging[staging_cursor];
  staging_cursor = (staging_cursor + 1) % n;
  EMBER_CUDA_CHECK(cudaEventSynchronize(oldest.done), op);
  return oldest;
}

cublasContext* DeviceState::cublas(const char* op) {
  if (!cublas_) {
    check_cublas(cublasCreate(&cublas_), op);
    check_cublas(cublasSetStream(cublas_, stream), op);
  }
  return cublas_;
}

cudnnContext* DeviceState::cudnn(const char* op) {
  if (!cudnn_) {
    check_cudnn(cudnnCreate(&cudnn_), op);
    check_cudnn(cudnnSetStream(cudnn_, stream), op);
  }
  return cudnn_;
}

void* DeviceState::workspace(size_t n, const char* op) {
  if (n > workspace_bytes_) {
    // Outside the tensor allocator, so memory_stats counts tensors only (as the Cpu's does).
    // Rarely grown: cudaFree waits for the device, so queued work using the old one is done.
    // Captured graphs hold its address: while any lives (or one is being captured, where
    // cudaFree is not allowed), the old one is kept.
    if (workspace_ && (capturing() || graphs_alive > 0)) {
      retired_workspaces_.push_back(workspace_);
    } else {
      if (workspace_) EMBER_CUDA_CHECK(cudaFree(workspace_), op);
      for (void* w : retired_workspaces_) EMBER_CUDA_CHECK(cudaFree(w), op);
      retired_workspaces_.clear();
    }
    workspace_ = nullptr;
    workspace_bytes_ = 0;
    if (cudaMalloc(&workspace_, n) != cudaSuccess) {
      (void)cudaGetLastError();
      allocator.empty_cache();  // cached tensor blocks may be what is in the way
      EMBER_CUDA_CHECK(cudaMalloc(&workspace_, n), op);
    }
    workspace_bytes_ = n;
  }
  return workspace_;
}

void DeviceState::check_not_capturing(const char* op, const char* why) const {
  EMBER_CHECK(!capturing(), "[", op, "] cannot run inside a DeviceGraph capture on cuda:", index,
              ": ", why);
}

DeviceState& device_state(int index) {
  static std::array<std::atomic<DeviceState*>, kMaxDevices> states{};
  static std::mutex mutex;
  thread_local int current = -1;
  if (index < 0 || index >= kMaxDevices) EMBER_FAIL("[cuda] device index ", index, " out of range");
  DeviceState* s = states[static_cast<size_t>(index)].load(std::memory_order_acquire);
  if (!s) {
    std::lock_guard<std::mutex> lock(mutex);
    s = states[static_cast<size_t>(index)].load(std::memory_order_relaxed);
    if (!s) {
      s = new DeviceState(index);  // never destroyed: storages may outlive main
      states[static_cast<size_t>(index)].store(s, std::memory_order_release);
      current = index;  // the constructor made it current (on this thread only)
    }
  }
  if (current != index) {
    EMBER_CUDA_CHECK(cudaSetDevice(index), "cuda");
    current = index;
  }
  return *s;
}

}  // namespace ember::cuda
