// The indexing part of the op table: gather/scatter, index_select/index_add, masks, nonzero,
// one_hot and slice_assign on every dtype, against float64 host references, with i64 and i32
// index tensors in contiguous and non-contiguous layouts.
#include <algorithm>
#include <climits>
#include <numeric>

#include "test_util.hpp"

namespace ember::test {
namespace {

// Waits for x's device: a device that checks indices where the data lives raises a range error
// at the next synchronisation, not in the op.
void synced(const DynTensor& x) { synchronize(x.device()); }

using Idx = std::vector<int64_t>;
using S = Shape;

// Random values each dtype holds exactly. The add ops take small values whose sums are exact in
// any order: multiples of 1/64 in f32/f64, integers in the 16-bit floats, nothing that wraps.
Host random_host(const Shape& s, DType dtype, bool for_add, uint32_t seed) {
  const bool frac = dtype == DType::f32 || dtype == DType::f64 || (!for_add && is_floating(dtype));
  double lo = for_add ? -8 : -100, hi = for_add ? 8 : 100;
  if (dtype == DType::u8) lo = 0;
  if (dtype == DType::boolean) lo = 0, hi = 2;
  std::vector<double> v = random_values(s.numel(), lo, hi, !frac, seed);
  if (for_add && frac) {
    for (double& x : v) x = std::floor(x * 64) / 64;
  }
  return Host::of(cast(from_data(TensorData::from(v, s)), dtype));  // rounded to the dtype
}

DynTensor input(const Shape& s, DType dtype, Layout layout, uint32_t seed) {
  if (dtype == DType::u8) return make_input(s, dtype, layout, 0, 200, seed);
  return make_input(s, dtype, layout, -100, 100, seed);
}

// Index tensors cycle through i64/i32 and contiguous/transposed/strided layouts.
DType index_dtype(uint32_t k) { return k % 2 ? DType::i32 : DType::i64; }
Layout index_layout(uint32_t k) {
  static const Layout ls[] = {Layout::Contiguous, Layout::Transposed, Layout::Strided};
  return ls[(k / 2) % 3];
}
DynTensor index_tensor(const Host& h, uint32_t k) {
  return from_host(h, index_dtype(k), index_layout(k));
}
// Indices uniform in [0, n), repeats allowed.
Host random_index(const Shape& s, int64_t n, uint32_t seed) {
  return {s, random_values(s.numel(), 0, static_cast<double>(n), true, seed)};
}
// Indices along `d` that never repeat within a row (so scatter's result is well defined).
Host unique_index(const Shape& s, int d, int64_t n, uint32_t seed) {
  Host h{s, std::vector<double>(static_cast<size_t>(s.numel()))};
  std::mt19937 gen(seed);
  std::vector<int64_t> perm(static_cast<size_t>(n));
  for (int64_t i = 0; i < s.numel(); ++i) {
    Idx o = h.index(i);
    if (s.rank() > 0 && o[static_cast<size_t>(d)] != 0) continue;
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), gen);
    const int64_t len = s.rank() > 0 ? s[d] : 1;
    for (int64_t k = 0; k < len; ++k) {
      if (s.rank() > 0) o[static_cast<size_t>(d)] = k;
      h.v[static_cast<size_t>(h.offset(o))] = static_cast<double>(perm[static_cast<size_t>(k)]);
    }
  }
  return h;
}

// Large cases (past the Cpu backend's parallel grain) run on one dtype per element size.
bool skip_large(const Shape& s, DType dtype) {
  return s.numel() > 10000 && dtype != DType::f32 && dtype != DType::f16 && dtype != DType::i8 &&
         dtype != DType::i64;
}

