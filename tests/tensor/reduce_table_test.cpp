// The reduction part of the op table: sum, mean, prod, amax, amin, all, any, var, std, norm,
// logsumexp, max/min with indices, argmax/argmin, cumsum, cumprod, sort, argsort and topk, on
// every dtype they support, over all, one and several dims, with and without keepdim, on
// contiguous and non-contiguous inputs, against float64 references.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "test_util.hpp"

namespace ember::test {
namespace {

// Reduces `x` over the dims in `mask` on the host: out has the keepdim shape.
struct HostReduce {
  Shape shape;                              // keepdim shape
  std::vector<std::vector<double>> groups;  // the values each output reduces, in order
};
HostReduce group(const Host& x, const std::vector<int64_t>& dims) {
  uint32_t mask = 0;
  if (dims.empty()) {
    mask = (1u << x.shape.rank()) - 1;
  } else {
    for (int64_t d : dims) mask |= 1u << wrap_dim(d, x.shape.rank(), "ref");
  }
  HostReduce r;
  r.shape = x.shape;
  for (int d = 0; d < x.shape.rank(); ++d) {
    if (mask & (1u << d)) r.shape[d] = 1;
  }
  r.groups.resize(size_t(r.shape.numel()));
  Host out{r.shape, {}};
  for (int64_t i = 0; i < x.numel(); ++i) {
    std::vector<int64_t> idx = x.index(i);
    for (int d = 0; d < x.shape.rank(); ++d) {
      if (mask & (1u << d)) idx[size_t(d)] = 0;
    }
    r.groups[size_t(out.offset(idx))].push_back(x.v[size_t(i)]);
  }
  return r;
}

Shape drop(const Shape& keep, const Shape& orig, const std::vector<int64_t>& dims) {
  Shape s;
  for (int d = 0; d < orig.rank(); ++d) {
    bool reduced = dims.empty();
    for (int64_t r : dims) reduced |= wrap_dim(r, orig.rank(), "ref") == d;
    if (!reduced) s.push_back(keep[d]);
  }
  return s;
}

struct ReduceRow {
  const char* name;
  std::function<DynTensor(const DynTensor&, const std::vector<int64_t>&, bool)> fn;
  std::function<double(const std::vector<double>&)> ref;
  double lo, hi;
  std::vector<DType> dtypes;
  bool empty_ok = true;  // defined on empty reductions
};

double sum_of(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }
double var_of(const std::vector<double>& v, int correction) {
  const double m = sum_of(v) / double(v.size());
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / double(int64_t(v.size()) - correction);
}

const std::vector<ReduceRow>& reduce_rows() {
  // clang-format off: one row per op reads best as one line
  static const std::vector<ReduceRow> rows = {
      {"sum", [](auto& x, auto& d, bool k) { return sum(x, d, k); }, sum_of, -10, 10, kAllTypes},
      {"mean", [](auto& x, auto& d, bool k) { return mean(x, d, k); },
       [](auto& v) { return sum_of(v) / double(v.size()); }, -10, 10, kFloatTypes},
      {"prod", [](auto& x, auto& d, bool k) { return prod(x, d, k); },
       [](auto& v) {
         double p = 1;
         for (double x : v) p *= x;
         return p;
       },
       0.9, 1.1, kFloatTypes},
      {"prod_int", [](auto& x, auto& d, bool k) { return prod(slice(x, -1, 0, 3), d, k); }, nullptr,
       -2, 3, kIntTypes},
      {"amax", [](auto& x, auto& d, bool k) { return amax(x, d, k); },
       [](auto& v) { return *std::max_element(v.begin(), v.end()); }, -10, 10, kAllTypes, false},
      {"amin", [](auto& x, auto& d, bool k) { return amin(x, d, k); },
       [](auto& v) { return *std::min_element(v.begin(), v.end()); }, -10, 10, kAllTypes, false},
      {"all", [](auto& x, auto& d, bool k) { return all(x, d, k); },
       [](auto& v) {
         return double(std::all_of(v.begin(), v.end(), [](double x) { return x != 0; }));
       },
       0, 3, kAllTypes},
      {"any", [](auto& x, auto& d, bool k) { return any(x, d, k); },
       [](auto& v) {
         return double(std::any_of(v.begin(), v.end(), [](double x) { return x != 0; }));
       },
       -1, 1.2, kAllTypes},
      {"var", [](auto& x, auto& d, bool k) { return var(x, d, 1, k); },
       [](auto& v) { return var_of(v, 1); }, -5, 5, kFloatTypes},
      {"var_pop", [](auto& x, auto& d, bool k) { return var(x, d, 0, k); },
       [](auto& v) { return var_of(v, 0); }, -5, 5, kFloatTypes},
      {"std", [](auto& x, auto& d, bool k) { return std(x, d, 1, k); },
       [](auto& v) { return std::sqrt(var_of(v, 1)); }, -5, 5, kFloatTypes},
      {"norm2", [](auto& x, auto& d, bool k) { return norm(x, 2.0, d, k); },
       [](auto& v) {
         double s = 0;
         for (double x : v) s += x * x;
         return std::sqrt(s);
       },
       -5, 5, kFloatTypes},
      {"norm1", [](auto& x, auto& d, bool k) { return norm(x, 1.0, d, k); },
       [](auto& v) {
         double s = 0;
         for (double x : v) s += std::fabs(x);
         return s;
       },
       -5, 5, kFloatTypes},
      {"norm3", [](auto& x, auto& d, bool k) { return norm(x, 3.0, d, k); },
       [](auto& v) {
         double s = 0;
         for (double x : v) s += std::pow(std::fabs(x), 3);
         return std::cbrt(s);
       },
       -5, 5, kFloatTypes},
      {"norm_inf", [](auto& x, auto& d, bool k) { return norm(x, INFINITY, d, k); },
       [](auto& v) {
         double s = 0;
         for (double x : v) s = std::max(s, std::fabs(x));
         return s;
       },
       -5, 5, kFloatTypes, false},
      {"logsumexp", [](auto& x, auto& d, bool k) { return logsumexp(x, d, k); },
       [](auto& v) {
         double m = -INFINITY, s = 0;
         for (double x : v) m = std::max(m, x);
         for (double x : v) s += std::exp(x - m);
         return m + std::log(s);
       },
       -20, 20, kFloatTypes},
  };
  // clang-format on
  return rows;
}

struct DimsCase {
  Shape shape;
  std::vector<int64_t> dims;
};

const std::vector<DimsCase>& dims_cases() {
  static const std::vector<DimsCase> cases = {
      {Shape{}, {}},         {Shape{0}, {}},           {Shape{1}, {0}},
      {Shape{7}, {0}},       {Shape{3, 4}, {}},        {Shape{3, 4}, {0}},
      {Shape{3, 4}, {-1}},   {Shape{2, 3, 4}, {0, 2}}, {Shape{2, 3, 4}, {1}},
      {Shape{2, 0, 3}, {1}}, {Shape{2, 0, 3}, {0}},    {Shape{3, 1, 5}, {1}},
      {Shape{40, 2000}, {}}, {Shape{40, 2000}, {1}},   {Shape{40, 2000}, {0}},
      {Shape{3, 50000}, {1}}};
  return cases;
}

DType reduce_out_dtype(const std::string& name, DType in) {
  if (name == "all" || name == "any") return DType::boolean;
  if (name == "sum" || name.rfind("prod", 0) == 0) return is_floating(in) ? in : DType::i64;
  return in;
}

// Reductions add rounding error proportional to the number of terms.
Tol reduce_tol(DType dtype, size_t terms) {
  Tol t = tol_for(dtype);
  if (dtype == DType::f32) t.rtol = std::max(t.rtol, 1e-6 * std::sqrt(double(terms)));
  return t;
}

TEST(OpTableReduce, EveryOpDtypeDimsLayout) {
  uint32_t seed = 9000;
  for (const ReduceRow& row : reduce_rows()) {
    for (DType dtype : row.dtypes) {
      for (const DimsCase& c : dims_cases()) {
        for (bool keep : {false, true}) {
          for (Layout layout : {Layout::Contiguous, Layout::Transposed, Layout::Strided}) {
            // Large shapes exercise the threaded paths; f32 is enough for that.
            if (c.shape.numel() > 10000 && (dtype != DType::f32 || keep)) continue;
            const bool int_prod = std::string(row.name) == "prod_int";
            if (int_prod && c.shape.rank() == 0) continue;
            const double lo = dtype == DType::u8 ? std::max(row.lo, 0.0) : row.lo;
            const DynTensor x = make_input(c.shape, dtype, layout, lo, row.hi, seed++);
            const DynTensor xr = int_prod ? slice(x, -1, 0, 3) : x;
            const HostReduce g = group(Host::of(xr), c.dims);
            const bool empty_group = !g.groups.empty() && g.groups[0].empty();
            const std::string what = std::string(row.name) + " " + std::string(dtype_name(dtype)) +
                                     " " + to_string(c.shape) + " dims " +
                                     std::to_string(c.dims.size() ? c.dims[0] : 99) +
                                     (keep ? " keepdim " : " ") + layout_name(layout);
            if (empty_group && !row.empty_ok) {
              EXPECT_THROW(row.fn(x, c.dims, keep), Error) << what;
              continue;
            }
            std::vector<double> want;
            for (const auto& v : g.groups) {
              if (int_prod) {
                double p = 1;
                for (double e : v) p *= e;
                want.push_back(p);
              } else if (v.empty() && (std::string(row.name) == "mean" ||
                                       std::string(row.name).rfind("var", 0) == 0 ||
                                       std::string(row.name) == "std")) {
                want.push_back(NAN);  // 0 / 0, as PyTorch
              } else if (v.empty() && std::string(row.name) == "logsumexp") {
                want.push_back(-INFINITY);
              } else if (v.empty() && std::string(row.name).rfind("norm", 0) == 0) {
                want.push_back(0);
              } else if (v.empty() && std::string(row.name) == "prod") {
                want.push_back(1);
              } else {
                want.push_back(row.ref(v));
              }
            }
            const DType out_dtype = reduce_out_dtype(row.name, dtype);
            if (out_dtype == DType::f16) {  // results beyond the f16 range are inf there too
              for (double& w : want) w = std::fabs(w) > 65519 ? std::copysign(INFINITY, w) : w;
            }
            const DynTensor y = row.fn(x, c.dims, keep);
            EXPECT_EQ(y.dtype(), out_dtype) << what;
            const Shape shape = keep ? g.shape : drop(g.shape, c.shape, c.dims);
            const size_t terms = g.groups.empty() ? 1 : g.groups[0].size();
            expect_close(y, shape, want, reduce_tol(out_dtype, terms), what);
          }
        }
      }
    }
  }
}

TEST(OpTableReduce, MaxMinWithIndicesAndArg) {
  uint32_t seed = 300;
  for (DType dtype : kAllTypes) {
    for (const DimsCase& c : dims_cases()) {
      if (c.dims.size() != 1 || c.shape.numel() == 0) continue;
      if (c.shape.numel() > 10000 && dtype != DType::f32) continue;
      for (bool keep : {false, true}) {
        const DynTensor x =
            make_input(c.shape, dtype, Layout::Transposed, dtype == DType::u8 ? 0 : -4, 4, seed++);
        const int d = wrap_dim(c.dims[0], c.shape.rank(), "ref");
        const Host h = Host::of(x);
        for (bool is_max : {true, false}) {
          const ValuesIndices r = is_max ? max(x, c.dims[0], keep) : min(x, c.dims[0], keep);
          const DynTensor a = is_max ? argmax(x, c.dims[0], keep) : argmin(x, c.dims[0], keep);
          // Reference: first occurrence of the extreme along d.
          Shape ks = c.shape;
          ks[d] = 1;
          Host ho{ks, {}};
          std::vector<double> vals, idxs;
          for (int64_t o = 0; o < ks.numel(); ++o) {
            std::vector<int64_t> idx = ho.index(o);
            double best = 0;
            int64_t bi = -1;
            for (int64_t k = 0; k < c.shape[d]; ++k) {
              idx[size_t(d)] = k;
              const double v = h.at(idx);
              if (bi < 0 || (is_max ? v > best : v < best)) {
                best = v;
                bi = k;
              }
            }
            vals.push_back(best);
            idxs.push_back(double(bi));
          }
          const Shape shape = keep ? ks : drop(ks, c.shape, c.dims);
          const std::string what = std::string(is_max ? "max " : "min ") +
                                   std::string(dtype_name(dtype)) + " " + to_string(c.shape);
          expect_close(r.values, shape, vals, {0, 0}, what + " values");
          expect_close(r.indices, shape, idxs, {0, 0}, what + " indices");
          expect_close(a, shape, idxs, {0, 0}, what + " arg");
        }
      }
    }
  }
  // Over all elements: index into the flattened tensor; NaN wins.
  const DynTensor x =
      from_data(TensorData::from(std::vector<float>{1, 5, 2, 5, NAN, 0}, Shape{2, 3}));
  EXPECT_EQ(argmax(select(x, 0, 0)).item<int64_t>(), 1);    // first of the ties
  EXPECT_EQ(argmax(slice(x, 1, 0, 2)).item<int64_t>(), 3);  // [[1, 5], [5, nan]]
  EXPECT_EQ(argmax(x).item<int64_t>(), 4);
  EXPECT_TRUE(std::isnan(amax(x).item<float>()));
  EXPECT_TRUE(std::isnan(max(x).item<float>()));
}

TEST(OpTableReduce, CumsumCumprod) {
  uint32_t seed = 400;
  for (DType dtype : kAllTypes) {
    for (const DimsCase& c : dims_cases()) {
      if (c.dims.size() != 1 || c.shape.numel() > 20000) continue;
      for (bool is_sum : {true, false}) {
        const double lo = is_sum ? (dtype == DType::u8 ? 0 : -3) : 0.8, hi = is_sum ? 3 : 1.25;
        const bool int_prod = !is_sum && !is_floating(dtype);
        const DynTensor x = make_input(c.shape, dtype, Layout::Strided, int_prod ? -1 : lo,
                                       int_prod ? 3 : hi, seed++);
        const int d = wrap_dim(c.dims[0], c.shape.rank(), "ref");
        const Host h = Host::of(x);
        std::vector<double> want(h.v.size());
        double worst = 0;
        for (int64_t i = 0; i < x.numel(); ++i) {
          std::vector<int64_t> idx = h.index(i);
          const int64_t upto = c.shape.rank() ? idx[size_t(d)] : 0;
          double acc = is_sum ? 0 : 1, mag = 0;
          for (int64_t k = 0; k <= upto; ++k) {
            if (c.shape.rank()) idx[size_t(d)] = k;
            const double v = h.at(idx);
            acc = is_sum ? acc + v : acc * v;
            mag += std::fabs(v);
          }
          want[size_t(i)] = acc;
          worst = std::max(worst, mag);
        }
        const DType out_dtype = is_floating(dtype) ? dtype : DType::i64;
        const std::string what = std::string(is_sum ? "cumsum " : "cumprod ") +
                                 std::string(dtype_name(dtype)) + " " + to_string(c.shape);
        const DynTensor y = is_sum ? cumsum(x, c.dims[0]) : cumprod(x, c.dims[0]);
        EXPECT_EQ(y.dtype(), out_dtype) << what;
        Tol t = tol_for(out_dtype);
        if (out_dtype == DType::f32 || out_dtype == DType::f16 || out_dtype == DType::bf16) {
          t.atol = std::max(t.atol, t.rtol * worst);  // error grows with the running magnitude
        }
        expect_close(y, c.shape, want, t, what);
      }
    }
  }
}

TEST(OpTableReduce, SortArgsortTopk) {
  uint32_t seed = 500;
  for (DType dtype : kAllTypes) {
    for (const Shape& shape :
         {Shape{}, Shape{0}, Shape{1}, Shape{9}, Shape{4, 7}, Shape{3, 0}, Shape{20, 300}}) {
      for (int64_t dim : {int64_t{0}, int64_t{-1}}) {
        for (bool desc : {false, true}) {
          const DynTensor x =
              make_input(shape, dtype, Layout::Transposed, dtype == DType::u8 ? 0 : -5, 5, seed++);
          const Host h = Host::of(x);
          const int d = shape.rank() ? wrap_dim(dim, shape.rank(), "ref") : 0;
          const int64_t n = shape.rank() ? shape[d] : 1;
          Shape outer = shape;
          if (shape.rank()) outer[d] = 1;
          Host ho{outer, {}};
          std::vector<double> vals(h.v.size()), idxs(h.v.size());
          for (int64_t o = 0; o < (shape.numel() ? outer.numel() : 0); ++o) {
            std::vector<int64_t> idx = ho.index(o);
            std::vector<int64_t> order(static_cast<size_t>(n));
            std::iota(order.begin(), order.end(), 0);
            auto val = [&](int64_t k) {
              if (shape.rank()) idx[size_t(d)] = k;
              return h.at(idx);
            };
            std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
              return desc ? val(a) > val(b) : val(a) < val(b);
            });
            for (int64_t k = 0; k < n; ++k) {
              if (shape.rank()) idx[size_t(d)] = k;
              const int64_t off = h.offset(idx);
              vals[size_t(off)] = val(order[size_t(k)]);
              idxs[size_t(off)] = double(order[size_t(k)]);
            }
          }
          const std::string what =
              std::string(dtype_name(dtype)) + " " + to_string(shape) + (desc ? " desc" : " asc");
          const ValuesIndices s = sort(x, dim, desc);
          expect_close(s.values, shape, vals, {0, 0}, "sort values " + what);
          expect_close(s.indices, shape, idxs, {0, 0}, "sort indices (stable) " + what);
          expect_close(argsort(x, dim, desc), shape, idxs, {0, 0}, "argsort " + what);
          // topk = the first k of a descending (largest) or ascending (smallest) sort.
          for (int64_t k : {int64_t{0}, int64_t{1}, n / 2, n}) {
            if (shape.numel() == 0 && k > 0) continue;
            const ValuesIndices t = topk(x, k, dim, desc);
            Shape ks = shape;
            if (shape.rank()) ks[d] = k;
            const DynTensor want_v = shape.rank()
                                         ? narrow(from_data(TensorData::from(vals, shape)), d, 0, k)
                                         : from_data(TensorData::from(vals, shape));
            expect_close(t.values, ks, want_v.to_vector<double>(), {0, 0}, "topk values " + what);
            if (shape.rank() && k > 0) {
              // Ties may pick either index; the values at the indices must match.
              expect_close(gather(x, d, t.indices), ks, want_v.to_vector<double>(), {0, 0},
                           "topk indices " + what);
            }
          }
        }
      }
    }
  }
  // NaN sorts as the largest value.
  const DynTensor n = from_data(TensorData::from(std::vector<float>{3, NAN, -1, 2}, Shape{4}));
  EXPECT_EQ(argsort(n).to_vector<int64_t>(), (std::vector<int64_t>{2, 3, 0, 1}));
  EXPECT_EQ(argsort(n, 0, true).to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 3, 2}));
}

