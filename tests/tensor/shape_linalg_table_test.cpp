// The matrix and shape ops of ops/shape_linalg.hpp (tril, triu, bmm, baddbmm, addmm, einsum,
// roll, repeat_interleave, kron, diag, diagonal, trace, cross, linalg norms) against float64
// references computed here by explicit loops, on random data in several shapes (size 0 and 1
// included) and memory layouts; PyTorch-checked values where conventions matter; finite-
// difference gradient checks; and the errors bad input raises.
#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <string>

#include "autodiff/gradcheck.hpp"
#include "tensor/test_util.hpp"

namespace ember::test {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const std::vector<DType> kDtypes = {DType::f32, DType::f64};
const std::vector<Layout> kAnyLayout = {Layout::Contiguous, Layout::Transposed, Layout::Strided,
                                        Layout::Expanded};

Tol tol_of(DType dt) { return dt == DType::f64 ? Tol{1e-10, 1e-12} : Tol{1e-4, 1e-5}; }

uint32_t seed_counter = 1;
DynTensor input(const Shape& s, DType dt, Layout l = Layout::Contiguous) {
  return make_input(s, dt, l, -1.0, 1.0, ++seed_counter);
}

std::string name_of(const std::string& op, const Shape& s, DType dt, Layout l) {
  return op + " " + to_string(s) + " " + std::string(dtype_name(dt)) + " " + layout_name(l);
}

// Host element of `h` at the trailing-aligned broadcast of `idx` (size-1 dims read index 0).
double bcast_at(const Host& h, const std::vector<int64_t>& idx) {
  std::vector<int64_t> j(static_cast<size_t>(h.shape.rank()));
  const size_t lead = idx.size() - j.size();
  for (size_t d = 0; d < j.size(); ++d) {
    j[d] = h.shape[static_cast<int>(d)] == 1 ? 0 : idx[lead + d];
  }
  return h.at(j);
}

Host make_host(const Shape& s) { return {s, std::vector<double>(static_cast<size_t>(s.numel()))}; }

// --- tril / triu -------------------------------------------------------------------------------

Host tri_ref(const Host& x, int64_t k, bool lower) {
  Host out = make_host(x.shape);
  const int r = x.shape.rank();
  for (int64_t i = 0; i < x.numel(); ++i) {
    const auto idx = x.index(i);
    const int64_t d = idx[size_t(r - 1)] - idx[size_t(r - 2)];
    out.v[size_t(i)] = (lower ? d <= k : d >= k) ? x.v[size_t(i)] : 0.0;
  }
  return out;
}

TEST(ShapeLinalgTable, TrilTriu) {
  const std::vector<Shape> shapes = {Shape{3, 4}, Shape{4, 3},    Shape{2, 3, 4}, Shape{2, 2, 5, 3},
                                     Shape{0, 3}, Shape{2, 0, 5}, Shape{1, 1}};
  for (const Shape& s : shapes) {
    for (DType dt : {DType::f32, DType::f64, DType::i64}) {
      for (Layout l : kAnyLayout) {
        const DynTensor x = input(s, dt, l);
        const Host hx = Host::of(x);
        for (int64_t k : {-5, -1, 0, 1, 2, 7}) {
          const std::string what = name_of("tril", s, dt, l) + " k=" + std::to_string(k);
          const Host lo = tri_ref(hx, k, true), up = tri_ref(hx, k, false);
          expect_close(tril(x, k), s, lo.v, tol_for(dt), what);
          expect_close(triu(x, k), s, up.v, tol_for(dt), "triu" + what.substr(4));
        }
      }
    }
  }
  // A NaN or inf outside the triangle is zeroed, not propagated.
  const DynTensor x =
      from_data(TensorData::from(std::vector<double>{1, kInf, NAN, 2}, Shape{2, 2}));
  expect_close(tril(x), Shape{2, 2}, {1, 0, NAN, 2}, tol_for(DType::f64), "tril inf/nan");
  expect_close(triu(x), Shape{2, 2}, {1, kInf, 0, 2}, tol_for(DType::f64), "triu inf/nan");
}

// PyTorch: torch.tril(torch.arange(24).reshape(2, 3, 4), 1), torch.triu(arange(12)[3, 4], -1).
TEST(ShapeLinalgTable, TrilTriuBatchedNonSquareMatchPyTorch) {
  const DynTensor a = reshape(arange(0, 24, 1, DType::i64), Shape{2, 3, 4});
  EXPECT_EQ(tril(a, 1).to_vector<int64_t>(),
            (std::vector<int64_t>{0,  1,  0, 0, 4,  5,  6,  0, 8,  9,  10, 11,
                                  12, 13, 0, 0, 16, 17, 18, 0, 20, 21, 22, 23}));
  const DynTensor b = reshape(arange(0, 12, 1, DType::i64), Shape{3, 4});
  EXPECT_EQ(triu(b, -1).to_vector<int64_t>(),
            (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 0, 9, 10, 11}));
  EXPECT_EQ(tril(b, -1).dtype(), DType::i64);
  const DynTensor m = ge(reshape(arange(0, 4, 1, DType::i64), Shape{2, 2}), 0);
  EXPECT_EQ(triu(m).dtype(), DType::boolean);
  EXPECT_EQ(triu(m).to_vector<bool>(), (std::vector<bool>{true, true, false, true}));
}

// --- bmm / baddbmm / addmm ---------------------------------------------------------------------

Host mm_ref(const Host& a, const Host& b) {  // [B, N, K] x [B, K, M]
  const int64_t nb = a.shape[0], n = a.shape[1], k = a.shape[2], m = b.shape[2];
  Host out = make_host(Shape{nb, n, m});
  for (int64_t p = 0; p < nb; ++p)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j) {
        double acc = 0;
        for (int64_t q = 0; q < k; ++q) acc += a.at({p, i, q}) * b.at({p, q, j});
        out.v[size_t((p * n + i) * m + j)] = acc;
      }
  return out;
}

Host addmm_ref(const Host& input, const Host& prod, double beta, double alpha) {
  Host out = make_host(prod.shape);
  for (int64_t i = 0; i < prod.numel(); ++i) {
    const double in = beta == 0 ? 0.0 : beta * bcast_at(input, prod.index(i));
    out.v[size_t(i)] = in + alpha * prod.v[size_t(i)];
  }
  return out;
}

