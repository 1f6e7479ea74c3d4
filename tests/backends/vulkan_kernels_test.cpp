// The Vulkan kernels a training step needs beyond elementwise math (issue 18): convolution and
// pooling forward and backward, gather, index_select and scatter, range checks reported at
// synchronisation, 64-bit arithmetic and casts, and reductions of every dtype, each against the
// Cpu on the same random inputs. Skipped, saying so, without a Vulkan device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include <ember/tensor/ops/optim.hpp>

#include "vulkan_test_util.hpp"

namespace ember {
namespace {

DynTensor on_vk(const DynTensor& t) { return to_device(t, vk()); }
DynTensor on_cpu(const DynTensor& t) { return to_device(t, Device::cpu()); }

// Values in [-1, 1) and never zero, so that a kernel reading the wrong element shows.
DynTensor signed_input(const Shape& s, uint64_t seed) { return sub(mul(input(s, seed), 2.0), 2.0); }

void expect_near_cpu(const DynTensor& got, const DynTensor& want, double tol,
                     const std::string& what) {
  ASSERT_TRUE(got.defined() && want.defined()) << what;
  EXPECT_EQ(got.dtype(), want.dtype()) << what;
  EXPECT_LE(max_abs_diff(on_cpu(got), want), tol) << what;
}

struct ConvCase {
  Shape x, w;
  int spatial;
  int64_t stride, padding, dilation, groups;
};

const std::vector<ConvCase>& conv_cases() {
  static const std::vector<ConvCase> cases = {
      {{2, 3, 9, 8}, {4, 3, 3, 3}, 2, 1, 1, 1, 1},        // the usual 3x3, padded
      {{3, 4, 11, 10}, {6, 2, 3, 2}, 2, 2, 1, 2, 2},      // grouped, strided, dilated
      {{2, 1, 28, 28}, {8, 1, 3, 3}, 2, 1, 0, 1, 1},      // the Fashion-MNIST stem
      {{2, 3, 17}, {5, 3, 4}, 1, 3, 2, 1, 1},             // 1-d, a stride past the kernel
      {{1, 2, 5, 6, 4}, {3, 2, 2, 3, 2}, 3, 1, 1, 1, 1},  // 3-d
      {{2, 6, 7, 7}, {6, 1, 3, 3}, 2, 1, 1, 1, 6},        // depthwise
      {{2, 40, 6, 6}, {64, 40, 1, 1}, 2, 1, 0, 1, 1},     // 1x1, many weights (one per thread)
  };
  return cases;
}

ConvParams conv_params(const ConvCase& k) {
  ConvParams p;
  p.spatial = k.spatial;
  for (int i = 0; i < k.spatial; ++i) {
    p.stride[i] = k.stride;
    p.padding[i] = k.padding;
    p.dilation[i] = k.dilation;
  }
  p.groups = k.groups;
  return p;
}

// A case's convolution and its input and weight gradients on the Cpu, for comparing with
// vulkan:0's under settings of the caller's.
struct ConvReference {
  ConvParams p;
  DynTensor x, w, y, gy;
  ConvGrads grads;
  std::string what;
};

ConvReference conv_reference(const ConvCase& k, uint64_t& seed) {
  ConvReference r;
  r.p = conv_params(k);
  r.x = signed_input(k.x, seed++);
  r.w = signed_input(k.w, seed++);
  r.y = convolution(r.x, r.w, DynTensor(), r.p, false);
  r.gy = signed_input(r.y.shape(), seed++);
  r.grads = conv_backward(r.x, r.w, DynTensor(), r.gy, r.p, {true, true, false});
  r.what = to_string(k.x) + " * " + to_string(k.w);
  return r;
}

void expect_vulkan_as_reference(const ConvReference& r, const std::string& setting) {
  expect_near_cpu(convolution(on_vk(r.x), on_vk(r.w), DynTensor(), r.p, false), r.y, 1e-4,
                  r.what + " " + setting);
  const ConvGrads got =
      conv_backward(on_vk(r.x), on_vk(r.w), DynTensor(), on_vk(r.gy), r.p, {true, true, false});
  expect_near_cpu(got.input, r.grads.input, 1e-4, r.what + " grad input " + setting);
  expect_near_cpu(got.weight, r.grads.weight, 1e-3, r.what + " grad weight " + setting);
}

// A forward convolution of case k on vulkan:0 is an error whose message holds `message`.
void expect_conv_error(const ConvCase& k, const std::string& message) {
  expect_error(
      [&] {
        (void)convolution(on_vk(signed_input(k.x, 1)), on_vk(signed_input(k.w, 2)), DynTensor(),
                          conv_params(k), false);
      },
      message);
}

// gemm_tiled.glsl's convolution (a GPU's) with the gathers' divisions as multiply-highs (a CPU
// device's default, EMBER_VULKAN_CONV_DIVISION=fast) and as plain divisions (a GPU's, =plain):
// every case and gradient the Cpu's either way; another value, or an unknown
// EMBER_VULKAN_CONV_DATA, is an error naming it.
TEST(VulkanKernels, ConvolutionDividesEitherWay) {
  EMBER_REQUIRE_VULKAN();
  setenv("EMBER_VULKAN_GEMM", "tiled", 1);  // gemm_tiled.glsl on a CPU device too
  uint64_t seed = 300;
  for (const ConvCase& k : conv_cases()) {
    const ConvReference r = conv_reference(k, seed);
    for (const char* how : {"fast", "plain"}) {
      setenv("EMBER_VULKAN_CONV_DIVISION", how, 1);
      expect_vulkan_as_reference(r, how);
    }
  }
  setenv("EMBER_VULKAN_CONV_DIVISION", "slow", 1);
  const ConvCase& k = conv_cases()[0];
  expect_conv_error(k, "EMBER_VULKAN_CONV_DIVISION=\"slow\"");
  unsetenv("EMBER_VULKAN_CONV_DIVISION");
  // So is an unknown choice of the data gradient's kernel.
  setenv("EMBER_VULKAN_CONV_DATA", "gemm", 1);
  const DynTensor x = signed_input(k.x, 3), w = signed_input(k.w, 4);
  const DynTensor gy =
      signed_input(convolution(x, w, DynTensor(), conv_params(k), false).shape(), 5);
  expect_error(
      [&] {
        (void)conv_backward(on_vk(x), on_vk(w), DynTensor(), on_vk(gy), conv_params(k),
                            {true, false, false});
      },
      "EMBER_VULKAN_CONV_DATA=\"gemm\"");
  unsetenv("EMBER_VULKAN_CONV_DATA");
  unsetenv("EMBER_VULKAN_GEMM");
  expect_no_validation_errors();
}

// The convolutions' own tiles (EMBER_VULKAN_CONV_TILES, apart from the matmuls'): other shapes
// than this device's (8x8 an invocation, which a GPU's convolutions no longer take; 2x4; 8 deep;
// two slices staged at once) give the Cpu's values and gradients; a malformed value is an error
// naming it.
TEST(VulkanKernels, ConvolutionUnderOtherTilesMatchesTheCpu) {
  EMBER_REQUIRE_VULKAN();
  setenv("EMBER_VULKAN_GEMM", "tiled", 1);
  uint64_t seed = 400;
  const std::vector<ConvCase>& cases = conv_cases();
  for (size_t i = 0; i < std::min<size_t>(cases.size(), 2); ++i) {
    const ConvReference r = conv_reference(cases[i], seed);
    // The GPU's defaults (64x64 of 4x4, plain division) among them, on a CPU device too.
    for (const char* tiles : {"128,128,16,8,8", "32,64,8,2,4", "64,64,16,4,4 in two stages",
                              "64,64,16,4,4 dividing plainly"}) {
      const std::string spec(tiles);
      setenv("EMBER_VULKAN_CONV_TILES", spec.substr(0, spec.find(' ')).c_str(), 1);
      setenv("EMBER_VULKAN_STAGES", spec.find(" in two") != std::string::npos ? "2" : "1", 1);
      setenv("EMBER_VULKAN_CONV_DIVISION",
             spec.find(" dividing plainly") != std::string::npos ? "plain" : "fast", 1);
      expect_vulkan_as_reference(r, tiles);
    }
  }
  unsetenv("EMBER_VULKAN_STAGES");
  unsetenv("EMBER_VULKAN_CONV_DIVISION");
  setenv("EMBER_VULKAN_CONV_TILES", "64,64,16,3,4", 1);
  expect_conv_error(cases[0], "EMBER_VULKAN_CONV_TILES=\"64,64,16,3,4\"");
  unsetenv("EMBER_VULKAN_CONV_TILES");
  unsetenv("EMBER_VULKAN_GEMM");
  expect_no_validation_errors();
}

// Every gradient of a convolution and its transposed form against the Cpu's.
TEST(VulkanKernels, ConvolutionMatchesTheCpu) {
  EMBER_REQUIRE_VULKAN();
  uint64_t seed = 100;
  for (const ConvCase& k : conv_cases()) {
    const ConvParams p = conv_params(k);
    const DynTensor x = signed_input(k.x, seed++), w = signed_input(k.w, seed++);
    const DynTensor b = signed_input(Shape{k.w[0]}, seed++);
    const std::string what = to_string(k.x) + " * " + to_string(k.w);
    const DynTensor y = convolution(x, w, b, p, false);
    expect_near_cpu(convolution(on_vk(x), on_vk(w), on_vk(b), p, false), y, 1e-4, what);
    // No bias, and relu(conv) fused (the tiled kernel's epilogue; after the direct loops in
    // float64).
    expect_near_cpu(convolution(on_vk(x), on_vk(w), DynTensor(), p, false),
                    convolution(x, w, DynTensor(), p, false), 1e-4, what + " without bias");
    ConvParams with_relu = p;
    with_relu.relu = true;
    const DynTensor y_relu = convolution(x, w, b, with_relu, false);
    expect_near_cpu(convolution(on_vk(x), on_vk(w), on_vk(b), with_relu, false), y_relu, 1e-4,
                    what + " relu");
    const auto f64 = [](const DynTensor& t) { return cast(t, DType::f64); };
    expect_near_cpu(convolution(on_vk(f64(x)), on_vk(f64(w)), on_vk(f64(b)), with_relu, false),
                    convolution(f64(x), f64(w), f64(b), with_relu, false), 1e-12,
                    what + " relu float64");
    const DynTensor gy = signed_input(y.shape(), seed++);
    // The fused relu's backward: grad_out masked by its output, for every gradient.
    const ConvGrads want_relu = conv_backward(x, w, y_relu, gy, with_relu, {true, true, true});
    const ConvGrads got_relu =
        conv_backward(on_vk(x), on_vk(w), on_vk(y_relu), on_vk(gy), with_relu, {true, true, true});
    expect_near_cpu(got_relu.input, want_relu.input, 1e-4, what + " relu grad input");
    expect_near_cpu(got_relu.weight, want_relu.weight, 1e-3, what + " relu grad weight");
    expect_near_cpu(got_relu.bias, want_relu.bias, 1e-3, what + " relu grad bias");
    const ConvGrads want = conv_backward(x, w, DynTensor(), gy, p, {true, true, true});
    const ConvGrads got =
        conv_backward(on_vk(x), on_vk(w), DynTensor(), on_vk(gy), p, {true, true, true});
    expect_near_cpu(got.input, want.input, 1e-4, what + " grad input");
    expect_near_cpu(got.weight, want.weight, 1e-3, what + " grad weight");
    expect_near_cpu(got.bias, want.bias, 1e-3, what + " grad bias");
    // The bias gradient alone.
    const ConvGrads bias_only =
        conv_backward(on_vk(x), on_vk(w), DynTensor(), on_vk(gy), p, {false, false, true});
    expect_near_cpu(bias_only.bias, want.bias, 1e-3, what + " grad bias alone");
    // The data gradient and the transposed convolution (the data gradient as a forward), both
    // as the implicit GEMM that GPUs take and as the direct loops of CPU devices.
    const char* before = std::getenv("EMBER_VULKAN_CONV_DATA");
    const std::string kept = before != nullptr ? before : "";
    for (const char* how : {"tiled", "direct"}) {
      setenv("EMBER_VULKAN_CONV_DATA", how, 1);
      expect_near_cpu(
          conv_backward(on_vk(x), on_vk(w), DynTensor(), on_vk(gy), p, {true, false, false}).input,
          want.input, 1e-4, what + " grad input " + how);
      if (k.groups == 1 && k.stride == 1) {
        expect_near_cpu(convolution(on_vk(gy), on_vk(w), DynTensor(), p, true),
                        convolution(gy, w, DynTensor(), p, true), 1e-4,
                        what + " transposed " + how);
      }
    }
    if (before != nullptr) {
      setenv("EMBER_VULKAN_CONV_DATA", kept.c_str(), 1);
    } else {
      unsetenv("EMBER_VULKAN_CONV_DATA");
    }
  }
  // A batch of zero images.
  ConvParams p;
  const DynTensor empty_x = zeros(Shape{0, 3, 5, 5}, DType::f32, vk());
  EXPECT_EQ(convolution(empty_x, on_vk(signed_input(Shape{2, 3, 3, 3}, 1)), DynTensor(), p, false)
                .shape(),
            (Shape{0, 2, 3, 3}));
  expect_no_validation_errors();
}

// The fused Adam step (adam.comp) against the Cpu's, plain, AdamW and amsgrad with L2 decay, in
// place (the optimizer's path) and as new tensors, to float32 rounding: compilers fuse
// multiply-adds differently (the Cpu's build with FMA differed by one ulp here), and a driver's
// division and sqrt may be 2.5 ulps off. Values are within 1 in magnitude.
TEST(Vulkan, Float32AdamStepIsTheCpus) {
  EMBER_REQUIRE_VULKAN();
  const double tol = 5e-7;
  const Shape shape{37, 29};  // past one workgroup, not a multiple of it
  uint64_t seed = 700;
  for (int variant = 0; variant < 3; ++variant) {
    AdamParams p;
    p.lr = 0.01;
    p.bias_correction1 = 1 - std::pow(0.9, 3);
    p.bias_correction2_sqrt = std::sqrt(1 - std::pow(0.999, 3));
    p.decoupled = variant == 1;
    p.weight_decay = variant == 0 ? 0.0 : variant == 1 ? 0.1 : 0.05;
    p.amsgrad = variant == 2;
    const std::string what = "variant " + std::to_string(variant);
    AdamTensors cpu{signed_input(shape, seed++), mul(signed_input(shape, seed++), 0.1),
                    mul(input(shape, seed++), 0.01),
                    p.amsgrad ? mul(input(shape, seed++), 0.01) : DynTensor()};
    const DynTensor grad = signed_input(shape, seed++);
    const AdamTensors want = adam_step(cpu, grad, p);
    AdamTensors gpu{on_vk(cpu.param), on_vk(cpu.exp_avg), on_vk(cpu.exp_avg_sq),
                    p.amsgrad ? on_vk(cpu.max_exp_avg_sq) : DynTensor()};
    const AdamTensors got = adam_step(gpu, on_vk(grad), p);
    expect_near_cpu(got.param, want.param, tol, what + " param");
    expect_near_cpu(got.exp_avg, want.exp_avg, tol, what + " exp_avg");
    expect_near_cpu(got.exp_avg_sq, want.exp_avg_sq, tol, what + " exp_avg_sq");
    if (p.amsgrad) expect_near_cpu(got.max_exp_avg_sq, want.max_exp_avg_sq, tol, what + " max");
    adam_step_in_place({gpu}, {on_vk(grad)}, {p});
    expect_near_cpu(gpu.param, want.param, tol, what + " param in place");
    expect_near_cpu(gpu.exp_avg, want.exp_avg, tol, what + " exp_avg in place");
    expect_near_cpu(gpu.exp_avg_sq, want.exp_avg_sq, tol, what + " exp_avg_sq in place");
    if (p.amsgrad) {
      expect_near_cpu(gpu.max_exp_avg_sq, want.max_exp_avg_sq, tol, what + " max in place");
    }
  }
  expect_no_validation_errors();
}

// Float16 convolution (cooperative matrices where the device has them, or their emulation under
// EMBER_VULKAN_COOPERATIVE=emulate, ctest's coop_emulated.; else in double) against float64 on
// the same float16 inputs: forward with bias and relu, and every gradient.
TEST(VulkanKernels, Float16ConvolutionMatchesFloat64) {
  EMBER_REQUIRE_VULKAN();
  const auto f16 = [](const DynTensor& t) { return cast(t, DType::f16); };
  const auto f64 = [](const DynTensor& t) { return cast(t, DType::f64); };
  // A float16 rounding of the result (2^-11 relative) and float32 sums.
  const auto check = [&](const DynTensor& got, const DynTensor& want, const std::string& what) {
    ASSERT_TRUE(got.defined()) << what;
    EXPECT_EQ(got.dtype(), DType::f16) << what;
    const DynTensor g = cast(on_cpu(got), DType::f64);
    EXPECT_LE(amax(div(abs(sub(g, want)), add(abs(want), 1e-2)), {}).item<double>(), 2e-3) << what;
  };
  uint64_t seed = 500;
  for (const ConvCase& k : conv_cases()) {
    ConvParams p = conv_params(k);
    const std::string what = to_string(k.x) + " * " + to_string(k.w);
    const DynTensor x = f16(signed_input(k.x, seed++)), w = f16(signed_input(k.w, seed++));
    const DynTensor b = f16(signed_input(Shape{k.w[0]}, seed++));
    p.relu = true;
    const DynTensor y = convolution(f64(x), f64(w), f64(b), p, false);
    check(convolution(on_vk(x), on_vk(w), on_vk(b), p, false), y, what + " relu");
    p.relu = false;
    const DynTensor gy = f16(signed_input(y.shape(), seed++));
    const ConvGrads want =
        conv_backward(f64(x), f64(w), DynTensor(), f64(gy), p, {true, true, true});
    const ConvGrads got =
        conv_backward(on_vk(x), on_vk(w), DynTensor(), on_vk(gy), p, {true, true, true});
    check(got.input, want.input, what + " grad input");
    check(got.weight, want.weight, what + " grad weight");
    check(got.bias, want.bias, what + " grad bias");
    // The fused relu's backward: grad_out masked by the output (the same float16 values).
    p.relu = true;
    const DynTensor y16 = f16(y);
    const ConvGrads want_relu =
        conv_backward(f64(x), f64(w), f64(y16), f64(gy), p, {true, true, true});
    const ConvGrads got_relu =
        conv_backward(on_vk(x), on_vk(w), on_vk(y16), on_vk(gy), p, {true, true, true});
    check(got_relu.input, want_relu.input, what + " relu grad input");
    check(got_relu.weight, want_relu.weight, what + " relu grad weight");
    check(got_relu.bias, want_relu.bias, what + " relu grad bias");
  }
  if (vulkan::cooperative_matrix(0) || vulkan::cooperative_matrix_emulated(0)) {
    // Two slices read ahead, a matmul's default, in the convolutions' own loads.
    setenv("EMBER_VULKAN_COOP_AHEAD", "2", 1);
    for (const ConvCase& k : conv_cases()) {
      const ConvParams p = conv_params(k);
      const DynTensor x = f16(signed_input(k.x, seed++)), w = f16(signed_input(k.w, seed++));
      const DynTensor y = convolution(f64(x), f64(w), DynTensor(), p, false);
      check(convolution(on_vk(x), on_vk(w), DynTensor(), p, false), y,
            to_string(k.x) + " * " + to_string(k.w) + " two slices ahead");
    }
    unsetenv("EMBER_VULKAN_COOP_AHEAD");
  }
  const char* coop = std::getenv("EMBER_VULKAN_COOPERATIVE");
  if (coop != nullptr && std::string(coop) == "emulate") {  // ctest's coop_emulated. run
    EXPECT_TRUE(vulkan::cooperative_matrix(0) || vulkan::cooperative_matrix_emulated(0));
  }
  expect_no_validation_errors();
}

struct PoolCase {
  Shape x;
  int spatial;
  int64_t kernel, stride, padding, dilation;
  bool ceil_mode, count_include_pad;
};

// Max pooling (with int64 and int32 indices), average pooling and the adaptive forms, forward
// and backward, against the Cpu: the same maxima, indices and gradients.
TEST(VulkanKernels, PoolingMatchesTheCpu) {
  EMBER_REQUIRE_VULKAN();
  const std::vector<PoolCase> cases = {
      {{2, 3, 26, 26}, 2, 2, 2, 0, 1, false, true},   // the Fashion-MNIST pool
      {{2, 2, 9, 11}, 2, 3, 2, 1, 1, true, false},    // padded, ceil mode, overlapping windows
      {{2, 2, 9, 11}, 2, 3, 2, 1, 1, false, true},    // counting the padding
      {{3, 13}, 1, 3, 1, 1, 2, false, true},          // 1-d, dilated, no batch dim
      {{1, 2, 6, 5, 7}, 3, 2, 1, 0, 1, false, true},  // 3-d, overlapping
  };
  uint64_t seed = 300;
  for (const PoolCase& k : cases) {
    PoolParams p;
    p.spatial = k.spatial;
    for (int i = 0; i < k.spatial; ++i) {
      p.kernel[i] = k.kernel;
      p.stride[i] = k.stride;
      p.padding[i] = k.padding;
      p.dilation[i] = k.dilation;
    }
    p.ceil_mode = k.ceil_mode;
    p.count_include_pad = k.count_include_pad;
    // Rounded to quarters: ties, which must go to the first maximum as on the Cpu.
    const DynTensor x = div(round(mul(signed_input(k.x, seed++), 4.0)), 4.0);
    const std::string what = to_string(k.x) + " kernel " + std::to_string(k.kernel);
    for (DType index_dtype : {DType::i64, DType::i32}) {
      const ValuesIndices want = max_pool(x, p, index_dtype);
      const ValuesIndices got = max_pool(on_vk(x), p, index_dtype);
      expect_near_cpu(got.values, want.values, 0.0, what + " max");
      EXPECT_EQ(cast(on_cpu(got.indices), DType::i64).to_vector<int64_t>(),
                cast(want.indices, DType::i64).to_vector<int64_t>())
          << what;
      const DynTensor gy = signed_input(want.values.shape(), seed++);
      expect_near_cpu(max_pool_backward(on_vk(gy), got.indices, x.shape(), p),
                      max_pool_backward(gy, want.indices, x.shape(), p), 1e-6, what + " max grad");
    }
    if (k.dilation == 1) {
      const DynTensor want = avg_pool(x, p);
      expect_near_cpu(avg_pool(on_vk(x), p), want, 1e-6, what + " avg");
      const DynTensor gy = signed_input(want.shape(), seed++);
      expect_near_cpu(avg_pool_backward(on_vk(gy), x.shape(), p),
                      avg_pool_backward(gy, x.shape(), p), 1e-6, what + " avg grad");
    }
  }
  // Adaptive pooling, down and up (windows that overlap and repeat).
  for (const Shape& out : {Shape{3, 4}, Shape{1, 1}, Shape{7, 9}}) {
    PoolParams p;
    p.adaptive = true;
    p.output_size[0] = out[0];
    p.output_size[1] = out[1];
    const DynTensor x = signed_input(Shape{2, 3, 5, 6}, seed++);
    Shape out_shape{2, 3, out[0], out[1]};
    const DynTensor want = avg_pool(x, p);
    expect_near_cpu(avg_pool(on_vk(x), p), want, 1e-6, "adaptive avg " + to_string(out));
    const DynTensor gy = signed_input(out_shape, seed++);
    expect_near_cpu(avg_pool_backward(on_vk(gy), x.shape(), p), avg_pool_backward(gy, x.shape(), p),
                    1e-6, "adaptive avg grad");
    const ValuesIndices mw = max_pool(x, p), mg = max_pool(on_vk(x), p);
    expect_near_cpu(mg.values, mw.values, 0.0, "adaptive max " + to_string(out));
    EXPECT_EQ(on_cpu(mg.indices).to_vector<int64_t>(), mw.indices.to_vector<int64_t>());
    expect_near_cpu(max_pool_backward(on_vk(gy), mg.indices, x.shape(), p),
                    max_pool_backward(gy, mw.indices, x.shape(), p), 1e-6, "adaptive max grad");
  }
  // NaN wins a window, as on the Cpu.
  const DynTensor nan_x = from_data(TensorData::from(
      std::vector<float>{1, std::numeric_limits<float>::quiet_NaN(), 3, 2}, Shape{1, 1, 2, 2}));
  PoolParams p2;
  p2.kernel[0] = p2.kernel[1] = 2;
  p2.stride[0] = p2.stride[1] = 2;
  const ValuesIndices n = max_pool(on_vk(nan_x), p2);
  EXPECT_TRUE(std::isnan(on_cpu(n.values).to_vector<float>()[0]));
  EXPECT_EQ(on_cpu(n.indices).to_vector<int64_t>()[0], 1);
  expect_no_validation_errors();
}

// gather, index_select, scatter (each reduction), scatter_add and index_add on 4- and 8-byte
// dtypes, with strided operands and repeated indices (the Cpu's sequential order).
TEST(VulkanKernels, GatherIndexSelectAndScatterMatchTheCpu) {
  EMBER_REQUIRE_VULKAN();
  Generator gen(7);
  for (DType dt :
       {DType::f32, DType::i32, DType::f64, DType::i64, DType::f16, DType::u8, DType::boolean}) {
    const std::string name(dtype_name(dt));
    const DynTensor x = cast(
        mul(dt == DType::u8 ? input(Shape{6, 7}, 11) : signed_input(Shape{6, 7}, 11), 50.0), dt);
    const DynTensor xt = transpose(x, 0, 1);          // strided [7, 6]
    const DynTensor xtv = transpose(on_vk(x), 0, 1);  // strided on the device too
    const DynTensor idx = randint(0, 6, Shape{7, 4}, DType::i64, Device::cpu(), &gen);
    EXPECT_EQ(on_cpu(gather(xtv, 1, on_vk(idx))).to_vector<double>(),
              gather(xt, 1, idx).to_vector<double>())
        << name;
    const DynTensor idx0 = randint(0, 7, Shape{3, 6}, DType::i64, Device::cpu(), &gen);
    EXPECT_EQ(on_cpu(gather(xtv, 0, on_vk(idx0))).to_vector<double>(),
              gather(xt, 0, idx0).to_vector<double>())
        << name;
    const DynTensor sel = from_data(TensorData::from(std::vector<int64_t>{5, 0, 5, 2}, Shape{4}));
    EXPECT_EQ(on_cpu(index_select(xtv, 1, on_vk(sel))).to_vector<double>(),
              index_select(xt, 1, sel).to_vector<double>())
        << name;
    // Scatters with repeated targets: the last write wins, sums add in index order.
    const DynTensor src = cast(mul(signed_input(Shape{7, 4}, 12), 9.0), dt);
    EXPECT_EQ(on_cpu(scatter(xtv, 1, on_vk(idx), on_vk(src))).to_vector<double>(),
              scatter(xt, 1, idx, src).to_vector<double>())
        << name;
    if (dt == DType::boolean) continue;  // the reductions below are arithmetic
    const double tol = dt == DType::f16 ? 1e-2 : (is_floating(dt) ? 1e-4 : 0.0);
    expect_near_cpu(scatter_add(xtv, 1, on_vk(idx), on_vk(src)), scatter_add(xt, 1, idx, src), tol,
                    name + " scatter_add");
    for (const char* r : {"prod", "amax", "amin"}) {
      expect_near_cpu(scatter_reduce(xtv, 1, on_vk(idx), on_vk(src), r),
                      scatter_reduce(xt, 1, idx, src, r), tol * 100, name + " " + r);
    }
    const DynTensor rows = cast(signed_input(Shape{4, 7}, 13), dt);
    expect_near_cpu(index_add(on_vk(x), 0, on_vk(sel), on_vk(rows)), index_add(x, 0, sel, rows),
                    tol, name + " index_add");
  }
  expect_no_validation_errors();
}

// An index out of range is found on the device and reported at the next synchronisation, naming
// the op and the value; the kernel skips it (no read out of bounds) and the device stays usable.
TEST(VulkanKernels, AnIndexOutOfRangeIsReportedAtSynchronisation) {
  EMBER_REQUIRE_VULKAN();
  const DynTensor x = on_vk(signed_input(Shape{3, 4}, 21));
  const DynTensor bad = on_vk(from_data(TensorData::from(std::vector<int64_t>{0, 9, 1}, Shape{3})));
  try {
    const DynTensor y = index_select(x, 1, bad);
    (void)on_cpu(y);
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("index_select"), std::string::npos) << msg;
    EXPECT_NE(msg.find("9"), std::string::npos) << msg;
  }
  const DynTensor negative =
      on_vk(from_data(TensorData::from(std::vector<int64_t>{-5, 1}, Shape{2, 1})));
  try {
    (void)on_cpu(gather(x, 1, negative));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("-5"), std::string::npos) << e.what();
  }
  // Good indices after the failures work, and so do many checks in a row (past the slots one
  // synchronisation reads back).
  const DynTensor good = on_vk(from_data(TensorData::from(std::vector<int64_t>{3, 0}, Shape{2})));
  DynTensor acc = zeros(Shape{3, 2}, DType::f32, vk());
  for (int i = 0; i < 300; ++i) acc = add(acc, index_select(x, 1, good));
  expect_near_cpu(acc, mul(index_select(on_cpu(x), 1, on_cpu(good)), 300.0), 1e-3, "300 checks");
  expect_no_validation_errors();
}

