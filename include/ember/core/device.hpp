// Devices name where a tensor lives; the backend is picked at run time from the device.
#pragma once

#include <cstdint>
#include <string>

namespace ember {

enum class DType : uint8_t;  // core/dtype.hpp

enum class DeviceType : uint8_t { Cpu, Cuda, Vulkan, LibTorch };

struct Device {
  DeviceType type = DeviceType::Cpu;
  int index = 0;

  static constexpr Device cpu() { return {DeviceType::Cpu, 0}; }
  /// Fails with a clear error when this Ember was built without the Cuda backend.
  static Device cuda(int index = 0);
  /// Fails with a clear error when this Ember was built without the Vulkan backend.
  static Device vulkan(int index = 0);
  /// LibTorch's ATen kernels on the host (the adapter backend). Fails with a clear error when
  /// this Ember was built without it (no libtorch-dev).
  static Device libtorch(int index = 0);
  /// Parses "cpu", "cuda", "cuda:1", "vulkan:0", "libtorch".
  static Device parse(const std::string& text);

  bool is_cpu() const { return type == DeviceType::Cpu; }
  friend bool operator==(const Device&, const Device&) = default;
};

/// How many devices of a type this build and machine have: 1 for Cpu, 0 for a backend that was
/// not built.
int device_count(DeviceType type);

/// Whether tensors of `dtype` can be computed on the device: false for float64 on a GPU without
/// it (Apple, Intel Arc and Mali GPUs through Vulkan), as PyTorch's MPS device has no float64.
/// Its ops then fail naming the device. The other dtypes are there everywhere, though on such a
/// GPU a few of their ops still need float64 (docs/VULKAN.md lists them).
bool has_dtype(Device device, DType dtype);

/// The device that creation functions and layers use when none is given (Cpu unless set), as
/// torch.set_default_device. Process-wide; set it before creating tensors.
Device default_device();
void set_default_device(Device device);

/// As torch.use_deterministic_algorithms: kernels that would otherwise accumulate with atomics
/// in an order that varies from run to run (Cuda's scatter_add and the gradients built on it)
/// use an ordered algorithm instead, so that a run repeats bit for bit. Off by default.
/// Process-wide.
void use_deterministic_algorithms(bool on);
bool deterministic_algorithms();

/// As torch.backends.cuda.matmul.allow_tf32: float32 matmuls and convolutions on Cuda may use
/// TF32 tensor cores (10-bit mantissa inputs, float32 accumulation; several times faster on an
/// H100/H200). Off by default, as in PyTorch: results then match float32 to float32's precision.
void set_allow_tf32(bool on);
bool allow_tf32();

/// "cpu", "cuda:0", "libtorch": the device's name as PyTorch prints it.
std::string to_string(Device d);
void append(std::string& out, Device d);

}  // namespace ember
