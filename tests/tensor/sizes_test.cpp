// Sizes never wrap: every shape, view and allocation request that overflows int64 or exceeds
// what the allocator may hand out is an ember::Error naming the op and the shape (or bytes), and
// the process carries on. The inputs are issue 11's: zeros({2^62}) used to allocate 64 bytes and
// write past them, zeros({2^32, 2^32}) was accepted, an expand to [2^32, 2^32] summed to 0 and
// linspace with 10^13 points threw a bare std::bad_alloc.
#include <cstdint>
#include <functional>
#include <string>

#if defined(__linux__)
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#endif

#include "ember/core/backend.hpp"
#include "test_util.hpp"

namespace ember::test {
namespace {

constexpr int64_t k32 = int64_t{1} << 32;
constexpr int64_t k62 = int64_t{1} << 62;

DynTensor f32(const Shape& s) { return make_input(s, DType::f32, Layout::Contiguous, -1, 1, 3); }

// A small op still works: nothing was left half-made by the failure before it.
void expect_still_works() {
  const DynTensor x = add(arange(0, 6, 1, DType::f32), 1);
  EXPECT_EQ(sum(reshape(x, Shape{2, 3})).item<float>(), 21.0f);
}

// `call` raises an ember::Error whose message starts with `expected`; then a small op runs.
// The allocation errors below are the Cpu allocator's; on another host backend (these tables
// also run on LibTorch) the same failure names that backend's allocator, without the Cpu limit.
std::string for_device(const std::string& expected) {
  if (default_device().is_cpu()) return expected;
  const std::string cpu = "[cpu allocator]";
  const auto at = expected.find(cpu);
  if (at == std::string::npos) return expected;
  const std::string rest = expected.substr(at + cpu.size());
  const auto cut = rest.find("bytes (");
  return expected.substr(0, at) + "[" + to_string(default_device()) + " allocator]" +
         (cut == std::string::npos ? rest : rest.substr(0, cut + 7));
}

// `cpu_only`: the call uses the Cpu backend whatever the default device.
void expect_error(const std::string& expected_on_cpu, const std::function<void()>& call,
                  bool cpu_only = false) {
  const std::string expected = cpu_only ? expected_on_cpu : for_device(expected_on_cpu);
  try {
    call();
    ADD_FAILURE() << "no error thrown; expected: " << expected;
  } catch (const Error& e) {
    const std::string got = e.what();
    EXPECT_EQ(got.substr(0, expected.size()), expected);
  }
  expect_still_works();
}

TEST(Sizes, CreationRefusesShapesPastInt64) {
  expect_error(
      "[zeros] shape [4611686018427387904] of 4-byte elements needs more than "
      "9223372036854775807 bytes",
      [] { zeros(Shape{k62}, DType::f32); });
  expect_error("[zeros] shape [4294967296, 4294967296] has more than 2^63 - 1 elements", [] {
    zeros(Shape{k32, k32}, DType::f32);
  });
  expect_error("[ones] shape [4294967296, 4294967296] has more than 2^63 - 1 elements", [] {
    ones(Shape{k32, k32}, DType::u8);
  });
  expect_error("[randn] shape [4294967296, 4294967296, 1] has more than 2^63 - 1 elements", [] {
    randn(Shape{k32, k32, 1}, DType::f32);
  });
  expect_error("[eye] shape [4294967296, 4294967296] has more than 2^63 - 1 elements",
               [] { eye(k32, k32, DType::f32); });
  // A zero dim makes numel 0, but the strides of the other dims would still overflow.
  expect_error("[empty] shape [0, 4294967296, 4294967296] is too large", [] {
    empty(Shape{0, k32, k32}, DType::f32);
  });
  expect_error("[TensorData] shape [4294967296, 4294967296] has more than 2^63 - 1 elements", [] {
    TensorData({}, Shape{k32, k32}, DType::f32);
  });
}

TEST(Sizes, NegativeDimensionsAreRefused) {
  expect_error("[zeros] negative dimension -3 in shape [2, -3]", [] {
    zeros(Shape{2, -3}, DType::f32);
  });
  expect_error("[full] negative dimension -1 in shape [-1]",
               [] { full(Shape{-1}, 2.0, DType::f32); });
  expect_error("[rand] negative dimension -5 in shape [-5, 2]", [] {
    rand(Shape{-5, 2}, DType::f32);
  });
  // -4 * -1 would pass a product check: each dim is checked on its own.
  expect_error("[empty] negative dimension -4 in shape [-4, -1]", [] {
    empty(Shape{-4, -1}, DType::f32);
  });
}

TEST(Sizes, AllocatorLimitNamesOpShapeAndBytes) {
  // 2^40 floats are 4 TiB: past the machine's memory, the allocator's default limit.
  expect_error(
      "[zeros] cannot allocate shape [1099511627776] of float32: [cpu allocator] cannot allocate "
      "4398046511104 bytes (more than the limit of ",
      [] { zeros(Shape{int64_t{1} << 40}, DType::f32); });
  const size_t in_use = cpu::allocator_stats().allocated_bytes;
  expect_error(
      "[cpu allocator] cannot allocate 4611686018427387904 bytes (more than the limit of ",
      [] { cpu::backend().allocate(size_t{1} << 62, Device::cpu()); }, true);
  EXPECT_EQ(cpu::allocator_stats().allocated_bytes, in_use);  // nothing counted for a refusal
}

TEST(Sizes, ExpandPastInt64IsRefusedNotSummedToZero) {
  const DynTensor one = ones(Shape{1, 1}, DType::f32);
  expect_error("[expand] shape [4294967296, 4294967296] has more than 2^63 - 1 elements", [&] {
    sum(expand(one, Shape{k32, k32}));
  });
  expect_error("[expand] shape [4294967296, 1, 4294967296] has more than 2^63 - 1 elements", [&] {
    expand(one, Shape{k32, -1, k32});
  });
  // 2^62 elements fit: the view is made (summing it would take years, so it is not summed).
  EXPECT_EQ(expand(one, Shape{int64_t{1} << 31, int64_t{1} << 31}).numel(), k62);
  // Reading a 2^62-element view back would copy it: refused, naming what the user called.
  expect_error(
      "[to_data] shape [1, 4611686018427387904] of 4-byte elements needs more than "
      "9223372036854775807 bytes, the most this machine can address (in clone)",
      [&] {
        expand(one, Shape{1, k62}).to_vector<float>();
      });
  // Broadcasting two such views: the result shape is refused before anything is allocated.
  expect_error("[add] shape [4294967296, 4294967296] has more than 2^63 - 1 elements", [&] {
    add(expand(one, Shape{k32, 1}), expand(one, Shape{1, k32}));
  });
}

TEST(Sizes, RangesPastTheLimits) {
  expect_error(
      "[linspace] cannot allocate shape [10000000000000] of float32: [cpu allocator] cannot "
      "allocate 40000000000000 bytes (more than the limit of ",
      [] { linspace(0, 1, 10'000'000'000'000, DType::f32); });
  expect_error(
      "[arange] shape [4611686018427387904] of 8-byte elements needs more than "
      "9223372036854775807 bytes",
      [] { arange(0, k62, 1, DType::i64); });
  expect_error(
      "[arange] cannot allocate shape [1099511627776] of int64: [cpu allocator] cannot allocate "
      "8796093022208 bytes",
      [] { arange(0, int64_t{1} << 40, 1, DType::i64); });
  // The count itself overflows int64: [INT64_MIN, INT64_MAX) has 2^64 - 1 elements.
  expect_error(
      "[arange] the range [-9223372036854775808, 9223372036854775807) with step 1 has "
      "18446744073709551615 elements, more than 2^63 - 1",
      [] { arange(INT64_MIN, INT64_MAX, 1, DType::i64); });
  // A step of INT64_MIN has no int64 magnitude; the count is still exact.
  EXPECT_EQ(arange(5, -5, INT64_MIN, DType::i64).to_vector<int64_t>(), std::vector<int64_t>{5});
  expect_error("[arange] the range [0, 1e+30) with step 1 has 1e+30 elements, more than 2^63 - 1",
               [] { arange(0.0, 1e30, 1.0, DType::f32); });
}

TEST(Sizes, ViewsWhoseProductOverflows) {
  // (2^62 + 1) * 4 wraps to 4, the input's size: the view used to be made over 4 elements.
  const DynTensor x = f32({4});
  expect_error("[reshape] shape [4611686018427387905, 4] has more than 2^63 - 1 elements", [&] {
    reshape(x, Shape{k62 + 1, 4});
  });
  expect_error("[view] shape [4611686018427387905, 4] has more than 2^63 - 1 elements", [&] {
    view(x, Shape{k62 + 1, 4});
  });
  expect_error("[reshape] shape [-1, 4611686018427387904, 4] has more than 2^63 - 1 elements", [&] {
    reshape(x, Shape{-1, k62, 4});
  });
  expect_error("[repeat] 4611686018427387904 repeats of dimension 0 of shape [4] overflow int64",
               [&] { repeat(x, {k62}); });
  expect_error("[repeat] shape [4294967296, 4294967296] has more than 2^63 - 1 elements", [&] {
    repeat(reshape(x, Shape{1, 4}), {k32, k32 / 4});
  });
  const DynTensor big = expand(ones(Shape{1}, DType::f32), Shape{k62});
  expect_error("[cat] the sizes along dimension 0 add up past 2^63 - 1", [&] {
    cat({big, big}, 0);
  });
  expect_error("[pad] pads 9223372036854775807, 1 overflow dimension 0 of shape [4]", [&] {
    pad(x, {INT64_MAX, 1});
  });
  expect_error("[pad] cannot allocate shape [1099511627780] of int64: [cpu allocator] ", [&] {
    pad(x, {int64_t{1} << 40, 0}, PadMode::Replicate);
  });
  expect_error("[narrow] start 1 and length 9223372036854775807 are out of range",
               [&] { narrow(x, 0, 1, INT64_MAX); });
  // A step near 2^63 takes one element (start + step - 1 used to overflow).
  EXPECT_EQ(slice(x, 0, 1, 4, INT64_MAX).to_vector<float>(),
            std::vector<float>{x.to_vector<float>()[1]});
  EXPECT_EQ(slice(expand(narrow(x, 0, 0, 1), Shape{k62}), 0, 0, k62, INT64_MAX).shape(),
            Shape({1}));
}

TEST(Sizes, ConvolutionGeometryPastInt64) {
  const DynTensor x = f32({1, 1, 4, 4}), w = f32({1, 1, 3, 3});
  expect_error("[conv2d] the output size overflows int64",
               [&] { conv2d(x, w, {}, {1}, {INT64_MAX / 2}); });
  expect_error("[conv2d] the output size overflows int64",
               [&] { conv2d(x, w, {}, {1}, {0}, {INT64_MAX}); });
  expect_error("[max_pool2d] kernel [3, 3] with dilation [9223372036854775807, ",
               [&] { max_pool2d(x, {3}, {1}, {0}, {INT64_MAX}); });
  // A stride near 2^63 with ceil_mode: one window (span + stride - 1 used to overflow).
  EXPECT_EQ(max_pool2d(x, {2}, {INT64_MAX}, {0}, {1}, true).shape(), Shape({1, 1, 1, 1}));
}

#if defined(__linux__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define EMBER_SIZES_NO_RLIMIT 1
#endif
#endif
#ifndef EMBER_SIZES_NO_RLIMIT
// Address space capped 1 GiB above what the process maps now: the system refuses what the
// allocator's limit lets through, so malloc returns null and operator new throws.
class AddressSpaceCap {
 public:
  AddressSpaceCap() {
    getrlimit(RLIMIT_AS, &saved_);
    std::ifstream statm("/proc/self/statm");
    long pages = 0;
    statm >> pages;
    rlimit cap = saved_;
    cap.rlim_cur =
        static_cast<rlim_t>(pages) * static_cast<rlim_t>(sysconf(_SC_PAGESIZE)) + (rlim_t{1} << 30);
    setrlimit(RLIMIT_AS, &cap);
  }
  ~AddressSpaceCap() { setrlimit(RLIMIT_AS, &saved_); }