TEST(ShapeLinalgTable, BmmBaddbmmAddmm) {
  struct Case {
    int64_t b, n, k, m;
  };
  for (const Case& c : std::vector<Case>{
           {2, 3, 4, 5}, {1, 1, 1, 1}, {3, 0, 2, 4}, {2, 3, 0, 2}, {0, 2, 3, 4}, {4, 7, 9, 3}}) {
    for (DType dt : kDtypes) {
      for (Layout l : {Layout::Contiguous, Layout::Transposed, Layout::Strided}) {
        const Shape sa{c.b, c.n, c.k}, sb{c.b, c.k, c.m}, so{c.b, c.n, c.m};
        const DynTensor a = input(sa, dt, l), b = input(sb, dt, l);
        const Host ha = Host::of(a), hb = Host::of(b), prod = mm_ref(ha, hb);
        const std::string what = name_of("bmm", sa, dt, l);
        expect_close(bmm(a, b), so, prod.v, tol_of(dt), what);
        for (const Shape& si : {so, Shape{c.n, c.m}, Shape{1, c.m}, Shape{}}) {
          const DynTensor in = input(si, dt, l);
          for (auto [beta, alpha] :
               std::vector<std::pair<double, double>>{{1, 1}, {0.5, -2}, {0, 1.5}, {-1, 0}}) {
            expect_close(baddbmm(in, a, b, beta, alpha), so,
                         addmm_ref(Host::of(in), prod, beta, alpha).v, tol_of(dt),
                         "baddbmm " + what + " input " + to_string(si));
          }
        }
        // addmm on the first matrix of the batch.
        if (c.b == 0) continue;
        const DynTensor a2 = select(a, 0, 0), b2 = select(b, 0, 0);
        const Host p2 = mm_ref(Host::of(unsqueeze(a2, 0)), Host::of(unsqueeze(b2, 0)));
        const Host p2m{Shape{c.n, c.m}, p2.v};
        for (const Shape& si : {Shape{c.n, c.m}, Shape{c.m}, Shape{c.n, 1}}) {
          const DynTensor in = input(si, dt, l);
          expect_close(addmm(in, a2, b2, 0.25, 3), Shape{c.n, c.m},
                       addmm_ref(Host::of(in), p2m, 0.25, 3).v, tol_of(dt),
                       "addmm " + what + " input " + to_string(si));
        }
      }
    }
  }
  // beta = 0 ignores NaN in the input (PyTorch: torch.baddbmm(nan, b1, b2, beta=0) is finite).
  const DynTensor nan3 = full(Shape{2, 3, 3}, NAN, DType::f32);
  const DynTensor r =
      baddbmm(nan3, input(Shape{2, 3, 4}, DType::f32), input(Shape{2, 4, 3}, DType::f32), 0);
  EXPECT_FALSE(any(isnan(r)).item<bool>());
  const DynTensor r2 = addmm(full(Shape{3, 3}, NAN, DType::f32), input(Shape{3, 2}, DType::f32),
                             input(Shape{2, 3}, DType::f32), 0);
  EXPECT_FALSE(any(isnan(r2)).item<bool>());
}

TEST(ShapeLinalgTable, OuterExists) {
  const DynTensor a = input(Shape{3}, DType::f64), b = input(Shape{4}, DType::f64);
  const Host ha = Host::of(a), hb = Host::of(b);
  std::vector<double> want;
  for (double x : ha.v)
    for (double y : hb.v) want.push_back(x * y);
  expect_close(outer(a, b), Shape{3, 4}, want, tol_for(DType::f64), "outer");
}

// --- einsum -------------------------------------------------------------------------------------

// Evaluates a letters-only, explicit equation ("ij,jk->ik") by looping over every value of
// every label; size-1 dims broadcast.
Host einsum_ref(const std::string& eq, const std::vector<Host>& xs) {
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow), rhs = eq.substr(arrow + 2);
  std::vector<std::string> terms;
  for (size_t s = 0;;) {
    const size_t c = lhs.find(',', s);
    terms.push_back(lhs.substr(s, c - s));
    if (c == std::string::npos) break;
    s = c + 1;
  }
  std::map<char, int64_t> size;
  std::string labels;
  for (size_t t = 0; t < terms.size(); ++t) {
    EXPECT_EQ(int(terms[t].size()), xs[t].shape.rank()) << eq;
    for (size_t d = 0; d < terms[t].size(); ++d) {
      const char c = terms[t][d];
      const int64_t s = xs[t].shape[int(d)];
      if (!size.count(c)) {
        labels.push_back(c);
        size[c] = s;
      } else if (size[c] == 1) {
        size[c] = s;
      }
    }
  }
  Shape out_shape;
  for (char c : rhs) out_shape.push_back(size[c]);
  Host out = make_host(out_shape);
  int64_t total = 1;
  for (char c : labels) total *= size[c];
  std::map<char, int64_t> val;
  for (int64_t n = 0; n < total; ++n) {
    int64_t rest = n;
    for (size_t i = labels.size(); i-- > 0;) {
      val[labels[i]] = rest % size[labels[i]];
      rest /= size[labels[i]];
    }
    double p = 1.0;
    for (size_t t = 0; t < terms.size(); ++t) {
      std::vector<int64_t> idx;
      for (size_t d = 0; d < terms[t].size(); ++d) {
        idx.push_back(xs[t].shape[int(d)] == 1 ? 0 : val[terms[t][d]]);
      }
      p *= xs[t].at(idx);
    }
    std::vector<int64_t> oi;
    for (char c : rhs) oi.push_back(val[c]);
    out.v[size_t(out.offset(oi))] += p;
  }
  return out;
}

struct EinsumCase {
  std::string eq;   // as given to einsum
  std::string ref;  // the same contraction in explicit letters for the reference
  std::vector<Shape> shapes;
};

TEST(ShapeLinalgTable, EinsumAgainstLoops) {
  const std::vector<EinsumCase> cases = {
      {"ij,jk->ik", "ij,jk->ik", {Shape{3, 4}, Shape{4, 5}}},
      {"ij,jk", "ij,jk->ik", {Shape{3, 4}, Shape{4, 5}}},
      {"ij->ji", "ij->ji", {Shape{3, 4}}},
      {"ij", "ij->ij", {Shape{3, 4}}},
      {"ji", "ji->ij", {Shape{3, 4}}},  // implicit output is alphabetical: a transpose
      {"bA", "bA->Ab", {Shape{2, 3}}},  // uppercase sorts first, as PyTorch
      {"...ij,j", "zij,j->zi", {Shape{2, 3, 4}, Shape{4}}},
      {"ii->i", "ii->i", {Shape{4, 4}}},
      {"ii", "ii->", {Shape{4, 4}}},
      {"iij->j", "iij->j", {Shape{3, 3, 2}}},
      {"iji->ij", "iji->ij", {Shape{3, 2, 3}}},
      {"i->", "i->", {Shape{5}}},
      {"ij->", "ij->", {Shape{3, 4}}},
      {"i,i->", "i,i->", {Shape{5}, Shape{5}}},
      {"i,i", "i,i->", {Shape{5}, Shape{5}}},
      {"i,j->ij", "i,j->ij", {Shape{3}, Shape{4}}},
      {"i,j", "i,j->ij", {Shape{3}, Shape{4}}},
      {"bij,bjk->bik", "bij,bjk->bik", {Shape{2, 3, 4}, Shape{2, 4, 5}}},
      {"bij,bjk", "bij,bjk->ik", {Shape{2, 3, 4}, Shape{2, 4, 5}}},
      {"bhqd,bhkd->bhqk", "bhqd,bhkd->bhqk", {Shape{2, 2, 3, 4}, Shape{2, 2, 5, 4}}},
      {"...ij,...jk->...ik", "zij,zjk->zik", {Shape{2, 3, 4}, Shape{2, 4, 5}}},
      {"...ij,...jk", "yzij,yzjk->yzik", {Shape{2, 1, 3, 4}, Shape{1, 3, 4, 2}}},
      {"...ij,jk->...ik", "ij,jk->ik", {Shape{3, 4}, Shape{4, 2}}},  // "..." of no dims
      {"...ii->...i", "zii->zi", {Shape{2, 3, 3}}},
      {"i...->...", "izy->zy", {Shape{3, 2, 4}}},
      {"...ij->j", "zij->j", {Shape{2, 3, 4}}},         // "..." summed away when not in the output
      {"ij,j->i", "ij,j->i", {Shape{3, 1}, Shape{4}}},  // size 1 broadcasts
      {"ij,ij->ij", "ij,ij->ij", {Shape{3, 4}, Shape{3, 4}}},
      {"ij,ij->", "ij,ij->", {Shape{3, 4}, Shape{3, 4}}},
      {"ijk->kji", "ijk->kji", {Shape{2, 3, 4}}},
      {"Ba,aB", "Ba,aB->", {Shape{2, 3}, Shape{3, 2}}},
      {"aB,Ba->aB", "aB,Ba->aB", {Shape{2, 3}, Shape{3, 2}}},
      {"ij,jk,kl->il", "ij,jk,kl->il", {Shape{2, 3}, Shape{3, 4}, Shape{4, 5}}},
      {"ij,jk,kl", "ij,jk,kl->il", {Shape{5, 3}, Shape{3, 1}, Shape{1, 6}}},
      {"ab,cd,bc->ad", "ab,cd,bc->ad", {Shape{2, 3}, Shape{4, 5}, Shape{3, 4}}},
      {"i,j,k->ijk", "i,j,k->ijk", {Shape{2}, Shape{3}, Shape{4}}},
      {"ij,jk,kl,lm->im", "ij,jk,kl,lm->im", {Shape{2, 3}, Shape{3, 4}, Shape{4, 2}, Shape{2, 3}}},
      {"bn,anm,bm->ba", "bn,anm,bm->ba", {Shape{2, 3}, Shape{4, 3, 5}, Shape{2, 5}}},
      {"ea,fb,abcd,gc,hd->efgh",
       "ea,fb,abcd,gc,hd->efgh",
       {Shape{2, 2}, Shape{2, 3}, Shape{2, 3, 2, 2}, Shape{3, 2}, Shape{2, 2}}},
      {"ii,ij,jk->k", "ii,ij,jk->k", {Shape{3, 3}, Shape{3, 3}, Shape{3, 2}}},
      {"ij,kl->", "ij,kl->", {Shape{2, 3}, Shape{4, 1}}},
      {"ij,jk->ik", "ij,jk->ik", {Shape{0, 4}, Shape{4, 5}}},
      {"ij,jk->ik", "ij,jk->ik", {Shape{3, 0}, Shape{0, 5}}},
      {"i,i->i", "i,i->i", {Shape{1}, Shape{1}}},
      {",->", ",->", {Shape{}, Shape{}}},
      {",i->i", ",i->i", {Shape{}, Shape{3}}},
      {" i j , j k -> i k ", "ij,jk->ik", {Shape{2, 3}, Shape{3, 2}}},
  };
  for (const EinsumCase& c : cases) {
    for (DType dt : kDtypes) {
      for (Layout l : kAnyLayout) {
        std::vector<DynTensor> xs;
        std::vector<Host> hs;
        for (const Shape& s : c.shapes) {
          xs.push_back(input(s, dt, l));
          hs.push_back(Host::of(xs.back()));
        }
        const Host want = einsum_ref(c.ref, hs);
        const std::string what =
            "einsum '" + c.eq + "' " + std::string(dtype_name(dt)) + " " + layout_name(l);
        DynTensor got;
        try {
          got = einsum(c.eq, xs);
        } catch (const Error& e) {
          ADD_FAILURE() << what << ": " << e.what();
          continue;
        }
        expect_close(got, want.shape, want.v, tol_of(dt), what);
      }
    }
  }
  // Integer operands contract exactly (torch.einsum('i,i', [1, 2], [3, 4]) == 11).
  const DynTensor a = from_data(TensorData::from(std::vector<int64_t>{1, 2}, Shape{2}));
  const DynTensor b = from_data(TensorData::from(std::vector<int64_t>{3, 4}, Shape{2}));
  EXPECT_EQ(einsum("i,i", {a, b}).item<int64_t>(), 11);
}

