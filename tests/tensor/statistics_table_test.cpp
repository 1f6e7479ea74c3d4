// The statistics part of the op table (include/ember/tensor/ops/statistics.hpp): median,
// nanmedian, kthvalue, mode, quantile, nanquantile, unique, unique_consecutive, cummax, cummin,
// logcumsumexp, count_nonzero, aminmax, and NaN through amax/amin/max/min, against float64
// references on random data (small integers where ties matter), on several shapes, dims,
// keepdim, size-1 and empty dims, non-contiguous layouts and every dtype PyTorch allows; with
// finite-difference gradient checks and the errors for bad input. Runs on every device.
//
// Conventions, each checked against PyTorch 1.13 (python3 -c "import torch"):
// - median: the lower of the two middle values; a row with NaN gives NaN and the index of its
//   first NaN (torch.median([1, nan, 2, nan, 0], 0) -> (nan, 1)); an empty floating tensor
//   gives NaN with no dim, an empty reduced dim is an error. The index on ties is the element's
//   place in a stable sort (torch: median([2, 2, 1, 2, 3], 0) -> index 1, the same).
// - nanmedian: the lower median of the numbers; a row of only NaN gives NaN at index 0.
// - kthvalue: the k-th smallest, k from 1; NaN is the largest. On ties Ember returns the index
//   of the stable sort (PyTorch's quickselect returns any of the tied indices: 3 for
//   kthvalue([2, 2, 1, 2, 3], 2), where Ember returns 0; the value is the same).
// - mode: the smallest of the most frequent values and its LAST index (torch.mode([1, 2, 2, 1])
//   -> (1, 3)). Each NaN counts alone, as in unique (PyTorch 1.13's mode with NaN is not
//   consistent: [1, nan, 1, nan, nan] -> 1 but [nan, 1, nan, 2, 1] -> nan).
// - quantile: PyTorch's algorithm (ranks q * (n - 1) in the input's dtype; lower/higher/nearest
//   floor/ceil/round-half-to-even the rank; midpoint averages); NaN in a row gives NaN; a 1-D q
//   adds a leading dim; dim = None flattens (keepdim then keeps every dim as 1).
// - unique: sorted values, inverse in x's shape, counts; each NaN distinct and last (PyTorch
//   2.x; 1.13's CPU kernel gives NaN first with counts of 0).
// - cummax/cummin: the LAST index of the running extreme on ties (cummax([1, 3, 3, 2]) ->
//   indices [0, 1, 2, 2]); a NaN sticks and a later NaN takes over the index.
// - logcumsumexp: exact where exp underflows (logcumsumexp([-1000, 0]) -> [-1000, 0]).
// - amax/amin/max/min/aminmax: NaN anywhere in the reduced elements gives NaN; max(dim) and
//   min(dim) return the first NaN's index (torch.max([[1, nan, 3, nan]], 1) -> (nan, 1)).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "autodiff/gradcheck.hpp"
#include "test_util.hpp"