 private:
  rlimit saved_{};
};

TEST(Sizes, SystemOutOfMemoryIsAnErrorNamingTheOp) {
  // The cap is on the host's address space, which the Cuda driver maps device memory into too:
  // there even the output's allocation fails. Device memory is tested in cuda_test.
  // On Vulkan, the 400 MB output is past what a shader binds (its own error, in vulkan_test).
  if (default_device().type == DeviceType::Cuda || default_device().type == DeviceType::Vulkan) {
    GTEST_SKIP() << "a host memory test";
  }
  cpu::empty_cache();
  {
    const AddressSpaceCap cap;
    // 4 GiB: under the allocator's limit on a machine of 4 GiB or more, over the cap.
    expect_error(
        "[zeros] cannot allocate shape [1073741824] of float32: [cpu allocator] cannot allocate "
        "4294967296 bytes (",
        [] { zeros(Shape{int64_t{1} << 30}, DType::f32); });
    // 400 MB of output fit; the 800 MB host staging of linspace does not: a std::bad_alloc
    // inside the op, raised as the op's error.
    expect_error("[linspace] out of memory (std::bad_alloc)",
                 [] { linspace(0, 1, 100'000'000, DType::f32); });
  }
  expect_still_works();
}
#endif
#endif

}  // namespace
}  // namespace ember::test
