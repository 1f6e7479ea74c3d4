// The indexing and sorting ops of issue 14 on every device: scatter_reduce (5 reductions,
// include_self both ways), sort(stable) and topk(sorted), take_along_dim, index_put (accumulate),
// masked_scatter, searchsorted and bucketize. Each against a float64 host reference on random
// data (indices with duplicates), several dtypes and non-contiguous layouts, size-0 and size-1
// shapes; finite-difference gradient checks for the differentiable ones; clear errors (deferred
// ones for out-of-range indices) for bad input. PyTorch 1.13's outputs are quoted where a
// convention matters.
#include <algorithm>
#include <numeric>

#include "autodiff/gradcheck.hpp"
#include "test_util.hpp"

namespace ember::test {
namespace {

using Idx = std::vector<int64_t>;
using S = Shape;

void synced(const DynTensor& x) { synchronize(x.device()); }

DynTensor ints(const std::vector<int64_t>& v, const Shape& s) {
  return from_data(TensorData::from(v, s));
}
DynTensor f64s(const std::vector<double>& v, const Shape& s) {
  return from_data(TensorData::from(v, s));
}
std::vector<int64_t> as_ints(const DynTensor& t) { return t.to_vector<int64_t>(); }
std::vector<double> as_f64(const DynTensor& t) { return t.to_vector<double>(); }

const Layout kThree[] = {Layout::Contiguous, Layout::Transposed, Layout::Strided};

// Random values of `s` that `dtype` holds exactly and whose sums and small products are exact:
// halves in [-lo, hi) on floats, integers on Int, 0/1 on bool.
Host random_host(const Shape& s, DType dtype, uint32_t seed, double lo = -3, double hi = 3) {
  if (dtype == DType::u8) lo = 0;
  if (dtype == DType::boolean) lo = 0, hi = 2;
  std::vector<double> v = random_values(s.numel(), lo * 2, hi * 2, true, seed);
  for (double& x : v)
    x = is_floating(dtype) ? x / 2
                           : (dtype == DType::boolean ? std::floor(x / 2) : std::floor(x / 2));
  return {s, v};
}
Host random_index(const Shape& s, int64_t n, uint32_t seed) {
  return {s, random_values(s.numel(), 0, static_cast<double>(n), true, seed)};
}
std::string name_of(const std::string& op, DType dtype, const Shape& s, Layout layout) {
  return op + " " + std::string(dtype_name(dtype)) + " " + to_string(s) + " " + layout_name(layout);
}

// ---- scatter_reduce ----------------------------------------------------------------------

const char* const kReduces[] = {"sum", "prod", "mean", "amax", "amin"};

// PyTorch's scatter_reduce on the host: each position reduces x's value (include_self) and the
// src values that land on it; positions nothing lands on keep x.
std::vector<double> scatter_reduce_ref(const std::string& reduce, bool include_self, const Host& x,
                                       int d, const Host& index, const Host& src, DType dtype) {
  std::vector<std::vector<double>> groups(static_cast<size_t>(x.numel()));
  for (int64_t i = 0; i < index.numel(); ++i) {
    const Idx p = index.index(i);
    Idx t = p;
    if (x.shape.rank() > 0)
      t[static_cast<size_t>(d)] = static_cast<int64_t>(index.v[static_cast<size_t>(i)]);
    groups[static_cast<size_t>(x.offset(t))].push_back(src.at(p));
  }
  const bool boolean = dtype == DType::boolean;
  std::vector<double> out = x.v;
  for (size_t o = 0; o < out.size(); ++o) {
    std::vector<double> g = groups[o];
    if (g.empty()) continue;
    if (include_self) g.insert(g.begin(), x.v[o]);
    double r = 0;
    if (reduce == "sum" || reduce == "mean") {
      for (double v : g) r += v;
      if (boolean) r = r != 0;
      if (reduce == "mean") {
        r /= static_cast<double>(g.size());
        if (!is_floating(dtype)) r = std::floor(r);  // PyTorch: [-3, -4] -> -4 (floor)
      }
    } else if (reduce == "prod") {
      r = 1;
      for (double v : g) r *= v;
    } else if (reduce == "amax") {
      r = *std::max_element(g.begin(), g.end());
    } else {
      r = *std::min_element(g.begin(), g.end());
    }
    out[o] = r;
  }
  return out;
}

struct ScatterCase {
  Shape x;
  int64_t dim;
  Shape index;
  Shape src;
};

TEST(IndexingExtraTable, ScatterReduce) {
  const std::vector<ScatterCase> cases = {{S{4, 5}, 0, S{6, 5}, S{6, 5}},
                                          {S{4, 5}, 1, S{3, 7}, S{4, 8}},
                                          {S{2, 3, 4}, 1, S{2, 5, 2}, S{2, 5, 4}},
                                          {S{2, 3, 4}, -1, S{1, 2, 6}, S{2, 3, 6}},
                                          {S{5}, 0, S{9}, S{9}},
                                          {S{1}, 0, S{3}, S{3}},
                                          {S{}, 0, S{}, S{}},
                                          {S{3, 4}, -1, S{3, 0}, S{3, 2}},
                                          {S{0, 4}, 1, S{0, 2}, S{0, 2}},
                                          {S{40, 30}, 0, S{90, 30}, S{90, 30}}};
  const std::vector<DType> dtypes = {DType::f32, DType::f64, DType::f16, DType::bf16,   DType::i64,
                                     DType::i32, DType::i8,  DType::u8,  DType::boolean};
  uint32_t k = 100;
  for (const ScatterCase& c : cases) {
    const int d = c.x.rank() ? static_cast<int>(c.dim < 0 ? c.dim + c.x.rank() : c.dim) : 0;
    const int64_t n = c.x.rank() ? c.x[d] : 1;
    for (DType dtype : dtypes) {
      for (const char* reduce : kReduces) {
        const std::string r = reduce;
        if (r == "mean" && dtype == DType::boolean) continue;  // an error, tested below
        for (bool include_self : {true, false}) {
          const Layout layout = kThree[k % 3];
          // prod takes values in [-2, 2) (small exact products); the rest [-3, 3).
          const double lim = r == "prod" ? 2 : 3;
          const Host hx = random_host(c.x, dtype, k, -lim, lim);
          const Host hs = random_host(c.src, dtype, k + 1, -lim, lim);
          const Host hi = random_index(c.index, n, k + 2);
          const std::string what = name_of(
              "scatter_reduce " + r + (include_self ? "" : " (no self)"), dtype, c.x, layout);
          const DynTensor x = from_host(hx, dtype, layout, 7.0);
          const DynTensor src = from_host(hs, dtype, kThree[(k + 1) % 3], 7.0);
          const DynTensor index =
              from_host(hi, k % 2 ? DType::i32 : DType::i64, kThree[(k / 2) % 3], 7.0);
          ++k;
          DynTensor y;
          try {
            y = scatter_reduce(x, c.dim, index, src, r, include_self);
          } catch (const Error& e) {
            ADD_FAILURE() << what << " threw " << e.what();
            continue;
          }
          EXPECT_EQ(y.dtype(), dtype) << what;
          std::vector<double> want = scatter_reduce_ref(r, include_self, hx, d, hi, hs, dtype);
          if (!is_floating(dtype) && dtype != DType::boolean) {  // the values wrap like the dtype
            for (double& v : want) v = Host::of(cast(f64s({v}, S{}), dtype)).v[0];
          }
          expect_close(y, c.x, want, tol_for(dtype), what);
        }
      }
    }
  }
}

// The examples of PyTorch 1.13, printed by
// torch.tensor([1.,2,3,4]).scatter_reduce(0, torch.tensor([0,1,0,1,2]),
//                                         torch.tensor([5.,6,7,8,9]), reduce, include_self=...)
TEST(IndexingExtraTable, ScatterReduceMatchesPyTorch) {
  const DynTensor x = f64s({1, 2, 3, 4}, S{4}), src = f64s({5, 6, 7, 8, 9}, S{5});
  const DynTensor index = ints({0, 1, 0, 1, 2}, S{5});
  const std::vector<std::tuple<std::string, bool, std::vector<double>>> want = {
      {"sum", true, {13, 16, 12, 4}},
      {"sum", false, {12, 14, 9, 4}},
      {"prod", true, {35, 96, 27, 4}},
      {"prod", false, {35, 48, 9, 4}},
      {"mean", true, {13. / 3, 16. / 3, 6, 4}},
      {"mean", false, {6, 7, 9, 4}},
      {"amax", true, {7, 8, 9, 4}},
      {"amax", false, {7, 8, 9, 4}},
      {"amin", true, {1, 2, 3, 4}},
      {"amin", false, {5, 6, 9, 4}}};
  for (const auto& [r, self, w] : want) {
    const std::vector<double> got = as_f64(scatter_reduce(x, 0, index, src, r, self));
    for (size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(got[i], w[i], 1e-12) << r << " " << self;
  }
  // Int mean rounds down: [1,2,3,4] with [5,6,8,8,-9] -> [4, 5, -3, 4]; [-3,-4] into 0 -> [-4].
  const DynTensor xi = ints({1, 2, 3, 4}, S{4}), si = ints({5, 6, 8, 8, -9}, S{5});
  EXPECT_EQ(as_ints(scatter_reduce(xi, 0, index, si, "mean")), (Idx{4, 5, -3, 4}));
  EXPECT_EQ(as_ints(scatter_reduce(ints({0}, S{1}), 0, ints({0, 0}, S{2}), ints({-3, -4}, S{2}),
                                   "mean", false)),
            (Idx{-4}));
  // NaN propagates through amax and amin, from src and from self: [nan, nan] both.
  const double nan = std::nan("");
  const DynTensor xn = f64s({1, nan}, S{2}), sn = f64s({nan, 2, 3}, S{3});
  for (const char* r : {"amax", "amin"}) {
    const std::vector<double> got = as_f64(scatter_reduce(xn, 0, ints({0, 0, 1}, S{3}), sn, r));
    EXPECT_TRUE(std::isnan(got[0]) && std::isnan(got[1])) << r;
  }
}

// amax ties share the gradient evenly, self included (PyTorch: x.grad [1/3, 1], src.grad
// [1/3, 1/3, 0]; with include_self=False x.grad [0, 0], src.grad [1/3, 1/3, 1]: x's tie is still
// counted).
TEST(IndexingExtraTable, ScatterReduceAmaxTiesSplitTheGradient) {
  for (bool self : {true, false}) {
    const DynTensor x = require_grad(f64s({3, 1}, S{2}));
    const DynTensor s = require_grad(f64s({3, 3, 0.5}, S{3}));
    const DynTensor y = scatter_reduce(x, 0, ints({0, 0, 1}, S{3}), s, "amax", self);
    const auto g = grad(y, {x, s}, ones(S{2}, DType::f64));
    const std::vector<double> gx = as_f64(g[0]), gs = as_f64(g[1]);
    const std::vector<double> wx =
        self ? std::vector<double>{1. / 3, 1} : std::vector<double>{0, 0};
    const std::vector<double> ws =
        self ? std::vector<double>{1. / 3, 1. / 3, 0} : std::vector<double>{1. / 3, 1. / 3, 1};
    for (size_t i = 0; i < 2; ++i) EXPECT_NEAR(gx[i], wx[i], 1e-12) << self;
    for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(gs[i], ws[i], 1e-12) << self;
  }
}

TEST(IndexingExtraTable, ScatterReduceGradients) {
  // Random distinct values (no ties); index [3, 4] into x [4, 4] along 0 with duplicates.
  const Shape xs{4, 4}, ss{3, 5};
  const std::vector<int64_t> iv = {0, 2, 2, 1, 0, 0, 3, 1, 2, 0, 2, 1};
  const DynTensor index = ints(iv, S{3, 4});
  for (const char* r : kReduces) {
    for (bool self : {true, false}) {
      for (Layout layout : {Layout::Contiguous, Layout::Transposed}) {
        const std::string name = std::string("scatter_reduce ") + r + (self ? "" : " no self");
        const GradFn f = [&](const std::vector<DynTensor>& in) {
          return scatter_reduce(in[0], 0, index, in[1], r, self);
        };
        std::vector<double> xv = random_values(xs.numel(), 0.5, 2, false, 11);
        std::vector<double> sv = random_values(ss.numel(), -2, 2, false, 12);
        EXPECT_TRUE(gradcheck(name, f, {{xs, layout, xv}, {ss, layout, sv}})) << name;
      }
    }
  }
  // prod with zeros: one zero in a group (src 0 of row 0 lands on x[0,0]), two zeros in a
  // group (x[2,1] gets src[1,1] and src[2,1]... set both 0), and a zero in x.
  const GradFn prod = [&](const std::vector<DynTensor>& in) {
    return scatter_reduce(in[0], 0, index, in[1], "prod");
  };
  std::vector<double> xv = random_values(xs.numel(), 0.5, 2, false, 13);
  std::vector<double> sv = random_values(ss.numel(), -2, 2, false, 14);
  sv[0] = 0;          // src[0,0] -> x[0,0]
  sv[5 + 1] = 0;      // src[1,1] -> x[0,1]
  sv[10 + 1] = 0;     // src[2,1] -> x[3,1]
  xv[4 * 2 + 2] = 0;  // x[2,2] (src[0,2] lands there too)
  EXPECT_TRUE(gradcheck("scatter_reduce prod with zeros", prod,
                        {{xs, Layout::Contiguous, xv}, {ss, Layout::Contiguous, sv}}));
  // Second derivatives through the rule.
  for (const char* r : {"sum", "mean", "amax"}) {
    const GradFn f = [&](const std::vector<DynTensor>& in) {
      return mul(scatter_reduce(in[0], 0, index, in[1], r), in[0]);
    };
    EXPECT_TRUE(
        gradgradcheck(std::string("scatter_reduce ") + r, f,
                      {{xs, Layout::Contiguous, random_values(xs.numel(), 0.5, 2, false, 15)},
                       {ss, Layout::Contiguous, random_values(ss.numel(), -2, 2, false, 16)}}));
  }
  // A 0-d x, every update on it.
  const GradFn scalar = [&](const std::vector<DynTensor>& in) {
    return scatter_reduce(in[0], 0, ints({0}, S{}), in[1], "prod");
  };
  EXPECT_TRUE(gradcheck("scatter_reduce 0-d", scalar,
                        {{S{}, Layout::Contiguous, {1.5}}, {S{}, Layout::Contiguous, {-0.7}}}));
}

TEST(IndexingExtraTable, ScatterReduceErrors) {
  const DynTensor x = f64s({1, 2, 3}, S{3}), src = f64s({4, 5}, S{2});
  const DynTensor index = ints({0, 2}, S{2});
  EXPECT_THROW((void)scatter_reduce(x, 0, index, src, "max"), Error) << "unknown reduce";
  EXPECT_THROW((void)scatter_reduce(x, 0, index, cast(src, DType::f32), "sum"), Error)
      << "src dtype differs";
  EXPECT_THROW(
      (void)scatter_reduce(cast(x, DType::boolean), 0, index, cast(src, DType::boolean), "mean"),
      Error)
      << "mean of bool";
  EXPECT_THROW((void)scatter_reduce(x, 0, cast(index, DType::f32), src, "sum"), Error);
  EXPECT_THROW((void)scatter_reduce(x, 1, index, src, "sum"), Error) << "dim out of range";
  try {
    synced(scatter_reduce(x, 0, ints({0, 3}, S{2}), src, "amax"));
    ADD_FAILURE() << "index 3 of 3 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[scatter_reduce] index 3 is out of bounds"),
              std::string::npos)
        << e.what();
  }
}

// ---- sort(stable) and topk(sorted) ---------------------------------------------------------

TEST(IndexingExtraTable, SortIsStableBothWays) {
  // PyTorch: torch.sort(torch.tensor([1,3,1,3,2,1]), stable=True, descending=True).indices
  // = [1, 3, 4, 0, 2, 5]; ascending [0, 2, 5, 4, 1, 3].
  const DynTensor v = ints({1, 3, 1, 3, 2, 1}, S{6});
  EXPECT_EQ(as_ints(sort(v, -1, true, true).indices), (Idx{1, 3, 4, 0, 2, 5}));
  EXPECT_EQ(as_ints(sort(v, -1, false, true).indices), (Idx{0, 2, 5, 4, 1, 3}));
  EXPECT_EQ(as_ints(argsort(v, 0, true, true)), (Idx{1, 3, 4, 0, 2, 5}));
  // Many ties, every dtype, along each dim, in three layouts: the host's stable sort.
  uint32_t k = 300;
  for (DType dtype : kAllTypes) {
    for (const auto& [shape, dim] : std::vector<std::pair<Shape, int64_t>>{{S{5, 40}, 1},
                                                                           {S{40, 5}, 0},
                                                                           {S{3, 7, 9}, 1},
                                                                           {S{1}, 0},
                                                                           {S{0, 3}, 1},
                                                                           {S{2000}, 0}}) {
      for (bool descending : {false, true}) {
        const Layout layout = kThree[k % 3];
        const Host h = random_host(shape, dtype, k++, -2, 2);  // few distinct values
        const DynTensor x = from_host(h, dtype, layout, 7.0);
        const auto [values, indices] = sort(x, dim, descending, true);
        const int d = static_cast<int>(dim);
        const int64_t len = shape[d];
        std::vector<double> wv(h.v.size()), wi(h.v.size());
        for (int64_t i = 0; i < h.numel(); ++i) {
          Idx o = h.index(i);
          if (o[static_cast<size_t>(d)] != 0) continue;
          std::vector<int64_t> order(static_cast<size_t>(len));
          std::iota(order.begin(), order.end(), 0);
          const auto at = [&](int64_t j) {
            Idx p = o;
            p[static_cast<size_t>(d)] = j;
            return h.at(p);
          };
          std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
            return descending ? at(a) > at(b) : at(a) < at(b);
          });
          for (int64_t j = 0; j < len; ++j) {
            Idx p = o;
            p[static_cast<size_t>(d)] = j;
            wv[static_cast<size_t>(h.offset(p))] = at(order[static_cast<size_t>(j)]);
            wi[static_cast<size_t>(h.offset(p))] =
                static_cast<double>(order[static_cast<size_t>(j)]);
          }
        }
        const std::string what = name_of(descending ? "sort desc" : "sort", dtype, shape, layout);
        expect_close(values, shape, wv, {0, 0}, what);
        expect_close(indices, shape, wi, {0, 0}, what);
      }
    }
  }
}