namespace ember::test {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Random values in [lo, hi) (integers when `ties`, so values repeat), seen through `layout`.
DynTensor input(const Shape& shape, DType dtype, Layout layout, double lo, double hi, uint32_t seed,
                bool ties) {
  if (!ties || !is_floating(dtype)) return make_input(shape, dtype, layout, lo, hi, seed);
  // Integer values in a floating dtype: made in f64 with the layout, then cast in place.
  auto from = [&](const Shape& s) {
    return cast(from_data(TensorData::from(random_values(s.numel(), lo, hi, true, seed), s)),
                dtype);
  };
  if (shape.rank() == 0) return from(shape);
  if (layout == Layout::Transposed && shape.rank() >= 2) {
    Shape s = shape;
    std::swap(s[0], s[s.rank() - 1]);
    return transpose(from(s), 0, shape.rank() - 1);
  }
  if (layout == Layout::Contiguous) return from(shape);
  Shape s = shape;
  s[s.rank() - 1] *= 2;
  return slice(from(s), -1, 0, INT64_MAX, 2);
}

// t's values laid out again as `layout` (after where() made them contiguous).
DynTensor relayout(const DynTensor& t, Layout layout) {
  const int r = t.rank();
  if (layout == Layout::Transposed && r >= 2) {
    return transpose(contiguous(transpose(t, 0, r - 1)), 0, r - 1);
  }
  if (layout == Layout::Strided && r >= 1) {
    return slice(flatten(stack({t, t}, -1), r - 1, r), -1, 0, INT64_MAX, 2);
  }
  return t;
}

// x with NaN where a random draw (seeded) is below `p`, in x's layout.
DynTensor with_nan(const DynTensor& x, Layout layout, double p, uint32_t seed) {
  const DynTensor u =
      from_data(TensorData::from(random_values(x.numel(), 0, 1, false, seed), x.shape()));
  return relayout(where(lt(u, p), full(Shape{}, kNaN, x.dtype()), x), layout);
}

// The rows of h along d (keepdim-shape order), each with its elements' values.
std::vector<std::vector<double>> rows_along(const Host& h, int d) {
  if (h.shape.rank() == 0) return {h.v};
  Shape ks = h.shape;
  ks[d] = 1;
  const Host out{ks, {}};
  std::vector<std::vector<double>> rows(size_t(ks.numel()));
  for (int64_t o = 0; o < ks.numel(); ++o) {
    std::vector<int64_t> idx = out.index(o);
    for (int64_t k = 0; k < h.shape[d]; ++k) {
      idx[size_t(d)] = k;
      rows[size_t(o)].push_back(h.at(idx));
    }
  }
  return rows;
}

// Positions of a row in a stable ascending sort with NaN last.
std::vector<int64_t> stable_order(const std::vector<double>& r) {
  std::vector<int64_t> o(r.size());
  std::iota(o.begin(), o.end(), 0);
  std::stable_sort(o.begin(), o.end(), [&](int64_t a, int64_t b) {
    const double x = r[size_t(a)], y = r[size_t(b)];
    if (std::isnan(x)) return false;
    return std::isnan(y) || x < y;
  });
  return o;
}

Shape out_shape(const Shape& s, int d, bool keep) {
  if (s.rank() == 0) return s;
  Shape o = s;
  if (keep) {
    o[d] = 1;
  } else {
    o.erase(d);
  }
  return o;
}

std::string label(const char* op, DType dtype, const Shape& s, int64_t dim, bool keep,
                  Layout layout) {
  return std::string(op) + " " + std::string(dtype_name(dtype)) + " " + to_string(s) + " dim " +
         std::to_string(dim) + (keep ? " keepdim " : " ") + layout_name(layout);
}

struct DimCase {
  Shape shape;
  int64_t dim;
};
const std::vector<DimCase>& dim_cases() {
  static const std::vector<DimCase> cases = {
      {Shape{}, 0},        {Shape{1}, 0},       {Shape{7}, 0},       {Shape{8}, -1},
      {Shape{3, 5}, 0},    {Shape{3, 5}, 1},    {Shape{3, 6}, -1},   {Shape{2, 3, 4}, 1},
      {Shape{4, 1, 6}, 1}, {Shape{4, 1, 6}, 2}, {Shape{2, 0, 3}, 2}, {Shape{5, 64}, 1},
      {Shape{33, 3}, 0}};
  return cases;
}

std::vector<DType> sortable_types() {
  std::vector<DType> t = kFloatTypes;
  t.insert(t.end(), kIntTypes.begin(), kIntTypes.end());
  return t;
}

// One selecting op's reference: the chosen position in a row (its original index), or -1 for
// "NaN at the first NaN" handled by the caller.
using Select = std::function<int64_t(const std::vector<double>&)>;

void check_selecting(const char* op,
                     const std::function<ValuesIndices(const DynTensor&, int64_t, bool)>& fn,
                     const Select& pick, bool nans, uint32_t seed) {
  for (DType dtype : sortable_types()) {
    for (const DimCase& c : dim_cases()) {
      for (bool keep : {false, true}) {
        for (Layout layout : {Layout::Contiguous, Layout::Transposed, Layout::Strided}) {
          for (bool ties : {true, false}) {
            if (!ties && !is_floating(dtype)) continue;
            const double lo = dtype == DType::u8 ? 0 : -4, hi = ties ? 4 : 4;
            DynTensor x = input(c.shape, dtype, layout, lo, hi, seed++, ties);
            if (nans && is_floating(dtype) && x.numel() > 2) {
              x = with_nan(x, layout, 0.3, seed++);  // about a third NaN
            }
            const std::string what = label(op, dtype, c.shape, c.dim, keep, layout) +
                                     (ties ? " ties" : "") + (nans ? " nan" : "");
            const int d = wrap_dim(c.dim, c.shape.rank(), "ref");
            if (c.shape.rank() > 0 && c.shape[d] == 0) {
              EXPECT_THROW(fn(x, c.dim, keep), Error) << what;
              continue;
            }
            const Host h = Host::of(x);
            std::vector<double> vals, idxs;
            for (const auto& row : rows_along(h, d)) {
              const int64_t i = pick(row);
              vals.push_back(row[size_t(i)]);
              idxs.push_back(double(i));
            }
            const ValuesIndices r = fn(x, c.dim, keep);
            EXPECT_EQ(r.values.dtype(), dtype) << what;
            EXPECT_EQ(r.indices.dtype(), DType::i64) << what;
            const Shape os = out_shape(c.shape, d, keep);
            expect_close(r.values, os, vals, {0, 0}, what + " values");
            expect_close(r.indices, os, idxs, {0, 0}, what + " indices");
          }
        }
      }
    }
  }
}

int64_t first_nan(const std::vector<double>& r) {
  for (size_t i = 0; i < r.size(); ++i) {
    if (std::isnan(r[i])) return int64_t(i);
  }
  return -1;
}

TEST(OpTableStatistics, Median) {
  const Select pick = [](const std::vector<double>& r) {
    if (first_nan(r) >= 0) return first_nan(r);
    return stable_order(r)[(r.size() - 1) / 2];
  };
  check_selecting(
      "median", [](auto& x, int64_t d, bool k) { return median(x, d, k); }, pick, false, 100);
  check_selecting(
      "median", [](auto& x, int64_t d, bool k) { return median(x, d, k); }, pick, true, 200);
  // Over all elements: 0-d, the lower middle; NaN wins; empty gives NaN.
  for (DType dtype : sortable_types()) {
    const DynTensor x = input(Shape{4, 6}, dtype, Layout::Transposed, 0, 9, 300, true);
    std::vector<double> v = x.to_vector<double>();
    std::sort(v.begin(), v.end());
    const DynTensor m = median(x);
    EXPECT_EQ(m.rank(), 0);
    EXPECT_EQ(m.item<double>(), v[11]) << dtype_name(dtype);
  }
  EXPECT_EQ(
      median(from_data(TensorData::from(std::vector<float>{1, 4, 2, 3}, Shape{4}))).item<float>(),
      2.0f);
  EXPECT_TRUE(std::isnan(
      median(from_data(TensorData::from(std::vector<float>{1, NAN, 2}, Shape{3}))).item<float>()));
  EXPECT_TRUE(std::isnan(median(zeros(Shape{0, 3}, DType::f32)).item<float>()));
}

TEST(OpTableStatistics, Nanmedian) {
  const Select pick = [](const std::vector<double>& r) {
    const std::vector<int64_t> o = stable_order(r);
    int64_t k = 0;
    for (double v : r) k += !std::isnan(v);
    return o[size_t(std::max<int64_t>((k - 1) / 2, 0))];
  };
  check_selecting(
      "nanmedian", [](auto& x, int64_t d, bool k) { return nanmedian(x, d, k); }, pick, true, 400);
  const DynTensor x = from_data(
      TensorData::from(std::vector<float>{1, NAN, 2, NAN, NAN, NAN, NAN, NAN}, Shape{2, 4}));
  const ValuesIndices r = nanmedian(x, 1);
  const std::vector<float> v = r.values.to_vector<float>();
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_TRUE(std::isnan(v[1]));
  EXPECT_EQ(r.indices.to_vector<int64_t>(), (std::vector<int64_t>{0, 0}));  // as PyTorch
  EXPECT_EQ(nanmedian(x).item<float>(), 1.0f);                              // the numbers 1, 2 -> 1
}

TEST(OpTableStatistics, Kthvalue) {
  for (int64_t kk : {1, 2, 3}) {
    const Select pick = [kk](const std::vector<double>& r) {
      return stable_order(r)[size_t(std::min<int64_t>(kk, int64_t(r.size())) - 1)];
    };
    check_selecting(
        "kthvalue",
        [kk](auto& x, int64_t d, bool k) {
          const int64_t n = x.rank() ? x.size(wrap_dim(d, x.rank(), "t")) : 1;
          return kthvalue(x, std::min(kk, std::max<int64_t>(n, 1)), d, k);
        },
        pick, kk == 2, 500 + uint32_t(kk) * 1000);
  }
}

TEST(OpTableStatistics, Mode) {
  const Select pick = [](const std::vector<double>& r) {
    // In stable sorted order (NaN last, each NaN alone), the first value with the largest
    // count; its last index.
    int64_t best = -1, best_count = 0;
    for (int64_t i : stable_order(r)) {
      const double v = r[size_t(i)];
      int64_t count = 0, last = i;
      for (size_t j = 0; j < r.size(); ++j) {
        if (r[j] == v) {
          ++count;
          last = int64_t(j);
        }
      }
      if (std::isnan(v)) count = 1;
      if (count > best_count) {
        best = last;
        best_count = count;
      }
    }
    return best;
  };
  check_selecting(
      "mode", [](auto& x, int64_t d, bool k) { return mode(x, d, k); }, pick, false, 600);
  check_selecting(
      "mode", [](auto& x, int64_t d, bool k) { return mode(x, d, k); }, pick, true, 700);
  const DynTensor x =
      from_data(TensorData::from(std::vector<int64_t>{1, 2, 2, 1, 3, 3, 1, 1}, Shape{2, 4}));
  const ValuesIndices r = mode(x);  // PyTorch: values [1, 1], indices [3, 3]
  EXPECT_EQ(r.values.to_vector<int64_t>(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(r.indices.to_vector<int64_t>(), (std::vector<int64_t>{3, 3}));
  const DynTensor b = from_data(TensorData::from(std::vector<bool>{true, false, true}, Shape{3}));
  EXPECT_EQ(mode(b, 0).values.item<bool>(), true);
  EXPECT_EQ(mode(b, 0).indices.item<int64_t>(), 2);
}

// quantile's reference in float64, with the rank computed in the op's dtype as PyTorch does.
double quantile_ref(std::vector<double> row, double q, QuantileInterpolation mode, bool ignore_nan,
                    bool f32_ranks) {
  std::vector<double> nums;
  for (double v : row) {
    if (!std::isnan(v)) nums.push_back(v);
  }
  if (!ignore_nan && nums.size() != row.size()) return kNaN;
  if (nums.empty()) return kNaN;
  std::sort(nums.begin(), nums.end());
  const int64_t last = int64_t(nums.size()) - 1;
  double rank = f32_ranks ? double(float(q) * float(last)) : q * double(last);
  switch (mode) {
    case QuantileInterpolation::Lower:
      rank = std::floor(rank);
      break;
    case QuantileInterpolation::Higher:
      rank = std::ceil(rank);
      break;
    case QuantileInterpolation::Nearest:
      rank = std::nearbyint(rank);
      break;
    default:
      break;
  }
  const double lo = nums[size_t(std::floor(rank))], hi = nums[size_t(std::ceil(rank))];
  if (mode == QuantileInterpolation::Midpoint) return lo + 0.5 * (hi - lo);
  if (mode == QuantileInterpolation::Linear) return lo + (rank - std::floor(rank)) * (hi - lo);
  return lo;
}

const std::vector<QuantileInterpolation> kModes = {
    QuantileInterpolation::Linear, QuantileInterpolation::Lower, QuantileInterpolation::Higher,
    QuantileInterpolation::Midpoint, QuantileInterpolation::Nearest};

TEST(OpTableStatistics, QuantileAndNanquantile) {
  uint32_t seed = 800;
  const std::vector<double> qs = {0.0, 0.25, 0.3, 0.5, 0.125, 0.9, 1.0};
  for (bool ignore_nan : {false, true}) {
    for (DType dtype : kFloatTypes) {
      for (const DimCase& c : dim_cases()) {
        if (c.shape.numel() == 0) continue;
        for (bool use_dim : {true, false}) {
          for (bool keep : {false, true}) {
            for (QuantileInterpolation mode : kModes) {
              const Layout layout = seed % 2 ? Layout::Transposed : Layout::Strided;
              const bool ties = seed % 3 == 0;
              DynTensor x = input(c.shape, dtype, layout, -5, 5, seed++, ties);
              if (seed % 4 == 0 && x.numel() > 2) {
                x = with_nan(x, layout, 0.25, seed++);
              }
              const std::string what = label(ignore_nan ? "nanquantile" : "quantile", dtype,
                                             c.shape, use_dim ? c.dim : 99, keep, layout) +
                                       " mode " + std::to_string(int(mode));
              const Host h = Host::of(x);
              const int d = wrap_dim(c.dim, c.shape.rank(), "ref");
              std::vector<std::vector<double>> rows =
                  use_dim ? rows_along(h, d) : std::vector<std::vector<double>>{h.v};
              Shape kshape;  // the shape of one quantile's result
              if (use_dim) {
                kshape = out_shape(c.shape, d, keep);
              } else if (keep) {
                kshape = Shape(std::vector<int64_t>(size_t(c.shape.rank()), 1));
              }
              std::vector<double> want;
              for (double q : qs) {
                for (const auto& row : rows) {
                  want.push_back(quantile_ref(row, q, mode, ignore_nan, dtype != DType::f64));
                }
              }
              const DynTensor qt = from_data(TensorData::from(qs, Shape{int64_t(qs.size())}));
              const std::optional<int64_t> dim =
                  use_dim ? std::optional<int64_t>(c.dim) : std::nullopt;
              const DynTensor y = ignore_nan ? nanquantile(x, qt, dim, keep, mode)
                                             : quantile(x, qt, dim, keep, mode);
              Shape qshape{int64_t(qs.size())};
              for (int i = 0; i < kshape.rank(); ++i) qshape.push_back(kshape[i]);
              EXPECT_EQ(y.dtype(), dtype) << what;
              Tol t = tol_for(dtype);
              t.atol += 5 * t.rtol;  // an interpolation of values up to 5
              expect_close(y, qshape, want, t, what);
              // A number q: the same without the leading dim.
              const DynTensor y1 = ignore_nan ? nanquantile(x, qs[2], dim, keep, mode)
                                              : quantile(x, qs[2], dim, keep, mode);
              const size_t per = rows.size();
              expect_close(
                  y1, kshape,
                  std::vector<double>(want.begin() + long(2 * per), want.begin() + long(3 * per)),
                  t, what + " scalar q");
            }
          }
        }
      }
    }
  }
  // PyTorch's values: quantile([1, 2, 3, 4], [0, 0.1, 0.5, 0.9, 1]) per interpolation.
  const DynTensor x = from_data(TensorData::from(std::vector<double>{1, 2, 3, 4}, Shape{4}));
  const DynTensor q =
      from_data(TensorData::from(std::vector<double>{0, 0.1, 0.5, 0.9, 1}, Shape{5}));
  expect_close(quantile(x, q), Shape{5}, {1, 1.3, 2.5, 3.7, 4}, {1e-12, 1e-12}, "linear");
  expect_close(quantile(x, q, std::nullopt, false, QuantileInterpolation::Lower), Shape{5},
               {1, 1, 2, 3, 4}, {0, 0}, "lower");
  expect_close(quantile(x, q, std::nullopt, false, QuantileInterpolation::Higher), Shape{5},
               {1, 2, 3, 4, 4}, {0, 0}, "higher");
  expect_close(quantile(x, q, std::nullopt, false, QuantileInterpolation::Midpoint), Shape{5},
               {1, 1.5, 2.5, 3.5, 4}, {0, 0}, "midpoint");
  expect_close(quantile(x, q, std::nullopt, false, QuantileInterpolation::Nearest), Shape{5},
               {1, 1, 3, 4, 4}, {0, 0}, "nearest");
  // Nearest rounds half to even: ranks 0.5, 1.5, 2.5, 3.5 -> 0, 2, 2, 4.
  const DynTensor x5 = from_data(TensorData::from(std::vector<double>{0, 1, 2, 3, 4}, Shape{5}));
  const DynTensor qh =
      from_data(TensorData::from(std::vector<double>{0.125, 0.375, 0.625, 0.875}, Shape{4}));
  expect_close(quantile(x5, qh, std::nullopt, false, QuantileInterpolation::Nearest), Shape{4},
               {0, 2, 2, 4}, {0, 0}, "nearest half to even");
  // Shapes as PyTorch: [4, 2, 1, 4], [4, 1, 1, 1], [1, 1, 1].
  const DynTensor r3 = randn(Shape{2, 3, 4}, DType::f32);
  const DynTensor q4 = from_data(TensorData::from(std::vector<float>{0, .25f, .5f, 1}, Shape{4}));
  EXPECT_EQ(to_string(quantile(r3, q4, 1, true).shape()), "[4, 2, 1, 4]");
  EXPECT_EQ(to_string(quantile(r3, q4, std::nullopt, true).shape()), "[4, 1, 1, 1]");
  EXPECT_EQ(to_string(quantile(r3, 0.3, std::nullopt, true).shape()), "[1, 1, 1]");
  EXPECT_EQ(to_string(quantile(r3, 0.3).shape()), "[]");
}

TEST(OpTableStatistics, UniqueAndUniqueConsecutive) {
  uint32_t seed = 900;
  for (DType dtype : kAllTypes) {
    for (const Shape& shape :
         {Shape{}, Shape{0}, Shape{1}, Shape{9}, Shape{4, 7}, Shape{3, 0}, Shape{20, 30}}) {
      for (Layout layout : {Layout::Contiguous, Layout::Transposed}) {
        for (bool consecutive : {false, true}) {
          DynTensor x = input(shape, dtype, layout, dtype == DType::u8 ? 0 : -3,
                              consecutive ? 2 : 5, seed++, true);
          if (is_floating(dtype) && shape.numel() > 3) {
            x = with_nan(x, layout, 0.1, seed++);
          }
          const std::string what = std::string(consecutive ? "unique_consecutive " : "unique ") +
                                   std::string(dtype_name(dtype)) + " " + to_string(shape) + " " +
                                   layout_name(layout);
          const std::vector<double> v = x.to_vector<double>();
          // Reference: runs of equal values (NaN never equal) of the sorted or plain sequence.
          std::vector<int64_t> order(v.size());
          std::iota(order.begin(), order.end(), 0);
          if (!consecutive) order = stable_order(v);
          std::vector<double> values, counts, inverse(v.size());
          for (size_t i = 0; i < order.size(); ++i) {
            const double e = v[size_t(order[i])];
            if (i == 0 || !(e == values.back())) {
              values.push_back(e);
              counts.push_back(0);
            }
            counts.back() += 1;
            inverse[size_t(order[i])] = double(values.size() - 1);
          }
          const UniqueResult r =
              consecutive ? unique_consecutive(x, true, true) : unique(x, true, true, true);
          EXPECT_EQ(r.values.dtype(), dtype) << what;
          expect_close(r.values, Shape{int64_t(values.size())}, values, {0, 0}, what + " values");
          expect_close(r.inverse, shape, inverse, {0, 0}, what + " inverse");
          expect_close(r.counts, Shape{int64_t(values.size())}, counts, {0, 0}, what + " counts");
          const UniqueResult plain = consecutive ? unique_consecutive(x) : unique(x);
          EXPECT_FALSE(plain.inverse.defined()) << what;
          EXPECT_FALSE(plain.counts.defined()) << what;
          expect_close(plain.values, Shape{int64_t(values.size())}, values, {0, 0}, what);
        }
      }
    }
  }
  // PyTorch: unique_consecutive([1, 1, 2, 2, 3, 1, 1]) -> [1, 2, 3, 1], inverse
  // [0, 0, 1, 1, 2, 3, 3], counts [2, 2, 1, 2].
  const DynTensor c =
      from_data(TensorData::from(std::vector<int64_t>{1, 1, 2, 2, 3, 1, 1}, Shape{7}));
  const UniqueResult r = unique_consecutive(c, true, true);
  EXPECT_EQ(r.values.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3, 1}));
  EXPECT_EQ(r.inverse.to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 1, 1, 2, 3, 3}));
  EXPECT_EQ(r.counts.to_vector<int64_t>(), (std::vector<int64_t>{2, 2, 1, 2}));
  // Not differentiable: the values are not tracked.
  EXPECT_FALSE(unique(require_grad(randn(Shape{5}, DType::f64))).values.requires_grad());
}