std::string what_of(const std::string& op, DType dtype, const Shape& s, Layout layout, uint32_t k) {
  return op + " " + std::string(dtype_name(dtype)) + " " + to_string(s) + " " +
         layout_name(layout) + " (index " + std::string(dtype_name(index_dtype(k))) + " " +
         layout_name(index_layout(k)) + ")";
}
int wrap(int64_t dim, int rank) { return static_cast<int>(dim < 0 ? dim + rank : dim); }
// Element of `h` seen broadcast to a shape whose multi-index is `o` (trailing dims aligned).
double bcast_at(const Host& h, const Idx& o) {
  const size_t lead = o.size() - static_cast<size_t>(h.shape.rank());
  Idx i(static_cast<size_t>(h.shape.rank()));
  for (int k = 0; k < h.shape.rank(); ++k)
    i[static_cast<size_t>(k)] = h.shape[k] == 1 ? 0 : o[lead + static_cast<size_t>(k)];
  return h.at(i);
}
// x + y in `dtype` (bool adds are logical or).
double add_in(DType dtype, double x, double y) {
  return dtype == DType::boolean ? double(x != 0 || y != 0) : x + y;
}
// A fill value each dtype holds, and its Scalar written as PyTorch users would.
double fill_of(DType dtype) {
  return dtype == DType::boolean ? 1.0 : (is_floating(dtype) ? -2.5 : 7.0);
}
Scalar scalar_of(DType dtype) {
  if (dtype == DType::boolean) return true;
  return is_floating(dtype) ? Scalar(-2.5) : Scalar(7);
}

// Runs one case; an exception fails the case (naming it) instead of ending the whole table.
template <class F>
DynTensor run_case(const F& f, const std::string& what) {
  try {
    return f();
  } catch (const Error& e) {
    ADD_FAILURE() << what << " threw: " << e.what();
    return {};
  }
}

struct GatherCase {
  Shape x;
  int64_t dim;
  Shape index;
  Shape src;  // scatter ops only
};

TEST(IndexingTable, Gather) {
  const std::vector<GatherCase> cases = {{S{3, 4}, 0, S{2, 4}, {}},
                                         {S{3, 4}, 1, S{3, 6}, {}},
                                         {S{3, 4}, -1, S{2, 2}, {}},
                                         {S{2, 3, 4}, 1, S{2, 5, 3}, {}},
                                         {S{2, 3, 4}, -1, S{1, 2, 4}, {}},
                                         {S{5}, 0, S{8}, {}},
                                         {S{}, 0, S{}, {}},
                                         {S{4, 0}, 0, S{2, 0}, {}},
                                         {S{3, 4}, 0, S{0, 4}, {}},
                                         {S{1, 1}, 1, S{1, 3}, {}},
                                         {S{300, 400}, 1, S{300, 250}, {}},
                                         {S{400, 300}, 0, S{250, 300}, {}}};
  uint32_t k = 0;
  for (const GatherCase& c : cases) {
    const int d = wrap(c.dim, c.x.rank());
    for (DType dtype : kAllTypes) {
      if (skip_large(c.x, dtype)) continue;
      for (Layout layout : kLayouts) {
        const DynTensor x = input(c.x, dtype, layout, k);
        const Host hx = Host::of(x), hi = random_index(c.index, c.x.rank() ? c.x[d] : 1, k + 7);
        std::vector<double> want;
        for (int64_t i = 0; i < c.index.numel(); ++i) {
          Idx o = hi.index(i);
          if (c.x.rank() > 0)
            o[static_cast<size_t>(d)] = static_cast<int64_t>(hi.v[static_cast<size_t>(i)]);
          want.push_back(hx.at(o));
        }
        const std::string what = what_of("gather", dtype, c.x, layout, k);
        const DynTensor y = gather(x, c.dim, index_tensor(hi, k++));
        EXPECT_EQ(y.dtype(), dtype) << what;
        expect_close(y, c.index, want, {0, 0}, what);
      }
    }
  }
}

enum class Scatter { Src, Value, Add };

// Reference of scatter, scatter with a value, and scatter_add.
std::vector<double> scatter_ref(Scatter kind, const Host& x, int d, const Host& index,
                                const Host& src, double value, DType dtype) {
  std::vector<double> out = x.v;
  for (int64_t i = 0; i < index.numel(); ++i) {
    const Idx p = index.index(i);
    Idx t = p;
    if (x.shape.rank() > 0)
      t[static_cast<size_t>(d)] = static_cast<int64_t>(index.v[static_cast<size_t>(i)]);
    double& o = out[static_cast<size_t>(x.offset(t))];
    o = kind == Scatter::Value ? value
        : kind == Scatter::Src ? src.at(p)
                               : add_in(dtype, o, src.at(p));
  }
  return out;
}

