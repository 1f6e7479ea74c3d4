// The elementwise part of the op table: every unary and binary op of the registry, on every
// dtype it supports, against a float64 reference on random inputs, across shapes (0-d, size-0,
// size-1, broadcast) and layouts (contiguous, transposed, strided, expanded).
#include <cmath>
#include <limits>

#include "tensor/elementwise_rows.hpp"
#include "test_util.hpp"

namespace ember::test {
namespace {

// Integer results wrap around as in PyTorch (and C++ unsigned arithmetic).
double wrap(double v, DType dtype) {
  if (is_floating(dtype) || std::isnan(v)) return v;
  const int64_t i = static_cast<int64_t>(v);
  switch (dtype) {
    case DType::i8:
      return static_cast<double>(static_cast<int8_t>(static_cast<uint8_t>(i)));
    case DType::u8:
      return static_cast<double>(static_cast<uint8_t>(i));
    case DType::i32:
      return static_cast<double>(static_cast<int32_t>(static_cast<uint32_t>(i)));
    case DType::boolean:
      return v != 0.0;
    default:
      return static_cast<double>(i);
  }
}

// Input range for a dtype, clipped to what it can hold.
std::pair<double, double> range_for(DType dtype, double lo, double hi) {
  if (dtype == DType::u8) return {std::max(lo, 0.0), std::max(hi, 1.0)};
  if (dtype == DType::boolean) return {0.0, 2.0};
  return {lo, hi};
}

const std::vector<Shape>& unary_shapes() {
  static const std::vector<Shape> shapes = {Shape{},        Shape{0},       Shape{1},
                                            Shape{7},       Shape{3, 1, 4}, Shape{5, 6},
                                            Shape{2, 0, 3}, Shape{70, 1100}};
  return shapes;
}

TEST(OpTableUnary, EveryOpDtypeShapeLayout) {
  uint32_t seed = 1;
  for (const UnaryRow& row : unary_rows()) {
    for (DType dtype : dtypes_of(row.group)) {
      for (const Shape& shape : unary_shapes()) {
        for (Layout layout : kLayouts) {
          if (shape.numel() > 10000 && layout != Layout::Contiguous && dtype != DType::f32)
            continue;
          auto [lo, hi] = range_for(dtype, row.lo, row.hi);
          const DynTensor x = make_input(shape, dtype, layout, lo, hi, seed++);
          const Host hx = Host::of(x);
          std::vector<double> want(hx.v.size());
          DType out_dtype = row.bool_out ? DType::boolean : dtype;
          if (row.name == std::string("bitwise_not") && dtype == DType::boolean) {
            for (size_t i = 0; i < want.size(); ++i) want[i] = hx.v[i] == 0;
          } else {
            for (size_t i = 0; i < want.size(); ++i) want[i] = wrap(row.ref(hx.v[i]), out_dtype);
          }
          const std::string what = std::string(row.name) + " " + std::string(dtype_name(dtype)) +
                                   " " + to_string(shape) + " " + layout_name(layout);
          const DynTensor y = row.fn(x);
          EXPECT_EQ(y.dtype(), out_dtype) << what;
          expect_close(y, shape, want, tol_for(out_dtype), what);
        }
      }
    }
  }
}

TEST(OpTableUnary, FloatOpsPromoteIntInputs) {
  const DynTensor x = make_input(Shape{4, 3}, DType::i64, Layout::Contiguous, 1, 9, 7);
  const DynTensor y = exp(x);
  EXPECT_EQ(y.dtype(), DType::f32);
  std::vector<double> want;
  for (double v : Host::of(x).v) want.push_back(std::exp(v));
  expect_close(y, x.shape(), want, tol_for(DType::f32), "exp(int64)");
}

TEST(OpTableUnary, NanAndInfinity) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = INFINITY;
  const std::vector<double> v = {nan, inf, -inf, 0.0, -1.5, 2.0};
  for (DType dtype : kFloatTypes) {
    const DynTensor x = cast(from_data(TensorData::from(v, Shape{6})), dtype);
    EXPECT_EQ(isnan(x).to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 0, 0, 0, 0}));
    EXPECT_EQ(isinf(x).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 1, 0, 0, 0}));
    const std::vector<double> e = exp(x).to_vector<double>();
    EXPECT_TRUE(std::isnan(e[0]));
    EXPECT_EQ(e[1], inf);
    EXPECT_EQ(e[2], 0.0);
    const std::vector<double> r = relu(x).to_vector<double>();
    EXPECT_TRUE(std::isnan(r[0])) << "relu keeps NaN, as PyTorch";
    const std::vector<double> c = clamp(x, -1, 1).to_vector<double>();
    EXPECT_TRUE(std::isnan(c[0])) << "clamp keeps NaN";
    EXPECT_EQ(c[1], 1.0);
  }
}