TEST(OpTableReduce, TypedApi) {
  const auto a = Tensor<2>::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(a.sum().item<float>(), 21.0f);
  const Tensor<1> s1 = a.sum(1);
  EXPECT_EQ(s1.to_vector<float>(), (std::vector<float>{6, 15}));
  const Tensor<2> s1k = a.sum(1, keepdim);
  EXPECT_EQ(to_string(s1k.shape()), "[2, 1]");
  const Tensor<0> s01 = a.sum({0, 1});
  EXPECT_EQ(s01.item<double>(), 21.0);
  auto [v, i] = a.max(1);
  EXPECT_EQ(v.to_vector<float>(), (std::vector<float>{3, 6}));
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{2, 2}));
  const Tensor<1, Int> am = a.argmax(0);
  EXPECT_EQ(am.to_vector<int64_t>(), (std::vector<int64_t>{1, 1, 1}));
  const Tensor<0, Int> count = (a > 2.0f).sum();
  EXPECT_EQ(count.item<int64_t>(), 4);
  EXPECT_NEAR(a.std().item<float>(), 1.8708287f, 1e-6);
  EXPECT_EQ(a.cumsum(1).to_vector<float>(), (std::vector<float>{1, 3, 6, 4, 9, 15}));
}

}  // namespace
}  // namespace ember::test