void run_scatter(Scatter kind, const std::vector<GatherCase>& cases, uint32_t k) {
  const char* name = kind == Scatter::Src     ? "scatter"
                     : kind == Scatter::Value ? "scatter value"
                                              : "scatter_add";
  for (const GatherCase& c : cases) {
    const int d = wrap(c.dim, c.x.rank());
    const int64_t n = c.x.rank() ? c.x[d] : 1;
    for (DType dtype : kAllTypes) {
      if (skip_large(c.x, dtype)) continue;
      for (Layout layout : {Layout::Contiguous, Layout::Transposed, Layout::Strided}) {
        const bool add = kind == Scatter::Add;
        const Host hx = random_host(c.x, dtype, add, k), hs = random_host(c.src, dtype, add, k + 1);
        const Host hi = add ? random_index(c.index, n, k + 2) : unique_index(c.index, d, n, k + 2);
        const DynTensor x = from_host(hx, dtype, layout);
        const DynTensor src = from_host(hs, dtype, index_layout(k + 1));
        const std::vector<double> want = scatter_ref(kind, hx, d, hi, hs, fill_of(dtype), dtype);
        const std::string what = what_of(name, dtype, c.x, layout, k);
        const DynTensor index = index_tensor(hi, k++);
        const DynTensor y = run_case(
            [&] {
              return kind == Scatter::Src     ? scatter(x, c.dim, index, src)
                     : kind == Scatter::Value ? scatter(x, c.dim, index, scalar_of(dtype))
                                              : scatter_add(x, c.dim, index, src);
            },
            what);
        if (!y.defined()) continue;
        EXPECT_EQ(y.dtype(), dtype) << what;
        expect_close(y, c.x, want, add ? tol_for(dtype) : Tol{0, 0}, what);
        EXPECT_EQ(Host::of(x).v, hx.v) << what << ": the input changed";
      }
    }
  }
}

TEST(IndexingTable, Scatter) {
  const std::vector<GatherCase> cases = {{S{4, 5}, 0, S{3, 5}, S{4, 5}},
                                         {S{4, 5}, 1, S{4, 2}, S{4, 3}},
                                         {S{2, 3, 4}, 1, S{2, 3, 4}, S{2, 3, 4}},
                                         {S{2, 3, 4}, -1, S{1, 2, 3}, S{2, 3, 4}},
                                         {S{6}, 0, S{4}, S{6}},
                                         {S{}, 0, S{}, S{}},
                                         {S{3, 4}, 0, S{0, 4}, S{3, 4}},
                                         {S{3, 1}, 1, S{2, 1}, S{3, 2}},
                                         {S{300, 400}, 1, S{300, 200}, S{300, 200}},
                                         {S{400, 300}, 0, S{300, 300}, S{300, 300}}};
  run_scatter(Scatter::Src, cases, 1000);
  run_scatter(Scatter::Value, cases, 2000);
}

TEST(IndexingTable, ScatterAddWithDuplicates) {
  const std::vector<GatherCase> cases = {{S{4, 5}, 0, S{6, 5}, S{6, 5}},
                                         {S{4, 5}, 1, S{3, 7}, S{4, 7}},
                                         {S{2, 3, 4}, 1, S{2, 5, 2}, S{2, 5, 4}},
                                         {S{5}, 0, S{9}, S{9}},
                                         {S{}, 0, S{}, S{}},
                                         {S{3, 4}, -1, S{3, 0}, S{3, 2}},
                                         {S{2, 3}, -2, S{4, 3}, S{4, 3}},
                                         {S{200, 300}, 0, S{400, 300}, S{400, 300}},
                                         {S{300, 200}, 1, S{300, 400}, S{300, 400}}};
  run_scatter(Scatter::Add, cases, 3000);
}