TEST(OpTableUnary, ExpOverItsWholeRange) {
  // The vectorised float exp must stay within 2 ulp everywhere, subnormal results included.
  std::vector<double> v;
  for (double x = -104.0; x <= 89.0; x += 0.0137) v.push_back(x);
  const DynTensor y =
      exp(cast(from_data(TensorData::from(v, Shape{int64_t(v.size())})), DType::f32));
  const std::vector<float> got = y.to_vector<float>();
  for (size_t i = 0; i < v.size(); ++i) {
    const float xf = static_cast<float>(v[i]);
    const float want = std::exp(xf);
    if (std::isinf(want)) {
      EXPECT_TRUE(std::isinf(got[i])) << xf;
    } else {
      const float ulp =
          std::max(std::nextafter(want, INFINITY) - want, std::numeric_limits<float>::denorm_min());
      EXPECT_LE(std::fabs(got[i] - want), 2 * ulp) << "exp(" << xf << ")";
    }
  }
}

TEST(OpTableUnary, ErfOverItsWholeRange) {
  // The vectorised float erf: within 2 ulp of float64's erf from the subnormals to the tails
  // (both pieces of the fit and the point between them), exact at 0, +-inf and past 4; NaN passes.
  std::vector<double> v = {0.0, -0.0, INFINITY, -INFINITY, 1e-45, -1e-40, 1e-30, 3e-8, 1e30, -1e30};
  for (double x = -6.0; x <= 6.0; x += 0.000377) v.push_back(x);
  for (double x = 0.999; x <= 1.001; x += 1e-6) v.push_back(x);
  for (double x = 1e-6; x < 1e3; x *= 1.01) v.push_back(-x);
  const DynTensor y =
      erf(cast(from_data(TensorData::from(v, Shape{int64_t(v.size())})), DType::f32));
  const std::vector<float> got = y.to_vector<float>();
  for (size_t i = 0; i < v.size(); ++i) {
    const float xf = static_cast<float>(v[i]);
    const double want = std::erf(static_cast<double>(xf));
    const float wf = static_cast<float>(want);
    const float ulp = std::max(std::nextafter(std::fabs(wf), INFINITY) - std::fabs(wf),
                               std::numeric_limits<float>::denorm_min());
    EXPECT_LE(std::fabs(got[i] - want), 2 * ulp) << "erf(" << xf << ")";
    EXPECT_EQ(std::signbit(got[i]), std::signbit(xf)) << "erf(" << xf << ")";
  }
  const std::vector<float> nan = erf(full(Shape{9}, std::nan(""), DType::f32)).to_vector<float>();
  for (float n : nan) EXPECT_TRUE(std::isnan(n));
}

const std::vector<std::pair<Shape, Shape>>& binary_shapes() {
  static const std::vector<std::pair<Shape, Shape>> shapes = {
      {Shape{3, 4}, Shape{3, 4}}, {Shape{3, 1}, Shape{1, 4}},       {Shape{}, Shape{2, 3}},
      {Shape{5}, Shape{2, 5}},    {Shape{0, 3}, Shape{1, 3}},       {Shape{2, 1, 3}, Shape{4, 1}},
      {Shape{1}, Shape{}},        {Shape{60, 700}, Shape{60, 700}}, {Shape{60, 700}, Shape{700}}};
  return shapes;
}