TEST(IndexingExtraTable, TopkSortedFalseReturnsTheSortedResult) {
  // PyTorch may return any order with sorted=False (1.13 on the Cpu gave values [5, 4, 3],
  // indices [1, 3, 2] for [1, 5, 3, 4, 2], k = 3); Ember always returns the sorted one.
  const DynTensor x = f64s({1, 5, 3, 4, 2, 5}, S{6});
  for (bool largest : {true, false}) {
    const auto a = topk(x, 3, -1, largest, false), b = topk(x, 3, -1, largest, true);
    EXPECT_EQ(as_f64(a.values), as_f64(b.values));
    EXPECT_EQ(as_ints(a.indices), as_ints(b.indices));
  }
  EXPECT_EQ(as_ints(topk(x, 3, -1, true, false).indices), (Idx{1, 5, 3}));  // ties by index
  const auto t = Tensor<1>::from_vector<float>({2, 9, 4});
  EXPECT_EQ(t.topk(2, 0, true, false).values.to_vector<float>(), (std::vector<float>{9, 4}));
  EXPECT_EQ(t.sort(0, true, true).indices.to_vector<int64_t>(), (Idx{1, 2, 0}));
}

// ---- take_along_dim ----------------------------------------------------------------------

TEST(IndexingExtraTable, TakeAlongDim) {
  // PyTorch: take_along_dim(arange(6.).reshape(2,3), [[0],[2]], 1) = [[0], [5]];
  // with [[2, 1]] (broadcast over rows) [[2, 1], [5, 4]]; dim=None with [5, 0] -> [5, 0].
  const DynTensor a = reshape(arange(0, 6, 1, DType::f64), S{2, 3});
  EXPECT_EQ(as_f64(take_along_dim(a, ints({0, 2}, S{2, 1}), 1)), (std::vector<double>{0, 5}));
  EXPECT_EQ(as_f64(take_along_dim(a, ints({2, 1}, S{1, 2}), 1)), (std::vector<double>{2, 1, 5, 4}));
  EXPECT_EQ(as_f64(take_along_dim(a, ints({5, 0}, S{2}))), (std::vector<double>{5, 0}));
  uint32_t k = 500;
  for (DType dtype : kAllTypes) {
    for (const auto& [xs, is, dim] :
         std::vector<std::tuple<Shape, Shape, int64_t>>{{S{3, 4}, S{3, 6}, 1},
                                                        {S{1, 4}, S{5, 2}, 1},
                                                        {S{3, 1, 4}, S{1, 2, 4}, 0},
                                                        {S{3, 4}, S{0, 4}, 0},
                                                        {S{2, 3}, S{2, 1}, -1}}) {
      const Layout layout = kThree[k % 3];
      const int d = static_cast<int>(dim < 0 ? dim + xs.rank() : dim);
      const Host hx = random_host(xs, dtype, k, -50, 50);
      const Host hi = random_index(is, xs[d], k + 1);
      // Named copies: clang 14 cannot capture structured bindings in a lambda.
      Shape xs1 = xs, is1 = is;
      xs1[d] = 1;
      is1[d] = 1;
      Shape out = broadcast_shapes(xs1, is1, "test");
      out[d] = is[d];
      const Host ho{out, {}};
      std::vector<double> want;
      for (int64_t i = 0; i < out.numel(); ++i) {
        const Idx o = ho.index(i);
        Idx pi = o, px = o;
        for (int j = 0; j < xs.rank(); ++j) {
          if (is[j] == 1) pi[static_cast<size_t>(j)] = 0;
          if (xs[j] == 1) px[static_cast<size_t>(j)] = 0;
        }
        px[static_cast<size_t>(d)] = static_cast<int64_t>(hi.at(pi));
        want.push_back(hx.at(px));
      }
      const DynTensor x = from_host(hx, dtype, layout, 7.0);
      const DynTensor y =
          take_along_dim(x, from_host(hi, DType::i64, kThree[(k + 1) % 3], 7.0), dim);
      expect_close(y, out, want, {0, 0}, name_of("take_along_dim", dtype, xs, layout));
      ++k;
    }
  }
  const GradFn f = [](const std::vector<DynTensor>& in) {
    return take_along_dim(in[0], ints({0, 2, 2, 1, 0, 0}, S{1, 6}), 1);
  };
  EXPECT_TRUE(gradcheck("take_along_dim", f,
                        {{S{3, 4}, Layout::Transposed, random_values(12, -1, 1, false, 3)}}));
  const GradFn g = [](const std::vector<DynTensor>& in) {
    return take_along_dim(in[0], ints({7, 0, 7}, S{3}));
  };
  EXPECT_TRUE(gradcheck("take_along_dim flat", g,
                        {{S{2, 4}, Layout::Strided, random_values(8, -1, 1, false, 4)}}));
  // Errors: rank mismatch, float indices, out of range (deferred; PyTorch: "index -1 is out
  // of bounds for dimension 1 with size 3" for negative ones too).
  EXPECT_THROW((void)take_along_dim(a, ints({0}, S{1}), 1), Error);
  EXPECT_THROW((void)take_along_dim(a, f64s({0}, S{1, 1}), 1), Error);
  EXPECT_THROW((void)take_along_dim(a, ints({0, 1, 0, 1, 0, 1}, S{3, 2}), 1), Error)
      << "3 rows do not broadcast with 2";
  EXPECT_THROW(synced(take_along_dim(a, ints({-1}, S{1, 1}), 1)), Error);
  EXPECT_THROW(synced(take_along_dim(a, ints({6}, S{1}))), Error);
}

