// Devices name where a tensor lives; the backend is picked at run time from the device.
#pragma once

#include <cstdint>
#include <string>

namespace ember {

enum class DeviceType : uint8_t { Cpu, Cuda, Vulkan };

struct Device {
  DeviceType type = DeviceType::Cpu;
  int index = 0;

  static constexpr Device cpu() { return {DeviceType::Cpu, 0}; }
  /// Fails with a clear error when this Ember was built without the Cuda backend.
  static Device cuda(int index = 0);
  /// Fails with a clear error when this Ember was built without the Vulkan backend.
  static Device vulkan(int index = 0);
  /// Parses "cpu", "cuda", "cuda:1", "vulkan:0".
  static Device parse(const std::string& text);

  bool is_cpu() const { return type == DeviceType::Cpu; }
  friend bool operator==(const Device&, const Device&) = default;
};

/// "cpu", "cuda:0": the device's name as PyTorch prints it.
std::string to_string(Device d);
void append(std::string& out, Device d);

}  // namespace ember