TEST(OpTableStatistics, CummaxCummin) {
  uint32_t seed = 1000;
  for (DType dtype : kAllTypes) {
    for (const DimCase& c : dim_cases()) {
      for (Layout layout : {Layout::Contiguous, Layout::Transposed, Layout::Strided}) {
        for (bool is_max : {true, false}) {
          DynTensor x = input(c.shape, dtype, layout, dtype == DType::u8 ? 0 : -3, 4, seed++, true);
          if (is_floating(dtype) && x.numel() > 4 && seed % 2) {
            x = with_nan(x, layout, 0.08, seed++);
          }
          const std::string what =
              label(is_max ? "cummax" : "cummin", dtype, c.shape, c.dim, false, layout);
          const Host h = Host::of(x);
          const int d = wrap_dim(c.dim, c.shape.rank(), "ref");
          std::vector<double> vals(h.v.size()), idxs(h.v.size());
          // PyTorch's loop: a NaN or a value >= (<=) the best so far takes over.
          for (int64_t i = 0; i < h.numel(); ++i) {
            std::vector<int64_t> idx = h.index(i);
            if (c.shape.rank() && idx[size_t(d)] != 0) continue;
            const int64_t n = c.shape.rank() ? c.shape[d] : 1;
            double best = 0;
            int64_t bi = 0;
            for (int64_t k = 0; k < n; ++k) {
              if (c.shape.rank()) idx[size_t(d)] = k;
              const double e = h.at(idx);
              if (k == 0 || std::isnan(e) ||
                  (!std::isnan(best) && (is_max ? e >= best : e <= best))) {
                best = e;
                bi = k;
              }
              vals[size_t(h.offset(idx))] = best;
              idxs[size_t(h.offset(idx))] = double(bi);
            }
          }
          const ValuesIndices r = is_max ? cummax(x, c.dim) : cummin(x, c.dim);
          EXPECT_EQ(r.values.dtype(), dtype) << what;
          expect_close(r.values, c.shape, vals, {0, 0}, what + " values");
          expect_close(r.indices, c.shape, idxs, {0, 0}, what + " indices");
        }
      }
    }
  }
  // PyTorch: cummax([1, 3, 2, 3, nan, 5, nan]) -> [1, 3, 3, 3, nan, nan, nan], indices
  // [0, 1, 1, 3, 4, 4, 6].
  const DynTensor x =
      from_data(TensorData::from(std::vector<float>{1, 3, 2, 3, NAN, 5, NAN}, Shape{7}));
  EXPECT_EQ(cummax(x, 0).indices.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 1, 3, 4, 4, 6}));
}

