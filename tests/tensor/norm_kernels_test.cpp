// The fused normalisation kernels (channel_moments, channel_dot, channel_fma) against float64
// host references on random data with a large common offset (where a one-pass variance would
// lose its digits), in every float dtype and input layout; their composites against the kernels.
#include <gtest/gtest.h>

#include <ember/ember.hpp>
#include <ember/tensor/ops/norm.hpp>

#include "tensor/test_util.hpp"

using namespace ember;
using namespace ember::test;

namespace {

// Per-channel index lists of a row-major [N, C, *] host tensor.
std::vector<std::vector<int64_t>> channel_members(const Host& h) {
  std::vector<std::vector<int64_t>> m(static_cast<size_t>(h.shape[1]));
  for (int64_t i = 0; i < h.numel(); ++i) m[static_cast<size_t>(h.index(i)[1])].push_back(i);
  return m;
}

const Shape kShape{3, 5, 4, 7};

Tol loose(DType dt) {  // sums of 84 terms: a few more roundings than one elementwise op
  Tol t = tol_for(dt);
  t.rtol *= 10;
  t.atol *= 10;
  return t;
}

}  // namespace

TEST(NormKernels, MomentsAgainstFloat64) {
  for (DType dt : kFloatTypes) {
    for (Layout layout : kLayouts) {
      const DynTensor x = make_input(kShape, dt, layout, 99.0, 101.0, 21);
      const Host h = Host::of(x);  // the values as rounded to dt
      std::vector<double> want(10);
      const auto members = channel_members(h);
      for (size_t c = 0; c < members.size(); ++c) {
        double s = 0, ss = 0;
        for (int64_t i : members[c]) s += h.v[static_cast<size_t>(i)];
        const double mean = s / static_cast<double>(members[c].size());
        for (int64_t i : members[c]) ss += std::pow(h.v[static_cast<size_t>(i)] - mean, 2);
        want[c] = mean;
        want[5 + c] = ss / static_cast<double>(members[c].size());
      }
      const std::string what =
          "channel_moments " + std::string(dtype_name(dt)) + " " + layout_name(layout);
      const DynTensor got = channel_moments(x);
      EXPECT_EQ(got.dtype(), dt == DType::f64 ? DType::f64 : DType::f32) << what;  // statistics
      Tol tol = loose(dt);
      tol.atol = std::max(tol.atol, dt == DType::f32 ? 1e-6 : tol.atol);
      expect_close(got, Shape{2, 5}, want, tol, what);
    }
  }
}

TEST(NormKernels, DotAndFmaAgainstFloat64) {
  for (DType dt : kFloatTypes) {
    const DynTensor a = make_input(kShape, dt, Layout::Transposed, -2, 2, 31);
    const DynTensor b = make_input(kShape, dt, Layout::Strided, 49, 51, 32);
    const DynTensor center = make_input(Shape{5}, dt, Layout::Contiguous, 49, 51, 33);
    const DynTensor ka = make_input(Shape{5}, dt, Layout::Contiguous, -1, 1, 34);
    const DynTensor kb = make_input(Shape{5}, dt, Layout::Strided, -1, 1, 35);
    const DynTensor k0 = make_input(Shape{5}, dt, Layout::Contiguous, -1, 1, 36);
    const Host ha = Host::of(a), hb = Host::of(b), hc = Host::of(center), hka = Host::of(ka),
               hkb = Host::of(kb), hk0 = Host::of(k0);
    std::vector<double> dot(10, 0.0), fma2(static_cast<size_t>(ha.numel())), fma1 = fma2;
    for (int64_t i = 0; i < ha.numel(); ++i) {
      const size_t c = static_cast<size_t>(ha.index(i)[1]), k = static_cast<size_t>(i);
      dot[c] += ha.v[k];
      dot[5 + c] += ha.v[k] * (hb.v[k] - hc.v[c]);
      fma2[k] = ha.v[k] * hka.v[c] + hb.v[k] * hkb.v[c] + hk0.v[c];
      fma1[k] = ha.v[k] * hka.v[c] + hk0.v[c];
    }
    const std::string name(dtype_name(dt));
    // Sums of products of size-50 values: compare at the scale of the largest term.
    Tol dot_tol = loose(dt);
    dot_tol.atol = dot_tol.rtol * 200;
    expect_close(channel_dot(a, b, center), Shape{2, 5}, dot, dot_tol, "channel_dot " + name);
    Tol fma_tol = loose(dt);
    fma_tol.atol = fma_tol.rtol * 50;
    expect_close(channel_fma(a, ka, b, kb, k0), kShape, fma2, fma_tol, "channel_fma " + name);
    expect_close(channel_fma(a, ka, {}, {}, k0), kShape, fma1, fma_tol, "channel_fma a " + name);
  }
}