// The greedy plan contracts operands that share a label first: left to right, "i,j,k,ij,jk->"
// would build the n^3 outer product of the three vectors (8e9 elements here); greedily, every
// intermediate has n elements.
TEST(ShapeLinalgTable, EinsumPlanAvoidsLargeIntermediates) {
  const int64_t n = 2000;
  const DynTensor x = input(Shape{n}, DType::f64), y = input(Shape{n}, DType::f64),
                  z = input(Shape{n}, DType::f64);
  const DynTensor a = input(Shape{n, n}, DType::f64), b = input(Shape{n, n}, DType::f64);
  const Host hx = Host::of(x), hy = Host::of(y), hz = Host::of(z), ha = Host::of(a),
             hb = Host::of(b);
  std::vector<double> v(size_t(n), 0.0);  // v_j = y_j sum_i x_i a_ij
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) v[size_t(j)] += hx.v[size_t(i)] * ha.v[size_t(i * n + j)];
  double total = 0.0;  // sum_jk v_j b_jk z_k
  for (int64_t j = 0; j < n; ++j)
    for (int64_t k = 0; k < n; ++k)
      total += v[size_t(j)] * hy.v[size_t(j)] * hb.v[size_t(j * n + k)] * hz.v[size_t(k)];
  expect_close(einsum("i,j,k,ij,jk->", {x, y, z, a, b}), Shape{}, {total}, {1e-9, 1e-9},
               "einsum plan");
}

// --- roll ---------------------------------------------------------------------------------------

Host roll_ref(const Host& x, const std::vector<int64_t>& shifts, const std::vector<int64_t>& dims) {
  Host out = make_host(x.shape);
  const int r = x.shape.rank();
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (dims.empty()) {
      const int64_t n = x.numel();
      out.v[size_t(((i + shifts[0]) % n + n) % n)] = x.v[size_t(i)];
      continue;
    }
    auto idx = x.index(i);
    for (size_t k = 0; k < dims.size(); ++k) {
      const int d = int(dims[k] < 0 ? dims[k] + r : dims[k]);
      const int64_t n = x.shape[d];
      idx[size_t(d)] = ((idx[size_t(d)] + shifts[k]) % n + n) % n;
    }
    out.v[size_t(out.offset(idx))] = x.v[size_t(i)];
  }
  return out;
}