// ---- index_put ---------------------------------------------------------------------------

// PyTorch's advanced-indexing assignment on the host: `indices[j]` (empty Host: a full slice)
// for dim j; the index tensors broadcast to `b`; the region's shape puts b where the indexed
// dims are when they are adjacent, else first.
std::vector<double> index_put_ref(const Host& x, const std::vector<Host>& indices,
                                  const Host& values, bool accumulate,
                                  Shape* region_out = nullptr) {
  std::vector<int> adv;
  Shape b;
  for (size_t j = 0; j < indices.size(); ++j) {
    if (indices[j].v.empty() && indices[j].shape.rank() == 0) continue;  // a slice
    b = adv.empty() ? indices[j].shape : broadcast_shapes(b, indices[j].shape, "test");
    adv.push_back(static_cast<int>(j));
  }
  const bool adjacent = adv.back() - adv.front() + 1 == static_cast<int>(adv.size());
  std::vector<int> rest;
  for (int j = 0; j < x.shape.rank(); ++j)
    if (std::find(adv.begin(), adv.end(), j) == adv.end()) rest.push_back(j);
  const int lead = adjacent ? adv.front() : 0;
  Shape region;
  for (int j = 0; j < lead; ++j) region.push_back(x.shape[rest[static_cast<size_t>(j)]]);
  for (int j = 0; j < b.rank(); ++j) region.push_back(b[j]);
  for (size_t j = static_cast<size_t>(lead); j < rest.size(); ++j)
    region.push_back(x.shape[rest[j]]);
  if (region_out) *region_out = region;
  std::vector<double> out = x.v;
  const Host hr{region, {}};
  for (int64_t i = 0; i < region.numel(); ++i) {
    const Idx r = hr.index(i);
    Idx bi(r.begin() + lead, r.begin() + lead + b.rank());
    Idx xi(static_cast<size_t>(x.shape.rank()));
    for (int j = 0; j < lead; ++j)
      xi[static_cast<size_t>(rest[static_cast<size_t>(j)])] = r[static_cast<size_t>(j)];
    for (size_t j = static_cast<size_t>(lead); j < rest.size(); ++j)
      xi[static_cast<size_t>(rest[j])] = r[static_cast<size_t>(b.rank()) + j];
    for (int j : adv) {
      const Host& h = indices[static_cast<size_t>(j)];
      Idx hi(static_cast<size_t>(h.shape.rank()));
      const size_t off = bi.size() - hi.size();
      for (size_t t = 0; t < hi.size(); ++t)
        hi[t] = h.shape[static_cast<int>(t)] == 1 ? 0 : bi[off + t];
      int64_t v = static_cast<int64_t>(h.at(hi));
      if (v < 0) v += x.shape[j];
      xi[static_cast<size_t>(j)] = v;
    }
    // values broadcast to the region (trailing dims aligned)
    Idx vi(static_cast<size_t>(values.shape.rank()));
    const size_t voff = r.size() - vi.size();
    for (size_t t = 0; t < vi.size(); ++t)
      vi[t] = values.shape[static_cast<int>(t)] == 1 ? 0 : r[voff + t];
    double& o = out[static_cast<size_t>(x.offset(xi))];
    o = accumulate ? o + values.at(vi) : values.at(vi);
  }
  return out;
}