TEST(OpTableStatistics, Logcumsumexp) {
  uint32_t seed = 1100;
  std::vector<DType> types = kFloatTypes;
  types.push_back(DType::i64);
  for (DType dtype : types) {
    for (const DimCase& c : dim_cases()) {
      for (Layout layout : {Layout::Contiguous, Layout::Transposed, Layout::Strided}) {
        const DynTensor x = input(c.shape, dtype, layout, -20, 20, seed++, false);
        const std::string what = label("logcumsumexp", dtype, c.shape, c.dim, false, layout);
        const Host h = Host::of(x);
        const int d = wrap_dim(c.dim, c.shape.rank(), "ref");
        std::vector<double> want(h.v.size());
        double biggest = 1;
        for (int64_t i = 0; i < h.numel(); ++i) {
          std::vector<int64_t> idx = h.index(i);
          const int64_t upto = c.shape.rank() ? idx[size_t(d)] : 0;
          double m = -INFINITY;
          for (int64_t k = 0; k <= upto; ++k) {
            if (c.shape.rank()) idx[size_t(d)] = k;
            m = std::max(m, h.at(idx));
          }
          double s = 0;
          for (int64_t k = 0; k <= upto; ++k) {
            if (c.shape.rank()) idx[size_t(d)] = k;
            s += std::exp(h.at(idx) - m);
          }
          want[size_t(i)] = m + std::log(s);
          biggest = std::max(biggest, std::fabs(want[size_t(i)]));
        }
        const DynTensor y = logcumsumexp(x, c.dim);
        const DType out = is_floating(dtype) ? dtype : DType::f32;
        EXPECT_EQ(y.dtype(), out) << what;
        Tol t = tol_for(out);
        t.atol += 4 * t.rtol * biggest;  // rounding of the running log-sum, log(n) steps
        expect_close(y, c.shape, want, t, what);
      }
    }
  }
  // Where exp(x - max) underflows, and infinities (PyTorch: [-1000, 0, 0, inf]).
  const DynTensor e =
      from_data(TensorData::from(std::vector<double>{-1000, 0, -INFINITY, INFINITY}, Shape{4}));
  expect_close(logcumsumexp(e, 0), Shape{4}, {-1000, 0, 0, INFINITY}, {1e-12, 1e-12}, "extremes");
  const DynTensor ninf =
      from_data(TensorData::from(std::vector<double>{-INFINITY, -INFINITY}, Shape{2}));
  expect_close(logcumsumexp(ninf, 0), Shape{2}, {-INFINITY, -INFINITY}, {0, 0}, "-inf");
  const DynTensor n = from_data(TensorData::from(std::vector<double>{1, kNaN, 2}, Shape{3}));
  expect_close(logcumsumexp(n, 0), Shape{3}, {1, kNaN, kNaN}, {0, 0}, "nan");
}