// int64 and float64 arithmetic, comparisons, where and strided copies, and casts between all
// nine dtypes, bit for bit the Cpu's.
TEST(VulkanKernels, SixtyFourBitOpsAndCastsMatchTheCpu) {
  EMBER_REQUIRE_VULKAN();
  const DynTensor a = mul(signed_input(Shape{5, 8}, 31), 1e6);
  const DynTensor b = mul(signed_input(Shape{8}, 32), 1e6);  // broadcast
  for (DType dt : {DType::i64, DType::f64}) {
    const std::string name(dtype_name(dt));
    const DynTensor x = cast(a, dt), y = cast(b, dt);
    const DynTensor xv = on_vk(x), yv = on_vk(y);
    for (auto [op, fn] :
         std::vector<std::pair<const char*, DynTensor (*)(const DynTensor&, const DynTensor&)>>{
             {"add", add},
             {"sub", sub},
             {"mul", mul},
             {"maximum", maximum},
             {"minimum", minimum}}) {
      EXPECT_EQ(on_cpu(fn(xv, yv)).to_vector<double>(), fn(x, y).to_vector<double>())
          << name << " " << op;
    }
    EXPECT_EQ(on_cpu(lt(xv, yv)).to_vector<bool>(), lt(x, y).to_vector<bool>()) << name;
    EXPECT_EQ(on_cpu(ne(transpose(xv, 0, 1), 3)).to_vector<bool>(),
              ne(transpose(x, 0, 1), 3).to_vector<bool>())
        << name;
    EXPECT_EQ(on_cpu(where(gt(xv, yv), xv, yv)).to_vector<double>(),
              where(gt(x, y), x, y).to_vector<double>())
        << name;
    EXPECT_EQ(on_cpu(contiguous(transpose(xv, 0, 1))).to_vector<double>(),
              contiguous(transpose(x, 0, 1)).to_vector<double>())
        << name;
  }
  EXPECT_EQ(on_cpu(div(on_vk(cast(a, DType::f64)), on_vk(cast(b, DType::f64)))).to_vector<double>(),
            div(cast(a, DType::f64), cast(b, DType::f64)).to_vector<double>());
  // Casts: integers past float32's precision and past int32's range, saturation, NaN and
  // infinities, negative zero, and halves.
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> values = {-3.7,  -2.5,     0.0,
                                      -0.0,  0.5,      1.5,
                                      127.9, 200.5,    -120.4,
                                      65520, 1e-8,     3e-5,
                                      1e10,  -3e9,     1e30,
                                      -1e30, 16777217, 9007199254740993.0,
                                      -inf,  inf,      std::numeric_limits<double>::quiet_NaN()};
  const std::vector<DType> types = {DType::f32, DType::i32,  DType::u8,  DType::i8, DType::boolean,
                                    DType::f16, DType::bf16, DType::i64, DType::f64};
  const int64_t n = static_cast<int64_t>(values.size());
  for (DType from : types) {
    const DynTensor src = cast(from_data(TensorData::from(values, Shape{n})), from);
    for (DType to : types) {
      if (dtype_size(from) != 8 && dtype_size(to) != 8) continue;  // vulkan_test has those
      const std::string what = std::string(dtype_name(from)) + " -> " + std::string(dtype_name(to));
      const std::vector<double> want = cast(cast(src, to), DType::f64).to_vector<double>();
      const std::vector<double> got =
          cast(on_cpu(cast(on_vk(src), to)), DType::f64).to_vector<double>();
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_TRUE(got[i] == want[i] || (std::isnan(got[i]) && std::isnan(want[i])))
            << what << ": " << values[i] << " gave " << got[i] << ", the Cpu " << want[i];
        if (got[i] == 0 && want[i] == 0) {
          EXPECT_EQ(std::signbit(got[i]), std::signbit(want[i])) << what;
        }
      }
    }
  }
  expect_no_validation_errors();
}

