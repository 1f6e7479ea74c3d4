// The Cuda backend's memory and transfers (the first slice of issue 13): the caching allocator,
// out of memory as a clear error the process survives, host round trips of every dtype, fill,
// and device indices. On a machine without a GPU every test says it was skipped.
#include <gtest/gtest.h>

#include <ember/ember.hpp>

namespace ember {
namespace {

#define EMBER_REQUIRE_GPU() \
  if (device_count(DeviceType::Cuda) == 0) GTEST_SKIP() << "no Cuda device here"

TEST(Cuda, DeviceIndicesAreChecked) {
  EMBER_REQUIRE_GPU();
  const int n = device_count(DeviceType::Cuda);
  EXPECT_EQ(Device::cuda(0), (Device{DeviceType::Cuda, 0}));
  try {
    Device::cuda(n);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
}

TEST(Cuda, RoundTripsEveryDtype) {
  EMBER_REQUIRE_GPU();
  const std::vector<double> v = {0.0, 1.0, -2.0, 3.0, 100.0, -7.0, 5.0};
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i64, DType::i32,
                      DType::i8, DType::u8, DType::boolean}) {
    const DynTensor host = cast(from_data(TensorData::from(v, Shape{7})), dtype);
    const DynTensor dev = to_device(host, Device::cuda(0));
    EXPECT_EQ(dev.device(), Device::cuda(0));
    const DynTensor back = to_device(dev, Device::cpu());
    EXPECT_EQ(back.to_vector<double>(), host.to_vector<double>()) << dtype_name(dtype);
  }
}

TEST(Cuda, FillAndCopyStayOnTheDevice) {
  EMBER_REQUIRE_GPU();
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i64, DType::i32,
                      DType::i8, DType::u8, DType::boolean}) {
    const DynTensor t = full(Shape{1000, 3}, 3, dtype, Device::cuda(0));
    const DynTensor c = clone(t);
    const std::vector<double> got = to_device(c, Device::cpu()).to_vector<double>();
    ASSERT_EQ(got.size(), 3000u);
    const double want = dtype == DType::boolean ? 1.0 : 3.0;
    for (double g : got) ASSERT_EQ(g, want) << dtype_name(dtype);
  }
}

TEST(Cuda, TheAllocatorReusesFreedBlocks) {
  EMBER_REQUIRE_GPU();
  const Device dev = Device::cuda(0);
  synchronize(dev);
  empty_cache(dev);
  const MemoryStats before = memory_stats(dev);
  {
    const DynTensor a = zeros(Shape{1 << 20}, DType::f32, dev);  // 4 MiB
    EXPECT_GE(memory_stats(dev).in_use, before.in_use + (size_t{4} << 20));
  }
  const MemoryStats freed = memory_stats(dev);
  EXPECT_EQ(freed.in_use, before.in_use);
  EXPECT_GE(freed.cached, size_t{4} << 20);  // kept for reuse, not given back
  const DynTensor b = zeros(Shape{1 << 20}, DType::f32, dev);
  EXPECT_EQ(memory_stats(dev).cached, freed.cached - (size_t{4} << 20));  // the same block
  EXPECT_GE(memory_stats(dev).peak, size_t{4} << 20);
}

TEST(Cuda, OutOfMemoryIsAnErrorAndTheProcessCarriesOn) {
  EMBER_REQUIRE_GPU();
  const Device dev = Device::cuda(0);
  try {
    const DynTensor huge = empty(Shape{int64_t{1} << 46}, DType::f32, dev);  // 256 TiB
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cannot allocate"), std::string::npos) << what;
    EXPECT_NE(what.find("bytes free on the device"), std::string::npos) << what;
  }
  const DynTensor ok = full(Shape{4}, 2.5, DType::f32, dev);
  EXPECT_EQ(to_device(ok, Device::cpu()).to_vector<float>(),
            (std::vector<float>{2.5, 2.5, 2.5, 2.5}));
}

}  // namespace
}  // namespace ember