struct PutCase {
  Shape x;
  std::vector<Shape> index;  // rank-0 shape with slice = true: a full slice
  std::vector<bool> slice;
  Shape values;
  bool unique;  // indices never repeat (for accumulate = false)
};

TEST(IndexingExtraTable, IndexPut) {
  // PyTorch: zeros(3,4).index_put((tensor([0,2,0]),), tensor(1.), accumulate=True)
  //   = [[2,2,2,2],[0,0,0,0],[1,1,1,1]];
  // index_put((tensor([0,2,0]), tensor([1])), tensor([1.,2,3]), accumulate=True)
  //   = [[0,4,0,0],[0,0,0,0],[0,2,0,0]]; index_put((tensor([-1]),), [1,2,3,4]) sets row 2.
  const DynTensor z = zeros(S{3, 4}, DType::f64);
  EXPECT_EQ(as_f64(index_put(z, {ints({0, 2, 0}, S{3})}, f64s({1}, S{}), true)),
            (std::vector<double>{2, 2, 2, 2, 0, 0, 0, 0, 1, 1, 1, 1}));
  EXPECT_EQ(
      as_f64(index_put(z, {ints({0, 2, 0}, S{3}), ints({1}, S{1})}, f64s({1, 2, 3}, S{3}), true)),
      (std::vector<double>{0, 4, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0}));
  EXPECT_EQ(as_f64(index_put(z, {ints({-1}, S{1})}, f64s({1, 2, 3, 4}, S{4}))),
            (std::vector<double>{0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4}));

  const std::vector<PutCase> cases = {
      {S{5, 3}, {S{7}}, {false}, S{7, 3}, false},
      {S{5, 3}, {S{4}}, {false}, S{3}, true},
      {S{4, 5}, {S{3, 1}, S{1, 2}}, {false, false}, S{3, 2}, false},
      {S{4, 5, 2}, {S{}, S{6}}, {true, false}, S{4, 6, 2}, false},
      {S{4, 5, 3}, {S{2}, S{}, S{2}}, {false, true, false}, S{2, 5}, false},
      {S{6}, {S{4}}, {false}, S{}, false},
      {S{3, 4}, {S{0}}, {false}, S{0, 4}, false},
      {S{1, 1}, {S{1}, S{1}}, {false, false}, S{1}, true},
      {S{50, 20}, {S{300}}, {false}, S{300, 20}, false}};
  uint32_t k = 700;
  for (const PutCase& c : cases) {
    for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::i64, DType::i32, DType::u8}) {
      for (bool accumulate : {true, false}) {
        if (!accumulate && !c.unique) continue;
        const Layout layout = kThree[k % 3];
        const Host hx = random_host(c.x, dtype, k, -3, 3);
        std::vector<Host> hidx;
        std::vector<DynTensor> idx;
        for (size_t j = 0; j < c.index.size(); ++j) {
          if (c.slice[j]) {
            hidx.push_back({S{}, {}});
            idx.emplace_back();
            continue;
          }
          const int64_t n = c.x[static_cast<int>(j)];
          Host h = random_index(c.index[j], n, k + 10 + static_cast<uint32_t>(j));
          if (c.unique) std::iota(h.v.begin(), h.v.end(), 0.0);
          for (size_t t = 0; t < h.v.size(); t += 3) h.v[t] -= static_cast<double>(n);  // negatives
          hidx.push_back(h);
          idx.push_back(from_host(h, j % 2 ? DType::i32 : DType::i64, kThree[(k + j) % 3], 7.0));
        }
        const Host hv = random_host(c.values, dtype, k + 1, -3, 3);
        const std::vector<double> want = index_put_ref(hx, hidx, hv, accumulate);
        const std::string what =
            name_of(accumulate ? "index_put accumulate" : "index_put", dtype, c.x, layout);
        ++k;
        try {
          const DynTensor y = index_put(from_host(hx, dtype, layout, 7.0), idx,
                                        from_host(hv, dtype, Layout::Contiguous, 7.0), accumulate);
          expect_close(y, c.x, want, tol_for(dtype), what);
        } catch (const Error& e) {
          ADD_FAILURE() << what << " threw " << e.what();
        }
      }
    }
  }
  // A bool mask index: x[mask] = v, v one per true element.
  const DynTensor x = reshape(arange(0, 6, 1, DType::f64), S{2, 3});
  const DynTensor mask = cast(ints({1, 0, 1, 0, 1, 0}, S{2, 3}), DType::boolean);
  EXPECT_EQ(as_f64(index_put(x, {mask}, f64s({-1, -2, -3}, S{3}))),
            (std::vector<double>{-1, 1, -2, 3, -3, 5}));
  // Without accumulate, duplicates: PyTorch leaves it unspecified; Ember's last write wins on
  // the Cpu (and Cuda); any backend gives one of the written values.
  const DynTensor y =
      index_put(zeros(S{3}, DType::f64), {ints({1, 1, 1}, S{3})}, f64s({4, 5, 6}, S{3}));
  const double got = as_f64(y)[1];
  EXPECT_TRUE(got == 4 || got == 5 || got == 6) << got;
  if (y.device().type == DeviceType::Cpu) {
    EXPECT_EQ(got, 6);
  }
}

