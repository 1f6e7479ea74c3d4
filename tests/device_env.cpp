// Linked into every device-neutral test binary: EMBER_TEST_DEVICE (set by ctest, which registers
// those tests once per built backend with the device as a name prefix) makes that device the
// default, so the same tables run on Cpu, LibTorch and later backends.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string_view>

#include "ember/core/device.hpp"

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
      ember::set_default_device(ember::Device::parse(name));
      std::printf("[ember] tests run on %s\n", ember::to_string(ember::default_device()).c_str());
    }
  }
};

[[maybe_unused]] ::testing::Environment* const g_env =
    ::testing::AddGlobalTestEnvironment(new DeviceEnvironment);

}  // namespace