TEST(IndexingTable, IndexSelect) {
  const std::vector<std::tuple<Shape, int64_t, Shape>> cases = {
      {S{5, 3}, 0, S{7}},      {S{5, 3}, 1, S{4}}, {S{2, 3, 4}, -1, S{0}},
      {S{2, 3, 4}, 1, S{}},    {S{6}, 0, S{6}},    {S{}, 0, S{}},
      {S{0, 3}, 1, S{2}},      {S{4, 1}, 1, S{3}}, {S{500, 200}, 0, S{400}},
      {S{200, 500}, 1, S{400}}};
  uint32_t k = 4000;
  for (const auto& [xs, dim, is] : cases) {
    const int d = wrap(dim, xs.rank());
    Shape out = xs;
    if (xs.rank() > 0) out[d] = is.numel();
    for (DType dtype : kAllTypes) {
      if (skip_large(xs, dtype)) continue;
      for (Layout layout : kLayouts) {
        const DynTensor x = input(xs, dtype, layout, k);
        const Host hx = Host::of(x), hi = random_index(is, xs.rank() ? xs[d] : 1, k + 7);
        std::vector<double> want;
        const Host ho{out, {}};
        for (int64_t i = 0; i < out.numel(); ++i) {
          Idx o = ho.index(i);
          if (xs.rank() > 0)
            o[static_cast<size_t>(d)] =
                static_cast<int64_t>(hi.v[static_cast<size_t>(o[static_cast<size_t>(d)])]);
          want.push_back(hx.at(o));
        }
        const std::string what = what_of("index_select", dtype, xs, layout, k);
        const DynTensor y = index_select(x, dim, index_tensor(hi, k++));
        EXPECT_EQ(y.dtype(), dtype) << what;
        expect_close(y, out, want, {0, 0}, what);
      }
    }
  }
}

// Regression test (index_add on bool): PyTorch semantics, once broken here.
TEST(IndexingTable, IndexAddWithAlphaAndDuplicates) {
  const std::vector<std::tuple<Shape, int64_t, int64_t>> cases = {
      {S{5, 3}, 0, 7}, {S{4, 6}, 1, 3}, {S{2, 3, 4}, -1, 5},   {S{2, 3, 4}, 0, 0},
      {S{6}, 0, 6},    {S{}, 0, 1},     {S{300, 200}, 0, 400}, {S{200, 300}, 1, 400}};
  uint32_t k = 5000;
  for (const auto& [xs, dim, n] : cases) {
    const int d = wrap(dim, xs.rank());
    Shape ss = xs;
    if (xs.rank() > 0) ss[d] = n;
    for (DType dtype : kAllTypes) {
      if (skip_large(xs, dtype)) continue;
      const Scalar alpha = dtype == DType::boolean ? Scalar(true)
                           : is_floating(dtype)    ? Scalar(1.5)
                                                   : Scalar(2);
      for (Layout layout : {Layout::Contiguous, Layout::Transposed, Layout::Strided}) {
        const Host hx = random_host(xs, dtype, true, k), hs = random_host(ss, dtype, true, k + 1);
        const Host hi = random_index(xs.rank() ? S{n} : S{}, xs.rank() ? xs[d] : 1, k + 2);
        std::vector<double> want = hx.v;
        for (int64_t i = 0; i < ss.numel(); ++i) {
          Idx p = hs.index(i);
          if (xs.rank() > 0)
            p[static_cast<size_t>(d)] =
                static_cast<int64_t>(hi.v[static_cast<size_t>(p[static_cast<size_t>(d)])]);
          double& o = want[static_cast<size_t>(hx.offset(p))];
          o = add_in(dtype, o, alpha.to_double() * hs.v[static_cast<size_t>(i)]);
        }
        const std::string what = what_of("index_add", dtype, xs, layout, k);
        const DynTensor x = from_host(hx, dtype, layout),
                        src = from_host(hs, dtype, index_layout(k + 1));
        const DynTensor index = index_tensor(hi, k++);
        const DynTensor y =
            run_case([&, dim = dim] { return index_add(x, dim, index, src, alpha); }, what);
        if (!y.defined()) continue;
        EXPECT_EQ(y.dtype(), dtype) << what;
        expect_close(y, xs, want, tol_for(dtype), what);
      }
    }
  }
}

