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

// Philox counters and the element formulas are shared (src/core/random_values.hpp): a seed gives
// the same tensor on both devices. f32 values are rounded from doubles that agree to an ulp, so
// they are equal; f64 normals go through the device's log/sin/cos, within a few ulps of libm's.
TEST(Cuda, ASeedGivesTheSameRandomTensorsAsTheCpu) {
  EMBER_REQUIRE_GPU();
  const Device dev = Device::cuda(0);
  for (DType dtype : {DType::f32, DType::f16, DType::bf16, DType::f64}) {
    Generator g_cpu(42), g_gpu(42);
    const std::vector<double> a =
        randn(Shape{4097}, dtype, Device::cpu(), &g_cpu).to_vector<double>();
    const std::vector<double> b =
        to_device(randn(Shape{4097}, dtype, dev, &g_gpu), Device::cpu()).to_vector<double>();
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      if (dtype == DType::f64) {
        ASSERT_NEAR(a[i], b[i], 1e-14 * (1 + std::abs(a[i]))) << i;
      } else {
        ASSERT_EQ(a[i], b[i]) << dtype_name(dtype) << " element " << i;
      }
    }
    const std::vector<double> u =
        rand(Shape{1001}, dtype, Device::cpu(), &g_cpu, -2, 3).to_vector<double>();
    const std::vector<double> v =
        to_device(rand(Shape{1001}, dtype, dev, &g_gpu, -2, 3), Device::cpu()).to_vector<double>();
    EXPECT_EQ(u, v) << dtype_name(dtype);
  }
  Generator g_cpu(7), g_gpu(7);
  EXPECT_EQ(randint(-5, 1000, Shape{999}, DType::i64, Device::cpu(), &g_cpu).to_vector<int64_t>(),
            to_device(randint(-5, 1000, Shape{999}, DType::i64, dev, &g_gpu), Device::cpu())
                .to_vector<int64_t>());
}

TEST(Cuda, MixingCpuAndCudaTensorsIsAClearError) {
  EMBER_REQUIRE_GPU();
  const DynTensor a = ones(Shape{3}, DType::f32, Device::cpu());
  const DynTensor b = ones(Shape{3}, DType::f32, Device::cuda(0));
  try {
    (void)add(a, b);
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("[add]"), std::string::npos) << what;
    EXPECT_NE(what.find("different devices"), std::string::npos) << what;
  }
  EXPECT_EQ(to_device(add(b, b), Device::cpu()).to_vector<float>(), (std::vector<float>{2, 2, 2}));
}

// The range check of an index runs on the device: the error comes at the next synchronisation,
// names the op and the bad value, and the process (and the device) keep working.
TEST(Cuda, AnIndexOutOfRangeInsideAKernelIsRaisedAtTheNextSynchronisation) {
  EMBER_REQUIRE_GPU();
  const Device dev = Device::cuda(0);
  const DynTensor x = arange(0, 10, 1, DType::f32, dev);
  const DynTensor index =
      to_device(from_data(TensorData::from(std::vector<int64_t>{1, 12, 3}, Shape{3})), dev);
  try {
    const DynTensor y = gather(x, 0, index);
    (void)y.to_vector<float>();
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("gather"), std::string::npos) << what;
    EXPECT_NE(what.find("12"), std::string::npos) << what;
  }
  const DynTensor ok =
      to_device(from_data(TensorData::from(std::vector<int64_t>{9, 0}, Shape{2})), dev);
  EXPECT_EQ(gather(x, 0, ok).to_vector<float>(), (std::vector<float>{9, 0}));
}

// With deterministic algorithms on, scatter_add with many duplicate indices repeats bit for bit.
TEST(Cuda, DeterministicScatterAddRepeatsBitForBit) {
  EMBER_REQUIRE_GPU();
  const Device dev = Device::cuda(0);
  use_deterministic_algorithms(true);
  Generator g(3);
  const DynTensor src = randn(Shape{100000}, DType::f32, dev, &g);
  const DynTensor index = randint(0, 7, Shape{100000}, DType::i64, dev, &g);
  const DynTensor dst = zeros(Shape{7}, DType::f32, dev);
  const std::vector<float> first = scatter_add(dst, 0, index, src).to_vector<float>();
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(scatter_add(dst, 0, index, src).to_vector<float>(), first);
  }
  use_deterministic_algorithms(false);
  const std::vector<float> any = scatter_add(dst, 0, index, src).to_vector<float>();
  for (size_t i = 0; i < first.size(); ++i) EXPECT_NEAR(any[i], first[i], 1e-2);
}

}  // namespace
}  // namespace ember
