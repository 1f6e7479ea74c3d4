// The Cpu backend's own machinery: the caching allocator reuses buffers, counts them, and hands
// them back to the OS on request; the thread-count knob; results independent of thread count.
#include <gtest/gtest.h>

#include <ember/ember.hpp>

namespace ember {
namespace {

TEST(CpuAllocator, ReusesFreedBuffers) {
  cpu::empty_cache();
  const cpu::AllocatorStats before = cpu::allocator_stats();
  { auto t = Tensor<1>::ones({100000}); }  // 400 KB, freed at once
  const cpu::AllocatorStats mid = cpu::allocator_stats();
  EXPECT_EQ(mid.allocated_bytes, before.allocated_bytes);
  EXPECT_GE(mid.cached_bytes, 400000u);
  EXPECT_GT(mid.system_allocations, before.system_allocations);
  { auto t = Tensor<1>::zeros({99990}); }  // same size class: served from the cache
  const cpu::AllocatorStats after = cpu::allocator_stats();
  EXPECT_EQ(after.system_allocations, mid.system_allocations);
  EXPECT_GT(after.cache_hits, mid.cache_hits);
  cpu::empty_cache();
  EXPECT_EQ(cpu::allocator_stats().cached_bytes, 0u);
}

TEST(CpuAllocator, TracksPeak) {
  cpu::reset_peak_allocated();
  const size_t base = cpu::allocator_stats().allocated_bytes;
  {
    auto a = Tensor<1>::ones({1 << 20});  // 4 MiB
    auto b = Tensor<1>::ones({1 << 20});
    EXPECT_GE(cpu::allocator_stats().allocated_bytes, base + (8u << 20));
  }
  EXPECT_EQ(cpu::allocator_stats().allocated_bytes, base);
  EXPECT_GE(cpu::allocator_stats().peak_allocated_bytes, base + (8u << 20));
}

// memory_stats / reset_peak_memory / empty_cache of the Cpu device are its allocator's.
TEST(CpuMemory, StatsAndCacheThroughTheBackend) {
  const Device dev = Device::cpu();
  reset_peak_memory(dev);
  const MemoryStats before = memory_stats(dev);
  const cpu::AllocatorStats counters = cpu::allocator_stats();
  EXPECT_EQ(before.in_use, counters.allocated_bytes);
  EXPECT_EQ(before.cached, counters.cached_bytes);
  EXPECT_EQ(before.peak, before.in_use);  // just reset
  {
    auto big = Tensor<1>::ones({1 << 20});   // 4 MiB
    auto small = Tensor<1>::ones({100000});  // 400 KB: cached when freed
    EXPECT_GE(memory_stats(dev).in_use, before.in_use + (4u << 20) + 400000u);
  }
  const MemoryStats after = memory_stats(dev);
  EXPECT_EQ(after.in_use, before.in_use);
  EXPECT_GE(after.peak, before.in_use + (4u << 20) + 400000u);
  EXPECT_GE(after.cached, 400000u);
  empty_cache(dev);
  EXPECT_EQ(memory_stats(dev).cached, 0u);
  reset_peak_memory(dev);
  EXPECT_EQ(memory_stats(dev).peak, memory_stats(dev).in_use);
}

TEST(CpuThreads, SetAndResultsIndependentOfThreadCount) {
  const int n = cpu::num_threads();
  EXPECT_GE(n, 1);
  Generator g(5);
  auto x = Tensor<2>::randn({300, 2000}, Device::cpu(), &g);
  cpu::set_num_threads(1);
  EXPECT_EQ(cpu::num_threads(), 1);
  const float s1 = x.sum().item<float>();
  const std::vector<float> e1 = exp(x).sum(0).to_vector<float>();
  cpu::set_num_threads(2);
  const float s2 = x.sum().item<float>();
  const std::vector<float> e2 = exp(x).sum(0).to_vector<float>();
  cpu::set_num_threads(n);
  EXPECT_EQ(s1, s2);  // bitwise: reductions are split the same way whatever the thread count
  EXPECT_EQ(e1, e2);
}

TEST(CpuCopy, TransposedPlanesCopyTiled) {
  // contiguous() of transposed views takes the tiled transpose (same dtype, planes >= 32 x 32):
  // every element lands where the element-wise definition puts it, for each element size.
  Generator g(9);
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::u8, DType::boolean}) {
    for (const Shape& shape :
         {Shape{33, 70}, Shape{64, 64}, Shape{3, 40, 50}, Shape{2, 2, 32, 97}}) {
      const DynTensor base = cast(mul(randn(shape, DType::f64, Device::cpu(), &g), 50.0), dtype);
      const DynTensor t = transpose(base, -1, -2);
      const DynTensor c = contiguous(t);
      ASSERT_TRUE(c.is_contiguous());
      const std::vector<double> got = c.to_vector<double>(), src = base.to_vector<double>();
      const int64_t rows = t.size(-2), cols = t.size(-1), planes = t.numel() / (rows * cols);
      for (int64_t p = 0; p < planes; ++p) {
        for (int64_t i = 0; i < rows; ++i) {
          for (int64_t j = 0; j < cols; ++j) {
            ASSERT_EQ(got[static_cast<size_t>((p * rows + i) * cols + j)],
                      src[static_cast<size_t>((p * cols + j) * rows + i)])
                << dtype_name(dtype) << " " << to_string(shape) << " at " << p << ", " << i << ", "
                << j;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace ember
