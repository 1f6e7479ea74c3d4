// nn::batch_norm's fused training node (src/nn/norm.cpp) against the composite formula in
// float64 on data far from zero: the output and the gradients of input, weight and bias.
#include <gtest/gtest.h>

#include <ember/ember.hpp>
#include <ember/nn/nn.hpp>
#include <ember/tensor/autocast.hpp>
#include <ember/tensor/device_graph.hpp>
#include <optional>

#include "tensor/test_util.hpp"

using namespace ember;
using namespace ember::test;

static void matches_float64_composite(Layout layout);
static void sixteen_bit_input_under_autocast(Layout layout, const Shape& s);

// Training-mode batch_norm (the fused node) in f32 on data far from zero, against the composite
// formula in f64: the output and the gradients of input, weight and bias.
// A channels-last input (a Cuda 16-bit convolution's output) too, which the output keeps where
// the backend's Norm kernels read that layout.
TEST(BatchNormFused, MatchesFloat64Composite) {
  for (Layout layout : {Layout::Contiguous, Layout::ChannelsLast}) {
    SCOPED_TRACE(layout_name(layout));
    matches_float64_composite(layout);
  }
}

static void matches_float64_composite(Layout layout) {
  const Shape s{4, 3, 5, 6};
  const DynTensor x64 = make_input(s, DType::f64, layout, 40, 40.5, 41);
  const DynTensor w64 = make_input(Shape{3}, DType::f64, Layout::Contiguous, 0.5, 1.5, 42);
  const DynTensor b64 = make_input(Shape{3}, DType::f64, Layout::Contiguous, -1, 1, 43);
  const DynTensor g64 = make_input(s, DType::f64, Layout::Contiguous, -1, 1, 44);
  auto run = [&](DType dt, bool composite) {
    DynTensor x = require_grad(cast(x64, dt)), w = require_grad(cast(w64, dt)),
              b = require_grad(cast(b64, dt));
    DynTensor y;
    if (composite) {
      const Dims dims{0, 2, 3};
      const DynTensor mu = mean(x, dims, true), xc = sub(x, mu);
      const DynTensor xhat = mul(xc, rsqrt(add(mean(square(xc), dims, true), 1e-5)));
      y = add(mul(xhat, reshape(w, Shape{3, 1, 1})), reshape(b, Shape{3, 1, 1}));
    } else {
      y = nn::batch_norm(x, {}, {}, w, b, true).y;
    }
    Gradients grads = backward(sum(mul(y, cast(g64, dt))));
    return std::vector<DynTensor>{y, grads.get(x), grads.get(w), grads.get(b)};
  };
  const auto want = run(DType::f64, true);
  const auto got = run(DType::f32, false);
  if (layout == Layout::ChannelsLast && got[0].device().type == DeviceType::Cuda) {
    EXPECT_TRUE(got[0].raw().is_channels_last());
    EXPECT_TRUE(got[1].raw().is_channels_last());
  }
  const char* names[] = {"y", "dx", "dw", "db"};
  const double atol[] = {2e-4, 2e-2, 2e-3, 1e-4};  // dx ~ invstd (about 7) times O(1) terms
  for (size_t i = 0; i < 4; ++i) {
    const Host h = Host::of(want[i]);
    expect_close(got[i], h.shape, h.v, Tol{1e-4, atol[i]}, names[i]);
  }
  // f64 fused against f64 composite: the same to rounding.
  const auto got64 = run(DType::f64, false);
  for (size_t i = 0; i < 4; ++i) {
    const Host h = Host::of(want[i]);
    expect_close(got64[i], h.shape, h.v, Tol{1e-9, 1e-9}, std::string(names[i]) + " f64");
  }
}

// Under bf16 autocast batch_norm keeps the 16-bit input's type (as PyTorch; the statistics and
// coefficients are f32 inside): y and dx bf16, dw and db f32 like the weights, all against the
// f64 composite on the same bf16-rounded input.
TEST(BatchNormFused, SixteenBitInputUnderAutocast) {
  for (Layout layout : {Layout::Contiguous, Layout::ChannelsLast}) {
    SCOPED_TRACE(layout_name(layout));
    sixteen_bit_input_under_autocast(layout, Shape{4, 3, 5, 6});
    sixteen_bit_input_under_autocast(layout, Shape{2, 16, 5, 3});  // 16-byte channel packs
  }
}

