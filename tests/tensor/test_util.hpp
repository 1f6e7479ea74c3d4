// Helpers for the op test table: random inputs in a dtype and layout, float64 host references,
// and comparison with per-dtype tolerances.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "ember/ember.hpp"

namespace ember::test {

/// A float64 host copy of a tensor: shape plus row-major values, with N-d element access.
struct Host {
  Shape shape;
  std::vector<double> v;

  static Host of(const DynTensor& t) { return {t.shape(), t.to_vector<double>()}; }
  int64_t numel() const { return shape.numel(); }
  /// Row-major offset of a multi-index.
  int64_t offset(const std::vector<int64_t>& idx) const {
    int64_t off = 0;
    for (int d = 0; d < shape.rank(); ++d) off = off * shape[d] + idx[static_cast<size_t>(d)];
    return off;
  }
  double at(const std::vector<int64_t>& idx) const { return v[static_cast<size_t>(offset(idx))]; }
  /// Multi-index of a row-major offset.
  std::vector<int64_t> index(int64_t off) const {
    std::vector<int64_t> idx(static_cast<size_t>(shape.rank()));
    for (int d = shape.rank() - 1; d >= 0; --d) {
      idx[static_cast<size_t>(d)] = off % shape[d];
      off /= shape[d];
    }
    return idx;
  }
};

/// Every dtype, and the groups ops are tested on.
inline const std::vector<DType> kFloatTypes = {DType::f32, DType::f64, DType::f16, DType::bf16};
inline const std::vector<DType> kIntTypes = {DType::i64, DType::i32, DType::i8, DType::u8};
inline const std::vector<DType> kAllTypes = {DType::f32,  DType::f64, DType::f16,
                                             DType::bf16, DType::i64, DType::i32,
                                             DType::i8,   DType::u8,  DType::boolean};

/// Memory layouts an input is made in; the values seen through the tensor are the same.
/// ChannelsLast: [N, C, *] with C innermost in memory (NHWC), as Cuda's 16-bit convolutions
/// write their outputs; Transposed below rank 3.
enum class Layout { Contiguous, Transposed, Strided, Expanded, ChannelsLast };
inline const std::vector<Layout> kLayouts = {Layout::Contiguous, Layout::Transposed,
                                             Layout::Strided, Layout::Expanded,
                                             Layout::ChannelsLast};
inline const char* layout_name(Layout l) {
  switch (l) {
    case Layout::Contiguous:
      return "contiguous";
    case Layout::Transposed:
      return "transposed";
    case Layout::Strided:
      return "strided";
    case Layout::Expanded:
      return "expanded";
    case Layout::ChannelsLast:
      return "channels_last";
  }
  return "?";
}

/// [N, C, *rest] -> [N, *rest, C]: the shape whose contiguous tensor is [N, C, *rest]'s
/// channels-last memory.
inline Shape channels_last_shape(const Shape& s) {
  Shape m = s;
  for (int i = 1; i + 1 < s.rank(); ++i) m[i] = s[i + 1];
  m[s.rank() - 1] = s[1];
  return m;
}
/// [N, *rest, C] viewed as [N, C, *rest] (channels-last strides).
inline DynTensor channels_last_view(const DynTensor& t) {
  std::vector<int64_t> order{0, t.rank() - 1};
  for (int i = 1; i + 1 < t.rank(); ++i) order.push_back(i);
  return permute(t, order);
}

/// Uniform random values in [lo, hi), never all zero; integers when `integral`.
inline std::vector<double> random_values(int64_t n, double lo, double hi, bool integral,
                                         uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = integral ? std::floor(dist(gen)) : dist(gen);
  return v;
}

/// A tensor of `shape` and `dtype` holding random values in [lo, hi), laid out as `layout`.
/// Expanded layouts broadcast the first dim (so every row is the same), except for rank < 1.
inline DynTensor make_input(const Shape& shape, DType dtype, Layout layout, double lo, double hi,
                            uint32_t seed) {
  const bool integral = !is_floating(dtype);
  auto from = [&](const Shape& s) {
    std::vector<double> v = random_values(s.numel(), lo, hi, integral, seed);
    if (dtype == DType::boolean) {
      for (size_t i = 0; i < v.size(); ++i)
        v[i] = static_cast<double>((static_cast<int64_t>(v[i]) + i) % 2);
    }
    return cast(from_data(TensorData::from(v, s)), dtype);
  };
  if (shape.rank() < 3 && layout == Layout::ChannelsLast) layout = Layout::Transposed;
  if (shape.rank() < 2 && layout == Layout::Transposed) layout = Layout::Strided;
  if (shape.rank() < 1) return from(shape);
  switch (layout) {
    case Layout::Contiguous:
      return from(shape);
    case Layout::Transposed: {
      Shape s = shape;
      std::swap(s[0], s[s.rank() - 1]);
      return transpose(from(s), 0, shape.rank() - 1);
    }
    case Layout::Strided: {
      Shape s = shape;
      s[s.rank() - 1] *= 2;
      return slice(from(s), -1, 0, INT64_MAX, 2);
    }
    case Layout::Expanded: {
      Shape s = shape;
      s[0] = 1;
      return expand(from(s), shape);
    }
    case Layout::ChannelsLast:
      return channels_last_view(from(channels_last_shape(shape)));
  }
  return from(shape);
}

/// A tensor holding `h`'s values in `layout` (Transposed: first and last dims swapped in memory,
/// falling back to Strided below rank 2; Strided: every other element of a wider buffer, the
/// skipped ones holding `filler`).
inline DynTensor from_host(const Host& h, DType dtype, Layout layout, double filler = 1.0) {
  const auto make = [dtype](const Shape& s, const std::vector<double>& v) {
    return cast(from_data(TensorData::from(v, s)), dtype);
  };
  const int r = h.shape.rank();
  if (layout == Layout::ChannelsLast && r < 3) layout = Layout::Transposed;
  if (layout == Layout::ChannelsLast) {
    const Shape s = channels_last_shape(h.shape);
    const Host t{s, {}};
    std::vector<double> v(static_cast<size_t>(s.numel()));
    for (int64_t i = 0; i < s.numel(); ++i) {
      const std::vector<int64_t> m = t.index(i);  // [n, *rest, c] -> [n, c, *rest]
      std::vector<int64_t> idx{m[0], m[static_cast<size_t>(r - 1)]};
      for (int d = 1; d + 1 < r; ++d) idx.push_back(m[static_cast<size_t>(d)]);
      v[static_cast<size_t>(i)] = h.at(idx);
    }
    return channels_last_view(make(s, v));
  }
  if (layout == Layout::Transposed && r < 2) layout = Layout::Strided;
  if (layout == Layout::Transposed) {
    Shape s = h.shape;
    std::swap(s[0], s[r - 1]);
    const Host t{s, {}};
    std::vector<double> v(static_cast<size_t>(s.numel()));
    for (int64_t i = 0; i < s.numel(); ++i) {
      std::vector<int64_t> idx = t.index(i);
      std::swap(idx[0], idx[static_cast<size_t>(r - 1)]);
      v[static_cast<size_t>(i)] = h.at(idx);
    }
    return transpose(make(s, v), 0, r - 1);
  }
  if (layout == Layout::Strided && r >= 1) {
    Shape s = h.shape;
    s[r - 1] *= 2;
    const Host t{s, {}};
    std::vector<double> v(static_cast<size_t>(s.numel()));
    for (int64_t i = 0; i < s.numel(); ++i) {
      std::vector<int64_t> idx = t.index(i);
      const bool skipped = idx[static_cast<size_t>(r - 1)] % 2 != 0;
      idx[static_cast<size_t>(r - 1)] /= 2;
      v[static_cast<size_t>(i)] = skipped ? filler : h.at(idx);
    }
    return slice(make(s, v), -1, 0, INT64_MAX, 2);
  }
  return make(h.shape, h.v);
}

/// Tolerances for comparing a result in `dtype` against a float64 reference.
struct Tol {
  double rtol, atol;
};
inline Tol tol_for(DType dtype) {
  switch (dtype) {
    case DType::f64:
      return {1e-10, 1e-12};
    case DType::f32:
      return {2e-5, 1e-6};
    case DType::f16:
      return {2e-3, 1e-3};
    case DType::bf16:
      return {1.6e-2, 1e-2};
    default:
      return {0.0, 0.0};  // integers and bools are exact
  }
}

/// Expects `got` (any dtype) to match the reference values elementwise; NaN matches NaN and
/// infinities must match exactly.
inline void expect_close(const DynTensor& got, const Shape& shape, const std::vector<double>& want,
                         Tol tol, const std::string& what) {
  ASSERT_EQ(to_string(got.shape()), to_string(shape)) << what;
  const std::vector<double> g = got.to_vector<double>();
  ASSERT_EQ(g.size(), want.size()) << what;
  int failures = 0;
  for (size_t i = 0; i < g.size() && failures < 5; ++i) {
    const double a = g[i], b = want[i];
    const bool ok = (std::isnan(a) && std::isnan(b)) || a == b ||
                    (std::isfinite(b) && std::fabs(a - b) <= tol.atol + tol.rtol * std::fabs(b));
    if (!ok) {
      ++failures;
      ADD_FAILURE() << what << ": element " << i << " is " << a << ", expected " << b;
    }
  }
}

/// Expects `call` to raise an ember::Error whose message starts with `expected`.
inline void expect_error_prefix(const std::string& expected, const std::function<void()>& call) {
  try {
    call();
    ADD_FAILURE() << "no error thrown; expected: " << expected;
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).substr(0, expected.size()), expected);
  }
}

/// Expects `fn` to raise an ember::Error whose message contains `needle`.
inline void expect_error_containing(const std::function<void()>& fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "expected an error containing: " << needle;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << "message: " << e.what() << "\nexpected to contain: " << needle;
  }
}

/// The largest |a - b| over two tensors of one size (compared in float64 on the host).
inline double max_abs_diff(const DynTensor& a, const DynTensor& b) {
  const auto x = cast(a, DType::f64).to_vector<double>();
  const auto y = cast(b, DType::f64).to_vector<double>();
  EXPECT_EQ(x.size(), y.size());
  double m = 0;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

}  // namespace ember::test