const std::vector<std::pair<Shape, Shape>> kMaskCases = {
    {S{3, 4}, S{3, 4}},       {S{3, 4}, S{4}},
    {S{3, 4}, S{3, 1}},       {S{3, 4}, S{}},
    {S{2, 3, 4}, S{1, 3, 1}}, {S{}, S{}},
    {S{0, 3}, S{3}},          {S{5}, S{5}},
    {S{300, 400}, S{400}},    {S{300, 400}, S{300, 400}}};

TEST(IndexingTable, MaskedFill) {
  uint32_t k = 6000;
  for (const auto& [xs, ms] : kMaskCases) {
    for (DType dtype : kAllTypes) {
      if (skip_large(xs, dtype)) continue;
      for (Layout layout : kLayouts) {
        const DynTensor x = input(xs, dtype, layout, k);
        const Host hx = Host::of(x), hm = random_host(ms, DType::boolean, false, k + 1);
        std::vector<double> want;
        for (int64_t i = 0; i < hx.numel(); ++i) {
          want.push_back(bcast_at(hm, hx.index(i)) != 0 ? fill_of(dtype)
                                                        : hx.v[static_cast<size_t>(i)]);
        }
        const std::string what =
            what_of("masked_fill", dtype, xs, layout, k) + " mask " + to_string(ms);
        const DynTensor y =
            masked_fill(x, from_host(hm, DType::boolean, index_layout(k++)), scalar_of(dtype));
        EXPECT_EQ(y.dtype(), dtype) << what;
        expect_close(y, xs, want, {0, 0}, what);
      }
    }
  }
  // A float value in an int tensor truncates toward zero, as in PyTorch.
  const DynTensor xi = from_host(Host{S{3}, {4, 5, 6}}, DType::i32, Layout::Strided);
  const DynTensor mi = from_host(Host{S{3}, {1, 0, 1}}, DType::boolean, Layout::Contiguous);
  EXPECT_EQ(masked_fill(xi, mi, 2.7).to_vector<int64_t>(), (std::vector<int64_t>{2, 5, 2}));
  EXPECT_EQ(masked_fill(xi, mi, -2.7).to_vector<int64_t>(), (std::vector<int64_t>{-2, 5, -2}));
  const DynTensor x = input(S{3}, DType::f32, Layout::Contiguous, 1);
  EXPECT_THROW((void)masked_fill(x, full(S{2, 3}, true, DType::boolean), 0.0), Error)
      << "the mask broadcasts to the input, not the other way round";
  EXPECT_THROW((void)masked_fill(x, full(S{3}, 1, DType::i64), 0.0), Error)
      << "the mask must be bool";
}

TEST(IndexingTable, MaskedSelect) {
  std::vector<std::pair<Shape, Shape>> cases = kMaskCases;
  cases.push_back({S{4}, S{3, 4}});  // x broadcasts against the mask
  cases.push_back({S{3, 1}, S{1, 4}});
  uint32_t k = 7000;
  for (const auto& [xs, ms] : cases) {
    const Shape b = broadcast_shapes(xs, ms, "test");
    for (DType dtype : kAllTypes) {
      if (skip_large(b, dtype)) continue;
      for (Layout layout : kLayouts) {
        const DynTensor x = input(xs, dtype, layout, k);
        const Host hx = Host::of(x), hm = random_host(ms, DType::boolean, false, k + 1);
        const Host hb{b, {}};
        std::vector<double> want;
        for (int64_t i = 0; i < b.numel(); ++i) {
          if (bcast_at(hm, hb.index(i)) != 0) want.push_back(bcast_at(hx, hb.index(i)));
        }
        const std::string what =
            what_of("masked_select", dtype, xs, layout, k) + " mask " + to_string(ms);
        const DynTensor y = masked_select(x, from_host(hm, DType::boolean, index_layout(k++)));
        EXPECT_EQ(y.dtype(), dtype) << what;
        expect_close(y, S{static_cast<int64_t>(want.size())}, want, {0, 0}, what);
      }
    }
  }
}