// Planes of 600 elements (the table's are 28): the multiply-add with f32 coefficients on 16-bit
// data in every float dtype.
TEST(NormKernels, FmaOverLargePlanes) {
  const Shape shape{2, 3, 20, 30};
  for (DType dt : kFloatTypes) {
    const DynTensor a = make_input(shape, dt, Layout::Contiguous, -2, 2, 71);
    const DynTensor b = make_input(shape, dt, Layout::Contiguous, -2, 2, 72);
    const DynTensor ka = make_input(Shape{3}, DType::f32, Layout::Contiguous, -1, 1, 73);
    const DynTensor kb = make_input(Shape{3}, DType::f32, Layout::Contiguous, -1, 1, 74);
    const DynTensor k0 = make_input(Shape{3}, DType::f32, Layout::Contiguous, -1, 1, 75);
    const Host ha = Host::of(a), hb = Host::of(b), hka = Host::of(ka), hkb = Host::of(kb),
               hk0 = Host::of(k0);
    std::vector<double> fma2(static_cast<size_t>(ha.numel())), fma1 = fma2;
    for (int64_t i = 0; i < ha.numel(); ++i) {
      const size_t c = static_cast<size_t>(ha.index(i)[1]), k = static_cast<size_t>(i);
      fma2[k] = ha.v[k] * hka.v[c] + hb.v[k] * hkb.v[c] + hk0.v[c];
      fma1[k] = ha.v[k] * hka.v[c] + hk0.v[c];
    }
    const std::string name(dtype_name(dt));
    const Tol tol = loose(dt);
    const DynTensor got2 = channel_fma(a, ka, b, kb, k0), got1 = channel_fma(a, ka, {}, {}, k0);
    EXPECT_EQ(got2.dtype(), dt) << name;
    expect_close(got2, shape, fma2, tol, "channel_fma large " + name);
    expect_close(got1, shape, fma1, tol, "channel_fma a large " + name);
  }
}

// Channels-last operands (batch norm between Cuda's 16-bit convolutions) against float64: channel
// counts that fill 16-byte packs (16, 64) and that do not (5, 24 over a partial thread group),
// rows enough for several chunks, a channels-last a with a contiguous b; the multiply-add keeps
// a's layout where the backend reads channels-last.
TEST(NormKernels, ChannelsLastAgainstFloat64) {
  const std::vector<Shape> shapes = {Shape{4, 64, 20, 20}, Shape{3, 16, 5, 7}, Shape{2, 24, 9},
                                     Shape{3, 5, 4, 7}};
  uint32_t seed = 300;
  for (const Shape& shape : shapes) {
    const int64_t channels = shape[1];
    for (DType dt : kFloatTypes) {
      const std::string what = std::string(dtype_name(dt)) + " " + to_string(shape);
      const DynTensor x = make_input(shape, dt, Layout::ChannelsLast, 99.0, 101.0, seed++);
      const DynTensor a = make_input(shape, dt, Layout::ChannelsLast, -2, 2, seed++);
      const DynTensor b = make_input(shape, dt, Layout::Contiguous, 49, 51, seed++);
      const DynTensor center = make_input(Shape{channels}, dt, Layout::Contiguous, 49, 51, seed++);
      const DynTensor ka = make_input(Shape{channels}, dt, Layout::Contiguous, -1, 1, seed++);
      const DynTensor kb = make_input(Shape{channels}, dt, Layout::Contiguous, -1, 1, seed++);
      const DynTensor k0 = make_input(Shape{channels}, dt, Layout::Contiguous, -1, 1, seed++);
      const Host hx = Host::of(x), ha = Host::of(a), hb = Host::of(b), hc = Host::of(center),
                 hka = Host::of(ka), hkb = Host::of(kb), hk0 = Host::of(k0);
      const size_t nc = static_cast<size_t>(channels);
      std::vector<double> sum(nc), count(nc), moments(2 * nc), dot(2 * nc);
      std::vector<double> fma(static_cast<size_t>(ha.numel()));
      for (int64_t i = 0; i < hx.numel(); ++i) {
        const size_t c = static_cast<size_t>(hx.index(i)[1]), k = static_cast<size_t>(i);
        sum[c] += hx.v[k];
        count[c] += 1;
        dot[c] += ha.v[k];
        dot[nc + c] += ha.v[k] * (hb.v[k] - hc.v[c]);
        fma[k] = ha.v[k] * hka.v[c] + hb.v[k] * hkb.v[c] + hk0.v[c];
      }
      for (size_t c = 0; c < nc; ++c) moments[c] = sum[c] / count[c];
      for (int64_t i = 0; i < hx.numel(); ++i) {
        const size_t c = static_cast<size_t>(hx.index(i)[1]);
        moments[nc + c] += std::pow(hx.v[static_cast<size_t>(i)] - moments[c], 2) / count[c];
      }
      Tol tol = loose(dt);
      tol.atol = std::max(tol.atol, dt == DType::f32 ? 1e-6 : tol.atol);
      expect_close(channel_moments(x), Shape{2, channels}, moments, tol, "moments " + what);
      Tol dot_tol = loose(dt);
      dot_tol.atol = dot_tol.rtol * 200 * static_cast<double>(x.numel() / channels) / 84;
      expect_close(channel_dot(a, b, center), Shape{2, channels}, dot, dot_tol, "dot " + what);
      Tol fma_tol = loose(dt);
      fma_tol.atol = fma_tol.rtol * 50;
      const DynTensor got = channel_fma(a, ka, b, kb, k0);
      expect_close(got, shape, fma, fma_tol, "fma " + what);
      if (got.device().type == DeviceType::Cuda) {  // its Norm kernels read channels-last
        EXPECT_TRUE(got.raw().is_channels_last()) << what;
      }
    }
  }
}

