// The Cuda backend: memory, transfers and streams first. Work is queued on one stream per
// device; reading data to the host synchronises that stream; uploads go through a pinned staging
// buffer whose reuse waits on an event, so write_from_host consumes the caller's buffer before it
// returns without waiting for the device. Families a slice has not brought yet raise the
// "no kernel" error of the Backend defaults.
#include <cuda_runtime.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "allocator.hpp"
#include "check.hpp"
#include "ember/backends/cuda/cuda.hpp"
#include "ember/core/backend.hpp"
#include "ember/core/half.hpp"
#include "kernels.hpp"

namespace ember::cuda {
namespace {

// Per device: the allocator, the stream, and the pinned staging buffer of host transfers.
struct DeviceState {
  explicit DeviceState(int index) : allocator(index), index(index) {
    EMBER_CUDA_CHECK(cudaSetDevice(index), "cuda");
    EMBER_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cuda");
    EMBER_CUDA_CHECK(cudaEventCreateWithFlags(&staging_free, cudaEventDisableTiming), "cuda");
  }
  DeviceAllocator allocator;
  int index;
  cudaStream_t stream = nullptr;
  std::mutex staging_mutex;  // DataLoader workers upload from several threads
  void* staging = nullptr;
  size_t staging_bytes = 0;
  cudaEvent_t staging_free = nullptr;  // recorded after the last transfer through `staging`

  // The staging buffer, at least n bytes, once the transfer that last used it has finished.
  void* staging_for(size_t n, const char* op) {
    EMBER_CUDA_CHECK(cudaEventSynchronize(staging_free), op);
    if (n > staging_bytes) {
      if (staging) EMBER_CUDA_CHECK(cudaFreeHost(staging), op);
      staging = nullptr;
      staging_bytes = 0;
      EMBER_CUDA_CHECK(cudaHostAlloc(&staging, n, cudaHostAllocDefault), op);
      staging_bytes = n;
    }
    return staging;
  }
};

template <class T>
T as_int(const Scalar& v) {
  return v.kind() == KindId::Float ? static_cast<T>(v.to_double()) : v.to<T>();
}

// The scalar as `dtype`'s bytes, for fill.
uint64_t scalar_bits(const Scalar& v, DType dtype) {
  uint64_t bits = 0;
  auto put = [&bits](auto x) { std::memcpy(&bits, &x, sizeof(x)); };
  switch (dtype) {
    case DType::f32:
      put(static_cast<float>(v.to_double()));
      break;
    case DType::f64:
      put(v.to_double());
      break;
    case DType::f16:
      put(Half(static_cast<float>(v.to_double())).bits);
      break;
    case DType::bf16:
      put(BFloat16(static_cast<float>(v.to_double())).bits);
      break;
    case DType::i64:
      put(as_int<int64_t>(v));
      break;
    case DType::i32:
      put(as_int<int32_t>(v));
      break;
    case DType::i8:
      put(as_int<int8_t>(v));
      break;
    case DType::u8:
      put(as_int<uint8_t>(v));
      break;
    case DType::boolean:
      put(static_cast<uint8_t>(v.to_bool()));
      break;
  }
  return bits;
}

class CudaBackend final : public Backend {
 public:
  std::string_view name() const override { return "cuda"; }
  bool supports(OpFamily family, DType) const override {
    return family == OpFamily::Copy || family == OpFamily::Fill;
  }

  std::shared_ptr<Storage> allocate(size_t nbytes, Device device) override {
    DeviceState& s = state(device);
    size_t rounded = 0;
    void* p = s.allocator.allocate(nbytes, &rounded);
    auto* block = new Block{&s.allocator, rounded};
    return std::make_shared<Storage>(p, nbytes, device, &release_block, block);
  }

