// What the Vulkan tests share: the device, random inputs away from zero, comparisons with the
// Cpu, and the validation layer's verdict.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include <ember/backends/vulkan/vulkan.hpp>
#include <ember/ember.hpp>

namespace ember {

#define EMBER_REQUIRE_VULKAN() \
  if (device_count(DeviceType::Vulkan) == 0) GTEST_SKIP() << "no Vulkan device here"

inline Device vk() { return Device::vulkan(0); }

// Random values away from zero, as the other tables use.
inline DynTensor input(const Shape& s, uint64_t seed) {
  Generator gen(seed);
  return add(rand(s, DType::f32, Device::cpu(), &gen), 0.5);
}

// The largest |a - b| of two Cpu tensors of one shape.
inline double max_abs_diff(const DynTensor& a, const DynTensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  return amax(abs(sub(cast(a, DType::f64), cast(b, DType::f64))), {}).item<double>();
}

// Runs f, which must raise an ember::Error whose message contains `part`.
template <class F>
void expect_error(const F& f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

inline void expect_no_validation_errors() {
  EXPECT_EQ(vulkan::validation_errors(), 0u) << vulkan::first_validation_error();
}

}  // namespace ember