TEST(ShapeLinalgTable, Roll) {
  struct Case {
    Shape s;
    std::vector<int64_t> shifts, dims;
  };
  const std::vector<Case> cases = {
      {Shape{5}, {2}, {}},
      {Shape{5}, {-7}, {0}},
      {Shape{3, 4}, {1}, {}},
      {Shape{3, 4}, {-3}, {}},
      {Shape{3, 4}, {1, -2}, {0, 1}},
      {Shape{3, 4}, {5}, {-1}},
      {Shape{2, 3, 4}, {1, 1, 9}, {0, 2, 1}},
      {Shape{2, 3, 4}, {2, 3}, {1, 1}},
      {Shape{0, 3}, {1}, {0}},
      {Shape{0, 3}, {2}, {}},
      {Shape{1, 1}, {3}, {1}},
      {Shape{4, 1}, {0}, {0}},
  };
  for (const Case& c : cases) {
    for (DType dt : {DType::f32, DType::i64}) {
      for (Layout l : kAnyLayout) {
        const DynTensor x = input(c.s, dt, l);
        expect_close(roll(x, c.shifts, c.dims), c.s, roll_ref(Host::of(x), c.shifts, c.dims).v,
                     tol_for(dt), name_of("roll", c.s, dt, l));
      }
    }
  }
  // PyTorch: torch.roll(arange(10).reshape(2, 5), -7) and torch.roll(.., (1, -6), (0, 1)).
  const DynTensor x = reshape(arange(0, 10, 1, DType::i64), Shape{2, 5});
  EXPECT_EQ(roll(x, {-7}).to_vector<int64_t>(),
            (std::vector<int64_t>{7, 8, 9, 0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(roll(x, {1, -6}, {0, 1}).to_vector<int64_t>(),
            (std::vector<int64_t>{6, 7, 8, 9, 5, 1, 2, 3, 4, 0}));
  EXPECT_EQ(roll(arange(0, 5, 1, DType::i64), {100}).to_vector<int64_t>(),
            (std::vector<int64_t>{0, 1, 2, 3, 4}));
}

// --- repeat_interleave --------------------------------------------------------------------------

Host repeat_ref(const Host& x, const std::vector<int64_t>& reps, int d) {
  std::vector<int64_t> src;  // source index along d of each output index
  for (size_t i = 0; i < size_t(x.shape[d]); ++i) {
    const int64_t r = reps.size() == 1 ? reps[0] : reps[i];
    src.insert(src.end(), size_t(r), int64_t(i));
  }
  Shape s = x.shape;
  s[d] = int64_t(src.size());
  Host out = make_host(s);
  for (int64_t i = 0; i < out.numel(); ++i) {
    auto idx = out.index(i);
    idx[size_t(d)] = src[size_t(idx[size_t(d)])];
    out.v[size_t(i)] = x.at(idx);
  }
  return out;
}

TEST(ShapeLinalgTable, RepeatInterleave) {
  for (const Shape& s : {Shape{3}, Shape{2, 3}, Shape{2, 3, 2}, Shape{0, 2}, Shape{1, 1}}) {
    for (DType dt : {DType::f32, DType::i64}) {
      for (Layout l : kAnyLayout) {
        const DynTensor x = input(s, dt, l);
        const Host hx = Host::of(x);
        const std::string what = name_of("repeat_interleave", s, dt, l);
        for (int64_t r : {0, 1, 3}) {
          const Host flat{Shape{hx.numel()}, hx.v};
          const Host want = repeat_ref(flat, {r}, 0);
          expect_close(repeat_interleave(x, r), want.shape, want.v, tol_for(dt), what);
          for (int d = 0; d < s.rank(); ++d) {
            const Host w = repeat_ref(hx, {r}, d);
            expect_close(repeat_interleave(x, r, d), w.shape, w.v, tol_for(dt),
                         what + " dim " + std::to_string(d));
            // Per-element counts, and a single count that broadcasts.
            std::vector<int64_t> reps(static_cast<size_t>(s[d]));
            for (size_t i = 0; i < reps.size(); ++i) reps[i] = int64_t((i * 7 + size_t(r)) % 4);
            const DynTensor rt = from_data(TensorData::from(reps, Shape{s[d]}));
            const Host w2 = repeat_ref(hx, reps, d);
            expect_close(repeat_interleave(x, rt, d), w2.shape, w2.v, tol_for(dt),
                         what + " tensor repeats, dim " + std::to_string(d));
            const DynTensor one = from_data(TensorData::from(std::vector<int64_t>{r}, Shape{1}));
            expect_close(repeat_interleave(x, one, d - s.rank()), w.shape, w.v, tol_for(dt),
                         what + " repeats [1], dim " + std::to_string(d));
          }
        }
      }
    }
  }
  // PyTorch's output sizes: repeat_interleave([[1, 2], [3, 4]], [1, 2], dim=0) -> 3 rows;
  // a one-element repeats tensor broadcasts ([3] on 3 rows -> 9); zero repeats drop rows.
  const DynTensor x = from_data(TensorData::from(std::vector<int64_t>{1, 2, 3, 4}, Shape{2, 2}));
  const DynTensor r12 = from_data(TensorData::from(std::vector<int64_t>{1, 2}, Shape{2}));
  EXPECT_EQ(repeat_interleave(x, r12, 0).to_vector<int64_t>(),
            (std::vector<int64_t>{1, 2, 3, 4, 3, 4}));
  EXPECT_EQ(repeat_interleave(x, 2).to_vector<int64_t>(),
            (std::vector<int64_t>{1, 1, 2, 2, 3, 3, 4, 4}));
  const DynTensor y = input(Shape{3, 2}, DType::f32);
  const DynTensor r3 = from_data(TensorData::from(std::vector<int64_t>{3}, Shape{1}));
  EXPECT_EQ(to_string(repeat_interleave(y, r3, 0).shape()), to_string(Shape{9, 2}));
  const DynTensor r021 = from_data(TensorData::from(std::vector<int64_t>{0, 2, 1}, Shape{3}));
  EXPECT_EQ(to_string(repeat_interleave(y, r021, 0).shape()), to_string(Shape{3, 2}));
  EXPECT_EQ(repeat_interleave(r021).to_vector<int64_t>(), (std::vector<int64_t>{1, 1, 2}));
  EXPECT_EQ(to_string(repeat_interleave(input(Shape{3, 0}, DType::f32), 2, 1).shape()),
            to_string(Shape{3, 0}));
}

// --- kron ---------------------------------------------------------------------------------------

Host kron_ref(const Host& a, const Host& b) {
  const int r = std::max(a.shape.rank(), b.shape.rank());
  Shape sa = a.shape, sb = b.shape;
  while (sa.rank() < r) sa.insert(0, 1);
  while (sb.rank() < r) sb.insert(0, 1);
  const Host a2{sa, a.v}, b2{sb, b.v};
  Shape so;
  for (int d = 0; d < r; ++d) so.push_back(sa[d] * sb[d]);
  Host out = make_host(so);
  for (int64_t i = 0; i < out.numel(); ++i) {
    const auto idx = out.index(i);
    std::vector<int64_t> ia, ib;
    for (int d = 0; d < r; ++d) {
      ia.push_back(idx[size_t(d)] / sb[d]);
      ib.push_back(idx[size_t(d)] % sb[d]);
    }
    out.v[size_t(i)] = a2.at(ia) * b2.at(ib);
  }
  return out;
}

TEST(ShapeLinalgTable, Kron) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {Shape{2, 3}, Shape{4, 2}}, {Shape{3}, Shape{2}},       {Shape{2, 3}, Shape{4}},
      {Shape{2}, Shape{2, 2, 3}}, {Shape{}, Shape{3, 2}},     {Shape{}, Shape{}},
      {Shape{0, 2}, Shape{3, 1}}, {Shape{1, 1}, Shape{1, 1}}, {Shape{2, 1, 3}, Shape{1, 2, 2}}};
  for (const auto& [sa, sb] : cases) {
    for (DType dt : {DType::f32, DType::f64, DType::i64}) {
      for (Layout l : kAnyLayout) {
        const DynTensor a = input(sa, dt, l), b = input(sb, dt, l);
        const Host want = kron_ref(Host::of(a), Host::of(b));
        expect_close(kron(a, b), want.shape, want.v, tol_for(dt),
                     name_of("kron", sa, dt, l) + " x " + to_string(sb));
      }
    }
  }
}

// --- diag / diagonal / trace --------------------------------------------------------------------

Host diagonal_ref(const Host& x, int64_t off, int d1, int d2) {
  const int r = x.shape.rank();
  d1 = d1 < 0 ? d1 + r : d1;
  d2 = d2 < 0 ? d2 + r : d2;
  const int64_t n = x.shape[d1], m = x.shape[d2];
  const int64_t len = std::max<int64_t>(0, off >= 0 ? std::min(n, m - off) : std::min(n + off, m));
  Shape so;
  for (int d = 0; d < r; ++d)
    if (d != d1 && d != d2) so.push_back(x.shape[d]);
  so.push_back(len);
  Host out = make_host(so);
  for (int64_t i = 0; i < out.numel(); ++i) {
    const auto oi = out.index(i);
    std::vector<int64_t> idx(static_cast<size_t>(r), 0);
    size_t k = 0;
    for (int d = 0; d < r; ++d)
      if (d != d1 && d != d2) idx[size_t(d)] = oi[k++];
    const int64_t t = oi.back();
    idx[size_t(d1)] = t + (off < 0 ? -off : 0);
    idx[size_t(d2)] = t + (off > 0 ? off : 0);
    out.v[size_t(i)] = x.at(idx);
  }
  return out;
}

TEST(ShapeLinalgTable, DiagonalDiagTrace) {
  struct Case {
    Shape s;
    int64_t off;
    int d1, d2;
  };
  const std::vector<Case> cases = {
      {Shape{3, 4}, 0, 0, 1},    {Shape{3, 4}, 1, 0, 1},      {Shape{3, 4}, -2, 0, 1},
      {Shape{3, 4}, 5, 0, 1},    {Shape{3, 4}, -3, 0, 1},     {Shape{4, 3}, 0, 1, 0},
      {Shape{2, 3, 4}, 1, 2, 0}, {Shape{2, 3, 4}, 0, -1, -2}, {Shape{2, 3, 4, 3}, -1, 1, 3},
      {Shape{0, 3}, 0, 0, 1},    {Shape{3, 0}, 1, 0, 1},      {Shape{1, 1}, 0, 0, 1},
  };
  for (const Case& c : cases) {
    for (DType dt : {DType::f32, DType::f64, DType::i64}) {
      for (Layout l : kAnyLayout) {
        const DynTensor x = input(c.s, dt, l);
        const Host hx = Host::of(x);
        const Host want = diagonal_ref(hx, c.off, c.d1, c.d2);
        const std::string what = name_of("diagonal", c.s, dt, l) + " off " + std::to_string(c.off) +
                                 " dims " + std::to_string(c.d1) + "," + std::to_string(c.d2);
        expect_close(diagonal(x, c.off, c.d1, c.d2), want.shape, want.v, tol_for(dt), what);
        if (c.s.rank() == 2 && c.d1 == 0 && c.d2 == 1) {
          expect_close(diag(x, c.off), want.shape, want.v, tol_for(dt), "diag " + what);
          if (c.off == 0) {
            const double t = std::accumulate(want.v.begin(), want.v.end(), 0.0);
            expect_close(trace(x), Shape{}, {t}, tol_of(dt), "trace " + what);
          }
        }
      }
    }
  }
  // diagonal of a contiguous matrix is a view (shares storage), as in PyTorch.
  const DynTensor m = input(Shape{4, 5}, DType::f32);
  EXPECT_EQ(diagonal(m, 1).raw().storage, m.raw().storage);
  EXPECT_EQ(trace(reshape(arange(0, 6, 1, DType::i64), Shape{2, 3})).item<int64_t>(), 4);
  EXPECT_EQ(trace(reshape(arange(0, 6, 1, DType::i64), Shape{2, 3})).dtype(), DType::i64);
}

TEST(ShapeLinalgTable, DiagOfVector) {
  for (const Shape& s : {Shape{3}, Shape{1}, Shape{0}}) {
    for (DType dt : {DType::f32, DType::f64, DType::i64}) {
      for (Layout l : {Layout::Contiguous, Layout::Strided}) {
        const DynTensor v = input(s, dt, l);
        const Host hv = Host::of(v);
        for (int64_t k : {0, 1, 2, -1, -3}) {
          const int64_t n = s[0] + (k < 0 ? -k : k);
          Host want = make_host(Shape{n, n});
          for (int64_t i = 0; i < n; ++i)
            for (int64_t j = 0; j < n; ++j)
              if (j - i == k) want.v[size_t(i * n + j)] = hv.v[size_t(std::min(i, j))];
          expect_close(diag(v, k), want.shape, want.v, tol_for(dt),
                       name_of("diag", s, dt, l) + " k " + std::to_string(k));
        }
      }
    }
  }
  // PyTorch: torch.diag(tensor([1., 2.]), -1) and an inf on the diagonal stays alone.
  const DynTensor v = from_data(TensorData::from(std::vector<double>{1, kInf}, Shape{2}));
  expect_close(diag(v, -1), Shape{3, 3}, {0, 0, 0, 1, 0, 0, 0, kInf, 0}, tol_for(DType::f64),
               "diag inf");
}

// --- cross --------------------------------------------------------------------------------------

TEST(ShapeLinalgTable, Cross) {
  struct Case {
    Shape a, b;
    int64_t dim;
  };
  const std::vector<Case> cases = {
      {Shape{3}, Shape{3}, -1},
      {Shape{4, 3}, Shape{4, 3}, -1},
      {Shape{2, 1, 3}, Shape{1, 4, 3}, -1},
      {Shape{3, 5}, Shape{3, 5}, 0},
      {Shape{2, 3, 2}, Shape{2, 3, 1}, 1},
      {Shape{4, 3}, Shape{3}, 1},
      {Shape{0, 3}, Shape{0, 3}, -1},
  };
  for (const Case& c : cases) {
    for (DType dt : {DType::f32, DType::f64, DType::i64}) {
      for (Layout l : kAnyLayout) {
        const DynTensor a = input(c.a, dt, l), b = input(c.b, dt, l);
        const Host ha = Host::of(a), hb = Host::of(b);
        const Shape so = broadcast_shapes(c.a, c.b, "test");
        const int d = int(c.dim < 0 ? c.dim + so.rank() : c.dim);
        Host want = make_host(so);
        for (int64_t i = 0; i < want.numel(); ++i) {
          auto idx = want.index(i);
          const int64_t k = idx[size_t(d)];
          auto at = [&](const Host& h, int64_t comp) {
            idx[size_t(d)] = comp;
            return bcast_at(h, idx);
          };
          const int64_t p = (k + 1) % 3, q = (k + 2) % 3;
          want.v[size_t(i)] = at(ha, p) * at(hb, q) - at(ha, q) * at(hb, p);
          idx[size_t(d)] = k;
        }
        const std::string what = name_of("cross", c.a, dt, l) + " x " + to_string(c.b);
        expect_close(cross(a, b, c.dim), so, want.v, tol_for(dt), what);
        expect_close(linalg::cross(a, b, c.dim), so, want.v, tol_for(dt), "linalg." + what);
      }
    }
  }
}

// --- norms --------------------------------------------------------------------------------------

// vector_norm over the dims in `dims` (all when empty), keeping them with size 1.
Host vnorm_ref(const Host& x, double ord, std::vector<int64_t> dims, bool keepdim) {
  const int r = x.shape.rank();
  if (dims.empty())
    for (int d = 0; d < r; ++d) dims.push_back(d);
  for (int64_t& d : dims) d = d < 0 ? d + r : d;
  Shape ks = x.shape;
  for (int64_t d : dims) ks[int(d)] = 1;
  Host acc = make_host(ks);
  std::fill(acc.v.begin(), acc.v.end(), std::isinf(ord) ? (ord > 0 ? 0.0 : kInf) : 0.0);
  for (int64_t i = 0; i < x.numel(); ++i) {
    auto idx = x.index(i);
    for (int64_t d : dims) idx[size_t(d)] = 0;
    double& a = acc.v[size_t(acc.offset(idx))];
    const double v = std::fabs(x.v[size_t(i)]);
    if (std::isinf(ord)) {
      a = ord > 0 ? std::max(a, v) : std::min(a, v);
    } else if (ord == 0) {
      a += v != 0;
    } else {
      a += std::pow(v, ord);
    }
  }
  if (!std::isinf(ord) && ord != 0)
    for (double& a : acc.v) a = std::pow(a, 1.0 / ord);
  if (keepdim) return acc;
  Shape s;
  for (int d = 0; d < r; ++d)
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) s.push_back(x.shape[d]);
  return {s, acc.v};
}