  void copy(const RawTensor& src, const RawTensor& dst) override {
    // Strided and converting copies come with the elementwise kernels.
    if (src.dtype != dst.dtype || !src.is_contiguous() || !dst.is_contiguous()) {
      no_kernel("copy", dst.dtype);
    }
    DeviceState& s = state(dst.storage->device());
    EMBER_CUDA_CHECK(
        cudaMemcpyAsync(dst.data(), src.data(), dst.nbytes(), cudaMemcpyDeviceToDevice, s.stream),
        "copy");
  }

  void write_from_host(const void* host, const RawTensor& dst) override {
    if (!dst.is_contiguous()) no_kernel("write_from_host", dst.dtype);
    DeviceState& s = state(dst.storage->device());
    const size_t n = dst.nbytes();
    if (n == 0) return;
    std::lock_guard<std::mutex> lock(s.staging_mutex);
    void* staging = s.staging_for(n, "write_from_host");
    std::memcpy(staging, host, n);  // the caller's buffer is free once this returns
    EMBER_CUDA_CHECK(cudaMemcpyAsync(dst.data(), staging, n, cudaMemcpyHostToDevice, s.stream),
                     "write_from_host");
    EMBER_CUDA_CHECK(cudaEventRecord(s.staging_free, s.stream), "write_from_host");
  }

  void read_to_host(const RawTensor& src, void* host) override {
    if (!src.is_contiguous()) no_kernel("read_to_host", src.dtype);
    DeviceState& s = state(src.storage->device());
    const size_t n = src.nbytes();
    if (n == 0) return;
    std::lock_guard<std::mutex> lock(s.staging_mutex);
    void* staging = s.staging_for(n, "read_to_host");
    EMBER_CUDA_CHECK(cudaMemcpyAsync(staging, src.data(), n, cudaMemcpyDeviceToHost, s.stream),
                     "read_to_host");
    EMBER_CUDA_CHECK(cudaEventRecord(s.staging_free, s.stream), "read_to_host");
    EMBER_CUDA_CHECK(cudaEventSynchronize(s.staging_free), "read_to_host");
    std::memcpy(host, staging, n);
  }

  void fill(const RawTensor& dst, const Scalar& value) override {
    if (!dst.is_contiguous()) no_kernel("fill", dst.dtype);
    DeviceState& s = state(dst.storage->device());
    const uint64_t bits = scalar_bits(value, dst.dtype);
    EMBER_CUDA_CHECK(fill_bytes(dst.data(), &bits, static_cast<int>(dtype_size(dst.dtype)),
                                dst.numel(), s.stream),
                     "fill");
  }

  RangeError synchronize(Device device) override {
    EMBER_CUDA_CHECK(cudaStreamSynchronize(state(device).stream), "synchronize");
    return {};
  }

  MemoryStats memory_stats(Device device) const override { return state(device).allocator.stats(); }
  void reset_peak_memory(Device device) override { state(device).allocator.reset_peak(); }
  void empty_cache(Device device) override {
    DeviceState& s = state(device);
    // Cached blocks may still be read by queued work: let it finish first.
    EMBER_CUDA_CHECK(cudaStreamSynchronize(s.stream), "empty_cache");
    s.allocator.empty_cache();
  }

 private:
  struct Block {
    DeviceAllocator* allocator;
    size_t rounded;
  };
  static void release_block(void* context, void* data, size_t) {
    auto* block = static_cast<Block*>(context);
    block->allocator->release(data, block->rounded);
    delete block;
  }

  DeviceState& state(Device device) const {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto i = static_cast<size_t>(device.index);
    if (states_.size() <= i) states_.resize(i + 1);
    if (!states_[i]) states_[i] = std::make_unique<DeviceState>(device.index);
    EMBER_CUDA_CHECK(cudaSetDevice(device.index), "cuda");
    return *states_[i];
  }

  // Made on a device's first use, from any thread (memory_stats too, which is const).
  mutable std::mutex mutex_;
  mutable std::vector<std::unique_ptr<DeviceState>> states_;
};

}  // namespace

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