TEST(OpTableStatistics, CountNonzeroAndAminmax) {
  uint32_t seed = 1200;
  for (DType dtype : kAllTypes) {
    for (const DimCase& c : dim_cases()) {
      for (bool all_dims : {false, true}) {
        DynTensor x = input(c.shape, dtype, Layout::Transposed, dtype == DType::u8 ? 0 : -2, 3,
                            seed++, true);  // about 1 in 5 is zero
        const int d = wrap_dim(c.dim, c.shape.rank(), "ref");
        const Host h = Host::of(x);
        const std::vector<std::vector<double>> rows =
            all_dims ? std::vector<std::vector<double>>{h.v} : rows_along(h, d);
        std::vector<double> counts;
        for (const auto& r : rows) {
          counts.push_back(
              double(std::count_if(r.begin(), r.end(), [](double v) { return v != 0; })));
        }
        const std::string what = label("count_nonzero", dtype, c.shape, all_dims ? 99 : c.dim,
                                       false, Layout::Transposed);
        const DynTensor y = all_dims ? count_nonzero(x) : count_nonzero(x, {c.dim});
        EXPECT_EQ(y.dtype(), DType::i64) << what;
        expect_close(y, all_dims ? Shape{} : out_shape(c.shape, d, false), counts, {0, 0}, what);
        // aminmax against amin and amax, with NaN for floats.
        if (is_floating(dtype) && x.numel() > 3) {
          x = with_nan(x, Layout::Transposed, 0.05, seed++);
        }
        for (bool keep : {false, true}) {
          const std::optional<int64_t> dim = all_dims ? std::nullopt : std::optional(c.dim);
          const int64_t reduced = all_dims || c.shape.rank() == 0 ? x.numel() : c.shape[d];
          if (reduced == 0) {
            EXPECT_THROW(aminmax(x, dim, keep), Error) << what;
            continue;
          }
          const MinMax mm = aminmax(x, dim, keep);
          const Dims dims = all_dims ? Dims{} : Dims{c.dim};
          const DynTensor lo = amin(x, dims, keep), hi = amax(x, dims, keep);
          const Host hl = Host::of(x);
          std::vector<double> want_lo, want_hi;
          for (const auto& r :
               all_dims ? std::vector<std::vector<double>>{hl.v} : rows_along(hl, d)) {
            const bool nan =
                std::any_of(r.begin(), r.end(), [](double v) { return std::isnan(v); });
            want_lo.push_back(nan ? kNaN : *std::min_element(r.begin(), r.end()));
            want_hi.push_back(nan ? kNaN : *std::max_element(r.begin(), r.end()));
          }
          expect_close(mm.min, lo.shape(), want_lo, {0, 0}, what + " aminmax min");
          expect_close(mm.max, hi.shape(), want_hi, {0, 0}, what + " aminmax max");
        }
      }
    }
  }
  EXPECT_EQ(count_nonzero(from_data(TensorData::from(std::vector<float>{0, NAN}, Shape{1, 2})))
                .item<int64_t>(),
            1);  // NaN is non-zero
}