TEST(IndexingTable, Nonzero) {
  const std::vector<Shape> shapes = {S{3, 4}, S{2, 3, 4}, S{7},    S{},
                                     S{0, 3}, S{4, 0},    S{1, 1}, S{300, 500}};
  uint32_t k = 8000;
  for (const Shape& s : shapes) {
    for (DType dtype : kAllTypes) {
      if (skip_large(s, dtype)) continue;
      for (Layout layout : {Layout::Contiguous, Layout::Transposed, Layout::Strided}) {
        // About 40% zeros; -0.0 is zero.
        Host h{s, random_values(s.numel(), dtype == DType::u8 ? 0 : -2, 3, true, k)};
        for (double& v : h.v)
          v = dtype == DType::boolean ? double(v > 0) : (v == 0 && is_floating(dtype) ? -0.0 : v);
        std::vector<double> want;
        for (int64_t i = 0; i < h.numel(); ++i) {
          if (h.v[static_cast<size_t>(i)] == 0) continue;
          for (int64_t c : h.index(i)) want.push_back(static_cast<double>(c));
        }
        const int64_t count = s.rank() ? static_cast<int64_t>(want.size()) / s.rank()
                                       : static_cast<int64_t>(h.v[0] != 0);
        const std::string what = what_of("nonzero", dtype, s, layout, k++);
        const DynTensor y = nonzero(from_host(h, dtype, layout));
        EXPECT_EQ(y.dtype(), DType::i64) << what;
        expect_close(y, S{count, s.rank()}, want, {0, 0}, what);
      }
    }
  }
  const DynTensor nan = full(S{2, 2}, std::nan(""), DType::f32);
  EXPECT_EQ(nonzero(nan).shape(), (S{4, 2})) << "NaN is non-zero";
  EXPECT_EQ(nonzero(full(S{}, 0, DType::i32)).shape(), (S{0, 0}));
}

TEST(IndexingTable, OneHot) {
  const std::vector<Shape> shapes = {S{6}, S{2, 3}, S{}, S{4, 1}, S{0}, S{2, 0}};
  uint32_t k = 9000;
  for (const Shape& s : shapes) {
    for (DType dtype : kIntTypes) {
      for (int64_t classes : {int64_t{-1}, int64_t{5}, int64_t{8}}) {
        if (classes < 0 && s.numel() == 0) continue;
        const Host h{s, random_values(s.numel(), 0, 5, true, k)};
        const int64_t n = classes >= 0
                              ? classes
                              : static_cast<int64_t>(*std::max_element(h.v.begin(), h.v.end())) + 1;
        Shape out = s;
        out.push_back(n);
        std::vector<double> want;
        for (double v : h.v) {
          for (int64_t c = 0; c < n; ++c) want.push_back(double(v == static_cast<double>(c)));
        }
        const std::string what =
            what_of("one_hot " + std::to_string(classes), dtype, s, index_layout(k), k);
        const DynTensor y = one_hot(from_host(h, dtype, index_layout(k++)), classes);
        EXPECT_EQ(y.dtype(), DType::i64) << what;
        expect_close(y, out, want, {0, 0}, what);
      }
    }
  }
  const DynTensor x = from_host(Host{S{3}, {0, 4, 2}}, DType::i64, Layout::Contiguous);
  EXPECT_THROW(synced(one_hot(x, 4)), Error) << "class 4 is out of range for 4 classes";
  EXPECT_THROW((void)one_hot(empty(S{0}, DType::i64)), Error) << "cannot infer classes of nothing";
  EXPECT_THROW(synced(one_hot(from_host(Host{S{2}, {0, -1}}, DType::i64, Layout::Contiguous), 3)),
               Error);
  EXPECT_THROW((void)one_hot(full(S{2}, 1.0, DType::f32), 3), Error);
}

int64_t py_start(int64_t start, int64_t n) {
  return std::clamp<int64_t>(start < 0 ? start + n : start, 0, n);
}
// The input position of region position r selected by `slices`.
Idx region_to_input(const Idx& r, const std::vector<Slice>& slices, const Shape& x) {
  Idx t = r;
  for (size_t d = 0; d < slices.size(); ++d) {
    t[d] = py_start(slices[d].start, x[static_cast<int>(d)]) + r[d] * slices[d].step;
  }
  return t;
}

struct SliceCase {
  Shape x;
  std::vector<Slice> slices;
  Shape region;
  Shape value;  // slice_assign only
};