TEST(ShapeLinalgTable, VectorNorm) {
  struct Case {
    Shape s;
    std::vector<int64_t> dims;
  };
  const std::vector<Case> cases = {
      {Shape{5}, {}},           {Shape{3, 4}, {}},      {Shape{3, 4}, {1}}, {Shape{3, 4}, {0}},
      {Shape{2, 3, 4}, {0, 2}}, {Shape{2, 3, 4}, {-1}}, {Shape{1, 1}, {}},  {Shape{}, {}}};
  for (const Case& c : cases) {
    for (DType dt : kDtypes) {
      for (Layout l : kAnyLayout) {
        const DynTensor x = input(c.s, dt, l);
        const Host hx = Host::of(x);
        for (double ord : {2.0, 1.0, 3.0, 0.5, kInf, -kInf, 0.0, -1.0, -2.5}) {
          for (bool keep : {false, true}) {
            const Host want = vnorm_ref(hx, ord, c.dims, keep);
            expect_close(linalg::vector_norm(x, ord, c.dims, keep), want.shape, want.v, tol_of(dt),
                         name_of("vector_norm", c.s, dt, l) + " ord " + std::to_string(ord));
          }
        }
      }
    }
  }
  // Empty reductions: 0 for ord >= 0 (PyTorch); a zero gives the negative-ord norm 0.
  const DynTensor e = zeros(Shape{0, 3}, DType::f32);
  EXPECT_EQ(linalg::vector_norm(e).item<float>(), 0.0f);
  EXPECT_EQ(linalg::vector_norm(e, 0).item<float>(), 0.0f);
  const DynTensor z = from_data(TensorData::from(std::vector<double>{0, -4}, Shape{2}));
  EXPECT_EQ(linalg::vector_norm(z, -1).item<double>(), 0.0);
}