// amax/amin/max/min with NaN: NaN wins wherever it is (first or last element, inside the
// vectorised blocks or their tail), on every float dtype, layout and dim.
TEST(OpTableStatistics, ExtremesPropagateNaN) {
  uint32_t seed = 1300;
  for (DType dtype : kFloatTypes) {
    for (const Shape& shape :
         {Shape{1}, Shape{7}, Shape{5, 100}, Shape{3, 1000}, Shape{2, 3, 40}}) {
      for (Layout layout : {Layout::Contiguous, Layout::Transposed, Layout::Strided}) {
        for (int where_nan : {0, 1, 2}) {  // first, middle, last element of the flat order
          DynTensor x = input(shape, dtype, layout, -10, 10, seed++, false);
          const int64_t n = shape.numel();
          const int64_t pos = where_nan == 0 ? 0 : where_nan == 1 ? n / 2 + 3 * (n > 8) : n - 1;
          std::vector<double> mask(size_t(n), 0.0);
          mask[size_t(std::min(pos, n - 1))] = 1;
          x = relayout(where(ne(from_data(TensorData::from(mask, shape)), 0.0),
                             full(Shape{}, kNaN, dtype), x),
                       layout);
          const Host h = Host::of(x);
          const std::string what = std::string(dtype_name(dtype)) + " " + to_string(shape) + " " +
                                   layout_name(layout) + " nan at " + std::to_string(pos);
          EXPECT_TRUE(std::isnan(amax(x).item<double>())) << what;
          EXPECT_TRUE(std::isnan(amin(x).item<double>())) << what;
          EXPECT_TRUE(std::isnan(max(x).item<double>())) << what;
          EXPECT_TRUE(std::isnan(min(x).item<double>())) << what;
          const MinMax mm = aminmax(x);
          EXPECT_TRUE(std::isnan(mm.min.item<double>()) && std::isnan(mm.max.item<double>()))
              << what;
          for (int d = 0; d < shape.rank(); ++d) {
            std::vector<double> want_hi, want_lo, want_i;
            for (const auto& r : rows_along(h, d)) {
              const int64_t f = first_nan(r);
              want_hi.push_back(f >= 0 ? kNaN : *std::max_element(r.begin(), r.end()));
              want_lo.push_back(f >= 0 ? kNaN : *std::min_element(r.begin(), r.end()));
              want_i.push_back(double(f));
            }
            const Shape os = out_shape(shape, d, false);
            expect_close(amax(x, {d}), os, want_hi, {0, 0},
                         what + " amax dim " + std::to_string(d));
            expect_close(amin(x, {d}), os, want_lo, {0, 0},
                         what + " amin dim " + std::to_string(d));
            const ValuesIndices a = max(x, d), b = min(x, d);
            expect_close(a.values, os, want_hi, {0, 0}, what + " max dim");
            expect_close(b.values, os, want_lo, {0, 0}, what + " min dim");
            // Rows with a NaN: the first NaN's index (PyTorch); others are checked elsewhere.
            const std::vector<double> ai = a.indices.to_vector<double>(),
                                      bi = b.indices.to_vector<double>();
            for (size_t i = 0; i < want_i.size(); ++i) {
              if (want_i[i] < 0) continue;
              EXPECT_EQ(ai[i], want_i[i]) << what << " max index, row " << i;
              EXPECT_EQ(bi[i], want_i[i]) << what << " min index, row " << i;
            }
          }
        }
      }
    }
  }
}