TEST(IndexingExtraTable, IndexPutGradientsAndErrors) {
  const GradFn acc = [](const std::vector<DynTensor>& in) {
    return index_put(in[0], {ints({0, 2, 0, -1}, S{4})}, in[1], true);
  };
  EXPECT_TRUE(gradcheck("index_put accumulate", acc,
                        {{S{4, 3}, Layout::Transposed, random_values(12, -1, 1, false, 5)},
                         {S{4, 3}, Layout::Strided, random_values(12, -1, 1, false, 6)}}));
  const GradFn put = [](const std::vector<DynTensor>& in) {
    return index_put(in[0], {DynTensor(), ints({2, 0}, S{2})}, in[1]);
  };
  EXPECT_TRUE(gradcheck("index_put", put,
                        {{S{3, 4}, Layout::Contiguous, random_values(12, -1, 1, false, 7)},
                         {S{1, 2}, Layout::Contiguous, random_values(2, -1, 1, false, 8)}}));
  const DynTensor x = zeros(S{3, 4}, DType::f32);
  EXPECT_THROW((void)index_put(x, {ints({0}, S{1})}, f64s({1}, S{})), Error) << "values dtype";
  EXPECT_THROW((void)index_put(x, {ints({0, 1}, S{2})}, zeros(S{3}, DType::f32)), Error)
      << "values do not broadcast to [2, 4]";
  EXPECT_THROW((void)index_put(x, {ints({0}, S{1}), ints({0}, S{1}), ints({0}, S{1})},
                               zeros(S{}, DType::f32)),
               Error)
      << "too many indices";
  EXPECT_THROW((void)index_put(x, {f64s({0}, S{1})}, zeros(S{}, DType::f32)), Error);
  EXPECT_THROW(
      (void)index_put(x, {ints({0, 1}, S{2}), ints({0, 1, 2}, S{3})}, zeros(S{}, DType::f32)),
      Error)
      << "indices do not broadcast";
  try {
    synced(index_put(x, {ints({0, -4}, S{2})}, zeros(S{}, DType::f32)));
    ADD_FAILURE() << "index -4 of 3 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[index_put] index -4 is out of bounds for dimension 0"),
              std::string::npos)
        << e.what();
  }
}