static void sixteen_bit_input_under_autocast(Layout layout, const Shape& s) {
  const int64_t c = s[1];
  const DynTensor x16 = cast(make_input(s, DType::f64, layout, -2, 3, 51), DType::bf16);
  const DynTensor w64 = make_input(Shape{c}, DType::f64, Layout::Contiguous, 0.5, 1.5, 52);
  const DynTensor b64 = make_input(Shape{c}, DType::f64, Layout::Contiguous, -1, 1, 53);
  const DynTensor g64 = make_input(s, DType::f64, Layout::Contiguous, -1, 1, 54);
  std::vector<DynTensor> got;
  {
    const DynTensor x = require_grad(x16), w = require_grad(cast(w64, DType::f32)),
                    b = require_grad(cast(b64, DType::f32));
    auto amp = autocast(default_device(), DType::bf16);
    const DynTensor y = nn::batch_norm(x, {}, {}, w, b, true).y;
    Gradients grads = backward(sum(mul(y, cast(g64, DType::bf16))));
    got = {y, grads.get(x), grads.get(w), grads.get(b)};
  }
  const DType want_types[] = {DType::bf16, DType::bf16, DType::f32, DType::f32};
  const DynTensor x = require_grad(cast(x16, DType::f64)), w = require_grad(w64),
                  b = require_grad(b64);
  const Dims dims{0, 2, 3};
  const DynTensor mu = mean(x, dims, true), xc = sub(x, mu);
  const DynTensor xhat = mul(xc, rsqrt(add(mean(square(xc), dims, true), 1e-5)));
  const DynTensor y = add(mul(xhat, reshape(w, Shape{c, 1, 1})), reshape(b, Shape{c, 1, 1}));
  Gradients grads = backward(sum(mul(y, cast(cast(g64, DType::bf16), DType::f64))));
  const std::vector<DynTensor> want = {y, grads.get(x), grads.get(w), grads.get(b)};
  const char* names[] = {"y", "dx", "dw", "db"};
  const double atol[] = {3e-2, 3e-2, 2e-3, 1e-4};  // y and dx rounded to bf16 (8 bits)
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(got[i].dtype(), want_types[i]) << names[i];
    const Host h = Host::of(want[i]);
    expect_close(got[i], h.shape, h.v, Tol{1e-2, atol[i]}, names[i]);
  }
}

// A bf16 BatchNorm2d without autocast keeps bf16 everywhere: the running statistics after a
// training step (f32 inside, stored in the buffers' dtype) and the evaluation output whether or
// not the call is recorded.
TEST(BatchNormFused, SixteenBitModuleKeepsItsDtypes) {
  nn::BatchNorm2d bn(nn::BatchNormConfig(3), default_device());
  bn.to(DType::bf16);
  const DynTensor x =
      cast(make_input(Shape{4, 3, 5, 6}, DType::f64, Layout::Contiguous, -2, 3, 61), DType::bf16);
  (void)bn.forward(x);
  EXPECT_EQ(bn.running_mean->dyn().dtype(), DType::bf16);
  EXPECT_EQ(bn.running_var->dyn().dtype(), DType::bf16);
  bn.mode.training = false;
  EXPECT_EQ(bn.forward(x).dtype(), DType::bf16);  // recorded: the weights require grad
  auto off = no_grad();
  EXPECT_EQ(bn.forward(x).dtype(), DType::bf16);
}

// The running statistics and the batch count are updated in place (PyTorch's behaviour), so a
// training step captured in a DeviceGraph keeps updating the module's own buffers: three eager
// steps and one eager step, a capture and two replays leave the same statistics, in the buffers
// the module held from the start.
TEST(BatchNormFused, RunningStatisticsUpdatedInPlace) {
  const Device dev = default_device();
  for (std::optional<double> momentum : {std::optional<double>(0.1), std::optional<double>()}) {
    nn::BatchNorm2d eager(nn::BatchNormConfig(3).with_momentum(momentum), dev);
    nn::BatchNorm2d graphed(nn::BatchNormConfig(3).with_momentum(momentum), dev);
    const void* mean_at = graphed.running_mean->dyn().raw().data();
    const void* count_at = graphed.num_batches_tracked->dyn().raw().data();
    auto batch = [&](int k) {
      return make_input(Shape{4, 3, 5, 6}, DType::f32, Layout::Contiguous, -2, 3,
                        70 + static_cast<uint64_t>(k));
    };
    for (int k = 0; k < 4; ++k) (void)eager.forward(batch(k));
    (void)graphed.forward(batch(0));  // the warm-up
    const DynTensor x = clone(batch(1));
    DynTensor y;
    DeviceGraph g(dev);
    g.capture([&] { y = graphed.forward(x); });
    if (g.recorded()) g.replay();  // a recording runs nothing: this is step 2
    for (int k = 2; k < 4; ++k) {
      copy_into(x, batch(k));
      g.replay();
    }
    EXPECT_EQ(graphed.running_mean->dyn().raw().data(), mean_at);
    EXPECT_EQ(graphed.num_batches_tracked->dyn().raw().data(), count_at);
    EXPECT_EQ(graphed.num_batches_tracked->dyn().item<int64_t>(), 4);
    EXPECT_LT(max_abs_diff(graphed.running_mean->dyn(), eager.running_mean->dyn()), 1e-6);
    EXPECT_LT(max_abs_diff(graphed.running_var->dyn(), eager.running_var->dyn()), 1e-6);
  }
}