const std::vector<SliceCase> kSliceCases = {
    {S{5, 6}, {{1, 4}, {0, 6, 2}}, S{3, 3}, S{3, 3}},
    {S{5, 6}, {{-2, INT64_MAX}, {-100, 100, 3}}, S{2, 2}, S{2}},
    {S{5, 6}, {{0, 5, 2}}, S{3, 6}, S{1, 1}},
    {S{2, 3, 4}, {{0, 1}, {1, 3}}, S{1, 2, 4}, S{1, 2, 4}},
    {S{2, 3, 4}, {{}, {}, {3, 0}}, S{2, 3, 0}, S{}},
    {S{2, 3, 4}, {}, S{2, 3, 4}, S{3, 1}},
    {S{7}, {{-5, -1, 3}}, S{2}, S{}},
    {S{0, 3}, {{0, 1}, {1, 3}}, S{0, 2}, S{2}}};

TEST(IndexingTable, SliceMany) {
  uint32_t k = 10000;
  for (const SliceCase& c : kSliceCases) {
    for (DType dtype : kAllTypes) {
      for (Layout layout : kLayouts) {
        const DynTensor x = input(c.x, dtype, layout, k++);
        const Host hx = Host::of(x), hr{c.region, {}};
        std::vector<double> want;
        for (int64_t i = 0; i < c.region.numel(); ++i)
          want.push_back(hx.at(region_to_input(hr.index(i), c.slices, c.x)));
        const std::string what = what_of("slice", dtype, c.x, layout, 0);
        const DynTensor y = slice(x, c.slices);
        expect_close(y, c.region, want, {0, 0}, what);
        EXPECT_EQ(y.raw().storage, x.raw().storage) << what << ": expected a view";
      }
    }
  }
  EXPECT_THROW((void)slice(input(S{2, 3}, DType::f32, Layout::Contiguous, 1), {{}, {}, {}}), Error);
}

TEST(IndexingTable, SliceAssignBroadcastsValue) {
  uint32_t k = 11000;
  for (const SliceCase& c : kSliceCases) {
    for (DType dtype : kAllTypes) {
      for (Layout layout : kLayouts) {
        const DynTensor x = input(c.x, dtype, layout, k);
        const DynTensor v = input(c.value, dtype, kLayouts[(k + 1) % kLayouts.size()], k + 1);
        const Host hx = Host::of(x), hv = Host::of(v), hr{c.region, {}};
        std::vector<double> want = hx.v;
        for (int64_t i = 0; i < c.region.numel(); ++i) {
          const Idx r = hr.index(i);
          want[static_cast<size_t>(hx.offset(region_to_input(r, c.slices, c.x)))] = bcast_at(hv, r);
        }
        const std::string what =
            what_of("slice_assign", dtype, c.x, layout, k++) + " value " + to_string(c.value);
        const DynTensor y = slice_assign(x, c.slices, v);
        EXPECT_EQ(y.dtype(), dtype) << what;
        expect_close(y, c.x, want, {0, 0}, what);
        EXPECT_EQ(Host::of(x).v, hx.v) << what << ": the input changed";
      }
    }
  }
  // A value of another dtype is converted to the input's.
  const DynTensor x = input(S{3, 4}, DType::f32, Layout::Contiguous, 2);
  const DynTensor y = slice_assign(x, {{1, 2}}, full(S{}, 5, DType::i32));
  EXPECT_EQ(y.dtype(), DType::f32);
  EXPECT_EQ(slice(y, 0, 1, 2).to_vector<double>(), (std::vector<double>{5, 5, 5, 5}));
  EXPECT_THROW((void)slice_assign(x, {{0, 2}}, input(S{3, 4}, DType::f32, Layout::Contiguous, 3)),
               Error);
}

