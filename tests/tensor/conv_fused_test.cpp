// The fused paths of convolution: a relu fused into the forward pass (ConvParams::relu,
// conv2d(..., relu), ConvConfig::relu) against relu() applied after an unfused conv, values and
// gradients, on every kernel path (oneDNN blocked and plain layouts, the GEMM path in f64,
// half types through f32); and the bias gradient written by the weight gradient's pass against
// a plain sum.
#include <cmath>
#include <functional>
#include <string>

#include "ember/nn/conv.hpp"
#include "test_util.hpp"

namespace ember::test {
namespace {

struct FusedCase {
  Shape x, w;
  SpatialArg stride = {1}, padding = {0};
  int64_t groups = 1;
};

// Blocked oneDNN layouts (16 channels), a first layer (1 and 3 channels: plain layouts or a
// direct kernel), grouped and strided, and a 1-d case.
const std::vector<FusedCase>& fused_cases() {
  static const std::vector<FusedCase> cases = {
      {Shape{4, 16, 12, 11}, Shape{24, 16, 3, 3}, {1}, {1}},
      {Shape{5, 1, 28, 28}, Shape{32, 1, 3, 3}},
      {Shape{3, 3, 17, 13}, Shape{8, 3, 3, 3}, {1}, {1}},
      {Shape{2, 8, 9, 10}, Shape{8, 2, 3, 3}, {2}, {1}, 4},
      {Shape{2, 6, 21}, Shape{5, 6, 4}, {1}, {2}},
  };
  return cases;
}

DynTensor conv_any(const FusedCase& c, const DynTensor& x, const DynTensor& w, const DynTensor& b,
                   bool relu) {
  if (c.x.rank() == 3) return conv1d(x, w, b, c.stride, c.padding, {1}, c.groups, relu);
  return conv2d(x, w, b, c.stride, c.padding, {1}, c.groups, relu);
}

// The case's geometry as the primitives take it.
ConvParams params_of(const FusedCase& c) {
  ConvParams p;
  p.spatial = c.x.rank() - 2;
  for (int i = 0; i < p.spatial; ++i) {
    p.stride[i] = c.stride[0];
    p.padding[i] = c.padding[0];
  }
  p.groups = c.groups;
  return p;
}

// The largest |a - b| and (in *scale) the largest |b|.
double worst_gap(const DynTensor& a, const DynTensor& b, double* scale) {
  const std::vector<double> va = a.to_vector<double>(), vb = b.to_vector<double>();
  EXPECT_EQ(va.size(), vb.size());
  double worst = 0;
  *scale = 0;
  for (size_t i = 0; i < va.size() && i < vb.size(); ++i) {
    worst = std::max(worst, std::fabs(va[i] - vb[i]));
    *scale = std::max(*scale, std::fabs(vb[i]));
  }
  return worst;
}

TEST(ConvFused, ReluMatchesReluAfterConvWithGradients) {
  uint32_t seed = 4100;
  for (DType dtype : {DType::f32, DType::f64, DType::bf16}) {
    const double rel = dtype == DType::f64 ? 1e-12 : dtype == DType::f32 ? 2e-5 : 2e-2;
    for (const FusedCase& c : fused_cases()) {
      const std::string what =
          std::string(dtype_name(dtype)) + " x " + to_string(c.x) + " w " + to_string(c.w);
      const DynTensor x0 = make_input(c.x, dtype, Layout::Contiguous, -2, 2, seed++);
      const DynTensor w0 = make_input(c.w, dtype, Layout::Contiguous, -1, 1, seed++);
      const DynTensor b0 = make_input(Shape{c.w[0]}, dtype, Layout::Contiguous, -1, 1, seed++);
      auto run = [&](bool fused) {
        const DynTensor x = require_grad(x0), w = require_grad(w0), b = require_grad(b0);
        const DynTensor y = fused ? conv_any(c, x, w, b, true) : relu(conv_any(c, x, w, b, false));
        const DynTensor g = make_input(y.shape(), dtype, Layout::Contiguous, -1, 1, 77);
        std::vector<DynTensor> out = grad(y, {x, w, b}, g);
        out.insert(out.begin(), y);
        return out;
      };
      const std::vector<DynTensor> fused = run(true), plain = run(false);
      const char* names[] = {"output", "grad input", "grad weight", "grad bias"};
      for (size_t i = 0; i < 4; ++i) {
        double scale = 0;
        const double gap = worst_gap(fused[i], plain[i], &scale);
        EXPECT_LE(gap, rel * (1 + scale)) << what << " " << names[i];
      }
      // The output really is rectified (and not all zero).
      const std::vector<double> y = fused[0].to_vector<double>();
      EXPECT_GT(*std::max_element(y.begin(), y.end()), 0.0) << what;
      EXPECT_EQ(*std::min_element(y.begin(), y.end()), 0.0) << what;
    }
  }
}

// The typed wrappers take the same relu flag as the DynTensor ops (conv2d's once lacked it).
TEST(ConvFused, TypedWrappersTakeTheReluFlag) {
  Generator gen(41);
  const auto x = Tensor<4>::randn({2, 3, 6, 6}, default_device(), &gen);
  const auto w = Tensor<4>::randn({4, 3, 3, 3}, default_device(), &gen);
  const auto b = Tensor<1>::randn({4}, default_device(), &gen);
  EXPECT_TRUE(allclose(conv2d(x, w, b, {1}, {1}, {1}, 1, true).dyn(),
                       relu(conv2d(x, w, b, {1}, {1})).dyn()));
  const auto x1 = Tensor<3>::randn({2, 3, 9}, default_device(), &gen);
  const auto w1 = Tensor<3>::randn({4, 3, 3}, default_device(), &gen);
  EXPECT_TRUE(allclose(conv1d(x1, w1, {}, {2}, {0}, {1}, 1, true).dyn(),
                       relu(conv1d(x1, w1, {}, {2})).dyn()));
  const auto x3 = Tensor<5>::randn({1, 2, 4, 4, 4}, default_device(), &gen);
  const auto w3 = Tensor<5>::randn({3, 2, 2, 2, 2}, default_device(), &gen);
  EXPECT_TRUE(
      allclose(conv3d(x3, w3, {}, {1}, {0}, {1}, 1, true).dyn(), relu(conv3d(x3, w3)).dyn()));
}

// What convolution runs for p.relu on a backend without OpFamily::ConvRelu (conv, then relu,
// each recorded) against the fused pass, values and gradients: both paths stay tested.
TEST(ConvFused, ReluCompositeMatchesTheFusedPass) {
  uint32_t seed = 4700;
  for (DType dtype : {DType::f32, DType::f64}) {
    const double rel = dtype == DType::f64 ? 1e-12 : 2e-5;
    for (const FusedCase& c : fused_cases()) {
      const DynTensor x0 = make_input(c.x, dtype, Layout::Contiguous, -2, 2, seed++);
      const DynTensor w0 = make_input(c.w, dtype, Layout::Contiguous, -1, 1, seed++);
      const DynTensor b0 = make_input(Shape{c.w[0]}, dtype, Layout::Contiguous, -1, 1, seed++);
      ConvParams p = params_of(c);
      p.relu = true;
      auto run = [&](bool composite) {
        const DynTensor x = require_grad(x0), w = require_grad(w0), b = require_grad(b0);
        const DynTensor y =
            composite ? detail::conv_relu_composite(x, w, b, p) : convolution(x, w, b, p, false);
        const DynTensor g = make_input(y.shape(), dtype, Layout::Contiguous, -1, 1, 78);
        std::vector<DynTensor> out = grad(y, {x, w, b}, g);
        out.insert(out.begin(), y);
        return out;
      };
      const std::vector<DynTensor> fused = run(false), composite = run(true);
      const char* names[] = {"output", "grad input", "grad weight", "grad bias"};
      for (size_t i = 0; i < 4; ++i) {
        double scale = 0;
        const double gap = worst_gap(composite[i], fused[i], &scale);
        EXPECT_LE(gap, rel * (1 + scale))
            << dtype_name(dtype) << " x " << to_string(c.x) << " " << names[i];
      }
    }
  }
}

// The one-call backward (conv_backward: what the rule runs when the backward is not recorded)
// against the composite of differentiable ops the rule records under create_graph, for every
// subset of wanted gradients and with and without the relu mask.
TEST(ConvFused, OneCallBackwardMatchesTheComposite) {
  uint32_t seed = 4500;
  for (DType dtype : {DType::f32, DType::f64}) {
    const double rel = dtype == DType::f64 ? 1e-12 : 2e-5;
    for (const FusedCase& c : fused_cases()) {
      for (const bool relu : {false, true}) {
        const DynTensor x0 = make_input(c.x, dtype, Layout::Contiguous, -2, 2, seed++);
        const DynTensor w0 = make_input(c.w, dtype, Layout::Contiguous, -1, 1, seed++);
        const DynTensor b0 = make_input(Shape{c.w[0]}, dtype, Layout::Contiguous, -1, 1, seed++);
        const DynTensor x = require_grad(x0), w = require_grad(w0), b = require_grad(b0);
        const DynTensor y = conv_any(c, x, w, b, relu);
        const DynTensor g = make_input(y.shape(), dtype, Layout::Contiguous, -1, 1, seed++);
        BackwardOptions recorded;
        recorded.create_graph = true;
        const std::vector<DynTensor> want = grad(y, {x, w, b}, g, recorded);
        ConvParams p = params_of(c);
        p.relu = relu;
        for (int mask = 1; mask < 8; ++mask) {
          const std::array<bool, 3> need = {(mask & 1) != 0, (mask & 2) != 0, (mask & 4) != 0};
          const ConvGrads got = conv_backward(x0, w0, relu ? detach(y) : DynTensor(), g, p, need);
          const DynTensor* parts[] = {&got.input, &got.weight, &got.bias};
          const std::string what = std::string(dtype_name(dtype)) + " x " + to_string(c.x) +
                                   (relu ? " relu" : "") + " need " + std::to_string(mask);
          for (size_t i = 0; i < 3; ++i) {
            ASSERT_EQ(parts[i]->defined(), need[i]) << what << " part " << i;
            if (!need[i]) continue;
            double scale = 0;
            const double gap = worst_gap(*parts[i], want[i], &scale);
            EXPECT_LE(gap, rel * (1 + scale)) << what << " part " << i;
          }
        }
      }
    }
  }
}

// The weight gradient reuses the blocked copy its forward made of the input: only of that very
// tensor. Two forwards over other inputs of the same shape, and an input freed and replaced by
// one likely to get its buffer back, must not be taken for it.
TEST(ConvFused, WeightGradientUsesOnlyItsOwnInputsBlockedCopy) {
  const Shape xs{4, 16, 12, 11}, ws{24, 16, 3, 3};
  ConvParams p;
  p.padding[0] = p.padding[1] = 1;
  const DynTensor w = make_input(ws, DType::f32, Layout::Contiguous, -1, 1, 61);
  const DynTensor g = make_input(Shape{4, 24, 12, 11}, DType::f32, Layout::Contiguous, -1, 1, 62);
  auto want_for = [&](const DynTensor& x) {
    return conv_backward_weight(cast(x, DType::f64), cast(g, DType::f64), ws, p);
  };
  auto check = [&](const DynTensor& got, const DynTensor& want, const char* what) {
    double scale = 0;
    const double gap = worst_gap(got, want, &scale);
    EXPECT_LE(gap, 2e-5 * (1 + scale)) << what;
  };
  const DynTensor x1 = make_input(xs, DType::f32, Layout::Contiguous, -2, 2, 63);
  const DynTensor x2 = make_input(xs, DType::f32, Layout::Contiguous, -2, 2, 64);
  const DynTensor x1w = require_grad(w);
  const DynTensor y1 = convolution(x1, x1w, {}, p, false);
  const DynTensor y2 = convolution(x2, w, {}, p, false);  // a later forward, same shapes
  check(grad(y1, {x1w}, g)[0], want_for(x1), "first input after a second forward");
  check(conv_backward_weight(x2, g, ws, p), want_for(x2), "second input");
  {
    const DynTensor x3 = make_input(xs, DType::f32, Layout::Contiguous, -2, 2, 65);
    (void)convolution(x3, w, {}, p, false);
  }  // x3 and its buffer are gone
  const DynTensor x4 = make_input(xs, DType::f32, Layout::Contiguous, -2, 2, 66);
  check(conv_backward_weight(x4, g, ws, p), want_for(x4), "a new input in a freed buffer");
}

// A weight nothing trains (ConvParams::constant_weight) may be kept in the backend's layout
// across calls: every later weight must still be read, whether it is a new tensor in a freed
// buffer, another slice of the same storage, the same weight trained under grad mode, or a
// weight in a second model of the same shapes.
TEST(ConvFused, KeptWeightsFollowTheirTensors) {
  const Shape xs{2, 16, 10, 9}, ws{24, 16, 3, 3};
  ConvParams p;
  p.padding[0] = p.padding[1] = 1;
  const DynTensor x = make_input(xs, DType::f32, Layout::Contiguous, -2, 2, 71);
  auto check = [&](const DynTensor& w, const std::string& what) {
    const DynTensor got = convolution(x, w, {}, p, false);
    const DynTensor want = convolution(cast(x, DType::f64), cast(w, DType::f64), {}, p, false);
    double scale = 0;
    const double gap = worst_gap(got, want, &scale);
    EXPECT_LE(gap, 2e-5 * (1 + scale)) << what;
  };
  auto guard = no_grad();
  for (uint32_t i = 0; i < 4; ++i) {  // new weights, likely in the buffer the last one freed
    const DynTensor w = make_input(ws, DType::f32, Layout::Contiguous, -1, 1, 72 + i);
    check(w, "weight " + std::to_string(i));
    check(w, "weight " + std::to_string(i) + " again");
  }
  // Two slices of one storage: the same shape at different offsets.
  const DynTensor both = make_input(Shape{48, 16, 3, 3}, DType::f32, Layout::Contiguous, -1, 1, 80);
  check(slice(both, 0, 0, 24), "first slice");
  check(slice(both, 0, 24, 48), "second slice");
  check(slice(both, 0, 0, 24), "first slice again");
  // A weight trained (recorded) between two inference calls: each call reads its tensor.
  DynTensor w = make_input(ws, DType::f32, Layout::Contiguous, -1, 1, 81);
  check(w, "before a step");
  {
    auto on = enable_grad();
    DynTensor wt = require_grad(w);
    const DynTensor loss = sum(convolution(x, wt, {}, p, false));
    w = detach(sub(wt, mul(grad(loss, {wt})[0], 0.1)));
  }
  check(w, "after a step");
}

// The new entry points' bad input: one clear error naming the op and the values.
TEST(ConvFused, ErrorsNameTheOpAndTheShapes) {
  const DynTensor x = make_input(Shape{2, 3, 6, 6}, DType::f32, Layout::Contiguous, -1, 1, 1);
  const DynTensor w = make_input(Shape{4, 3, 3, 3}, DType::f32, Layout::Contiguous, -1, 1, 2);
  const DynTensor g = make_input(Shape{2, 4, 4, 4}, DType::f32, Layout::Contiguous, -1, 1, 3);
  ConvParams p;
  auto message = [](const std::function<void()>& fn) {
    try {
      fn();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string wrong_grad = message([&] {
    conv_backward(x, w, {}, narrow(g, 1, 0, 3), p, {true, true, true});
  });
  EXPECT_NE(wrong_grad.find("[conv_backward]"), std::string::npos) << wrong_grad;
  EXPECT_NE(wrong_grad.find("[2, 3, 4, 4]"), std::string::npos) << wrong_grad;
  p.relu = true;
  const std::string no_y = message([&] { conv_backward(x, w, {}, g, p, {false, true, false}); });
  EXPECT_NE(no_y.find("fused relu needs the convolution's output"), std::string::npos) << no_y;
  PoolParams pp;
  pp.kernel[0] = pp.kernel[1] = pp.stride[0] = pp.stride[1] = 2;
  const std::string bad_index = message([&] { max_pool(x, pp, DType::f32); });
  EXPECT_NE(bad_index.find("[max_pool2d] indices are i64 or i32"), std::string::npos) << bad_index;
}

// relu(NaN) stays NaN, as relu(): a NaN input poisons its windows in the fused output too.
TEST(ConvFused, ReluKeepsNaN) {
  for (DType dtype : {DType::f32, DType::f64}) {
    std::vector<double> v(2 * 1 * 6 * 6, 0.5);
    v[7] = NAN;
    const DynTensor x = cast(from_data(TensorData::from(v, Shape{2, 1, 6, 6})), dtype);
    const DynTensor w = cast(
        from_data(TensorData::from(std::vector<double>(4 * 9, -1.0), Shape{4, 1, 3, 3})), dtype);
    const std::vector<double> y = conv2d(x, w, {}, {1}, {0}, {1}, 1, true).to_vector<double>();
    int nans = 0, zeros = 0;
    for (double e : y) {
      nans += std::isnan(e);
      zeros += e == 0.0;
    }
    // x[0, 0, 1, 1] is in 4 windows of image 0, for each of 4 output channels; the rest of the
    // outputs are -4.5 rectified to 0.
    EXPECT_EQ(nans, 16) << dtype_name(dtype);
    EXPECT_EQ(zeros, int(y.size()) - 16) << dtype_name(dtype);
  }
}

// conv_backward_weight with a bias gradient: the same weight gradient as without, and a bias
// gradient equal to the sum over images and positions.
TEST(ConvFused, BiasGradientBesideWeightGradient) {
  uint32_t seed = 4300;
  for (DType dtype : {DType::f32, DType::f64, DType::f16}) {
    const double rel = dtype == DType::f16 ? 1e-2 : dtype == DType::f32 ? 1e-5 : 1e-12;
    for (const FusedCase& c : fused_cases()) {
      const std::string what = std::string(dtype_name(dtype)) + " x " + to_string(c.x);
      const DynTensor x = make_input(c.x, dtype, Layout::Contiguous, -1, 1, seed++);
      const DynTensor y =
          conv_any(c, x, make_input(c.w, dtype, Layout::Contiguous, -1, 1, 5), {}, false);
      const DynTensor g = make_input(y.shape(), dtype, Layout::Contiguous, -1, 1, seed++);
      const ConvParams p = params_of(c);
      DynTensor gb;
      const DynTensor gw = conv_backward_weight(x, g, c.w, p, &gb);
      const DynTensor gw_alone = conv_backward_weight(x, g, c.w, p);
      Dims dims = {0};
      for (int i = 2; i < g.rank(); ++i) dims.push_back(i);
      const DynTensor want_b = sum(cast(g, DType::f64), dims);
      ASSERT_EQ(to_string(gb.shape()), to_string(Shape{c.w[0]})) << what;
      EXPECT_EQ(gb.dtype(), dtype) << what;
      double scale = 0;
      const double gap_w = worst_gap(gw, gw_alone, &scale);
      EXPECT_LE(gap_w, rel * (1 + scale)) << what << " weight";
      const double gap_b = worst_gap(gb, want_b, &scale);
      EXPECT_LE(gap_b, rel * (1 + scale)) << what << " bias";
    }
  }
}

TEST(ConvFused, ConvLayerConfig) {
  Generator gen(3);
  const nn::Conv2d fused(nn::Conv2dConfig(2, 4, {3}).relu(true), default_device(), &gen);
  EXPECT_TRUE(fused.relu);
  const DynTensor x = make_input(Shape{2, 2, 7, 7}, DType::f32, Layout::Contiguous, -2, 2, 9);
  nn::Conv2d plain = fused;
  plain.relu = false;
  double scale = 0;
  const double gap = worst_gap(fused.forward(x), relu(plain.forward(x)), &scale);
  EXPECT_LE(gap, 1e-5 * (1 + scale));
  // JSON keeps the flag; configs without it read as before.
  const std::string json = nn::Conv2dConfig(2, 4, {3}).relu(true).to_json();
  EXPECT_NE(json.find("\"relu\": true"), std::string::npos) << json;
  EXPECT_TRUE(nn::ConvConfig::from_json(json).relu_);
  EXPECT_EQ(nn::Conv2dConfig(2, 4, {3}).to_json().find("relu"), std::string::npos);
  EXPECT_THROW(nn::ConvTranspose2d(nn::ConvConfig(2, 4, {3}).relu(true)), Error);
}

}  // namespace
}  // namespace ember::test