// Batch norm's per-channel arithmetic (one kernel a direction on Cuda, the composites elsewhere)
// against the formulas in float64, with and without weight and bias, in f32 and f64.
TEST(NormKernels, BatchNormCoefficientsAgainstFloat64) {
  const int64_t c = 37;
  uint32_t seed = 500;
  for (DType dt : {DType::f32, DType::f64}) {
    const DynTensor mean = make_input(Shape{c}, dt, Layout::Contiguous, -3, 3, seed++);
    const DynTensor var = make_input(Shape{c}, dt, Layout::Contiguous, 0.01, 4, seed++);
    const DynTensor moments = stack({mean, var});
    const DynTensor w = make_input(Shape{c}, dt, Layout::Contiguous, 0.5, 1.5, seed++);
    const DynTensor b = make_input(Shape{c}, dt, Layout::Contiguous, -1, 1, seed++);
    const DynTensor d = make_input(Shape{2, c}, dt, Layout::Contiguous, -20, 20, seed++);
    const Host hm = Host::of(mean), hv = Host::of(var), hw = Host::of(w), hb = Host::of(b),
               hd = Host::of(d);
    const double eps = 1e-5, count = 300;
    for (const bool affine : {true, false}) {
      const std::string what = std::string(dtype_name(dt)) + (affine ? " affine" : " plain");
      std::vector<double> fwd(static_cast<size_t>(3 * c)), bwd(static_cast<size_t>(4 * c));
      for (int64_t i = 0; i < c; ++i) {
        const size_t k = static_cast<size_t>(i), n = static_cast<size_t>(c);
        const double invstd = 1 / std::sqrt(hv.v[k] + eps);
        const double scale = affine ? hw.v[k] * invstd : invstd;
        fwd[k] = invstd;
        fwd[n + k] = scale;
        fwd[2 * n + k] = (affine ? hb.v[k] : 0.0) - hm.v[k] * scale;
        const double k2 = -scale * invstd * invstd * hd.v[n + k] / count;
        bwd[k] = k2;
        bwd[n + k] = -scale * hd.v[k] / count - k2 * hm.v[k];
        bwd[2 * n + k] = hd.v[n + k] * invstd;
        bwd[3 * n + k] = hd.v[k];
      }
      const DynTensor coef =
          batch_norm_coefficients(moments, affine ? w : DynTensor(), affine ? b : DynTensor(), eps);
      const Tol tol = loose(dt);
      expect_close(coef, Shape{3, c}, fwd, tol, "coefficients " + what);
      expect_close(batch_norm_backward_coefficients(d, coef, moments, count), Shape{4, c}, bwd, tol,
                   "backward coefficients " + what);
      // The composites give the same values (on the Cpu they are what runs above).
      const DynTensor comp = detail::batch_norm_coefficients_composite(
          moments, affine ? w : DynTensor(), affine ? b : DynTensor(), eps);
      expect_close(comp, Shape{3, c}, fwd, tol, "composite " + what);
      expect_close(detail::batch_norm_backward_coefficients_composite(d, comp, moments, count),
                   Shape{4, c}, bwd, tol, "backward composite " + what);
    }
  }
  EXPECT_THROW(batch_norm_coefficients(randn(Shape{3, 4}, DType::f32), {}, {}, 1e-5), Error);
  EXPECT_THROW(batch_norm_coefficients(randn(Shape{2, 4}, DType::f32), randn(Shape{5}, DType::f32),
                                       {}, 1e-5),
               Error);
  const DynTensor d4 = randn(Shape{2, 4}, DType::f32), m4 = randn(Shape{2, 4}, DType::f32);
  const DynTensor k4 = batch_norm_coefficients(abs(m4), {}, {}, 1e-5);
  try {
    (void)batch_norm_backward_coefficients(d4, randn(Shape{2, 4}, DType::f32), m4, 10);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("coefficients must be [3, 4]"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(batch_norm_backward_coefficients(randn(Shape{3, 4}, DType::f32), k4, m4, 10), Error);
  EXPECT_THROW(batch_norm_backward_coefficients(d4, k4, randn(Shape{2, 5}, DType::f32), 10), Error);
}

// The composites the ops run on a backend without the Norm kernels give the kernels' values
// (f32 and f64; the ops run 16-bit floats in f32), so both paths stay tested on the Cpu.
TEST(NormKernels, CompositesMatchTheKernels) {
  for (DType dt : {DType::f32, DType::f64}) {
    const DynTensor x = make_input(kShape, dt, Layout::Contiguous, 99.0, 101.0, 41);
    const DynTensor a = make_input(kShape, dt, Layout::Contiguous, -2, 2, 42);
    const DynTensor center = make_input(Shape{5}, dt, Layout::Contiguous, 99, 101, 43);
    const DynTensor ka = make_input(Shape{5}, dt, Layout::Contiguous, -1, 1, 44);
    const DynTensor kb = make_input(Shape{5}, dt, Layout::Contiguous, -1, 1, 45);
    const DynTensor k0 = make_input(Shape{5}, dt, Layout::Contiguous, -1, 1, 46);
    const std::string name(dtype_name(dt));
    Tol tol = loose(dt);
    tol.atol = tol.rtol * 200;  // sums of products of size-100 values
    const Host moments = Host::of(channel_moments(x));
    const Host dot = Host::of(channel_dot(a, x, center));
    const Host fma2 = Host::of(channel_fma(a, ka, x, kb, k0));
    const Host fma1 = Host::of(channel_fma(a, ka, {}, {}, k0));
    expect_close(detail::channel_moments_composite(x), moments.shape, moments.v, tol,
                 "moments " + name);
    expect_close(detail::channel_dot_composite(a, x, center), dot.shape, dot.v, tol, "dot " + name);
    expect_close(detail::channel_fma_composite(a, ka, x, kb, k0), fma2.shape, fma2.v, tol,
                 "fma " + name);
    expect_close(detail::channel_fma_composite(a, ka, {}, {}, k0), fma1.shape, fma1.v, tol,
                 "fma a " + name);
  }
}

TEST(NormKernels, Errors) {
  const DynTensor x = randn(Shape{2, 3, 4}, DType::f32);
  const DynTensor k = randn(Shape{3}, DType::f32);
  EXPECT_THROW(channel_moments(randn(Shape{6}, DType::f32)), Error);
  EXPECT_THROW(channel_moments(zeros(Shape{2, 3}, DType::i64)), Error);
  EXPECT_THROW(channel_fma(x, randn(Shape{4}, DType::f32), {}, {}, k), Error);
  EXPECT_THROW(channel_dot(x, randn(Shape{2, 3, 5}, DType::f32), k), Error);
  try {
    channel_fma(x, k, {}, {}, randn(Shape{2, 3}, DType::f32));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[channel_fma] k0 of shape [2, 3]"), std::string::npos)
        << e.what();
  }
}
