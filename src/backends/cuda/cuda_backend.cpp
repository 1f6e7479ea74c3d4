// The Cuda backend: what families it has kernels for, memory, host transfers and
// synchronisation. Work is queued on one stream per device (state.hpp); reading data to the host
// synchronises that stream; uploads go through a pinned staging buffer whose reuse waits on an
// event, so write_from_host consumes the caller's buffer before it returns without waiting for
// the device. The kernels are in one file per family (cuda_backend.hpp lists them).
#include "cuda_backend.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>

#include "check.hpp"
#include "conv_graph.hpp"
#include "ember/backends/cuda/cuda.hpp"
#include "state.hpp"

namespace ember::cuda {
namespace {

struct Block {
  DeviceAllocator* allocator;
  size_t rounded;
};

void release_block(void* context, void* data, size_t) {
  auto* block = static_cast<Block*>(context);
  block->allocator->release(data, block->rounded);
  delete block;
}

}  // namespace

// Convolutions that reach cuDNN's graph API run NHWC kernels; the Norm kernels (norm.cu) read
// either layout, so batch norm between two such convolutions keeps theirs.
bool CudaBackend::channels_last(OpFamily family, DType dtype, int spatial) const {
  if (family == OpFamily::Norm) return is_floating(dtype);
  return family == OpFamily::Conv && conv_graph_runs(dtype, spatial);
}

bool CudaBackend::supports(OpFamily family, DType dtype) const {
  const bool floating = is_floating(dtype);
  switch (family) {
    case OpFamily::Matmul:
      return dtype != DType::boolean;
    case OpFamily::Conv:
    case OpFamily::ConvRelu:
    case OpFamily::Pool:
      return floating;
    case OpFamily::SoftmaxRows:
    case OpFamily::LayerNorm:
    case OpFamily::ActivationGrad:
    case OpFamily::Linear:  // cuBLASLt with f32 accumulation; f32 follows allow_tf32() (linear.cpp)
      return dtype == DType::f32 || dtype == DType::f16 || dtype == DType::bf16;
    case OpFamily::Attention:  // shapes: attention_supports() (attention.cpp)
      return dtype == DType::f16 || dtype == DType::bf16;
    case OpFamily::Norm:  // 16-bit data with f32 statistics (norm.cu)
      return floating;
    case OpFamily::Optim:
    case OpFamily::Svd:
    case OpFamily::BatchNormCoefficients:  // norm.cu
      return dtype == DType::f32 || dtype == DType::f64;
    case OpFamily::MatmulInt8:  // the composite: the int32 matmul
      return false;
    default:
      return true;
  }
}

std::shared_ptr<Storage> CudaBackend::allocate(size_t nbytes, Device device) {
  DeviceState& s = device_state(device.index);
  size_t rounded = 0;
  void* p = s.allocator.allocate(nbytes, &rounded);
  auto* block = new Block{&s.allocator, rounded};
  return std::make_shared<Storage>(p, nbytes, device, &release_block, block);
}

std::shared_ptr<Storage> scratch(size_t nbytes, Device device) {
  return backend().allocate(nbytes, device);
}

void CudaBackend::write_from_host(const void* host, const RawTensor& dst) {
  if (!dst.is_contiguous()) no_kernel("write_from_host", dst.dtype);
  DeviceState& s = state_of(dst);
  s.check_not_capturing("write_from_host",
                        "a replay would copy whatever the staging buffer then holds (upload "
                        "into a tensor made before the capture instead)");
  const size_t n = dst.nbytes();
  std::lock_guard<std::mutex> lock(s.staging_mutex);
  for (size_t at = 0; at < n; at += DeviceState::kStagingChunk) {
    const size_t piece = std::min(DeviceState::kStagingChunk, n - at);
    DeviceState::StagingChunk& c = s.staging_chunk("write_from_host");
    // The caller's buffer is free once this returns: the transfer reads the pinned copy.
    std::memcpy(c.data, static_cast<const char*>(host) + at, piece);
    EMBER_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(dst.data()) + at, c.data, piece,
                                     cudaMemcpyHostToDevice, s.stream),
                     "write_from_host");
    EMBER_CUDA_CHECK(cudaEventRecord(c.done, s.stream), "write_from_host");
  }
}

void CudaBackend::read_to_host(const RawTensor& src, void* host) {
  if (!src.is_contiguous()) no_kernel("read_to_host", src.dtype);
  DeviceState& s = state_of(src);
  s.check_not_capturing("read_to_host", "reading a value waits for work that has not run yet");
  const size_t n = src.nbytes();
  if (n == 0) return;
  if (n > DeviceState::kStagingChunk) {
    // Large reads go straight to the caller's pageable memory (the driver stages them); the
    // copy is ordered after the queued work, and the wait makes it a host read.
    EMBER_CUDA_CHECK(cudaMemcpyAsync(host, src.data(), n, cudaMemcpyDeviceToHost, s.stream),
                     "read_to_host");
    EMBER_CUDA_CHECK(cudaStreamSynchronize(s.stream), "read_to_host");
    return;
  }
  std::lock_guard<std::mutex> lock(s.staging_mutex);
  DeviceState::StagingChunk& c = s.staging_chunk("read_to_host");
  EMBER_CUDA_CHECK(cudaMemcpyAsync(c.data, src.data(), n, cudaMemcpyDeviceToHost, s.stream),
                   "read_to_host");
  EMBER_CUDA_CHECK(cudaEventRecord(c.done, s.stream), "read_to_host");
  EMBER_CUDA_CHECK(cudaEventSynchronize(c.done), "read_to_host");
  std::memcpy(host, c.data, n);
}

MemoryStats CudaBackend::memory_stats(Device device) const {
  return device_state(device.index).allocator.stats();
}
void CudaBackend::reset_peak_memory(Device device) {
  device_state(device.index).allocator.reset_peak();
}
void CudaBackend::empty_cache(Device device) {
  DeviceState& s = device_state(device.index);
  s.check_not_capturing("empty_cache", "it waits for work that has not run yet");
  // Cached blocks may still be read by queued work: let it finish first.
  EMBER_CUDA_CHECK(cudaStreamSynchronize(s.stream), "empty_cache");
  s.allocator.empty_cache();
}

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // no driver or no device: none
    return 0;
  }
  return n;
}

Backend& backend() {
  static CudaBackend* b = new CudaBackend();  // never destroyed: storages may outlive main
  return *b;
}

}  // namespace ember::cuda