// ---- masked_scatter ----------------------------------------------------------------------

TEST(IndexingExtraTable, MaskedScatter) {
  // PyTorch: zeros(2,3).masked_scatter([[T,F,T],[F,T,T]], arange(1.,8)) = [[1,0,2],[0,3,4]];
  // with the mask [T,F,T] broadcast: [[1,0,2],[3,0,4]].
  const DynTensor z = zeros(S{2, 3}, DType::f64), src = arange(1, 8, 1, DType::f64);
  const DynTensor m = cast(ints({1, 0, 1, 0, 1, 1}, S{2, 3}), DType::boolean);
  EXPECT_EQ(as_f64(masked_scatter(z, m, src)), (std::vector<double>{1, 0, 2, 0, 3, 4}));
  EXPECT_EQ(as_f64(masked_scatter(z, cast(ints({1, 0, 1}, S{3}), DType::boolean), src)),
            (std::vector<double>{1, 0, 2, 3, 0, 4}));
  uint32_t k = 900;
  for (DType dtype : kAllTypes) {
    for (const auto& [xs, ms, ss] :
         std::vector<std::tuple<Shape, Shape, Shape>>{{S{4, 5}, S{4, 5}, S{4, 6}},
                                                      {S{4, 5}, S{5}, S{30}},
                                                      {S{3, 2, 4}, S{2, 1}, S{5, 5}},
                                                      {S{0, 3}, S{3}, S{2}},
                                                      {S{1}, S{1}, S{1}},
                                                      {S{200, 30}, S{200, 30}, S{6000}}}) {
      const Layout layout = kThree[k % 3];
      const Host hx = random_host(xs, dtype, k, -50, 50),
                 hs = random_host(ss, dtype, k + 1, -50, 50);
      const Host hm = random_index(ms, 2, k + 2);
      std::vector<double> want = hx.v;
      size_t next = 0;
      for (int64_t i = 0; i < hx.numel(); ++i) {
        const Idx o = hx.index(i);
        Idx mi(static_cast<size_t>(ms.rank()));
        const size_t off = o.size() - mi.size();
        for (size_t t = 0; t < mi.size(); ++t)
          mi[t] = ms[static_cast<int>(t)] == 1 ? 0 : o[off + t];
        if (hm.at(mi) != 0) want[static_cast<size_t>(i)] = hs.v[next++];
      }
      const DynTensor x = from_host(hx, dtype, layout, 7.0);
      const DynTensor y = masked_scatter(x, from_host(hm, DType::boolean, Layout::Contiguous, 7.0),
                                         from_host(hs, dtype, kThree[(k + 1) % 3], 7.0));
      expect_close(y, xs, want, {0, 0}, name_of("masked_scatter", dtype, xs, layout));
      ++k;
    }
  }
  const DynTensor mask = cast(ints({1, 0, 1, 1, 0, 1}, S{2, 3}), DType::boolean);
  const GradFn f = [&](const std::vector<DynTensor>& in) {
    return masked_scatter(in[0], mask, in[1]);
  };
  EXPECT_TRUE(gradcheck("masked_scatter", f,
                        {{S{2, 3}, Layout::Transposed, random_values(6, -1, 1, false, 9)},
                         {S{2, 3}, Layout::Strided, random_values(6, -1, 1, false, 10)}}));
  // Errors: a non-bool mask, source dtype, a mask that does not broadcast, too few source
  // elements (deferred; PyTorch: "Number of elements of source < number of ones in mask").
  EXPECT_THROW((void)masked_scatter(z, ints({1}, S{1}), src), Error);
  EXPECT_THROW((void)masked_scatter(z, m, cast(src, DType::f32)), Error);
  EXPECT_THROW((void)masked_scatter(z, cast(ints({1, 0}, S{2}), DType::boolean), src), Error);
  // x and mask broadcast together: zeros(1,4) with [[T],[F]] -> [[1,2,3,4],[0,0,0,0]] (PyTorch).
  EXPECT_EQ(as_f64(masked_scatter(zeros(S{1, 4}, DType::f64),
                                  cast(ints({1, 0}, S{2, 1}), DType::boolean), src)),
            (std::vector<double>{1, 2, 3, 4, 0, 0, 0, 0}));
  try {
    synced(masked_scatter(z, m, f64s({1, 2}, S{2})));
    ADD_FAILURE() << "4 true values with 2 source elements were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[masked_scatter]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(synced(masked_scatter(z, m, zeros(S{0}, DType::f64))), Error);
  EXPECT_EQ(as_f64(masked_scatter(z, zeros(S{2, 3}, DType::boolean), zeros(S{0}, DType::f64))),
            as_f64(z));
}

// ---- searchsorted and bucketize ----------------------------------------------------------

TEST(IndexingExtraTable, SearchsortedMatchesPyTorch) {
  // PyTorch: searchsorted([1,3,5,7,9], [3,6,9,0,10]) = [1,3,4,0,5]; right=True or
  // side='right' [2,3,5,0,5]; sorter=argsort([9,1,7,3,5]) on that unsorted sequence
  // [1,3,4,0,5]; bucketize gives the same as searchsorted; out_int32 gives int32.
  const DynTensor seq = ints({1, 3, 5, 7, 9}, S{5}), vals = ints({3, 6, 9, 0, 10}, S{5});
  EXPECT_EQ(as_ints(searchsorted(seq, vals)), (Idx{1, 3, 4, 0, 5}));
  EXPECT_EQ(as_ints(searchsorted(seq, vals, false, true)), (Idx{2, 3, 5, 0, 5}));
  EXPECT_EQ(as_ints(searchsorted(seq, vals, false, false, "right")), (Idx{2, 3, 5, 0, 5}));
  const DynTensor uns = ints({9, 1, 7, 3, 5}, S{5});
  EXPECT_EQ(as_ints(searchsorted(uns, vals, false, false, {}, argsort(uns))), (Idx{1, 3, 4, 0, 5}));
  EXPECT_EQ(searchsorted(seq, vals, true).dtype(), DType::i32);
  EXPECT_EQ(as_ints(bucketize(vals, seq)), (Idx{1, 3, 4, 0, 5}));
  EXPECT_EQ(as_ints(bucketize(vals, seq, false, true)), (Idx{2, 3, 5, 0, 5}));
  // Batched: [[1,3],[2,4]] with [[3,0,5],[2,3,4]] -> [[1,0,2],[0,1,1]]; a scalar 4 -> 2.
  EXPECT_EQ(as_ints(searchsorted(ints({1, 3, 2, 4}, S{2, 2}), ints({3, 0, 5, 2, 3, 4}, S{2, 3}))),
            (Idx{1, 0, 2, 0, 1, 1}));
  const DynTensor s = searchsorted(seq, Scalar(4));
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(as_ints(s), (Idx{2}));
  // Mixed dtypes promote: searchsorted([1.5, 2.5], [2]) = [1].
  EXPECT_EQ(as_ints(searchsorted(f64s({1.5, 2.5}, S{2}), ints({2}, S{1}))), (Idx{1}));
  EXPECT_EQ(as_ints(bucketize(Scalar(2.5), f64s({1.5, 2.5}, S{2}))), (Idx{1}));
}

TEST(IndexingExtraTable, SearchsortedRandom) {
  uint32_t k = 1100;
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i64, DType::i32,
                      DType::i8, DType::u8}) {
    for (const auto& [ss, vs] : std::vector<std::pair<Shape, Shape>>{{S{20}, S{3, 7}},
                                                                     {S{1}, S{5}},
                                                                     {S{4, 9}, S{4, 6}},
                                                                     {S{2, 3, 5}, S{2, 3, 4}},
                                                                     {S{0}, S{3}},
                                                                     {S{6}, S{0}},
                                                                     {S{6}, S{}},
                                                                     {S{500}, S{300}}}) {
      for (int variant = 0; variant < 4; ++variant) {
        const bool right = variant % 2 == 1, use_sorter = variant >= 2;
        Host hs = random_host(ss, dtype, k, -10, 10);  // halves/ints in [-10, 10): duplicates
        const int64_t n = ss[ss.rank() - 1];
        const int64_t rows = n ? ss.numel() / n : 0;
        for (int64_t r = 0; r < rows; ++r)
          std::sort(hs.v.begin() + r * n, hs.v.begin() + (r + 1) * n);
        Host hv = random_host(vs, dtype, k + 1, -11, 11);
        std::vector<double> want;
        const int64_t m = ss.rank() == 1 ? vs.numel() : vs[vs.rank() - 1];
        for (int64_t i = 0; i < vs.numel(); ++i) {
          const int64_t r = ss.rank() == 1 ? 0 : i / m;
          const auto first = hs.v.begin() + r * n, last = first + n;
          const double v = hv.v[static_cast<size_t>(i)];
          want.push_back(static_cast<double>(
              (right ? std::upper_bound(first, last, v) : std::lower_bound(first, last, v)) -
              first));
        }
        DynTensor seq = from_host(hs, dtype, kThree[k % 3], 7.0);
        DynTensor sorter;
        if (use_sorter && n > 0) {  // the rows reversed, with the sorter that undoes it
          seq = flip(seq, {-1});
          sorter = expand(arange(n - 1, -1, -1, DType::i64), ss);
        }
        const std::string what = name_of(std::string("searchsorted") + (right ? " right" : "") +
                                             (use_sorter ? " sorter" : ""),
                                         dtype, ss, kThree[k % 3]) +
                                 " values " + to_string(vs);
        const DynTensor values = from_host(hv, dtype, kThree[(k + 1) % 3], 7.0);
        ++k;
        try {
          const DynTensor y = searchsorted(seq, values, variant == 1, right, {}, sorter);
          EXPECT_EQ(y.dtype(), variant == 1 ? DType::i32 : DType::i64) << what;
          expect_close(y, vs, want, {0, 0}, what);
          if (ss.rank() == 1 && !use_sorter) {
            expect_close(bucketize(values, seq, false, right), vs, want, {0, 0},
                         what + " bucketize");
          }
        } catch (const Error& e) {
          ADD_FAILURE() << what << " threw " << e.what();
        }
      }
    }
  }
}