TEST(OpTableBinary, EveryOpDtypeShapeLayout) {
  uint32_t seed = 1000;
  for (const BinaryRow& row : binary_rows()) {
    for (DType dtype : dtypes_of(row.group)) {
      if (row.group == Group::IntOnly && dtype == DType::boolean &&
          std::string(row.name).find("shift") != std::string::npos) {
        continue;  // shifts are for integers only
      }
      for (const auto& [sa, sb] : binary_shapes()) {
        for (Layout layout : {Layout::Contiguous, Layout::Transposed, Layout::Strided}) {
          if (sa.numel() > 10000 && layout != Layout::Contiguous && dtype != DType::f32) continue;
          auto [lo_a, hi_a] = range_for(dtype, row.lo_a, row.hi_a);
          auto [lo_b, hi_b] = range_for(dtype, row.lo_b, row.hi_b);
          const DynTensor a = make_input(sa, dtype, layout, lo_a, hi_a, seed++);
          const DynTensor b = make_input(sb, dtype, Layout::Contiguous, lo_b, hi_b, seed++);
          const Shape shape = broadcast_shapes(sa, sb, "test");
          const Host ha = Host::of(expand(a, shape)), hb = Host::of(expand(b, shape));
          const DType out_dtype = row.bool_out                             ? DType::boolean
                                  : (row.float_out && !is_floating(dtype)) ? DType::f32
                                                                           : dtype;
          std::vector<double> want(ha.v.size());
          for (size_t i = 0; i < want.size(); ++i) {
            double r = row.ref(ha.v[i], hb.v[i]);
            if (dtype == DType::boolean && !row.bool_out) r = r != 0;  // bitwise on bool is logical
            want[i] = wrap(r, out_dtype);
          }
          const std::string what = std::string(row.name) + " " + std::string(dtype_name(dtype)) +
                                   " " + to_string(sa) + " x " + to_string(sb) + " " +
                                   layout_name(layout);
          const DynTensor y = row.fn(a, b);
          EXPECT_EQ(y.dtype(), out_dtype) << what;
          expect_close(y, shape, want, tol_for(out_dtype), what);
        }
      }
    }
  }
}

TEST(OpTableBinary, ScalarOperandsAndPromotion) {
  const DynTensor f = make_input(Shape{3, 4}, DType::f16, Layout::Transposed, -4, 4, 11);
  const DynTensor i = make_input(Shape{3, 4}, DType::i32, Layout::Contiguous, -4, 4, 12);
  const Host hf = Host::of(f), hi = Host::of(i);
  std::vector<double> want;

  // A Python-style float scalar keeps a float tensor's dtype.
  const DynTensor y1 = add(f, 2.5);
  EXPECT_EQ(y1.dtype(), DType::f16);
  for (double v : hf.v) want.push_back(v + 2.5);
  expect_close(y1, f.shape(), want, tol_for(DType::f16), "f16 + 2.5");

  // An int tensor with a float scalar computes in the default float dtype.
  const DynTensor y2 = mul(1.5, i);
  EXPECT_EQ(y2.dtype(), DType::f32);
  want.clear();
  for (double v : hi.v) want.push_back(1.5 * v);
  expect_close(y2, i.shape(), want, tol_for(DType::f32), "1.5 * int32");

  // An int scalar keeps an int tensor's dtype; scalar on the left of sub.
  const DynTensor y3 = sub(7, i);
  EXPECT_EQ(y3.dtype(), DType::i32);
  want.clear();
  for (double v : hi.v) want.push_back(7 - v);
  expect_close(y3, i.shape(), want, {0, 0}, "7 - int32");

  // Mixed tensor dtypes promote; a 0-d tensor of a higher category wins.
  EXPECT_EQ(add(f, cast(f, DType::f64)).dtype(), DType::f64);
  EXPECT_EQ(add(i, full(Shape{}, 2.0, DType::f64)).dtype(), DType::f64);
  EXPECT_EQ(add(f, full(Shape{}, 2.0, DType::f64)).dtype(), DType::f16);
  EXPECT_EQ(gt(i, 0.5).dtype(), DType::boolean);
}