TEST(IndexingTable, BadIndicesAreErrors) {
  const DynTensor x = input(S{3, 4}, DType::f32, Layout::Contiguous, 1);
  const auto idx = [](std::vector<int64_t> v, Shape s) {
    return from_data(TensorData::from(v, s));
  };
  EXPECT_THROW(synced(gather(x, 1, idx({0, 4}, S{1, 2}))), Error) << "index 4 out of range";
  EXPECT_THROW(synced(gather(x, 1, idx({0, -1}, S{1, 2}))), Error) << "negative index";
  EXPECT_THROW((void)gather(x, 1, idx({0, 1}, S{2})), Error) << "index rank differs";
  EXPECT_THROW((void)gather(x, 1, idx({0, 1, 0, 1, 0, 1, 0, 1}, S{4, 2})), Error)
      << "index too large off dim";
  EXPECT_THROW((void)gather(x, 1, full(S{1, 2}, 1.0, DType::f32)), Error) << "float index";
  EXPECT_THROW((void)scatter(x, 0, idx({0, 1, 2, 0, 1, 2}, S{3, 2}),
                             input(S{2, 2}, DType::f32, Layout::Contiguous, 2)),
               Error)
      << "index larger than src";
  EXPECT_THROW(synced(scatter_add(x, 0, idx({3}, S{1, 1}), x)), Error);
  EXPECT_THROW(synced(index_select(x, 0, idx({0, 3}, S{2}))), Error);
  EXPECT_THROW((void)index_select(x, 0, idx({0, 1}, S{1, 2})), Error) << "2-D index";
  EXPECT_THROW((void)index_select(x, 2, idx({0}, S{1})), Error) << "dim out of range";
  EXPECT_THROW((void)index_add(x, 0, idx({0, 1}, S{2}), x), Error) << "src shape mismatch";
  EXPECT_THROW(
      synced(index_add(x, 1, idx({0, 4}, S{2}), input(S{3, 2}, DType::f32, Layout::Contiguous, 3))),
      Error);
  EXPECT_THROW((void)masked_select(x, full(S{2}, true, DType::boolean)), Error);
}

TEST(IndexingTable, TypedApi) {
  const auto a = Tensor<2>::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  const auto i = Tensor<2, Int>::from_vector<int64_t>({2, 0, 1, 1}, {2, 2});
  EXPECT_EQ(a.gather(1, i).to_vector<float>(), (std::vector<float>{3, 1, 5, 5}));
  EXPECT_EQ(a.scatter(1, i, 0.5).to_vector<float>(),
            (std::vector<float>{0.5f, 2, 0.5f, 4, 0.5f, 6}));
  EXPECT_EQ(a.scatter_add(1, i, a.slice(1, 0, 2)).to_vector<float>(),
            (std::vector<float>{3, 2, 4, 4, 14, 6}));
  const auto rows = Tensor<1, Int>::from_vector<int32_t>({1, 1, 0});
  EXPECT_EQ(a.index_select(0, rows).dims(), (std::array<int64_t, 2>{3, 3}));
  EXPECT_EQ(a.index_select(0, rows).to_vector<float>(),
            (std::vector<float>{4, 5, 6, 4, 5, 6, 1, 2, 3}));
  const auto ones = Tensor<2>::ones({3, 3});
  EXPECT_EQ(a.index_add(0, rows, ones, 2).to_vector<float>(),
            (std::vector<float>{3, 4, 5, 8, 9, 10}));
  const auto m = Tensor<1, Bool>::from_vector<bool>({true, false, true});
  EXPECT_EQ(a.masked_fill(m, -1).to_vector<float>(), (std::vector<float>{-1, 2, -1, -1, 5, -1}));
  const Tensor<1> sel = a.masked_select(m);
  EXPECT_EQ(sel.to_vector<float>(), (std::vector<float>{1, 3, 4, 6}));
  const Tensor<2, Int> nz = a.slice(1, 1, 2).nonzero();
  EXPECT_EQ(nz.dims(), (std::array<int64_t, 2>{2, 2}));
  const Tensor<2, Int> oh = Tensor<1, Int>::from_vector<int64_t>({2, 0}).one_hot(3);
  EXPECT_EQ(oh.to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 1, 1, 0, 0}));
  EXPECT_EQ(a.slice({{0, 2}, {1, 3}}).to_vector<float>(), (std::vector<float>{2, 3, 5, 6}));
  EXPECT_EQ(a.slice_assign({{1, 2}, {0, 3, 2}}, Tensor<2>::full({1, 1}, 0)).to_vector<float>(),
            (std::vector<float>{1, 2, 3, 0, 5, 0}));
}

}  // namespace
}  // namespace ember::test