TEST(IndexingExtraTable, SearchsortedErrors) {
  const DynTensor seq = ints({1, 3, 5}, S{3}), vals = ints({2, 4}, S{2});
  EXPECT_THROW((void)searchsorted(seq, vals, false, true, "left"), Error)
      << "PyTorch: side and right can't be set to opposites";
  EXPECT_THROW((void)searchsorted(seq, vals, false, false, "middle"), Error);
  EXPECT_THROW((void)searchsorted(ints({1, 2, 3, 4}, S{2, 2}), ints({1, 2, 3}, S{3, 1})), Error)
      << "leading dims differ";
  EXPECT_THROW((void)searchsorted(seq, vals, false, false, {}, ints({0, 1}, S{2})), Error)
      << "sorter shape";
  EXPECT_THROW(synced(searchsorted(seq, vals, false, false, {}, ints({0, 1, 3}, S{3}))), Error)
      << "sorter out of range";
  EXPECT_THROW((void)bucketize(vals, ints({1, 2, 3, 4}, S{2, 2})), Error) << "2-D boundaries";
  EXPECT_THROW((void)searchsorted(ints({1}, S{}), vals), Error) << "0-d sequence";
}

TEST(IndexingExtraTable, TypedApi) {
  const auto x = Tensor<2>::from_vector<float>({1, 2, 3, 4}, {2, 2});
  const auto i = Tensor<2, Int>::from_vector<int64_t>({1, 1, 0, 0}, {2, 2});
  const auto s = Tensor<2>::from_vector<float>({5, 6, 7, 8}, {2, 2});
  EXPECT_EQ(scatter_reduce(x, 1, i, s, "amax").to_vector<float>(),
            (std::vector<float>{1, 6, 8, 4}));
  EXPECT_EQ(take_along_dim(x, i, 1).to_vector<float>(), (std::vector<float>{2, 2, 3, 3}));
  EXPECT_EQ(take_along_dim(x, Tensor<1, Int>::from_vector<int64_t>({3})).to_vector<float>(),
            (std::vector<float>{4}));
  const Tensor<2> p = index_put(x, {Tensor<1, Int>::from_vector<int64_t>({1, 1}).dyn()},
                                Tensor<1>::from_vector<float>({1, 1}), true);
  EXPECT_EQ(p.to_vector<float>(), (std::vector<float>{1, 2, 5, 6}));
  const auto m = Tensor<1, Bool>::from_vector<bool>({false, true});
  EXPECT_EQ(masked_scatter(x, m, s).to_vector<float>(), (std::vector<float>{1, 5, 3, 6}));
  const auto b = Tensor<1>::from_vector<float>({1.5f, 3.5f});
  const Tensor<2, Int> bucket = bucketize(x, b);
  EXPECT_EQ(bucket.to_vector<int64_t>(), (Idx{0, 1, 1, 2}));
  const Tensor<1, Int> ss = searchsorted(b, Tensor<1>::from_vector<float>({3.5f}), false, true);
  EXPECT_EQ(ss.to_vector<int64_t>(), (Idx{2}));
}

}  // namespace
}  // namespace ember::test