TEST(OpTableTernary, WhereLerpClampTensor) {
  for (DType dtype : kFloatTypes) {
    const DynTensor c = gt(make_input(Shape{4, 1}, DType::f32, Layout::Contiguous, -1, 1, 21), 0);
    const DynTensor a = make_input(Shape{4, 5}, dtype, Layout::Transposed, -3, 3, 22);
    const DynTensor b = make_input(Shape{5}, dtype, Layout::Contiguous, -3, 3, 23);
    const Shape shape{4, 5};
    const Host hc = Host::of(expand(c, shape)), ha = Host::of(a), hb = Host::of(expand(b, shape));
    std::vector<double> w_where, w_lerp, w_clamp, w_mf;
    for (size_t k = 0; k < ha.v.size(); ++k) {
      w_where.push_back(hc.v[k] != 0 ? ha.v[k] : hb.v[k]);
      w_lerp.push_back(ha.v[k] + 0.25 * (hb.v[k] - ha.v[k]));
      w_clamp.push_back(std::min(std::max(ha.v[k], -hb.v[k] - 1), std::fabs(hb.v[k])));
      w_mf.push_back(hc.v[k] != 0 ? -7.0 : ha.v[k]);
    }
    const std::string dt(dtype_name(dtype));
    expect_close(where(c, a, b), shape, w_where, tol_for(dtype), "where " + dt);
    expect_close(lerp(a, b, 0.25), shape, w_lerp, tol_for(dtype), "lerp " + dt);
    expect_close(lerp(a, b, full_like(a, 0.25)), shape, w_lerp, tol_for(dtype),
                 "lerp tensor " + dt);
    expect_close(clamp(a, sub(neg(b), 1), abs(b)), shape, w_clamp, tol_for(dtype),
                 "clamp tensor " + dt);
    expect_close(masked_fill(a, c, -7), shape, w_mf, tol_for(dtype), "masked_fill " + dt);
    expect_close(
        where(c, a, 0.5), shape,
        [&] {
          std::vector<double> v;
          for (size_t k = 0; k < ha.v.size(); ++k) v.push_back(hc.v[k] != 0 ? ha.v[k] : 0.5);
          return v;
        }(),
        tol_for(dtype), "where scalar " + dt);
  }
}

// Dense rows take the branch-free select loop, with each value operand dense or a broadcast
// scalar; every dtype (the select works on bit patterns of each element size).
TEST(OpTableTernary, WhereDenseRows) {
  const Shape shape{3, 37};
  const DynTensor c = gt(make_input(shape, DType::f32, Layout::Contiguous, -1, 1, 24), 0);
  const Host hc = Host::of(c);
  for (DType dtype : kAllTypes) {
    const DynTensor a = make_input(shape, dtype, Layout::Contiguous, -3, 3, 25);
    const DynTensor b = make_input(shape, dtype, Layout::Contiguous, -3, 3, 26);
    const Host ha = Host::of(a), hb = Host::of(b);
    const double sa = Host::of(cast(full(Shape{}, 2, DType::f64), dtype)).v[0];
    const double sb = Host::of(cast(full(Shape{}, 1, DType::f64), dtype)).v[0];
    const DynTensor ta = cast(full(Shape{}, 2, DType::f64), dtype),
                    tb = cast(full(Shape{}, 1, DType::f64), dtype);
    std::vector<double> w_ab, w_as, w_sb, w_ss;
    for (size_t k = 0; k < ha.v.size(); ++k) {
      const bool on = hc.v[k] != 0;
      w_ab.push_back(on ? ha.v[k] : hb.v[k]);
      w_as.push_back(on ? ha.v[k] : sb);
      w_sb.push_back(on ? sa : hb.v[k]);
      w_ss.push_back(on ? sa : sb);
    }
    const std::string dt(dtype_name(dtype));
    const Tol exact{0, 0};
    expect_close(where(c, a, b), shape, w_ab, exact, "where dense " + dt);
    expect_close(where(c, a, tb), shape, w_as, exact, "where dense, scalar b " + dt);
    expect_close(where(c, ta, b), shape, w_sb, exact, "where scalar a, dense " + dt);
    expect_close(where(c, ta, tb), shape, w_ss, exact, "where scalars " + dt);
  }
}

TEST(OpTableTernary, EqualAndAllclose) {
  const DynTensor a = make_input(Shape{3, 4}, DType::f32, Layout::Transposed, -3, 3, 31);
  EXPECT_TRUE(equal(a, clone(a)));
  EXPECT_FALSE(equal(a, add(a, 1e-3)));
  EXPECT_FALSE(equal(a, reshape(a, Shape{4, 3})));
  EXPECT_TRUE(allclose(a, add(a, 1e-7), 1e-5, 1e-6));
  EXPECT_FALSE(allclose(a, add(a, 1e-2)));
  const DynTensor n = full(Shape{2}, std::nan(""), DType::f32);
  EXPECT_FALSE(allclose(n, n)) << "NaN is never close (equal_nan = false)";
}

}  // namespace
}  // namespace ember::test