Host mnorm_ref(const Host& x, double ord, int r, int c, bool keepdim) {
  if (ord == 2.0) return vnorm_ref(x, 2.0, {r, c}, keepdim);  // 'fro'
  // 1 / -1: sums over rows r (per column c); inf / -inf: over columns.
  const bool cols = !std::isinf(ord);
  const int summed = cols ? r : c, picked = cols ? c : r;
  const Host s = vnorm_ref(x, 1.0, {summed}, true);
  const Host k = vnorm_ref(s, ord > 0 ? kInf : -kInf, {picked}, true);
  if (keepdim) return k;
  Shape out;
  for (int d = 0; d < x.shape.rank(); ++d)
    if (d != r && d != c) out.push_back(x.shape[d]);
  return {out, k.v};
}

TEST(ShapeLinalgTable, MatrixNormAndNorm) {
  struct Case {
    Shape s;
    std::vector<int64_t> dims;
  };
  const std::vector<Case> cases = {{Shape{3, 4}, {-2, -1}},  {Shape{4, 3}, {1, 0}},
                                   {Shape{2, 3, 4}, {0, 2}}, {Shape{2, 3, 4}, {-2, -1}},
                                   {Shape{1, 1}, {0, 1}},    {Shape{0, 3}, {0, 1}}};
  for (const Case& c : cases) {
    const int r = int(c.dims[0] < 0 ? c.dims[0] + c.s.rank() : c.dims[0]);
    const int col = int(c.dims[1] < 0 ? c.dims[1] + c.s.rank() : c.dims[1]);
    for (DType dt : kDtypes) {
      for (Layout l : kAnyLayout) {
        const DynTensor x = input(c.s, dt, l);
        const Host hx = Host::of(x);
        for (bool keep : {false, true}) {
          const std::string what = name_of("matrix_norm", c.s, dt, l);
          const Host fro = mnorm_ref(hx, 2.0, r, col, keep);
          expect_close(linalg::matrix_norm(x, "fro", c.dims, keep), fro.shape, fro.v, tol_of(dt),
                       what + " fro");
          expect_close(linalg::norm(x, "fro", c.dims, keep), fro.shape, fro.v, tol_of(dt),
                       what + " norm fro");
          expect_close(linalg::norm(x, std::nullopt, c.dims, keep), fro.shape, fro.v, tol_of(dt),
                       what + " norm no ord");
          for (double ord : {1.0, -1.0, kInf, -kInf}) {
            // max over an empty dim has no value: skip the shapes where the picked dim is 0.
            const int picked = std::isinf(ord) ? r : col;
            if (c.s[picked] == 0) continue;
            const Host want = mnorm_ref(hx, ord, r, col, keep);
            expect_close(linalg::matrix_norm(x, ord, c.dims, keep), want.shape, want.v, tol_of(dt),
                         what + " ord " + std::to_string(ord));
            expect_close(linalg::norm(x, ord, c.dims, keep), want.shape, want.v, tol_of(dt),
                         what + " norm ord " + std::to_string(ord));
          }
        }
      }
    }
  }
  // linalg.norm dispatch without dims: flattened 2-norm, or by the input's rank.
  const DynTensor x3 = input(Shape{2, 3, 4}, DType::f64);
  const Host h3 = Host::of(x3);
  expect_close(linalg::norm(x3), Shape{}, vnorm_ref(h3, 2, {}, false).v, tol_of(DType::f64),
               "norm 3-D");
  expect_close(linalg::norm(x3, std::nullopt, std::nullopt, true), Shape{1, 1, 1},
               vnorm_ref(h3, 2, {}, true).v, tol_of(DType::f64), "norm 3-D keepdim");
  const DynTensor v = input(Shape{5}, DType::f64);
  expect_close(linalg::norm(v, 3.0), Shape{}, vnorm_ref(Host::of(v), 3, {}, false).v,
               tol_of(DType::f64), "norm 1-D ord 3");
  const DynTensor m = input(Shape{3, 4}, DType::f64);
  expect_close(linalg::norm(m, 1.0), Shape{}, mnorm_ref(Host::of(m), 1, 0, 1, false).v,
               tol_of(DType::f64), "norm 2-D ord 1");
  expect_close(linalg::norm(x3, 1.0, std::vector<int64_t>{1}), Shape{2, 4},
               vnorm_ref(h3, 1, {1}, false).v, tol_of(DType::f64), "norm one dim");
}

// --- 16-bit floats and bool ---------------------------------------------------------------------

// The composites keep the input's dtype; sums run in f32 where the parts do (matmul, norm).
TEST(ShapeLinalgTable, HalfPrecisionAndBool) {
  for (DType dt : {DType::f16, DType::bf16}) {
    const DynTensor a = input(Shape{2, 3, 4}, dt, Layout::Transposed);
    const DynTensor b = input(Shape{2, 4, 5}, dt);
    const Host ha = Host::of(a), hb = Host::of(b);
    const std::string what = std::string(" ") + std::string(dtype_name(dt));
    const Host prod = einsum_ref("bij,bjk->bik", {ha, hb});
    const Tol tol{tol_for(dt).rtol * 4, tol_for(dt).atol * 4};
    const DynTensor e = einsum("bij,bjk->bik", {a, b});
    EXPECT_EQ(e.dtype(), dt);
    expect_close(e, prod.shape, prod.v, tol, "einsum" + what);
    expect_close(bmm(a, b), prod.shape, prod.v, tol, "bmm" + what);
    const DynTensor tr = tril(a, 1);
    EXPECT_EQ(tr.dtype(), dt);
    expect_close(tr, a.shape(), tri_ref(ha, 1, true).v, tol_for(dt), "tril" + what);
    const Host vn = vnorm_ref(ha, 2.0, {-1}, false);
    expect_close(linalg::vector_norm(a, 2.0, {-1}), vn.shape, vn.v, tol, "vector_norm" + what);
    const Host dg = diagonal_ref(ha, 1, 1, 2);
    expect_close(diagonal(a, 1, 1, 2), dg.shape, dg.v, tol_for(dt), "diagonal" + what);
  }
  const DynTensor m = ge(input(Shape{3, 3}, DType::f32), 0.0);
  const Host hm = Host::of(m);
  expect_close(triu(m, 1), m.shape(), tri_ref(hm, 1, false).v, tol_for(DType::boolean),
               "triu bool");
  expect_close(roll(m, {1}, {1}), m.shape(), roll_ref(hm, {1}, {1}).v, tol_for(DType::boolean),
               "roll bool");
  expect_close(diagonal(m), Shape{3}, diagonal_ref(hm, 0, 0, 1).v, tol_for(DType::boolean),
               "diagonal bool");
}

