// Linked into every device-neutral test binary: EMBER_TEST_DEVICE (set by ctest, which registers
// those tests once per built backend with the device as a name prefix) makes that device the
// default, so the same tables run on Cpu, LibTorch, Cuda and Vulkan (under the validation layer).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string_view>

#include "ember/core/device.hpp"
#include "ember/tensor/sync.hpp"
#if defined(EMBER_TEST_VULKAN)
#include "ember/backends/vulkan/vulkan.hpp"
#endif

namespace {

class DeviceEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    if (const char* name = std::getenv("EMBER_TEST_DEVICE")) {
      // Device::parse checks that the device exists: ask first.
      if (std::string_view(name).starts_with("cuda") &&
          ember::device_count(ember::DeviceType::Cuda) == 0) {
        GTEST_SKIP() << "no Cuda device here: the cuda.* tests run on a GPU machine";
      }
#if defined(EMBER_TEST_VULKAN)
      if (std::string_view(name).starts_with("vulkan")) {
        // Under Khronos's validation layer, asked for before the instance is made; TearDown
        // fails the test on any error it reported.
        setenv("EMBER_VULKAN_VALIDATION", "1", 0);
        if (ember::device_count(ember::DeviceType::Vulkan) == 0) {
          GTEST_SKIP() << "no Vulkan device here";
        }
        vulkan_ = true;
      }
#endif
      ember::set_default_device(ember::Device::parse(name));
      std::printf("[ember] tests run on %s\n", ember::to_string(ember::default_device()).c_str());
    }
  }

  void TearDown() override {
    // Work still queued would run while exit handlers destroy the driver's statics: lavapipe
    // compiles shaders with LLVM as it runs them, and crashes when LLVM is half torn down.
    try {
      ember::synchronize(ember::default_device());
    } catch (const std::exception&) {
      // A failed range check that no test read is not this environment's concern.
    }
#if defined(EMBER_TEST_VULKAN)
    if (vulkan_) {
      EXPECT_EQ(ember::vulkan::validation_errors(), 0u)
          << "the validation layer reported: " << ember::vulkan::first_validation_error();
    }
#endif
  }

#if defined(EMBER_TEST_VULKAN)
 private:
  bool vulkan_ = false;
#endif
};

[[maybe_unused]] ::testing::Environment* const g_env =
    ::testing::AddGlobalTestEnvironment(new DeviceEnvironment);

}  // namespace
