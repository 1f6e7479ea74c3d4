// The Vulkan backend's first slice (issue 18): devices, memory (ranges of large allocations,
// reused in queue order), host round trips, fill, copy and float32 arithmetic on strided and
// broadcast operands against the Cpu; Khronos's validation layer reports no error (CI runs this
// with EMBER_VULKAN_VALIDATION=1 on Mesa's lavapipe). Without a Vulkan device every test says it
// was skipped.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <ember/backends/vulkan/vulkan.hpp>
#include <ember/ember.hpp>

#include "vulkan_test_util.hpp"

namespace ember {
namespace {

// Waits for work a test left queued: run after main returns, lavapipe would compile its shaders
// while LLVM's statics are being destroyed, and crash.
class WaitForVulkan : public ::testing::Environment {
 public:
  void TearDown() override {
    if (device_count(DeviceType::Vulkan) == 0) return;
    try {
      synchronize(vk());
    } catch (const std::exception&) {
      // A failed range check that no test read is not this environment's concern.
    }
  }
};
[[maybe_unused]] ::testing::Environment* const g_wait =
    ::testing::AddGlobalTestEnvironment(new WaitForVulkan);

TEST(Vulkan, DeviceIndicesAndName) {
  EMBER_REQUIRE_VULKAN();
  EXPECT_EQ(vk(), (Device{DeviceType::Vulkan, 0}));
  EXPECT_EQ(Device::parse("vulkan:0"), vk());
  EXPECT_FALSE(vulkan::device_name(0).empty());
  try {
    Device::vulkan(device_count(DeviceType::Vulkan));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
}

TEST(Vulkan, RoundTripsFourAndEightByteDtypes) {
  EMBER_REQUIRE_VULKAN();
  const std::vector<double> v = {0.0, 1.0, -2.0, 3.0, 100.0, -7.0, 5.0};
  for (DType dtype : {DType::f32, DType::i32, DType::f64, DType::i64}) {
    const DynTensor host = cast(from_data(TensorData::from(v, Shape{7})), dtype);
    const DynTensor dev = to_device(host, vk());
    EXPECT_EQ(dev.device(), vk());
    EXPECT_EQ(to_device(dev, Device::cpu()).to_vector<double>(), v) << dtype_name(dtype);
  }
  // Larger than one staging range and not a multiple of the alignment.
  const DynTensor big = input(Shape{3, 100003}, 1);
  EXPECT_EQ(max_abs_diff(to_device(to_device(big, vk()), Device::cpu()), big), 0.0);
  expect_no_validation_errors();
}

TEST(Vulkan, FillAndCopy) {
  EMBER_REQUIRE_VULKAN();
  for (DType dtype : {DType::f32, DType::i32, DType::f64, DType::i64}) {
    const DynTensor t = full(Shape{1000, 3}, -3, dtype, vk());
    const std::vector<double> got = to_device(clone(t), Device::cpu()).to_vector<double>();
    ASSERT_EQ(got.size(), 3000u);
    for (double g : got) ASSERT_EQ(g, -3.0) << dtype_name(dtype);
  }
  // A strided view copied into a contiguous tensor: a transpose and a slice with a step.
  const DynTensor x = input(Shape{37, 53}, 2);
  const DynTensor xv = to_device(x, vk());
  EXPECT_EQ(max_abs_diff(to_device(contiguous(transpose(xv, 0, 1)), Device::cpu()),
                         contiguous(transpose(x, 0, 1))),
            0.0);
  EXPECT_EQ(max_abs_diff(to_device(contiguous(slice(xv, 1, 3, 50, 4)), Device::cpu()),
                         contiguous(slice(x, 1, 3, 50, 4))),
            0.0);
  expect_no_validation_errors();
}

TEST(Vulkan, Float32ArithmeticMatchesTheCpu) {
  EMBER_REQUIRE_VULKAN();
  const DynTensor a = input(Shape{4, 1, 33}, 3), b = input(Shape{5, 33}, 4);
  const DynTensor av = to_device(a, vk()), bv = to_device(b, vk());
  const std::vector<std::pair<const char*, DynTensor (*)(const DynTensor&, const DynTensor&)>> ops =
      {{"add", add}, {"sub", sub},         {"mul", mul},
       {"div", div}, {"maximum", maximum}, {"minimum", minimum}};
  // Division too, with or without float64: math32.glsl's div_of rounds it correctly on any
  // driver (Vulkan allows 2.5 ulps, which NVIDIA's uses).
  for (const auto& [name, f] : ops) {
    const DynTensor want = f(a, b);  // [4, 5, 33]: both operands broadcast
    const DynTensor got = f(av, bv);
    EXPECT_EQ(got.device(), vk());
    EXPECT_EQ(max_abs_diff(to_device(got, Device::cpu()), want), 0.0) << name;
  }
  // Transposed and flipped operands, a scalar operand, and a chain that reuses freed ranges.
  const DynTensor t = input(Shape{33, 5}, 5);
  const DynTensor tv = to_device(t, vk());
  EXPECT_EQ(max_abs_diff(to_device(mul(transpose(tv, 0, 1), flip(bv, {1})), Device::cpu()),
                         mul(transpose(t, 0, 1), flip(b, {1}))),
            0.0);
  DynTensor acc = av, ref = a;
  for (int i = 0; i < 50; ++i) {
    acc = add(mul(acc, 0.5f), av);
    ref = add(mul(ref, 0.5f), a);
  }
  EXPECT_EQ(max_abs_diff(to_device(acc, Device::cpu()), ref), 0.0);
  expect_no_validation_errors();
}

// int32 arithmetic (wrapping past 2^31, as the Cpu's), maximum and minimum, comparisons and
// logical ops on broadcast operands against the Cpu; int32 division runs in float32 (the front
// end's true division) through the casts.
TEST(Vulkan, Int32ArithmeticAndComparisonsMatchTheCpu) {
  EMBER_REQUIRE_VULKAN();
  const DynTensor a = cast(sub(mul(input(Shape{4, 1, 9}, 90), 2e9), 2e9), DType::i32);
  const DynTensor b = cast(sub(mul(input(Shape{6, 9}, 91), 60.0), 60.0), DType::i32);
  const DynTensor av = to_device(a, vk()), bv = to_device(b, vk());
  using Binary = DynTensor (*)(const DynTensor&, const DynTensor&);
  const std::vector<std::pair<const char*, Binary>> ops = {{"add", add},
                                                           {"sub", sub},
                                                           {"mul", mul},
                                                           {"maximum", maximum},
                                                           {"minimum", minimum},
                                                           {"div", div},
                                                           {"eq", eq},
                                                           {"ne", ne},
                                                           {"lt", lt},
                                                           {"ge", ge},
                                                           {"logical_and", logical_and},
                                                           {"logical_xor", logical_xor}};
  for (const auto& [name, f] : ops) {
    const DynTensor want = f(a, b), got = to_device(f(av, bv), Device::cpu());
    EXPECT_EQ(got.dtype(), want.dtype()) << name;
    EXPECT_EQ(cast(got, DType::f64).to_vector<double>(), cast(want, DType::f64).to_vector<double>())
        << name;
  }
  expect_no_validation_errors();
}

// Every float32 unary kernel against the Cpu on a transposed operand, on inputs in each op's
// domain: within a few float roundings (the driver's exp, log and trigonometric functions, and
// erf's polynomial, differ from the Cpu's in the last bits).
TEST(Vulkan, Float32UnaryOpsMatchTheCpu) {
  EMBER_REQUIRE_VULKAN();
  using Fn = std::function<DynTensor(const DynTensor&)>;
  const DynTensor pos = transpose(input(Shape{19, 7}, 7), 0, 1);            // in [0.5, 1.5)
  const DynTensor sgn = transpose(sub(input(Shape{19, 7}, 8), 1.0), 0, 1);  // in [-0.5, 0.5)
  const DynTensor wide = transpose(mul(sub(input(Shape{19, 7}, 9), 1.0), 8.0), 0, 1);
  const std::vector<std::tuple<const char*, Fn, const DynTensor*>> ops = {
      {"neg", [](const DynTensor& x) { return neg(x); }, &wide},
      {"abs", [](const DynTensor& x) { return abs(x); }, &wide},
      {"sign", [](const DynTensor& x) { return sign(x); }, &wide},
      {"square", [](const DynTensor& x) { return square(x); }, &wide},
      {"relu", [](const DynTensor& x) { return relu(x); }, &wide},
      {"exp", [](const DynTensor& x) { return exp(x); }, &wide},
      {"exp2", [](const DynTensor& x) { return exp2(x); }, &wide},
      {"log", [](const DynTensor& x) { return log(x); }, &pos},
      {"log2", [](const DynTensor& x) { return log2(x); }, &pos},
      {"log10", [](const DynTensor& x) { return log10(x); }, &pos},
      {"log1p", [](const DynTensor& x) { return log1p(x); }, &sgn},
      {"expm1", [](const DynTensor& x) { return expm1(x); }, &sgn},
      {"sqrt", [](const DynTensor& x) { return sqrt(x); }, &pos},
      {"rsqrt", [](const DynTensor& x) { return rsqrt(x); }, &pos},
      {"reciprocal", [](const DynTensor& x) { return reciprocal(x); }, &pos},
      {"sin", [](const DynTensor& x) { return sin(x); }, &wide},
      {"cos", [](const DynTensor& x) { return cos(x); }, &wide},
      {"tan", [](const DynTensor& x) { return tan(x); }, &sgn},
      {"asin", [](const DynTensor& x) { return asin(x); }, &sgn},
      {"acos", [](const DynTensor& x) { return acos(x); }, &sgn},
      {"atan", [](const DynTensor& x) { return atan(x); }, &wide},
      {"sinh", [](const DynTensor& x) { return sinh(x); }, &wide},
      {"cosh", [](const DynTensor& x) { return cosh(x); }, &wide},
      {"tanh", [](const DynTensor& x) { return tanh(x); }, &wide},
      {"erf", [](const DynTensor& x) { return erf(x); }, &wide},
      {"sigmoid", [](const DynTensor& x) { return sigmoid(x); }, &wide},
      {"gelu", [](const DynTensor& x) { return gelu(x, false); }, &wide},
      {"gelu tanh", [](const DynTensor& x) { return gelu(x, true); }, &wide},
      {"silu", [](const DynTensor& x) { return silu(x); }, &wide},
      {"softplus", [](const DynTensor& x) { return softplus(x, 2.0, 5.0); }, &wide},
      {"floor", [](const DynTensor& x) { return floor(x); }, &wide},
      {"ceil", [](const DynTensor& x) { return ceil(x); }, &wide},
      {"round", [](const DynTensor& x) { return round(mul(x, 2.0)); }, &wide},
      {"trunc", [](const DynTensor& x) { return trunc(x); }, &wide},
      {"clamp", [](const DynTensor& x) { return clamp(x, -1.5, 2.0); }, &wide},
      {"clamp_min", [](const DynTensor& x) { return clamp_min(x, 0.25); }, &wide},
      {"pow", [](const DynTensor& x) { return pow(x, 2.5); }, &pos},
      {"pow 2", [](const DynTensor& x) { return pow(x, 2.0); }, &wide},
      {"pow 3", [](const DynTensor& x) { return pow(x, 3.0); }, &wide},
      {"pow -1", [](const DynTensor& x) { return pow(x, -1.0); }, &wide},
      {"erfinv", [](const DynTensor& x) { return erfinv(x); }, &sgn},
      {"lgamma", [](const DynTensor& x) { return lgamma(x); }, &wide},
      {"lgamma near its roots", [](const DynTensor& x) { return lgamma(add(x, 0.5)); }, &pos},
      {"digamma", [](const DynTensor& x) { return digamma(x); }, &wide},
      {"digamma near a pole", [](const DynTensor& x) { return digamma(sub(mul(x, 0.01), 3.0)); },
       &pos},
      {"polygamma 1", [](const DynTensor& x) { return polygamma(1, x); }, &pos},
      {"polygamma 3", [](const DynTensor& x) { return polygamma(3, mul(x, 3.0)); }, &pos},
  };
  for (const auto& [name, f, x] : ops) {
    const DynTensor want = f(*x);
    const DynTensor got = f(to_device(*x, vk()));
    EXPECT_EQ(got.device(), vk());
    const double scale = std::max(1.0, amax(abs(cast(want, DType::f64)), {}).item<double>());
    EXPECT_LE(max_abs_diff(to_device(got, Device::cpu()), want), 4e-6 * scale) << name;
  }
  expect_no_validation_errors();
}

// Where GLSL leaves results undefined (log and sqrt of x <= 0, a negative base for pow) or
// differs from the Cpu (sign of NaN), the kernels give the Cpu's values: NaN where it has NaN.
TEST(Vulkan, Float32UnaryEdgeValuesAreTheCpus) {
  EMBER_REQUIRE_VULKAN();
  const std::vector<double> v = {-2.0, -0.0, 0.0, 1.5, INFINITY, -INFINITY, NAN};
  const DynTensor x = cast(from_data(TensorData::from(v, Shape{7})), DType::f32);
  using Fn = std::function<DynTensor(const DynTensor&)>;
  const std::vector<std::pair<const char*, Fn>> ops = {
      {"sign", [](const DynTensor& t) { return sign(t); }},
      {"log", [](const DynTensor& t) { return log(t); }},
      {"log2", [](const DynTensor& t) { return log2(t); }},
      {"log1p", [](const DynTensor& t) { return log1p(sub(t, 1.0)); }},
      {"sqrt", [](const DynTensor& t) { return sqrt(t); }},
      {"rsqrt", [](const DynTensor& t) { return rsqrt(t); }},
      {"relu", [](const DynTensor& t) { return relu(t); }},
      {"clamp", [](const DynTensor& t) { return clamp(t, -1.0, 1.0); }},
      {"pow 0.5", [](const DynTensor& t) { return pow(t, 0.5); }},
      {"pow 1.5", [](const DynTensor& t) { return pow(t, 1.5); }},
      {"pow 3", [](const DynTensor& t) { return pow(t, 3.0); }},
      {"pow -2", [](const DynTensor& t) { return pow(t, -2.0); }},
      {"pow 0", [](const DynTensor& t) { return pow(t, 0.0); }},
      {"erfinv", [](const DynTensor& t) { return erfinv(t); }},
      {"lgamma", [](const DynTensor& t) { return lgamma(t); }},
      {"digamma", [](const DynTensor& t) { return digamma(t); }},
      {"polygamma 2", [](const DynTensor& t) { return polygamma(2, t); }},
  };
  for (const auto& [name, f] : ops) {
    const std::vector<double> want = f(x).to_vector<double>();
    const std::vector<double> got =
        to_device(f(to_device(x, vk())), Device::cpu()).to_vector<double>();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      if (std::isnan(want[i])) {
        EXPECT_TRUE(std::isnan(got[i])) << name << " of " << v[i] << ": " << got[i];
      } else if (std::isinf(want[i])) {
        EXPECT_EQ(got[i], want[i]) << name << " of " << v[i];
      } else {
        EXPECT_NEAR(got[i], want[i], 1e-6 * std::max(1.0, std::abs(want[i])))
            << name << " of " << v[i];
      }
    }
  }
  expect_no_validation_errors();
}

// Float32 reductions against the Cpu: over one dim, several, all, a transposed operand, a long
// full sum (one workgroup folding 300,000 values), and an empty dim; NaN wins max and min.
TEST(Vulkan, Float32ReductionsMatchTheCpu) {
  EMBER_REQUIRE_VULKAN();
  const DynTensor x = sub(input(Shape{6, 35, 9}, 10), 1.0);
  const DynTensor xt = transpose(x, 0, 2);
  const DynTensor xv = to_device(x, vk()), xtv = to_device(xt, vk());
  using Fn = std::function<DynTensor(const DynTensor&)>;
  const std::vector<std::pair<const char*, Fn>> ops = {
      {"sum(1)", [](const DynTensor& t) { return sum(t, {1}); }},
      {"sum(0,2)",
       [](const DynTensor& t) {
         return sum(t, {0, 2}, true);
       }},
      {"sum()", [](const DynTensor& t) { return sum(t); }},
      {"mean(2)", [](const DynTensor& t) { return mean(t, {2}); }},
      {"prod(0)", [](const DynTensor& t) { return prod(add(t, 1.0), {0}); }},
      {"amax(1)", [](const DynTensor& t) { return amax(t, {1}); }},
      {"amin(0,1)",
       [](const DynTensor& t) {
         return amin(t, {0, 1});
       }},
  };
  for (const auto& [name, f] : ops) {
    for (bool transposed : {false, true}) {
      const DynTensor want = f(transposed ? xt : x);
      const DynTensor got = f(transposed ? xtv : xv);
      EXPECT_EQ(got.device(), vk());
      const double scale = std::max(1.0, amax(abs(cast(want, DType::f64)), {}).item<double>());
      EXPECT_LE(max_abs_diff(to_device(got, Device::cpu()), want), 2e-6 * scale)
          << name << (transposed ? " transposed" : "");
    }
  }
  const DynTensor big = input(Shape{300000}, 11);
  EXPECT_NEAR(to_device(sum(to_device(big, vk())), Device::cpu()).item<double>(),
              sum(big).item<double>(), 1e-6 * 300000);
  EXPECT_EQ(
      to_device(sum(zeros(Shape{3, 0}, DType::f32, vk()), {1}), Device::cpu()).to_vector<double>(),
      std::vector<double>(3, 0.0));
  std::vector<double> v = {1.0, NAN, 3.0, -2.0};
  const DynTensor nan_row =
      to_device(cast(from_data(TensorData::from(v, Shape{2, 2})), DType::f32), vk());
  const std::vector<double> mx = to_device(amax(nan_row, {1}), Device::cpu()).to_vector<double>();
  EXPECT_TRUE(std::isnan(mx[0]));
  EXPECT_EQ(mx[1], 3.0);
  expect_no_validation_errors();
}

// The six float32 comparisons into Bool tensors (four results packed in each 32-bit word) on
// broadcast, transposed and NaN-holding operands, sizes that end inside a word, and where()
// reading those Bool tensors (strided and broadcast too) over float32 and int32 against the Cpu.
TEST(Vulkan, Float32ComparisonsAndWhereMatchTheCpu) {
  EMBER_REQUIRE_VULKAN();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Rounded to quarters, so that equal pairs occur; a NaN in each operand.
  DynTensor a = div(round(mul(input(Shape{3, 1, 7}, 21), 4.0)), 4.0);
  DynTensor b = div(round(mul(input(Shape{5, 7}, 22), 4.0)), 4.0);
  a = where(eq(reshape(arange(0, 21, 1, DType::i64), Shape{3, 1, 7}), 4), nan, a);
  b = where(eq(reshape(arange(0, 35, 1, DType::i64), Shape{5, 7}), 9), nan, b);
  const DynTensor av = to_device(a, vk()), bv = to_device(b, vk());
  const std::vector<std::pair<const char*, DynTensor (*)(const DynTensor&, const DynTensor&)>> ops =
      {{"eq", eq},
       {"ne", ne},
       {"lt", lt},
       {"le", le},
       {"gt", gt},
       {"ge", ge},
       {"logical_and", logical_and},
       {"logical_or", logical_or},
       {"logical_xor", logical_xor}};
  for (const auto& [name, f] : ops) {
    const DynTensor want = f(a, b);  // [3, 5, 7]: 105 results, the last word holding one
    const DynTensor got = to_device(f(av, bv), Device::cpu());
    EXPECT_EQ(got.dtype(), DType::boolean) << name;
    EXPECT_EQ(got.to_vector<bool>(), want.to_vector<bool>()) << name;
    // where over the Bool result (a transposed Bool operand comes below).
    const DynTensor w = to_device(where(f(av, bv), av, bv), Device::cpu());
    const DynTensor w_want = where(want, a, b);
    EXPECT_EQ(isnan(w).to_vector<bool>(), isnan(w_want).to_vector<bool>()) << name;
    EXPECT_EQ(max_abs_diff(where(isnan(w), 0.0, w), where(isnan(w_want), 0.0, w_want)), 0.0)
        << name;
  }
  // The one-operand tests, with infinities and zeros among the values.
  const double inf = std::numeric_limits<double>::infinity();
  const DynTensor z = where(gt(b, 1.2), inf, where(lt(b, 0.7), 0.0, b));
  const DynTensor zv = to_device(z, vk());
  EXPECT_EQ(to_device(isnan(zv), Device::cpu()).to_vector<bool>(), isnan(z).to_vector<bool>());
  EXPECT_EQ(to_device(isinf(zv), Device::cpu()).to_vector<bool>(), isinf(z).to_vector<bool>());
  EXPECT_EQ(to_device(logical_not(zv), Device::cpu()).to_vector<bool>(),
            logical_not(z).to_vector<bool>());
  using Logical = DynTensor (*)(const DynTensor&, const DynTensor&);
  for (Logical f : {Logical{logical_and}, Logical{logical_or}, Logical{logical_xor}}) {
    EXPECT_EQ(to_device(f(zv, flip(zv, {1})), Device::cpu()).to_vector<bool>(),
              f(z, flip(z, {1})).to_vector<bool>());
  }
  for (int64_t n : {1, 2, 3, 5, 8, 13}) {  // outputs that end anywhere in a word
    const DynTensor x = input(Shape{n}, 30 + static_cast<uint64_t>(n));
    const DynTensor got = to_device(gt(to_device(x, vk()), 0.9), Device::cpu());
    EXPECT_EQ(got.to_vector<bool>(), gt(x, 0.9).to_vector<bool>()) << n;
  }
  // int32 operands: where moves 4-byte words whatever they hold.
  const DynTensor ia = cast(mul(a, 10.0), DType::i32), ib = cast(mul(b, -10.0), DType::i32);
  EXPECT_EQ(to_device(where(lt(av, bv), to_device(ia, vk()), to_device(ib, vk())), Device::cpu())
                .to_vector<int32_t>(),
            where(lt(a, b), ia, ib).to_vector<int32_t>());
  const DynTensor cond = lt(av, bv);          // [3, 5, 7] Bool on the device
  const DynTensor t = transpose(cond, 0, 2);  // [7, 5, 3]: a strided Bool operand
  const DynTensor x = input(Shape{7, 5, 3}, 40), y = input(Shape{3}, 41);
  EXPECT_EQ(max_abs_diff(to_device(where(t, to_device(x, vk()), to_device(y, vk())), Device::cpu()),
                         where(transpose(lt(a, b), 0, 2), x, y)),
            0.0);
  expect_no_validation_errors();
}

// Float32 matmul against the Cpu: sizes off the 16x16 tiles, a transposed operand, a batch
// broadcast (stride 0), a vector, an empty inner dim (zeros), and more tiles than workgroups.
TEST(Vulkan, Float32MatmulMatchesTheCpu) {
  EMBER_REQUIRE_VULKAN();
  auto check = [](const DynTensor& a, const DynTensor& b, const char* what) {
    const DynTensor want = matmul(a, b);
    const DynTensor got = to_device(matmul(to_device(a, vk()), to_device(b, vk())), Device::cpu());
    const double scale = std::max(1.0, amax(abs(want), {}).item<double>());
    EXPECT_LE(max_abs_diff(got, want), 2e-6 * scale * static_cast<double>(a.size(-1) + 1)) << what;
  };
  check(input(Shape{37, 19}, 50), input(Shape{19, 45}, 51), "37x19 @ 19x45");
  check(transpose(input(Shape{64, 33}, 52), 0, 1), input(Shape{64, 17}, 53), "transposed a");
  check(input(Shape{3, 20, 30}, 54), transpose(input(Shape{25, 30}, 55), 0, 1), "batch broadcast");
  check(input(Shape{2, 5, 7}, 56), input(Shape{2, 7, 9}, 57), "batched");
  check(input(Shape{40}, 58), input(Shape{40, 3}, 59), "vector");
  check(input(Shape{5, 0}, 60), input(Shape{0, 6}, 61), "empty inner dim");
  check(input(Shape{1100, 20}, 62), input(Shape{20, 1000}, 63), "69 x 63 tiles");
  // More tiles than one dispatch has workgroups (65,535): the loop over tiles.
  check(input(Shape{66000, 1, 2}, 64), input(Shape{66000, 2, 1}, 65), "66,000 tiles");
  check(input(Shape{70, 45}, 66), transpose(input(Shape{130, 45}, 67), 0, 1), "transposed b");
  // Views made on the device (to_device packs a Cpu view): the tiles' loads along k or m.
  const DynTensor at = input(Shape{64, 150}, 68), bt = input(Shape{131, 64}, 69);
  const DynTensor got =
      to_device(matmul(transpose(to_device(at, vk()), 0, 1), transpose(to_device(bt, vk()), 0, 1)),
                Device::cpu());
  const DynTensor want = matmul(transpose(at, 0, 1), transpose(bt, 0, 1));
  EXPECT_LE(max_abs_diff(got, want), 2e-6 * 65 * std::max(1.0, amax(abs(want), {}).item<double>()))
      << "both transposed on the device";
  expect_no_validation_errors();
}

// Float16 matmul (on tensor cores where the device has cooperative matrices, matmul_coop.comp,
// or their emulation under EMBER_VULKAN_COOPERATIVE=emulate; else matmul.comp's ANY variant)
// against float64 on the same inputs: sizes that end inside a 128x128 tile and a slice, views
// made on the device (transposed, rows not 8 apart: read element by element), a batch
// broadcast, aligned rows (read 128 bits at a time), and a k of 1,000 whose float32 sums must
// not drift past float16's rounding.
TEST(Vulkan, Float16MatmulMatchesTheCpu) {
  EMBER_REQUIRE_VULKAN();
  try {  // a device with neither cooperative matrices nor float64 has no float16 matmul
    const DynTensor one = to_device(cast(input(Shape{1, 1}, 79), DType::f16), vk());
    (void)matmul(one, one);
  } catch (const Error& e) {
    GTEST_SKIP() << e.what();
  }
  const char* coop = std::getenv("EMBER_VULKAN_COOPERATIVE");
  std::printf("[ember] %s: float16 matmul %s\n", vulkan::device_name(0).c_str(),
              vulkan::cooperative_matrix(0)            ? "on cooperative matrices"
              : vulkan::cooperative_matrix_emulated(0) ? "on emulated cooperative matrices"
                                                       : "in double");
  // a and b are views on the device; the reference takes their values.
  auto check = [](const DynTensor& a, const DynTensor& b, const char* what) {
    const auto f64 = [](const DynTensor& t) {
      return cast(to_device(t, Device::cpu()), DType::f64);
    };
    const DynTensor want = cast(matmul(f64(a), f64(b)), DType::f32);
    const DynTensor got = cast(to_device(matmul(a, b), Device::cpu()), DType::f32);
    // A float16 rounding of the result (2^-11 relative) and float32 sums.
    const DynTensor err = abs(got - want) / (abs(want) + 1e-2);
    EXPECT_LE(amax(err, {}).item<double>(), 2e-3) << what;
  };
  auto vk16 = [](const Shape& s, uint64_t seed) {
    return to_device(cast(input(s, seed), DType::f16), vk());
  };
  check(vk16({70, 45}, 80), vk16({45, 130}, 81), "70x45 @ 45x130");
  check(transpose(vk16({33, 70}, 82), 0, 1), vk16({33, 17}, 83), "transposed a");
  check(vk16({3, 20, 30}, 84), transpose(vk16({25, 30}, 85), 0, 1), "batch broadcast");
  check(vk16({64, 1000}, 86), vk16({1000, 64}, 87), "k = 1000");
  // Rows 8-aligned (read 128 bits at a time), ending inside a tile and a slice.
  check(vk16({200, 136}, 88), vk16({136, 264}, 89), "200x136 @ 136x264");
  check(vk16({3, 40, 48}, 90), vk16({3, 48, 24}, 91), "batched, aligned");
  // k and n multiples of 8 but the rows not unit-stride or not 8 apart: element by element.
  check(transpose(vk16({136, 200}, 92), 0, 1), vk16({136, 64}, 93), "transposed a, k = 136");
  check(slice(vk16({64, 140}, 94), 1, 0, 136), vk16({136, 72}, 95), "a's rows 140 apart");
  check(vk16({40, 64}, 96), slice(vk16({64, 130}, 97), 1, 0, 128), "b's rows 130 apart");
  if (coop != nullptr && std::string(coop) == "emulate") {  // ctest's coop_emulated. run
    EXPECT_TRUE(vulkan::cooperative_matrix(0) || vulkan::cooperative_matrix_emulated(0));
  }
  if (vulkan::cooperative_matrix(0) || vulkan::cooperative_matrix_emulated(0)) {
    // Other tilings (EMBER_VULKAN_COOP_TILES: 4 subgroups of 64x64; 64-wide tiles; a slice of
    // A, 128 vectors, read by half the 256 invocations), and ones that cannot run: more shared
    // memory than any device gives, a zero-row tile.
    for (const char* tiles : {"128,128,16,64,64", "128,64,32,64,32", "64,128,16,32,32"}) {
      setenv("EMBER_VULKAN_COOP_TILES", tiles, 1);
      check(vk16({200, 136}, 98), vk16({136, 264}, 99), tiles);
    }
    for (const std::string bad : {"256,256,64,64,64", "0,128,32,16,16"}) {
      setenv("EMBER_VULKAN_COOP_TILES", bad.c_str(), 1);
      try {
        (void)matmul(vk16({40, 64}, 98), vk16({64, 40}, 99));
        ADD_FAILURE() << "no error for " << bad;
      } catch (const Error& e) {
        const std::string what = e.what();  // the limits it breaks, or the malformed value
        EXPECT_TRUE(what.find("cooperative tiles") != std::string::npos ||
                    what.find("EMBER_VULKAN_COOP_TILES=\"" + bad + "\"") != std::string::npos)
            << what;
      }
    }
    unsetenv("EMBER_VULKAN_COOP_TILES");
    // One slice read ahead (a convolution's default) and a malformed choice.
    setenv("EMBER_VULKAN_COOP_AHEAD", "1", 1);
    check(vk16({200, 136}, 98), vk16({136, 264}, 99), "one slice ahead");
    check(vk16({64, 40}, 98), vk16({40, 24}, 99), "one slice ahead, k = 40");
    setenv("EMBER_VULKAN_COOP_AHEAD", "3", 1);
    try {
      (void)matmul(vk16({40, 64}, 98), vk16({64, 40}, 99));
      ADD_FAILURE() << "no error for EMBER_VULKAN_COOP_AHEAD=3";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("EMBER_VULKAN_COOP_AHEAD=\"3\""), std::string::npos)
          << e.what();
    }
    unsetenv("EMBER_VULKAN_COOP_AHEAD");
  }
  expect_no_validation_errors();
}

// matmul_tiled.comp under other tile sizes than this device's (a discrete GPU's large matmuls'
// 128x128 of 8x8, 8 deep, included), on sizes that end inside a tile and a k that ends inside a
// slice, and the k loop unrolled in other steps; a malformed EMBER_VULKAN_MATMUL_TILES is an
// error naming it.
TEST(Vulkan, Float32MatmulUnderEveryTileShapeMatchesTheCpu) {
  EMBER_REQUIRE_VULKAN();
  const DynTensor a = input(Shape{2, 150, 37}, 70), b = input(Shape{37, 131}, 71);
  const DynTensor want = matmul(a, b);
  // k and n multiples of 4: rows that are unit-stride and start 4-aligned are read 4 at a time
  // (128-bit loads) where each invocation's share of a slice is whole vectors (the first three
  // tile shapes below); any other operand value by value, beside it in the same product.
  const DynTensor a4 = input(Shape{2, 150, 40}, 74), b4 = input(Shape{40, 132}, 75);
  const DynTensor at4 = input(Shape{2, 40, 150}, 76), bt4 = input(Shape{132, 40}, 77);
  const DynTensor wide = input(Shape{2, 150, 44}, 78);  // rows of 44, read from column 4 or 1
  struct Layout {
    const char* name;
    DynTensor a, b;  // on vk()
    DynTensor want;
  };
  const std::vector<Layout> layouts = {
      {"both read 4 at a time", to_device(a4, vk()), to_device(b4, vk()), matmul(a4, b4)},
      {"a only (b transposed)", to_device(a4, vk()), transpose(to_device(bt4, vk()), 0, 1),
       matmul(a4, transpose(bt4, 0, 1))},
      {"b only (a transposed)", transpose(to_device(at4, vk()), 1, 2), to_device(b4, vk()),
       matmul(transpose(at4, 1, 2), b4)},
      {"a's rows padded, from column 4", slice(to_device(wide, vk()), 2, 4, 44, 1),
       to_device(b4, vk()), matmul(slice(wide, 2, 4, 44, 1), b4)},
      {"a from column 1 (unaligned)", slice(to_device(wide, vk()), 2, 1, 41, 1),
       to_device(b4, vk()), matmul(slice(wide, 2, 1, 41, 1), b4)},
  };
  auto expect_layouts = [&](const std::string& how) {
    for (const Layout& l : layouts) {
      EXPECT_LE(max_abs_diff(to_device(matmul(l.a, l.b), Device::cpu()), l.want), 1e-4)
          << how << ", " << l.name;
    }
  };
  setenv("EMBER_VULKAN_GEMM", "tiled", 1);  // gemm_tiled.glsl's tiles, on a CPU device too
  for (const char* tiles :
       {"128,128,8,8,8", "128,128,16,8,8", "64,64,16,4,4", "32,64,8,2,4", "16,16,4,1,1"}) {
    setenv("EMBER_VULKAN_MATMUL_TILES", tiles, 1);
    const DynTensor got = to_device(matmul(to_device(a, vk()), to_device(b, vk())), Device::cpu());
    EXPECT_LE(max_abs_diff(got, want), 1e-4) << tiles;
    expect_layouts(tiles);
  }
  // TM not dividing BM; BM not a multiple of 4 (the shared slices are vec4s).
  for (const std::string bad : {"64,64,16,3,4", "18,16,4,1,1"}) {
    setenv("EMBER_VULKAN_MATMUL_TILES", bad.c_str(), 1);
    expect_error([&] { (void)matmul(to_device(a, vk()), to_device(b, vk())); },
                 "EMBER_VULKAN_MATMUL_TILES=\"" + bad + "\"");
  }
  unsetenv("EMBER_VULKAN_MATMUL_TILES");
  // Tiles in bands of other heights (EMBER_VULKAN_TILE_BAND; 1 is row by row, 100 taller than
  // the output): every tile still computed once. 0 and past 65536 are errors naming it.
  setenv("EMBER_VULKAN_MATMUL_TILES", "16,16,4,1,1", 1);
  for (const char* band : {"1", "3", "100"}) {
    setenv("EMBER_VULKAN_TILE_BAND", band, 1);
    const DynTensor got = to_device(matmul(to_device(a, vk()), to_device(b, vk())), Device::cpu());
    EXPECT_LE(max_abs_diff(got, want), 1e-4) << "band " << band;
  }
  for (const std::string bad : {"0", "100000"}) {
    setenv("EMBER_VULKAN_TILE_BAND", bad.c_str(), 1);
    expect_error([&] { (void)matmul(to_device(a, vk()), to_device(b, vk())); },
                 "EMBER_VULKAN_TILE_BAND=\"" + bad + "\"");
  }
  unsetenv("EMBER_VULKAN_TILE_BAND");
  // The k loop unrolled 1, 3 (not dividing the slice), 16 and more than the slice steps at a
  // time (EMBER_VULKAN_K_UNROLL; a GPU takes 2); 0 and text are errors naming it.
  setenv("EMBER_VULKAN_MATMUL_TILES", "64,64,16,4,4", 1);
  for (const char* unroll : {"1", "3", "16", "40"}) {
    setenv("EMBER_VULKAN_K_UNROLL", unroll, 1);
    const DynTensor got = to_device(matmul(to_device(a, vk()), to_device(b, vk())), Device::cpu());
    EXPECT_LE(max_abs_diff(got, want), 1e-4) << "k unroll " << unroll;
  }
  for (const std::string bad : {"0", "2x", "two"}) {
    setenv("EMBER_VULKAN_K_UNROLL", bad.c_str(), 1);
    expect_error([&] { (void)matmul(to_device(a, vk()), to_device(b, vk())); },
                 "EMBER_VULKAN_K_UNROLL=\"" + bad + "\"");
  }
  unsetenv("EMBER_VULKAN_K_UNROLL");
  // Two slices staged at once (EMBER_VULKAN_STAGES=2, one barrier a slice), k in several slices
  // and ending inside one; 3 is an error naming it.
  setenv("EMBER_VULKAN_STAGES", "2", 1);
  for (const char* tiles : {"128,128,8,8,8", "64,64,16,4,4", "32,64,8,2,4"}) {
    setenv("EMBER_VULKAN_MATMUL_TILES", tiles, 1);
    const DynTensor got = to_device(matmul(to_device(a, vk()), to_device(b, vk())), Device::cpu());
    EXPECT_LE(max_abs_diff(got, want), 1e-4) << tiles << " in two stages";
    expect_layouts(std::string(tiles) + " in two stages");
  }
  // More tiles than a dispatch's 65,535 workgroups (a batch of 66,000 small products), so that
  // some workgroups go on to a second tile, the staged slices reused, in either mode.
  unsetenv("EMBER_VULKAN_MATMUL_TILES");
  const DynTensor many_a = input(Shape{66000, 4, 9}, 72), many_b = input(Shape{66000, 9, 4}, 73);
  const DynTensor many_want = matmul(many_a, many_b);
  for (const char* stages : {"1", "2"}) {
    setenv("EMBER_VULKAN_STAGES", stages, 1);
    const DynTensor got =
        to_device(matmul(to_device(many_a, vk()), to_device(many_b, vk())), Device::cpu());
    EXPECT_LE(max_abs_diff(got, many_want), 1e-4) << "66,000 tiles in " << stages << " stages";
  }
  // Tiles whose two stages no device's shared memory holds (260 KiB) are an error that says so.
  setenv("EMBER_VULKAN_STAGES", "2", 1);
  setenv("EMBER_VULKAN_MATMUL_TILES", "256,256,64,16,16", 1);
  expect_error([&] { (void)matmul(to_device(a, vk()), to_device(b, vk())); },
               "tiles 256x256x64 of 16x16 in 2 stages need 256 invocations and 266240 bytes");
  unsetenv("EMBER_VULKAN_MATMUL_TILES");
  setenv("EMBER_VULKAN_STAGES", "3", 1);
  expect_error([&] { (void)matmul(to_device(a, vk()), to_device(b, vk())); },
               "EMBER_VULKAN_STAGES=\"3\"");
  unsetenv("EMBER_VULKAN_STAGES");
  unsetenv("EMBER_VULKAN_MATMUL_TILES");
  unsetenv("EMBER_VULKAN_GEMM");
  expect_no_validation_errors();
}

// gemm_lanes.glsl (a CPU device's float32 matmul and convolution, EMBER_VULKAN_GEMM=lanes
// elsewhere where subgroups allow): tiles of other heights and widths, a long k (8 steps a loop
// iteration), and the overrides' errors. Skipped on devices without its subgroups.
TEST(Vulkan, Float32MatmulInLanesMatchesTheCpu) {
  EMBER_REQUIRE_VULKAN();
  const DynTensor a = input(Shape{2, 150, 37}, 72), b = input(Shape{37, 131}, 73);
  const DynTensor want = matmul(a, b);
  setenv("EMBER_VULKAN_GEMM", "lanes", 1);
  try {
    (void)matmul(to_device(a, vk()), to_device(b, vk()));
  } catch (const Error& e) {
    unsetenv("EMBER_VULKAN_GEMM");
    ASSERT_NE(std::string(e.what()).find("needs a CPU device with subgroups"), std::string::npos)
        << e.what();
    GTEST_SKIP() << e.what();
  }
  for (const char* tiles : {"32,8", "16,3", "64,1,4"}) {
    setenv("EMBER_VULKAN_LANE_TILES", tiles, 1);
    const DynTensor got = to_device(matmul(to_device(a, vk()), to_device(b, vk())), Device::cpu());
    EXPECT_LE(max_abs_diff(got, want), 1e-4) << tiles;
  }
  unsetenv("EMBER_VULKAN_LANE_TILES");
  // A k of 20,000 (8 steps a loop iteration): summed in k order as gemm_tiled.glsl sums, so the
  // two agree to rounding, and float32's error of 20,000 terms in order from float64's.
  const DynTensor la = input(Shape{3, 20000}, 74), lb = input(Shape{20000, 5}, 75);
  const DynTensor long_got =
      to_device(matmul(to_device(la, vk()), to_device(lb, vk())), Device::cpu());
  setenv("EMBER_VULKAN_GEMM", "tiled", 1);
  const DynTensor tiled_got =
      to_device(matmul(to_device(la, vk()), to_device(lb, vk())), Device::cpu());
  setenv("EMBER_VULKAN_GEMM", "lanes", 1);
  EXPECT_LE(max_abs_diff(long_got, tiled_got), 1e-3);
  EXPECT_LE(
      max_abs_diff(cast(long_got, DType::f64), matmul(cast(la, DType::f64), cast(lb, DType::f64))),
      0.5);
  // TM not a multiple of the subgroup; no columns; not numbers.
  for (const std::string bad : {"13,4", "32,0", "x"}) {
    setenv("EMBER_VULKAN_LANE_TILES", bad.c_str(), 1);
    expect_error([&] { (void)matmul(to_device(a, vk()), to_device(b, vk())); },
                 "EMBER_VULKAN_LANE_TILES=\"" + bad + "\"");
  }
  unsetenv("EMBER_VULKAN_LANE_TILES");
  setenv("EMBER_VULKAN_GEMM", "fastest", 1);
  expect_error([&] { (void)matmul(to_device(a, vk()), to_device(b, vk())); },
               "EMBER_VULKAN_GEMM=\"fastest\"");
  unsetenv("EMBER_VULKAN_GEMM");
  expect_no_validation_errors();
}

// llvmpipe ends an invocation's loops silently after 65,535 iterations: a matmul's or a
// convolution's k it cannot sum in one pass is an error naming the device there; any other
// device sums it.
TEST(Vulkan, Float32SumsTooLongForLlvmpipeAreErrorsThere) {
  EMBER_REQUIRE_VULKAN();
  const int64_t k =
      600000;  // 37,500 slices of 16 (gemm_tiled.glsl), 37,500 loop steps of 16 (gemm_lanes.glsl)
  const DynTensor a = input(Shape{1, k}, 90), b = input(Shape{k, 1}, 91);
  const bool llvmpipe = vulkan::device_name(0).find("llvmpipe") != std::string::npos;
  try {
    const DynTensor got = to_device(matmul(to_device(a, vk()), to_device(b, vk())), Device::cpu());
    EXPECT_FALSE(llvmpipe) << "no error";
    const double want = matmul(cast(a, DType::f64), cast(b, DType::f64)).item<double>();
    EXPECT_NEAR(got.item<double>(), want, 1e-4 * want);
  } catch (const Error& e) {
    EXPECT_TRUE(llvmpipe) << e.what();
    EXPECT_NE(std::string(e.what()).find("k = 600000"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("llvmpipe"), std::string::npos) << e.what();
  }
  // A convolution whose every output sums 540,000 products (60,000 channels of 3x3 taps).
  const DynTensor x = input(Shape{1, 60000, 3, 3}, 92), w = input(Shape{1, 60000, 3, 3}, 93);
  try {
    const DynTensor got =
        to_device(conv2d(to_device(x, vk()), to_device(w, vk()), DynTensor(), {1}, Padding::Valid),
                  Device::cpu());
    EXPECT_FALSE(llvmpipe) << "no error";
    const double want = sum(mul(cast(x, DType::f64), cast(w, DType::f64)), {}).item<double>();
    EXPECT_NEAR(reshape(got, Shape{}).item<double>(), want, 1e-4 * want);
  } catch (const Error& e) {
    EXPECT_TRUE(llvmpipe) << e.what();
    EXPECT_NE(std::string(e.what()).find("[conv2d]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("540000 products"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("llvmpipe"), std::string::npos) << e.what();
  }
  expect_no_validation_errors();
}

// Casts between every pair of float32, int32, uint8, int8, bool, float16 and bfloat16 against the
// Cpu's, bit for bit: rounding ties to even into the 16-bit floats, their overflow to inf and
// subnormals, NaN and infinities, truncation into integers saturating past their range (NaN: 0,
// as core/convert.hpp defines it), wrapping between integers, "not zero" into bool; a transposed
// source and sizes that end inside a word.
TEST(Vulkan, CastsBetweenTheDtypesUpTo32BitsMatchTheCpu) {
  EMBER_REQUIRE_VULKAN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> values = {
      -3.7,         -2.5,          -1.5,    -0.5,
      0.0,          0.5,           1.5,     2.5,
      3.7,          7.0,           100.25,  127.9,
      1e-8,         3e-5,          6.1e-5,  65519.0,
      65520,        1e30,          3.14159, 1.00048828125,
      1.0009765625, 1.00146484375, -0.0,    200.5,
      -120.4,       -inf,          inf,     std::numeric_limits<double>::quiet_NaN()};
  const std::vector<DType> types = {DType::f32,     DType::i32, DType::u8,  DType::i8,
                                    DType::boolean, DType::f16, DType::bf16};
  for (DType from : types) {
    for (DType to : types) {
      const std::vector<double>& vs = values;
      const int64_t n = static_cast<int64_t>(vs.size());
      const DynTensor src = cast(from_data(TensorData::from(vs, Shape{n})), from);
      const std::string what = std::string(dtype_name(from)) + " -> " + std::string(dtype_name(to));
      const DynTensor want = cast(src, to);
      const DynTensor got = to_device(cast(to_device(src, vk()), to), Device::cpu());
      ASSERT_EQ(got.dtype(), to) << what;
      const std::vector<double> g = cast(got, DType::f64).to_vector<double>();
      const std::vector<double> w = cast(want, DType::f64).to_vector<double>();
      for (size_t i = 0; i < g.size(); ++i) {
        EXPECT_TRUE(g[i] == w[i] || (std::isnan(g[i]) && std::isnan(w[i])))
            << what << ": " << vs[i] << " gave " << g[i] << ", the Cpu " << w[i];
        if (g[i] == 0 && w[i] == 0) {
          EXPECT_EQ(std::signbit(g[i]), std::signbit(w[i])) << what;
        }
      }
    }
  }
  // Copies into views that start and end inside a word (cat writes its pieces into slices of
  // its output): the bytes around each piece are kept.
  // Transposed pieces on the device, so that the copies run the kernel (contiguous ones are
  // buffer copies).
  for (DType dt : {DType::f16, DType::u8, DType::boolean, DType::bf16}) {
    std::vector<DynTensor> host, device;
    uint64_t seed = 71;
    for (int64_t rows : {3, 5, 2}) {
      const DynTensor p = cast(mul(input(Shape{3, rows}, seed++), 3.0), dt);
      host.push_back(transpose(p, 0, 1));
      device.push_back(transpose(to_device(p, vk()), 0, 1));
    }
    const DynTensor got = to_device(cat(device, 0), Device::cpu());
    EXPECT_EQ(cast(got, DType::f64).to_vector<double>(),
              cast(cat(host, 0), DType::f64).to_vector<double>())
        << dtype_name(dt);
  }
  // A strided copy into the middle of a tensor, with neighbours on both sides of each edge word.
  for (DType dt : {DType::u8, DType::boolean, DType::f16}) {
    const DynTensor base = cast(full(Shape{13}, 1.0, DType::f32, vk()), dt);
    const DynTensor src = transpose(to_device(cast(full(Shape{1, 6}, 0.0, DType::f32), dt), vk()),
                                    0, 1);  // [6, 1], strided
    vulkan::backend().copy(reshape(src, Shape{6}).raw(), narrow(base, 0, 3, 6).raw());
    std::vector<double> want(13, 1.0);
    for (int i = 3; i < 9; ++i) want[static_cast<size_t>(i)] = 0.0;
    EXPECT_EQ(cast(to_device(base, Device::cpu()), DType::f64).to_vector<double>(), want)
        << dtype_name(dt);
  }
  // Subnormals: not zero as bool, and float16's converted exactly (a comparison with 0.0 or
  // unpackHalf2x16 may flush them on a device).
  const DynTensor tiny =
      from_data(TensorData::from(std::vector<float>{1e-40f, -1e-44f, 0.0f, 1e-6f}, Shape{4}));
  const DynTensor tv = to_device(tiny, vk());
  EXPECT_EQ(to_device(cast(tv, DType::boolean), Device::cpu()).to_vector<bool>(),
            cast(tiny, DType::boolean).to_vector<bool>());
  EXPECT_EQ(to_device(logical_not(tv), Device::cpu()).to_vector<bool>(),
            logical_not(tiny).to_vector<bool>());
  const DynTensor h = cast(tiny, DType::f16);  // 1e-6: a float16 subnormal
  EXPECT_EQ(to_device(cast(to_device(h, vk()), DType::f32), Device::cpu()).to_vector<float>(),
            cast(h, DType::f32).to_vector<float>());
  // A transposed source, into each packing.
  const DynTensor x = mul(input(Shape{5, 3}, 70), 50.0);
  for (DType to : {DType::f16, DType::bf16, DType::u8, DType::boolean, DType::i32}) {
    const DynTensor t = transpose(x, 0, 1);
    EXPECT_EQ(cast(to_device(cast(to_device(t, vk()), to), Device::cpu()), DType::f64)
                  .to_vector<double>(),
              cast(cast(t, to), DType::f64).to_vector<double>())
        << dtype_name(to);
  }
  expect_no_validation_errors();
}

// max/min with their indices along each dim of a strided operand against the Cpu: ties go to
// the first index, NaN wins, rows longer than a workgroup, and argmax of the whole tensor.
TEST(Vulkan, Float32ArgMaxAndArgMinMatchTheCpu) {
  EMBER_REQUIRE_VULKAN();
  // Rounded to halves, so that ties occur; one NaN.
  DynTensor x = div(round(mul(input(Shape{6, 700, 5}, 80), 2.0)), 2.0);
  // Two NaNs in one row along dim 1 (the first must win) and one more elsewhere.
  const DynTensor flat = reshape(arange(0, 21000, 1, DType::i64), Shape{6, 700, 5});
  x = where(logical_or(logical_or(eq(flat, 4321), eq(flat, 4301)), eq(flat, 17)),
            std::numeric_limits<float>::quiet_NaN(), x);
  const DynTensor t = transpose(x, 0, 2);  // [5, 700, 6], strided
  const DynTensor tv = to_device(t, vk());
  for (int64_t dim = 0; dim < 3; ++dim) {
    for (const bool is_max : {true, false}) {
      const ValuesIndices want = is_max ? max(t, dim, false) : min(t, dim, false);
      const ValuesIndices got = is_max ? max(tv, dim, false) : min(tv, dim, false);
      const std::string what = std::string(is_max ? "max" : "min") + " dim " + std::to_string(dim);
      EXPECT_EQ(to_device(got.indices, Device::cpu()).to_vector<int64_t>(),
                want.indices.to_vector<int64_t>())
          << what;
      const DynTensor gv = to_device(got.values, Device::cpu());
      EXPECT_EQ(isnan(gv).to_vector<bool>(), isnan(want.values).to_vector<bool>()) << what;
      EXPECT_EQ(
          max_abs_diff(where(isnan(gv), 0.0, gv), where(isnan(want.values), 0.0, want.values)), 0.0)
          << what;
    }
  }
  const DynTensor y = input(Shape{40, 30}, 81);
  EXPECT_EQ(to_device(argmax(to_device(y, vk())), Device::cpu()).item<int64_t>(),
            argmax(y).item<int64_t>());
  // More outputs than one dispatch has workgroups (65,535): the loop over outputs.
  const DynTensor many = input(Shape{66000, 3}, 82);
  EXPECT_EQ(to_device(argmax(to_device(many, vk()), 1), Device::cpu()).to_vector<int64_t>(),
            argmax(many, 1).to_vector<int64_t>());
  expect_no_validation_errors();
}

// fill in every dtype, from float and integer scalars, converted as the Cpu converts them
// (saturating, rounding to the 16-bit floats), at sizes that end inside a word; and into views
// that start and end inside a word, whose neighbours keep their values.
TEST(Vulkan, FillsEveryDtypeAsTheCpu) {
  EMBER_REQUIRE_VULKAN();
  const std::vector<DType> types = {DType::f32, DType::f64, DType::f16,     DType::bf16, DType::i64,
                                    DType::i32, DType::i8,  DType::boolean, DType::u8};
  for (DType dt : types) {
    for (const Scalar& v :
         {Scalar(3.14159), Scalar(-2.5), Scalar(int64_t{300}), Scalar(0.0), Scalar(70000.0)}) {
      for (int64_t n : {1, 3, 6, 9}) {
        const DynTensor got = to_device(full(Shape{n}, v, dt, vk()), Device::cpu());
        EXPECT_EQ(cast(got, DType::f64).to_vector<double>(),
                  cast(full(Shape{n}, v, dt), DType::f64).to_vector<double>())
            << dtype_name(dt) << " " << v.to_double() << " x" << n;
      }
    }
  }
  for (DType dt : {DType::u8, DType::boolean, DType::f16}) {
    const DynTensor base = cast(full(Shape{11}, 1.0, DType::f32, vk()), dt);
    const DynTensor view = narrow(base, 0, 3, 6);  // bytes 3..8 (u8) or 6..17 (f16)
    vulkan::backend().fill(view.raw(), Scalar(int64_t{0}));
    std::vector<double> want(11, 1.0);
    for (int i = 3; i < 9; ++i) want[static_cast<size_t>(i)] = 0.0;
    EXPECT_EQ(cast(to_device(base, Device::cpu()), DType::f64).to_vector<double>(), want)
        << dtype_name(dt);
  }
  expect_no_validation_errors();
}

// cumsum and cumprod along each dim of a strided operand against the Cpu, rows longer than one
// 256-element chunk: within float32's rounding of the running values (the Cpu keeps double).
TEST(Vulkan, Float32ScansMatchTheCpu) {
  EMBER_REQUIRE_VULKAN();
  // Values near 1, so that products over 700 elements stay in range.
  const DynTensor x = add(mul(sub(input(Shape{5, 700, 6}, 95), 1.0), 0.02), 1.0);
  const DynTensor t = transpose(x, 0, 2);  // [6, 700, 5], strided
  const DynTensor tv = to_device(t, vk());
  for (int64_t dim = 0; dim < 3; ++dim) {
    for (const bool prod : {false, true}) {
      const DynTensor want = prod ? cumprod(t, dim) : cumsum(t, dim);
      const DynTensor got = to_device(prod ? cumprod(tv, dim) : cumsum(tv, dim), Device::cpu());
      const double scale = amax(abs(want), {}).item<double>();
      EXPECT_LE(max_abs_diff(got, want), 2e-7 * scale * static_cast<double>(t.size(dim)))
          << (prod ? "cumprod" : "cumsum") << " dim " << dim;
    }
  }
  expect_no_validation_errors();
}

// Every public op has a Vulkan kernel or a composite now; a fused family the backend does not
// On a device without float64 (run as no_float64.* with EMBER_VULKAN_NO_FLOAT64=1; the name's
// prefix puts it in that run), a float64 op fails naming the device and the missing feature,
// and float32 work goes on; on a device with float64 the same op runs.
TEST(Vulkan, Float32OnlyDevicesRefuseFloat64Clearly) {
  EMBER_REQUIRE_VULKAN();
  const DynTensor x = to_device(cast(input(Shape{5}, 9), DType::f64), vk());
  const char* no_wide = std::getenv("EMBER_VULKAN_NO_FLOAT64");
  const bool float32_only = no_wide != nullptr && std::string(no_wide) == "1";
  // What a program asks before choosing float64 (the training loop's running sums do).
  EXPECT_EQ(has_dtype(vk(), DType::f64), !float32_only);
  EXPECT_TRUE(has_dtype(vk(), DType::f16));
  EXPECT_TRUE(has_dtype(vk(), DType::i64));
  EXPECT_TRUE(has_dtype(vk(), DType::f32));
  if (float32_only) {
    try {
      (void)to_device(exp(x), Device::cpu());
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("shaderFloat64"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("[exp]"), std::string::npos) << e.what();
    }
  } else {
    EXPECT_LE(max_abs_diff(to_device(exp(x), Device::cpu()), exp(to_device(x, Device::cpu()))),
              1e-14);
  }
  const DynTensor y = to_device(input(Shape{5}, 9), vk());
  EXPECT_EQ(to_device(add(y, y), Device::cpu()).to_vector<float>(),
            mul(to_device(y, Device::cpu()), 2.0).to_vector<float>());
  expect_no_validation_errors();
}

// claim (supports() false, so the front end runs its composite) still fails clearly if called.
TEST(Vulkan, WhatHasNoKernelYetIsAClearError) {
  EMBER_REQUIRE_VULKAN();
  EXPECT_FALSE(vulkan::backend().supports(OpFamily::SoftmaxRows, DType::f32));
  const DynTensor x = to_device(input(Shape{4, 3}, 6), vk());
  const DynTensor lse = empty(Shape{4}, DType::f32, vk());
  try {
    vulkan::backend().logsumexp_rows(x.raw(), lse.raw());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no kernel on vulkan"), std::string::npos) << e.what();
  }
}

// Views past the shaders' 6 dims that no collapse brings down (every dim of a rank-8 tensor
// reversed): copies take their leading dim an index a dispatch, elementwise ops pack them first.
TEST(Vulkan, ViewsPastSixDimsMatchTheCpu) {
  EMBER_REQUIRE_VULKAN();
  const Shape shape{2, 2, 2, 2, 2, 2, 2, 2};
  const std::vector<int64_t> reversed = {7, 6, 5, 4, 3, 2, 1, 0};
  const DynTensor x = input(shape, 30), y = input(shape, 31);
  const DynTensor xp = permute(x, reversed), yp = permute(y, {6, 7, 4, 5, 2, 3, 0, 1});
  const DynTensor xv = permute(to_device(x, vk()), reversed);
  const DynTensor yv = permute(to_device(y, vk()), {6, 7, 4, 5, 2, 3, 0, 1});
  const auto same = [](const DynTensor& got, const DynTensor& want, const char* what) {
    const DynTensor g = to_device(got, Device::cpu());
    ASSERT_EQ(g.shape(), want.shape()) << what;
    EXPECT_EQ(cast(g, DType::f64).to_vector<double>(), cast(want, DType::f64).to_vector<double>())
        << what;
  };
  same(contiguous(xv), contiguous(xp), "contiguous");
  same(cast(xv, DType::f16), cast(xp, DType::f16), "cast to float16");
  same(add(xv, yv), add(xp, yp), "add");
  same(neg(xv), neg(xp), "neg");
  same(lt(xv, yv), lt(xp, yp), "lt");
  same(where(lt(xv, yv), xv, yv), where(lt(xp, yp), xp, yp), "where");
  expect_no_validation_errors();
}

// A tensor past maxStorageBufferRange (128 MiB on lavapipe and on some phones): allocated whole,
// moved to and from the host, filled, and taken by the elementwise ops, copies, casts, matmul and
// index_select in pieces that bind; a kernel that binds it whole says so. ctest runs it with
// EMBER_VULKAN_MAX_BINDING=1048576 (`small_bindings.`), so that it is quick on every device.
TEST(Vulkan, TensorsPastTheBindingLimitWorkInPieces) {
  EMBER_REQUIRE_VULKAN();
  const size_t limit = vulkan::max_binding(0);
  if (limit > (size_t{16} << 20)) GTEST_SKIP() << "this device binds " << limit << " bytes";
  const int64_t n = static_cast<int64_t>(limit / 4) + 4099;  // float32: past the limit
  const DynTensor x = input(Shape{n}, 40), y = input(Shape{n}, 41);
  const DynTensor xv = to_device(x, vk()), yv = to_device(y, vk());
  const auto same = [](const DynTensor& got, const DynTensor& want, const char* what) {
    const DynTensor g = to_device(got, Device::cpu());
    ASSERT_EQ(g.shape(), want.shape()) << what;
    EXPECT_TRUE(equal(cast(g, DType::f64), cast(want, DType::f64))) << what;
  };
  same(xv, x, "round trip");
  same(add(xv, yv), add(x, y), "add");
  same(add(xv, 1.5), add(x, 1.5), "add a scalar");
  same(neg(xv), neg(x), "neg");
  same(lt(xv, yv), lt(x, y), "lt");
  same(where(lt(xv, yv), xv, yv), where(lt(x, y), x, y), "where");
  same(cast(xv, DType::f16), cast(x, DType::f16), "cast to float16");
  same(cast(xv, DType::i32), cast(x, DType::i32), "cast to int32");
  same(slice(xv, 0, 3, n, 5), slice(x, 0, 3, n, 5), "a strided slice");
  // A column of a matrix whose rows together span more than a binding: pieces of 1 to 3 rows,
  // whose Bool outputs start inside a word.
  const int64_t cols = static_cast<int64_t>(limit / 4 / 6);
  const DynTensor m = input(Shape{7, cols}, 44);
  same(gt(select(to_device(m, vk()), 1, 5), 1.0), gt(select(m, 1, 5), 1.0), "a column's test");
  same(contiguous(slice(xv, 0, 1, n, 2)), contiguous(slice(x, 0, 1, n, 2)), "packed");
  same(full(Shape{n}, 2.5, DType::f32, vk()), full(Shape{n}, 2.5, DType::f32, Device::cpu()),
       "full");
  same(arange(0, n, 1, DType::i32, vk()), arange(0, n, 1, DType::i32, Device::cpu()), "arange");
  // A language model's vocabulary projection: logits = x @ w^T, w [vocabulary, width] past the
  // limit (blocks of b's columns), and a matmul whose a and out are (blocks of rows).
  const int64_t width = 64, vocabulary = n / width;
  const DynTensor w = reshape(slice(x, 0, 0, vocabulary * width), Shape{vocabulary, width});
  const DynTensor wv = reshape(slice(xv, 0, 0, vocabulary * width), Shape{vocabulary, width});
  const DynTensor h = input(Shape{3, width}, 42), hv = to_device(h, vk());
  const DynTensor logits = to_device(matmul(hv, transpose(wv, 0, 1)), Device::cpu());
  EXPECT_LE(max_abs_diff(logits, matmul(h, transpose(w, 0, 1))), 1e-3);  // sums near 64
  const DynTensor proj = input(Shape{width, 5}, 43);
  const DynTensor rows = to_device(matmul(wv, to_device(proj, vk())), Device::cpu());
  EXPECT_LE(max_abs_diff(rows, matmul(w, proj)), 1e-3);
  // Its embedding: rows of w from both ends and the middle, looked up in windows of rows.
  const std::vector<int64_t> ids = {0, vocabulary - 1, vocabulary / 2, 7, vocabulary - 2, 7};
  const DynTensor idx = from_data(TensorData::from(ids, Shape{6}), Device::cpu());
  same(index_select(wv, 0, to_device(idx, vk())), index_select(w, 0, idx), "embedding rows");
  // Reductions in halves: of a reduced dim (partials folded in double), of a kept dim, both.
  // Sums in double where the device has float64, else in float32 (ctest runs this both ways).
  const double tol = has_dtype(vk(), DType::f64) ? 1e-6 : 1e-4;
  const auto close = [&](const DynTensor& got, const DynTensor& want, const char* what) {
    const DynTensor g = cast(to_device(got, Device::cpu()), DType::f64), w = cast(want, DType::f64);
    ASSERT_EQ(g.shape(), w.shape()) << what;
    EXPECT_LE(amax(div(abs(sub(g, w)), add(abs(w), 1e-30)), {}).item<double>(), tol) << what;
  };
  close(sum(xv), sum(x), "sum");
  close(mean(xv), mean(x), "mean");
  same(amax(xv), amax(x), "amax");
  same(amin(xv), amin(x), "amin");
  same(all(gt(xv, 0.6)), all(gt(x, 0.6)), "all");
  same(any(gt(xv, 1.4999)), any(gt(x, 1.4999)), "any");
  same(sum(gt(xv, 1.0)), sum(gt(x, 1.0)), "a count (int64)");
  same(sum(cast(mul(xv, 100.0), DType::i32)), sum(cast(mul(x, 100.0), DType::i32)), "int32 sum");
  const DynTensor mv = to_device(m, vk());
  close(sum(mv, {1}), sum(m, {1}), "sums of rows");
  close(sum(select(mv, 1, 5)), sum(select(m, 1, 5)), "a column's sum (packed)");
  // Two long rows: their partial results would not bind either, so the kept dim is halved.
  const DynTensor two = reshape(slice(x, 0, 0, n / 2 * 2), Shape{2, n / 2});
  const DynTensor twov = to_device(two, vk());
  close(sum(twov, {0}), sum(two, {0}), "sums of two long rows");
  close(mean(twov, {0}), mean(two, {0}), "means of two long rows");
  same(amax(twov, {0}), amax(two, {0}), "maxima of two long rows");
  close(sum(mv, {0}, true), sum(m, {0}, true), "sums of columns");
  close(mean(mv, {0}), mean(m, {0}), "means of columns");
  same(amax(mv, {1}), amax(m, {1}), "rows' maxima");
  close(prod(slice(mv, 1, 0, 40), {0}), prod(slice(m, 1, 0, 40), {0}), "products of columns");
  // argmax, gather and scatter of it in halves of the dims they do not index; a loss over it.
  for (int dim : {0, 1}) {
    same(argmax(mv, dim), argmax(m, dim), "argmax");
    const ValuesIndices got = min(mv, dim, true), want = min(m, dim, true);
    same(got.values, want.values, "min values");
    same(got.indices, want.indices, "min indices");
  }
  close(cumsum(mv, 1), cumsum(m, 1), "cumsum of rows");
  close(cumsum(mv, 0), cumsum(m, 0), "cumsum of columns");
  const ValuesIndices top = topk(mv, 3, 0), top_cpu = topk(m, 3, 0);
  same(top.values, top_cpu.values, "topk of columns");
  same(top.indices, top_cpu.indices, "topk's indices");
  // A batch of images past the limit: convolution and pooling in halves of the batch, forward
  // and backward (the weight's gradient the halves' sum).
  const int64_t side = static_cast<int64_t>(std::sqrt(double(limit) / 4 / 4 / 6)) + 2;
  const DynTensor img = input(Shape{8, 4, side, side}, 47), ker = input(Shape{5, 4, 3, 3}, 48);
  const DynTensor bias = input(Shape{5}, 49);
  const auto layers = [](const DynTensor& x, const DynTensor& w, const DynTensor& b) {
    const DynTensor xg = require_grad(x), wg = require_grad(w), bg = require_grad(b);
    const DynTensor y = conv2d(xg, wg, bg, {1}, {1});
    const DynTensor out = add(max_pool2d(y, SpatialArg{2}), avg_pool2d(y, SpatialArg{2}));
    std::vector<DynTensor> all = grad(sum(out), {xg, wg, bg});
    all.push_back(out);
    return all;
  };
  const std::vector<DynTensor> got = layers(to_device(img, vk()), to_device(ker, vk()),
                                            to_device(bias, vk())),
                               want = layers(img, ker, bias);
  const char* names[] = {"conv's input gradient", "conv's weight gradient", "conv's bias gradient",
                         "conv and pooling"};
  for (size_t i = 0; i < want.size(); ++i) {
    const DynTensor g = cast(to_device(got[i], Device::cpu()), DType::f64);
    const DynTensor w = cast(want[i], DType::f64);
    EXPECT_LE(amax(div(abs(sub(g, w)), add(abs(w), 1.0)), {}).item<double>(), 1e-5) << names[i];
  }
  // Max pooling whose int64 indices are wider than its output: halves of the batch for them.
  const DynTensor planes = input(Shape{4, 1, side * 2, side * 2}, 50);
  const ValuesIndices pooled = max_pool2d_with_indices(to_device(planes, vk()), SpatialArg{3},
                                                       SpatialArg{1}, SpatialArg{1}),
                      pooled_cpu = max_pool2d_with_indices(planes, SpatialArg{3}, SpatialArg{1},
                                                           SpatialArg{1});
  same(pooled.values, pooled_cpu.values, "max pooling");
  same(pooled.indices, pooled_cpu.indices, "max pooling's indices");
  // An embedding's gradient into a float16 table whose float32 stand-in (without float64) is
  // wider than a binding, with many tokens (sorted) and few (scanned).
  const int64_t vocab = static_cast<int64_t>(limit / 2 / 512) + 40;
  const DynTensor table = cast(input(Shape{vocab, 512}, 51), DType::f16);
  for (const int64_t count : {int64_t{100}, int64_t{9}}) {
    std::vector<int64_t> tokens(static_cast<size_t>(count));
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int64_t>(i * 131) % vocab;
    const DynTensor ids = from_data(TensorData::from(tokens, Shape{count}), Device::cpu());
    const DynTensor rows16 = cast(input(Shape{count, 512}, 52), DType::f16);
    same(index_add(to_device(table, vk()), 0, to_device(ids, vk()), to_device(rows16, vk())),
         index_add(table, 0, ids, rows16), "a float16 embedding's gradient");
  }
  // A long index that binds, whose sorted copy (twice its bytes) would not: scanned.
  std::vector<int64_t> lines(100 * 1000);
  for (size_t i = 0; i < lines.size(); ++i) lines[i] = static_cast<int64_t>(i * 7 % 10);
  const DynTensor long_index = from_data(TensorData::from(lines, Shape{100, 1000}), Device::cpu());
  const DynTensor dst = input(Shape{10, 1000}, 53), many = input(Shape{100, 1000}, 54);
  same(scatter_add(to_device(dst, vk()), 0, to_device(long_index, vk()), to_device(many, vk())),
       scatter_add(dst, 0, long_index, many), "scatter_add of a long index");
  // A single row wider than a binding cannot be halved: refused, naming the limit.
  expect_error([&] { (void)to_device(sort(xv, 0).values, Device::cpu()); },
               "maxStorageBufferRange");
  expect_error([&] { (void)to_device(argmax(xv, 0), Device::cpu()); }, "maxStorageBufferRange");
  std::vector<int64_t> picks(7 * 3);
  for (size_t i = 0; i < picks.size(); ++i) picks[i] = static_cast<int64_t>(i * 7919) % cols;
  const DynTensor pick = from_data(TensorData::from(picks, Shape{7, 3}), Device::cpu());
  const DynTensor pv = to_device(pick, vk());
  same(gather(mv, 1, pv), gather(m, 1, pick), "gather");

  const DynTensor src = input(Shape{7, 3}, 45);
  same(scatter_add(mv, 1, pv, to_device(src, vk())), scatter_add(m, 1, pick, src), "scatter_add");
  const DynTensor down =
      from_data(TensorData::from(std::vector<int64_t>{6, 0, 3, 3, 1}, Shape{1, 5}), Device::cpu());
  same(gather(mv, 0, to_device(down, vk())), gather(m, 0, down), "gather of a row's columns");
  const DynTensor row = input(Shape{1, 5}, 46);
  same(scatter(mv, 0, to_device(down, vk()), to_device(row, vk())), scatter(m, 0, down, row),
       "scatter into columns");
  const DynTensor target = reshape(slice(pick, 1, 0, 1), Shape{7});
  close(nn::cross_entropy(mv, to_device(target, vk())), nn::cross_entropy(m, target),
        "cross_entropy");
  expect_no_validation_errors();
}

TEST(Vulkan, MemoryIsReusedAndReturned) {
  EMBER_REQUIRE_VULKAN();
  const Device d = vk();
  synchronize(d);
  const size_t before = memory_stats(d).in_use;
  {
    const DynTensor x = full(Shape{1 << 20}, 1.0f, DType::f32, d);
    EXPECT_GE(memory_stats(d).in_use, before + (size_t{4} << 20));
  }
  EXPECT_EQ(memory_stats(d).in_use, before);
  empty_cache(d);
  EXPECT_EQ(memory_stats(d).in_use, before);
}

// Few outputs of long reductions, which the backend folds in parts and then folds the parts
// (reduce.comp's second pass): against the Cpu in every kind of fold, with ranges that do not
// divide evenly, a strided operand, and a mean (not cut) beside.
TEST(Vulkan, LongReductionsOfFewOutputsMatchTheCpu) {
  EMBER_REQUIRE_VULKAN();
  try {  // the parts fold in double or int64
    (void)sum(to_device(full(Shape{2}, 1.0, DType::f64, Device::cpu()), vk()));
  } catch (const Error& e) {
    GTEST_SKIP() << e.what();
  }
  const auto on_vk = [](const DynTensor& t) { return to_device(t, vk()); };
  const auto check = [&](const DynTensor& got, const DynTensor& want, double tol,
                         const char* what) {
    EXPECT_EQ(got.dtype(), want.dtype()) << what;
    const double scale = std::max(1.0, amax(abs(cast(want, DType::f64)), {}).item<double>());
    EXPECT_LE(max_abs_diff(cast(to_device(got, Device::cpu()), DType::f64), cast(want, DType::f64)),
              tol * scale)
        << what;
  };
  // A bias gradient's shape: 8 sums of 51,200 values each, in 3 parts.
  const DynTensor g = sub(input(Shape{128, 8, 20, 20}, 20), 1.0);
  check(sum(on_vk(g), {0, 2, 3}), sum(g, {0, 2, 3}), 1e-6, "bias-like sum");
  check(sum(transpose(on_vk(g), 0, 1), {1, 2, 3}), sum(transpose(g, 0, 1), {1, 2, 3}), 1e-6,
        "strided sum");
  const DynTensor x = sub(input(Shape{300001}, 21), 1.0);
  check(sum(on_vk(x)), sum(x), 1e-6, "one sum of 300,001 in 18 parts");
  check(mean(on_vk(x)), mean(x), 1e-6, "mean");
  const DynTensor near_one = cast(add(mul(input(Shape{70000}, 22), 1e-5), 1.0), DType::f64);
  check(prod(on_vk(near_one)), prod(near_one), 1e-12, "float64 product");
  const DynTensor h = cast(sub(input(Shape{2, 50000}, 23), 1.0), DType::f16);
  check(amax(on_vk(h), {1}), amax(h, {1}), 0.0, "float16 amax");
  check(amin(on_vk(h), {1}), amin(h, {1}), 0.0, "float16 amin");
  const DynTensor i = cast(mul(input(Shape{100000}, 24), 1000.0), DType::i32);
  check(sum(on_vk(i)), sum(i), 0.0, "int32 sum");
  DynTensor flags = gt(input(Shape{40000}, 25), 0.0);  // all true
  check(all(on_vk(flags)), all(flags), 0.0, "all true");
  flags = lt(input(Shape{40000}, 25), 1.4999);  // a few false among them
  check(all(on_vk(flags)), all(flags), 0.0, "all, some false");
  check(any(on_vk(logical_not(flags))), any(logical_not(flags)), 0.0, "any");
  expect_no_validation_errors();
}

// EMBER_VULKAN_PROFILE=1 (ctest runs this test a second time so, as `profiled.`, and a third
// with =groups, as `profiled_groups.`): the device times every command, and vulkan::profile
// lists each shader's count (with =groups, each shader and workgroup count's, as
// "name@groups"); without it, profile() says how to turn it on.
TEST(Vulkan, ProfileTimesEveryShader) {
  EMBER_REQUIRE_VULKAN();
  const char* env = std::getenv("EMBER_VULKAN_PROFILE");
  const bool on = env != nullptr && (std::string(env) == "1" || std::string(env) == "groups");
  if (on && !vulkan::profiling(0)) GTEST_SKIP() << "vulkan:0's queue has no timestamps";
  if (!on) {
    EXPECT_THROW(
        {
          try {
            (void)vulkan::profile(0);
          } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("EMBER_VULKAN_PROFILE=1"), std::string::npos)
                << e.what();
            throw;
          }
        },
        Error);
    return;
  }
  const Device d = vk();
  const DynTensor a = full(Shape{64, 64}, 0.5f, DType::f32, d);
  synchronize(d);
  (void)vulkan::profile(0, true);
  const DynTensor b = matmul(a, a);
  const DynTensor c = add(add(b, b), b);
  EXPECT_EQ(to_device(c, Device::cpu()).to_vector<float>()[0], 48.0f);
  const std::string table = vulkan::profile(0, true);
  // A row per label: its name, then its count.
  auto count = [&](const std::string& prefix) -> long {
    const size_t at = table.find("\n" + prefix);
    if (at == std::string::npos) return -1;
    const size_t name_end = table.find(' ', at + 1);
    return std::strtol(table.c_str() + name_end, nullptr, 10);
  };
  EXPECT_EQ(count("matmul_"), 1) << table;  // matmul_tiled (a GPU) or matmul_lanes (a CPU)
  // Its time: the third column, in milliseconds, above zero.
  const size_t row = table.find("\nmatmul_");
  ASSERT_NE(row, std::string::npos) << table;
  std::istringstream line(table.substr(row + 1));
  std::string name;
  long commands = 0;
  double total_ms = 0;
  line >> name >> commands >> total_ms;
  EXPECT_GT(total_ms, 0.0) << table;
  // With =groups the label ends in the workgroups dispatched: 64x64 takes one or a few.
  const size_t at = name.find('@');
  EXPECT_EQ(at != std::string::npos, std::string(env) == "groups") << name;
  if (at != std::string::npos) {
    EXPECT_GE(std::atol(name.c_str() + at + 1), 1) << name;
  }
  EXPECT_EQ(count("binary32_"), 2) << table;
  EXPECT_EQ(count("copy"), 1) << table;  // the read-back
  // Then the pipelines built since the reset, with their host time (matmul's among them where
  // no earlier test in this process built it).
  EXPECT_NE(table.find(" pipelines built in "), std::string::npos) << table;
  // Reset: nothing since.
  EXPECT_EQ(vulkan::profile(0).find("matmul_"), std::string::npos);
  expect_no_validation_errors();
}

}  // namespace
}  // namespace ember