// sum, prod, mean, amax, amin, all and any over dims of every dtype, in the Cpu's result dtypes.
TEST(VulkanKernels, ReductionsOfEveryDtypeMatchTheCpu) {
  EMBER_REQUIRE_VULKAN();
  const DynTensor base = mul(signed_input(Shape{4, 300}, 41), 5.0);
  for (DType dt : {DType::f32, DType::i32, DType::u8, DType::i8, DType::boolean, DType::f16,
                   DType::bf16, DType::i64, DType::f64}) {
    const std::string name(dtype_name(dt));
    const DynTensor x = cast(dt == DType::u8 ? abs(base) : base, dt);
    const DynTensor xt = transpose(x, 0, 1);         // strided
    const DynTensor xv = transpose(on_vk(x), 0, 1);  // strided on the device too
    const double tol = dt == DType::f16 || dt == DType::bf16 ? 1.0 : 1e-3;
    expect_near_cpu(sum(xv, {0}), sum(xt, {0}), tol, name + " sum");
    expect_near_cpu(sum(xv, {}), sum(xt, {}), tol * 10, name + " sum of all");
    expect_near_cpu(amax(xv, {0}), amax(xt, {0}), 0.0, name + " amax");
    expect_near_cpu(amin(xv, {1}), amin(xt, {1}), 0.0, name + " amin");
    EXPECT_EQ(on_cpu(all(xv, {0})).to_vector<bool>(), all(xt, {0}).to_vector<bool>()) << name;
    EXPECT_EQ(on_cpu(any(xv, {1})).to_vector<bool>(), any(xt, {1}).to_vector<bool>()) << name;
    const DynTensor small = narrow(xt, 0, 0, 3);  // products that stay in range
    if (dt != DType::boolean) {
      expect_near_cpu(prod(narrow(xv, 0, 0, 3), {0}), prod(small, {0}),
                      is_floating(dt) ? 1e-2 : 0.0, name + " prod");
    }
    if (is_floating(dt)) expect_near_cpu(mean(xv, {0}), mean(xt, {0}), tol, name + " mean");
  }
  expect_no_validation_errors();
}