// Gradients: to the selected elements (median, kthvalue, mode, cummax/cummin, aminmax), through
// the interpolation (quantile) and the running log-sum (logcumsumexp), against central finite
// differences in float64 on distinct random values (no ties, where the derivative jumps).
TEST(OpTableStatistics, Gradients) {
  uint32_t seed = 1400;
  for (const Shape& shape : {Shape{7}, Shape{4, 5}, Shape{3, 1, 6}}) {
    for (Layout layout : {Layout::Contiguous, Layout::Transposed, Layout::Strided}) {
      const GradInput in{shape, layout, random_values(shape.numel(), -2, 2, false, seed++)};
      const std::string tag = to_string(shape) + " " + layout_name(layout);
      const int64_t last = shape.rank() - 1;
      auto one = [](auto f) { return [f](const std::vector<DynTensor>& x) { return f(x[0]); }; };
      gradcheck("median " + tag, one([](auto& x) { return median(x); }), {in});
      gradcheck("median dim " + tag, one([](auto& x) { return median(x, 0).values; }), {in});
      gradcheck("nanmedian dim " + tag,
                one([&](auto& x) { return nanmedian(x, last, true).values; }), {in});
      gradcheck("kthvalue " + tag, one([](auto& x) { return kthvalue(x, 2, -1).values; }), {in});
      gradcheck("mode " + tag, one([](auto& x) { return mode(x, 0).values; }), {in});
      gradcheck("cummax " + tag, one([](auto& x) { return cummax(x, -1).values; }), {in});
      gradcheck("cummin " + tag, one([](auto& x) { return cummin(x, 0).values; }), {in});
      gradcheck("logcumsumexp " + tag, one([](auto& x) { return logcumsumexp(x, -1); }), {in});
      gradgradcheck("logcumsumexp " + tag, one([](auto& x) { return logcumsumexp(x, 0); }), {in});
      gradcheck("aminmax " + tag, one([](auto& x) {
                  const MinMax m = aminmax(x, 0);
                  return add(m.min, mul(m.max, 2.0));
                }),
                {in});
      for (QuantileInterpolation mode : kModes) {
        const std::string qt = tag + " mode " + std::to_string(int(mode));
        gradcheck("quantile " + qt,
                  one([mode](auto& x) { return quantile(x, 0.3, std::nullopt, false, mode); }),
                  {in});
        gradcheck("quantile dim " + qt, one([mode](auto& x) {
                    const DynTensor q =
                        from_data(TensorData::from(std::vector<double>{0.1, 0.5, 0.85}, Shape{3}));
                    return quantile(x, q, -1, true, mode);
                  }),
                  {in});
        gradcheck("nanquantile " + qt,
                  one([mode](auto& x) { return nanquantile(x, 0.7, 0, false, mode); }), {in});
      }
      gradgradcheck("quantile " + tag, one([](auto& x) { return quantile(x, 0.4, 0); }), {in});
    }
  }
}

// PyTorch 1.13's gradients on the same inputs: median([1, 5, 5, 2]) -> [0, 0, 0, 1];
// median([1, 5, 2, 2], 0) -> [0, 0, 1, 0] (the stable sort's element); quantile([1, 5, 2, 3],
// 0.4) -> [0, 0, 0.8, 0.2]; cummax([1, 3, 3, 2]) sums to [1, 1, 2, 0] (ties: the last index).
TEST(OpTableStatistics, GradientsAsPyTorch) {
  auto grad_of = [](const std::vector<double>& v, auto f) {
    const DynTensor x = require_grad(from_data(TensorData::from(v, Shape{int64_t(v.size())})));
    const DynTensor g = grad(sum(f(x)), {x})[0];
    return g.to_vector<double>();
  };
  using V = std::vector<double>;
  EXPECT_EQ(grad_of({1, 5, 5, 2}, [](auto& x) { return median(x); }), (V{0, 0, 0, 1}));
  EXPECT_EQ(grad_of({1, 5, 2, 2}, [](auto& x) { return median(x, 0).values; }), (V{0, 0, 1, 0}));
  const V q = grad_of({1, 5, 2, 3}, [](auto& x) { return quantile(x, 0.4); });
  EXPECT_NEAR(q[2], 0.8, 1e-12);
  EXPECT_NEAR(q[3], 0.2, 1e-12);
  EXPECT_EQ(q[0] + q[1], 0.0);
  EXPECT_EQ(grad_of({1, 3, 3, 2}, [](auto& x) { return cummax(x, 0).values; }), (V{1, 1, 2, 0}));
  EXPECT_EQ(grad_of({4, 4, 2, 2, 7}, [](auto& x) { return mode(x, 0).values; }),
            (V{0, 0, 0, 1, 0}));  // mode 2 at its last index, 3
}