// --- typed forwards: ranks at compile time ------------------------------------------------------

TEST(ShapeLinalgTable, TypedRanks) {
  const auto m = Tensor<2>::randn({3, 4});
  const auto v = Tensor<1>::randn({3});
  const auto b = Tensor<3>::randn({2, 3, 4});
  static_assert(std::is_same_v<decltype(diag(v)), Tensor<2>>);
  static_assert(std::is_same_v<decltype(diag(m)), Tensor<1>>);
  static_assert(std::is_same_v<decltype(trace(m)), Tensor<0>>);
  static_assert(std::is_same_v<decltype(diagonal(b, 0, 1, 2)), Tensor<2>>);
  static_assert(std::is_same_v<decltype(kron(m, v)), Tensor<2>>);
  static_assert(std::is_same_v<decltype(linalg::matrix_norm(b)), Tensor<1>>);
  static_assert(std::is_same_v<decltype(linalg::vector_norm(b, 2.0, 1)), Tensor<2>>);
  static_assert(std::is_same_v<decltype(linalg::vector_norm(b, 2.0, {0, 2})), Tensor<1>>);
  static_assert(std::is_same_v<decltype(repeat_interleave(m, 2)), Tensor<1>>);
  EXPECT_EQ(diag(v).dims(), (std::array<int64_t, 2>{3, 3}));
  EXPECT_EQ(diagonal(b, 0, 1, 2).dims(), (std::array<int64_t, 2>{2, 3}));
  EXPECT_EQ(einsum<2>("bij,bkj->ik", b, b).dims(), (std::array<int64_t, 2>{3, 3}));
  EXPECT_EQ(bmm(b, b.transpose(1, 2)).dims(), (std::array<int64_t, 3>{2, 3, 3}));
  EXPECT_EQ(addmm(Tensor<1>::randn({4}), m.transpose(0, 1), m).dims(),
            (std::array<int64_t, 2>{4, 4}));
  EXPECT_EQ(tril(b, 1).dims(), b.dims());
  EXPECT_EQ(roll(m, {1}, {0}).dims(), m.dims());
  EXPECT_EQ(repeat_interleave(m, 2, 1).dims(), (std::array<int64_t, 2>{3, 8}));
  EXPECT_EQ(linalg::vector_norm(b, 2.0, {1}, keepdim).dims(), (std::array<int64_t, 3>{2, 1, 4}));
  EXPECT_NEAR(linalg::norm(m).item<float>(), linalg::matrix_norm(m).item<float>(), 1e-5);
  EXPECT_EQ(cross(Tensor<2>::randn({4, 3}), Tensor<2>::randn({4, 3})).dims(),
            (std::array<int64_t, 2>{4, 3}));
  // einsum's rank is checked when the result is wrapped.
  EXPECT_THROW(einsum<3>("ij->i", m), Error);
}

// --- gradients ----------------------------------------------------------------------------------

GradInput gin(const Shape& s, Layout l = Layout::Contiguous) {
  return {s, l, random_values(s.numel(), -1.0, 1.0, false, ++seed_counter)};
}

struct GradRow {
  std::string name;
  GradFn fn;
  std::vector<std::vector<GradInput>> cases;
};

TEST(ShapeLinalgGrad, FiniteDifferences) {
  using Xs = std::vector<DynTensor>;
  constexpr Layout T = Layout::Transposed, S = Layout::Strided;
  const std::vector<GradRow> rows = {
      {"tril", [](const Xs& x) { return tril(x[0], 1); }, {{gin({3, 4})}, {gin({2, 3, 3}, T)}}},
      {"triu", [](const Xs& x) { return triu(x[0], -1); }, {{gin({4, 3}, S)}, {gin({2, 3, 4})}}},
      {"bmm", [](const Xs& x) { return bmm(x[0], x[1]); }, {{gin({2, 3, 4}), gin({2, 4, 2}, T)}}},
      {"baddbmm",
       [](const Xs& x) { return baddbmm(x[0], x[1], x[2], 0.5, -2); },
       {{gin({3}), gin({2, 3, 4}, S), gin({2, 4, 3})}}},
      {"addmm",
       [](const Xs& x) { return addmm(x[0], x[1], x[2], 2, 0.5); },
       {{gin({2, 3}), gin({2, 4}, T), gin({4, 3})}}},
      {"einsum matmul",
       [](const Xs& x) { return einsum("ij,jk->ik", x); },
       {{gin({2, 3}), gin({3, 4}, T)}}},
      {"einsum trace", [](const Xs& x) { return einsum("ii", x); }, {{gin({3, 3}, S)}}},
      {"einsum diag", [](const Xs& x) { return einsum("...ii->...i", x); }, {{gin({2, 3, 3})}}},
      {"einsum batch",
       [](const Xs& x) { return einsum("bij,bkj->bik", x); },
       {{gin({2, 3, 2}), gin({2, 4, 2}, T)}}},
      {"einsum chain",
       [](const Xs& x) { return einsum("ij,jk,kl->il", x); },
       {{gin({2, 3}), gin({3, 2}), gin({2, 2}, S)}}},
      {"einsum 4",
       [](const Xs& x) { return einsum("ab,bc,cd,d->a", x); },
       {{gin({2, 3}), gin({3, 2}), gin({2, 3}), gin({3})}}},
      {"roll",
       [](const Xs& x) {
         return roll(x[0], {1, -2}, {0, 1});
       },
       {{gin({3, 4}, T)}}},
      {"roll flat", [](const Xs& x) { return roll(x[0], {-5}); }, {{gin({2, 3})}}},
      {"repeat_interleave",
       [](const Xs& x) { return repeat_interleave(x[0], 2, 1); },
       {{gin({2, 3}, S)}}},
      {"repeat_interleave tensor",
       [](const Xs& x) {
         return repeat_interleave(
             x[0], from_data(TensorData::from(std::vector<int64_t>{2, 0, 3}, Shape{3})), 0);
       },
       {{gin({3, 2})}}},
      {"kron", [](const Xs& x) { return kron(x[0], x[1]); }, {{gin({2, 3}), gin({2, 2}, T)}}},
      {"diag 1-D", [](const Xs& x) { return diag(x[0], -1); }, {{gin({3})}}},
      {"diag 2-D", [](const Xs& x) { return diag(x[0], 1); }, {{gin({3, 4}, T)}}},
      {"diagonal", [](const Xs& x) { return diagonal(x[0], -1, 2, 0); }, {{gin({3, 2, 4})}}},
      {"trace", [](const Xs& x) { return trace(x[0]); }, {{gin({3, 4}, S)}}},
      {"cross", [](const Xs& x) { return cross(x[0], x[1], 1); }, {{gin({2, 3}), gin({1, 3}, S)}}},
      {"vector_norm 2",
       [](const Xs& x) { return linalg::vector_norm(x[0], 2, {1}); },
       {{gin({2, 3}, T)}}},
      {"vector_norm 3", [](const Xs& x) { return linalg::vector_norm(x[0], 3); }, {{gin({4})}}},
      {"vector_norm inf",
       [](const Xs& x) { return linalg::vector_norm(x[0], kInf, {0}); },
       {{gin({3, 2})}}},
      {"vector_norm 1",
       [](const Xs& x) { return linalg::vector_norm(x[0], 1, {}, true); },
       {{gin({2, 2})}}},
      {"matrix_norm fro",
       [](const Xs& x) { return linalg::matrix_norm(x[0]); },
       {{gin({2, 3, 2}, S)}}},
      {"matrix_norm 1",
       [](const Xs& x) { return linalg::matrix_norm(x[0], 1.0); },
       {{gin({3, 3})}}},
      {"matrix_norm -inf",
       [](const Xs& x) { return linalg::matrix_norm(x[0], -kInf); },
       {{gin({2, 3, 3}, T)}}},
      {"linalg.norm", [](const Xs& x) { return linalg::norm(x[0]); }, {{gin({2, 3})}}},
  };
  for (const GradRow& row : rows) {
    for (const auto& inputs : row.cases) {
      EXPECT_TRUE(gradcheck(row.name, row.fn, inputs)) << row.name;
      EXPECT_TRUE(gradgradcheck(row.name, row.fn, inputs)) << row.name;
    }
  }
}