// Edge values of the double math and of the SVD, as the Cpu's: expm1 near its overflow, 1 to a
// NaN power, and a batch of matrices one of which holds a NaN (its factors all NaN, the other's
// the Cpu's).
TEST(VulkanKernels, EdgeValuesAsTheCpu) {
  EMBER_REQUIRE_VULKAN();
  const DynTensor big =
      from_data(TensorData::from(std::vector<double>{709.5, 709.7, -800}, Shape{3}));
  expect_near_cpu(expm1(on_vk(big)), expm1(big), 1e-12 * 1.4e308, "expm1 near overflow");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const DynTensor one = full(Shape{1}, 1.0, DType::f64, Device::cpu());
  const DynTensor nan_t = full(Shape{1}, nan, DType::f64, Device::cpu());
  EXPECT_EQ(on_cpu(pow(on_vk(one), on_vk(nan_t))).item<double>(), 1.0);
  std::vector<double> d(24);
  for (int i = 0; i < 24; ++i) d[static_cast<size_t>(i)] = i == 5 ? nan : std::sin(i);
  const DynTensor a = from_data(TensorData::from(d, Shape{2, 4, 3}));
  const linalg::SVD got = linalg::svd(on_vk(a), true), want = linalg::svd(a, true);
  const std::vector<double> u = on_cpu(got.U).to_vector<double>();
  for (size_t i = 0; i < 16; ++i) EXPECT_TRUE(std::isnan(u[i])) << "U of the NaN matrix, " << i;
  // The finite matrix: the Cpu's singular values, and its factors multiply back to it (this
  // one's smallest singular vector is too sensitive to compare with the Cpu's digit for digit).
  expect_near_cpu(select(got.S, 0, 1), select(want.S, 0, 1), 1e-12, "S of the finite matrix");
  const DynTensor u3 = narrow(select(on_cpu(got.U), 0, 1), 1, 0, 3);
  const DynTensor back = matmul(mul(u3, select(on_cpu(got.S), 0, 1)), select(on_cpu(got.Vh), 0, 1));
  EXPECT_LE(max_abs_diff(back, select(a, 0, 1)), 1e-12);
  expect_no_validation_errors();
}

}  // namespace
}  // namespace ember