TEST(OpTableStatistics, BadInputIsAClearError) {
  const DynTensor x = randn(Shape{2, 3}, DType::f32);
  auto expect_error = [](auto f, const std::string& needle) {
    try {
      f();
      ADD_FAILURE() << "no error, expected one containing: " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error([&] { kthvalue(x, 0, 1); },
               "[kthvalue] k = 0 is out of range for dimension 1 of size 3");
  expect_error([&] { kthvalue(x, 4, 1); }, "[kthvalue] k = 4 is out of range");
  expect_error([&] { kthvalue(x, 1, 2); }, "[kthvalue] dimension 2 out of range");
  expect_error([&] { quantile(x, 1.5); }, "[quantile] q must be in [0, 1], got 1.5");
  expect_error([&] { quantile(x, -0.1); }, "[quantile] q must be in [0, 1], got -0.1");
  expect_error([&] { nanquantile(x, NAN); }, "[nanquantile] q must be in [0, 1], got nan");
  expect_error(
      [&] {
        quantile(x, from_data(TensorData::from(std::vector<float>{0.5f, 2.0f}, Shape{2})));
      },
      "[quantile] q must be in [0, 1], got 2");
  expect_error(
      [&] {
        quantile(x, zeros(Shape{1, 1}, DType::f32));
      },
      "[quantile] q must be a scalar or a 1-D tensor, got shape [1, 1]");
  expect_error([&] { quantile(cast(x, DType::i64), 0.5); },
               "[quantile] needs a floating input, got int64");
  expect_error(
      [&] {
        quantile(zeros(Shape{0, 2}, DType::f32), 0.5, 1);
      },
      "[quantile] input is empty: shape [0, 2]");
  expect_error(
      [&] {
        median(zeros(Shape{2, 0}, DType::f32), 1);
      },
      "[median] cannot reduce over a zero-size dimension: dim 1 of input shape [2, 0]");
  expect_error([&] { median(zeros(Shape{0}, DType::i64)); }, "[median] of an empty int64 tensor");
  expect_error([&] { mode(zeros(Shape{0}, DType::f32), 0); },
               "[mode] cannot reduce over a zero-size");
  expect_error([&] { nanmedian(x, 5); }, "[nanmedian] dimension 5 out of range");
  expect_error(
      [&] {
        aminmax(zeros(Shape{3, 0}, DType::f32), 1);
      },
      "[aminmax] cannot reduce over a zero-size dimension: input shape [3, 0]");
  expect_error([&] { cummax(x, 2); }, "[cummax] dimension 2 out of range");
  expect_error([&] { logcumsumexp(x, -3); }, "[logcumsumexp] dimension -3 out of range");
  expect_error([&] { count_nonzero(x, {1, 1}); }, "[count_nonzero]");
  expect_error([&] { unique(DynTensor()); }, "[unique]");
  // Empty where PyTorch allows: reductions along a non-empty dim of an empty tensor.
  const DynTensor e = zeros(Shape{0, 3}, DType::f32);
  EXPECT_EQ(to_string(median(e, 1).values.shape()), "[0]");
  EXPECT_EQ(to_string(mode(e, 1, true).indices.shape()), "[0, 1]");
  EXPECT_EQ(to_string(kthvalue(e, 2, 1).values.shape()), "[0]");
  EXPECT_EQ(to_string(cummax(e, 0).indices.shape()), "[0, 3]");
  EXPECT_EQ(to_string(logcumsumexp(e, 1).shape()), "[0, 3]");
}

TEST(OpTableStatistics, TypedApi) {
  const auto a = Tensor<2>::from_vector<float>({3, 1, 2, 5, 5, 4}, {2, 3});
  const Tensor<0> m = median(a);
  EXPECT_EQ(m.item<float>(), 3.0f);
  const TypedValuesIndices<1, Float> md = median(a, 1);
  EXPECT_EQ(md.values.to_vector<float>(), (std::vector<float>{2, 5}));
  const TypedValuesIndices<2, Float> mk = median(a, 1, keepdim);
  EXPECT_EQ(to_string(mk.indices.shape()), "[2, 1]");
  const TypedValuesIndices<1, Float> mo = mode(a);
  EXPECT_EQ(mo.values.to_vector<float>(), (std::vector<float>{1, 5}));
  EXPECT_EQ(mo.indices.to_vector<int64_t>(), (std::vector<int64_t>{1, 1}));
  const TypedValuesIndices<1, Float> kv = kthvalue(a, 3, 1);
  EXPECT_EQ(kv.values.to_vector<float>(), (std::vector<float>{3, 5}));
  const Tensor<0> q = quantile(a, 0.5);
  EXPECT_EQ(q.item<float>(), 3.5f);
  const Tensor<1> qd = quantile(a, 0.5, 1);
  const Tensor<2> qk = quantile(a, 0.5, 0, keepdim, QuantileInterpolation::Lower);
  const auto qs = Tensor<1>::from_vector<float>({0.f, 1.f});
  const Tensor<2> qv = quantile(a, qs, 1);
  const Tensor<3> qvk = quantile(a, qs, 1, keepdim);
  const Tensor<1> qall = nanquantile(a, qs);
  EXPECT_EQ(to_string(qd.shape()), "[2]");
  EXPECT_EQ(to_string(qk.shape()), "[1, 3]");
  EXPECT_EQ(to_string(qv.shape()), "[2, 2]");
  EXPECT_EQ(to_string(qvk.shape()), "[2, 2, 1]");
  EXPECT_EQ(qall.to_vector<float>(), (std::vector<float>{1, 5}));
  const auto ints = Tensor<2, Int>::from_vector<int64_t>({3, 1, 3, 2, 2, 9}, {2, 3});
  const TypedUnique<2, Int> u = unique(ints, true, true, true);
  EXPECT_EQ(u.values.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3, 9}));
  EXPECT_EQ(u.inverse.to_vector<int64_t>(), (std::vector<int64_t>{2, 0, 2, 1, 1, 3}));
  EXPECT_EQ(u.counts.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 2, 1}));
  const TypedUnique<2, Int> uc = unique_consecutive(ints);
  EXPECT_EQ(uc.values.numel(), 5);
  const TypedValuesIndices<2, Int> cm = cummax(ints, 1);
  EXPECT_EQ(cm.indices.to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 2, 0, 1, 2}));
  const Tensor<2> lc = logcumsumexp(ints, 0);  // Int computes in Float
  EXPECT_NEAR(lc.to_vector<float>()[3], std::log(std::exp(3.f) + std::exp(2.f)), 1e-5);
  const Tensor<0, Int> nz = count_nonzero(a);
  const Tensor<1, Int> nz1 = count_nonzero(a, 0);
  const Tensor<0, Int> nz01 = count_nonzero(a, {0, 1});
  EXPECT_EQ(nz.item<int64_t>(), 6);
  EXPECT_EQ(nz1.numel(), 3);
  EXPECT_EQ(nz01.item<int64_t>(), 6);
  const TypedMinMax<0, Float> mm = aminmax(a);
  EXPECT_EQ(mm.min.item<float>(), 1.0f);
  EXPECT_EQ(mm.max.item<float>(), 5.0f);
  const TypedMinMax<1, Float> mm1 = aminmax(a, 1);
  const TypedMinMax<2, Float> mm1k = aminmax(a, 1, keepdim);
  EXPECT_EQ(mm1.max.to_vector<float>(), (std::vector<float>{3, 5}));
  EXPECT_EQ(to_string(mm1k.min.shape()), "[2, 1]");
}

}  // namespace
}  // namespace ember::test