// --- errors -------------------------------------------------------------------------------------

TEST(ShapeLinalgErrors, ClearMessages) {
  const DynTensor m = input(Shape{2, 3}, DType::f32), v = input(Shape{3}, DType::f32);
  const DynTensor b = input(Shape{2, 3, 4}, DType::f32);
  const DynTensor i = arange(0, 3, 1, DType::i64);
  expect_error_prefix("[tril] expects a tensor with at least 2 dims, got shape [3]",
                      [&] { tril(v); });
  expect_error_prefix("[triu] expects a tensor with at least 2 dims", [&] { triu(v); });
  expect_error_prefix("[bmm] expects two 3-D tensors, got [2, 3] and [2, 3, 4]",
                      [&] { bmm(m, b); });
  expect_error_prefix("[bmm] batch sizes differ: [2, 3, 4] and [3, 4, 2]", [&] {
    bmm(b, input(Shape{3, 4, 2}, DType::f32));
  });
  expect_error_prefix("[bmm] inner dimensions differ: [2, 3, 4] and [2, 3, 4]", [&] { bmm(b, b); });
  expect_error_prefix(
      "[baddbmm] input of shape [5] does not broadcast to the product's shape [2, 3, 3]",
      [&] { baddbmm(input(Shape{5}, DType::f32), b, transpose(b, 1, 2)); });
  expect_error_prefix("[addmm] inner dimensions differ: [2, 3] and [2, 3]",
                      [&] { addmm(v, m, m); });
  expect_error_prefix("[addmm] expects 2-D mat1 and mat2, got [3] and [2, 3]",
                      [&] { addmm(v, v, m); });
  expect_error_prefix(
      "[einsum] the subscripts name 2 operands, but 1 were given in equation 'ij,jk->ik'",
      [&] { einsum("ij,jk->ik", {m}); });
  expect_error_prefix(
      "[einsum] operand 0 has 2 dims but its subscripts name 3 in equation 'ijk->i'",
      [&] { einsum("ijk->i", {m}); });
  expect_error_prefix(
      "[einsum] invalid subscript '1': subscripts are letters a-z, A-Z in equation 'i1'",
      [&] { einsum("i1", {m}); });
  expect_error_prefix("[einsum] '.' must appear as one '...' per operand in equation '..i..'",
                      [&] { einsum("..i..", {v}); });
  expect_error_prefix("[einsum] output subscript 'k' appears in no input in equation 'ij->k'",
                      [&] { einsum("ij->k", {m}); });
  expect_error_prefix("[einsum] output subscript 'i' appears more than once in equation 'ij->ii'",
                      [&] { einsum("ij->ii", {m}); });
  expect_error_prefix(
      "[einsum] subscript 'j' has size 2 in operand 1, which does not broadcast with size 3 in "
      "equation 'ij,jk->ik'",
      [&] {
        einsum("ij,jk->ik", {m, m});
      });
  expect_error_prefix(
      "[einsum] subscript 'i' is repeated in operand 0 with different sizes 2 and 3 in equation "
      "'ii->i'",
      [&] { einsum("ii->i", {m}); });
  expect_error_prefix("[einsum] more than one '->' in equation 'i->i->i'",
                      [&] { einsum("i->i->i", {v}); });
  expect_error_prefix("[roll] shifts and dims differ in length: 2 shifts, 1 dims", [&] {
    roll(m, {1, 2}, {0});
  });
  expect_error_prefix("[roll] without dims takes one shift, got 2", [&] { roll(m, {1, 2}); });
  expect_error_prefix("[roll] dimension 2 out of range for a tensor of rank 2",
                      [&] { roll(m, {1}, {2}); });
  expect_error_prefix("[repeat_interleave] repeats must be non-negative, got -1",
                      [&] { repeat_interleave(m, -1); });
  expect_error_prefix(
      "[repeat_interleave] repeats must have 1 or 2 elements (the size of the repeated "
      "dim), got shape [3]",
      [&] { repeat_interleave(m, i, 0); });
  expect_error_prefix("[repeat_interleave] repeats must be non-negative, got -1 at index 0", [&] {
    repeat_interleave(from_data(TensorData::from(std::vector<int64_t>{-1, 2}, Shape{2})));
  });
  expect_error_prefix("[repeat_interleave] repeats must be a 0-d or 1-D Int tensor, got float32",
                      [&] { repeat_interleave(m, v, 1); });
  expect_error_prefix("[diag] expects a 1-D or 2-D tensor, got shape [2, 3, 4]", [&] { diag(b); });
  expect_error_prefix(
      "[diagonal] dim1 and dim2 cannot be the same dim, got 1 and -2 for shape [2, 3, 4]",
      [&] { diagonal(b, 0, 1, -2); });
  expect_error_prefix("[diagonal] expects a tensor with at least 2 dims, got shape [3]",
                      [&] { diagonal(v); });
  expect_error_prefix("[trace] expects a 2-D tensor, got shape [2, 3, 4]", [&] { trace(b); });
  expect_error_prefix("[cross] inputs must have size 3 in dim 0, got shapes [2, 3] and [2, 3]",
                      [&] { cross(m, m, 0); });
  expect_error_prefix("[cross] inputs must have size 3 in dim 0, got shapes [1, 3] and [3, 3]",
                      [&] {
                        cross(input(Shape{1, 3}, DType::f32), input(Shape{3, 3}, DType::f32), 0);
                      });
  expect_error_prefix("[linalg.vector_norm] needs a floating tensor, got int64",
                      [&] { linalg::vector_norm(i); });
  expect_error_prefix(
      "[linalg.vector_norm] cannot compute the inf norm over dim 0 of size 0 (shape "
      "[0, 3])",
      [&] {
        linalg::vector_norm(zeros(Shape{0, 3}, DType::f32), kInf);
      });
  expect_error_prefix("[linalg.vector_norm] cannot compute the -1 norm over dim 0 of size 0",
                      [&] { linalg::vector_norm(zeros(Shape{0}, DType::f32), -1); });
  expect_error_prefix(
      "[linalg.matrix_norm] ord must be 'fro', 'nuc', 1, -1, 2, -2, inf or -inf; got 3",
      [&] { linalg::matrix_norm(m, 3.0); });
  expect_error_prefix("[linalg.matrix_norm] ord must be 'fro' or 'nuc', got 'max'",
                      [&] { linalg::matrix_norm(m, "max"); });
  expect_error_prefix("[linalg.matrix_norm] expects a tensor with at least 2 dims, got shape [3]",
                      [&] { linalg::matrix_norm(v); });
  expect_error_prefix("[linalg.matrix_norm] dims must differ, got 0 and -2", [&] {
    linalg::matrix_norm(m, "fro", {0, -2});
  });
  expect_error_prefix(
      "[linalg.norm] without dims, an ord needs a 1-D or 2-D input, got shape [2, 3, 4]",
      [&] { linalg::norm(b, 1.0); });
  expect_error_prefix("[linalg.norm] dims must name 1 or 2 dims, got 3", [&] {
    linalg::norm(b, 1.0, std::vector<int64_t>{0, 1, 2});
  });
}

}  // namespace
}  // namespace ember::test
