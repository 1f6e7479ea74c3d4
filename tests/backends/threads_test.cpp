// One thread setting for the Cpu and LibTorch backends in one process: cpu::set_num_threads
// sizes both (src/backends/cpu/threads.hpp), and OpenBLAS, whose pool they share, stays on one
// thread once the LibTorch backend is loaded.
#include <gtest/gtest.h>

#include <ember/ember.hpp>

extern "C" int openblas_get_num_threads(void) __attribute__((weak));

namespace ember {
namespace {

TEST(Threads, LibTorchKeepsOpenBlasOnOneThreadWhateverTheSetting) {
  if (device_count(DeviceType::LibTorch) == 0) GTEST_SKIP() << "no LibTorch backend";
  if (!openblas_get_num_threads) GTEST_SKIP() << "this Ember does not link OpenBLAS";
  const int saved = cpu::num_threads();
  const DynTensor a = ones(Shape{2, 3}, DType::f32, Device::libtorch());  // the plugin is loaded
  EXPECT_EQ(openblas_get_num_threads(), 1);
  cpu::set_num_threads(2);  // later settings too
  EXPECT_EQ(cpu::num_threads(), 2);
  EXPECT_EQ(openblas_get_num_threads(), 1);
  EXPECT_EQ(sum(a).item<float>(), 6.0f);
  cpu::set_num_threads(saved);
}

}  // namespace
}  // namespace ember
