// The Backend interface's defaults (src/core/backend.cpp): a backend that overrides only name()
// supports nothing, and each entry raises "[op] no kernel on <backend> for <dtype>" with the op
// named as the front end names it; its memory statistics are zero and its cache a no-op. And the
// front end's check: a family the backend does not support fails before any kernel runs.
#include <gtest/gtest.h>

#include <ember/ember.hpp>
#include <functional>
#include <string>

#include "internal.hpp"  // src/tensor: the front end's check_supported

namespace ember {
namespace {

struct Empty final : Backend {
  std::string_view name() const override { return "empty"; }
};

// A tensor as a kernel sees it; the defaults never touch storage.
RawTensor raw(DType dtype) {
  RawTensor t;
  t.dtype = dtype;
  return t;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(BackendDefaults, SupportsNothing) {
  const Empty be;
  for (int f = 0; f <= static_cast<int>(OpFamily::ConvRelu); ++f) {
    for (DType dt : {DType::f32, DType::f64, DType::bf16, DType::i64, DType::boolean}) {
      EXPECT_FALSE(be.supports(static_cast<OpFamily>(f), dt)) << f << " " << dtype_name(dt);
    }
  }
}

TEST(BackendDefaults, EveryEntryNamesTheOpTheBackendAndTheDtype) {
  Empty be;
  const RawTensor f32 = raw(DType::f32), bf16 = raw(DType::bf16), i64 = raw(DType::i64);
  ConvParams conv;
  conv.spatial = 2;
  PoolParams pool;
  pool.spatial = 3;
  PoolParams adaptive;
  adaptive.spatial = 1;
  adaptive.adaptive = true;
  float host = 0;
  const std::vector<std::pair<std::string, std::function<void()>>> cases = {
      {"[conv2d] no kernel on empty for bfloat16", [&] { be.conv(bf16, bf16, {}, conv, bf16); }},
      {"[conv_transpose2d] no kernel on empty for float32",
       [&] { be.conv_backward_data(f32, f32, conv, f32); }},
      {"[conv_backward] no kernel on empty for float32",
       [&] { be.conv_backward(f32, f32, {}, f32, conv, f32, f32, {}); }},
      {"[conv_backward_weight] no kernel on empty for float32",
       [&] { be.conv_backward_weight(f32, f32, conv, f32, {}); }},
      {"[max_pool3d] no kernel on empty for float32", [&] { be.max_pool(f32, pool, f32, i64); }},
      {"[max_pool_backward] no kernel on empty for float32",
       [&] { be.max_pool_backward(f32, i64, pool, f32); }},
      {"[adaptive_avg_pool1d] no kernel on empty for float32",
       [&] { be.avg_pool(f32, adaptive, f32); }},
      {"[avg_pool_backward] no kernel on empty for float32",
       [&] { be.avg_pool_backward(f32, pool, f32); }},
      {"[copy] no kernel on empty for float32 to bfloat16", [&] { be.copy(f32, bf16); }},
      {"[copy] no kernel on empty for int64", [&] { be.copy(i64, i64); }},
      {"[write_from_host] no kernel on empty for float32", [&] { be.write_from_host(&host, f32); }},
      {"[read_to_host] no kernel on empty for float32", [&] { be.read_to_host(f32, &host); }},
      {"[fill] no kernel on empty for int64", [&] { be.fill(i64, 1); }},
      {"[arange] no kernel on empty for int64", [&] { be.iota(i64, 0, 1); }},
      {"[randn] no kernel on empty for float32", [&] { be.random(RandomOp::Normal, {}, f32); }},
      {"[exp] no kernel on empty for float32", [&] { be.unary(UnaryOp::Exp, {}, f32, f32); }},
      {"[add] no kernel on empty for int64", [&] { be.binary(BinaryOp::Add, i64, i64, i64); }},
      {"[where] no kernel on empty for float32",
       [&] { be.where(raw(DType::boolean), f32, f32, f32); }},
      {"[sum] no kernel on empty for float32", [&] { be.reduce(ReduceOp::Sum, f32, 1, f32); }},
      {"[argmax] no kernel on empty for float32",
       [&] { be.arg_reduce(ArgReduceOp::ArgMax, f32, 0, f32, i64); }},
      {"[cumsum] no kernel on empty for int64", [&] { be.scan(ScanOp::CumSum, i64, 0, i64); }},
      {"[sort] no kernel on empty for float32", [&] { be.sort(f32, 0, false, f32, i64); }},
      {"[topk] no kernel on empty for float32", [&] { be.topk(f32, 1, 0, true, f32, i64); }},
      {"[matmul] no kernel on empty for bfloat16", [&] { be.matmul(bf16, bf16, bf16); }},
      {"[gather] no kernel on empty for float32", [&] { be.gather(f32, 0, i64, f32); }},
      {"[scatter] no kernel on empty for float32",
       [&] { be.scatter(ScatterReduce::None, f32, 0, i64, f32); }},
      {"[scatter_add] no kernel on empty for float32",
       [&] { be.scatter(ScatterReduce::Add, f32, 0, i64, f32); }},
      {"[index_select] no kernel on empty for float32", [&] { be.index_select(f32, 0, i64, f32); }},
      {"[nonzero] no kernel on empty for bool", [&] { be.nonzero(raw(DType::boolean)); }},
      {"[channel_moments] no kernel on empty for float32", [&] { be.channel_moments(f32, f32); }},
      {"[channel_dot] no kernel on empty for float32", [&] { be.channel_dot(f32, f32, f32, f32); }},
      {"[channel_fma] no kernel on empty for float32",
       [&] { be.channel_fma(f32, f32, {}, {}, f32, f32); }},
      {"[adam_step] no kernel on empty for float64",
       [&] {
         const RawTensor f64 = raw(DType::f64);
         be.adam_step(f64, f64, f64, f64, {}, {}, f64, f64, f64, {});
       }},
      {"[allocate] no allocator on empty for 64 bytes on cpu",
       [&] { be.allocate(64, Device::cpu()); }},
  };
  for (const auto& [want, call] : cases) EXPECT_EQ(error_of(call), want);
}

TEST(BackendDefaults, MemoryIsZeroAndTheCacheEmpty) {
  Empty be;
  const MemoryStats s = be.memory_stats(Device::cpu());
  EXPECT_EQ(s.in_use, 0u);
  EXPECT_EQ(s.cached, 0u);
  EXPECT_EQ(s.peak, 0u);
  be.reset_peak_memory(Device::cpu());
  be.empty_cache(Device::cpu());
}

// The front end's check before every backend call (src/tensor/internal.hpp) words a missing
// family the same way, and passes what the backend supports.
TEST(BackendDefaults, FrontEndCheckNamesAMissingKernel) {
  const Empty empty;
  EXPECT_EQ(
      error_of([&] { detail::check_supported(empty, OpFamily::Gather, DType::f32, "gather"); }),
      "[gather] no kernel on empty for float32");
  EXPECT_EQ(error_of([&] {
              detail::check_supported(cpu::backend(), OpFamily::Matmul, DType::boolean, "matmul");
            }),
            "[matmul] no kernel on cpu for bool");
  detail::check_supported(cpu::backend(), OpFamily::Where, DType::f32, "where");
  EXPECT_EQ(error_of([&] { detail::check_copy(empty, DType::f32, DType::bf16, "cast"); }),
            "[cast] no kernel on empty for bfloat16");
}

}  // namespace
}  // namespace ember
