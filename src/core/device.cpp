#include "ember/core/device.hpp"

#include <atomic>
#include <cstdlib>

#include "ember/core/error.hpp"
#include "ember/core/raw_tensor.hpp"

namespace ember {

std::string to_string(Device d) {
  switch (d.type) {
    case DeviceType::Cpu:
      return "cpu";
    case DeviceType::Cuda:
      return "cuda:" + std::to_string(d.index);
    case DeviceType::Vulkan:
      return "vulkan:" + std::to_string(d.index);
    case DeviceType::LibTorch:
      return d.index == 0 ? "libtorch" : "libtorch:" + std::to_string(d.index);
  }
  return "?";
}

void append(std::string& out, Device d) { out.append(to_string(d)); }

namespace {
// Packed as type << 16 | index (indices stay under 1024) in 32 bits, lock-free on every target.
std::atomic<uint32_t> g_default_device{0};
}  // namespace

Device default_device() {
  const uint32_t v = g_default_device.load(std::memory_order_relaxed);
  return {static_cast<DeviceType>(v >> 16), static_cast<int>(v & 0xffffu)};
}

void set_default_device(Device device) {
  EMBER_CHECK(device.index >= 0 && device.index < 1024, "[set_default_device] bad index ",
              device.index);
  g_default_device.store(
      static_cast<uint32_t>(device.type) << 16 | static_cast<uint32_t>(device.index),
      std::memory_order_relaxed);
}

namespace {
std::atomic<bool> g_deterministic{false};
std::atomic<bool> g_allow_tf32{false};
}  // namespace

void use_deterministic_algorithms(bool on) { g_deterministic.store(on, std::memory_order_relaxed); }
bool deterministic_algorithms() { return g_deterministic.load(std::memory_order_relaxed); }
void set_allow_tf32(bool on) { g_allow_tf32.store(on, std::memory_order_relaxed); }
bool allow_tf32() { return g_allow_tf32.load(std::memory_order_relaxed); }

bool RawTensor::is_channels_last() const {
  if (shape.rank() < 3) return false;
  int64_t expected = 1;
  const auto dense = [&](int i) {
    if (shape[i] == 1) return true;
    if (strides[i] != expected) return false;
    expected *= shape[i];
    return true;
  };
  if (!dense(1)) return false;
  for (int i = shape.rank() - 1; i >= 2; --i) {
    if (!dense(i)) return false;
  }
  return dense(0);
}

bool RawTensor::is_contiguous_nd() const {
  if (shape.numel() == 0) return true;
  int64_t expected = 1;
  for (int i = shape.rank() - 1; i >= 0; --i) {
    if (shape[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

}  // namespace ember
