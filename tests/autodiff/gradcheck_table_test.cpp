// The gradient check table: one row per differentiable op, each checked against central finite
// differences in float64 (PyTorch's gradcheck defaults) on several shapes, among them
// broadcasting, size-1 dims, 0-d and non-contiguous (transposed or strided) inputs. Every row
// also checks second derivatives through create_graph (gradgradcheck); piecewise-constant ops
// check that their gradient is exactly zero. The last tests check the checker itself and that
// ops without a gradient say so.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <random>

#include <gtest/gtest-spi.h>

#include "autodiff/gradcheck.hpp"
#include "tensor/elementwise_rows.hpp"

namespace ember::test {
namespace {

using Xs = std::vector<DynTensor>;
constexpr int64_t kEnd = INT64_MAX;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr Layout kT = Layout::Transposed, kS = Layout::Strided;

// One input of a case: its shape, layout, and row-major positions set to exactly 0.
struct Arg {
  Shape shape;
  Layout layout = Layout::Contiguous;
  std::vector<int64_t> zeros = {};
};
using Case = std::vector<Arg>;

struct Row {
  std::string name;
  GradFn fn;
  std::vector<Case> cases;
  std::vector<Range> ranges = {Range{}};  // one per input; the last one repeats
  Check check = Check::kFd;
  double eps = 1e-6;
};

// ---- Shapes ---------------------------------------------------------------------------------

// One input of any rank.
const std::vector<Case> kUnary = {
    {{Shape{}}}, {{Shape{6}}}, {{Shape{3, 1, 4}}}, {{Shape{4, 5}, kT}}, {{Shape{2, 5}, kS}}};
// Two inputs that broadcast against each other.
const std::vector<Case> kBinary = {
    {{Shape{2, 3}}, {Shape{2, 3}}},      {{Shape{3, 1, 4}}, {Shape{2, 4}}},
    {{Shape{4, 3}, kT}, {Shape{3}, kS}}, {{Shape{}}, {Shape{2, 1}, kS}},
    {{Shape{1}}, {Shape{3, 2}, kT}},
};
// One rank-3 input, for reductions and shape ops.
const std::vector<Case> kRank3 = {
    {{Shape{2, 3, 4}}}, {{Shape{3, 1, 2}}}, {{Shape{4, 3, 2}, kT}}, {{Shape{2, 2, 3}, kS}}};
// The same and a 0-d input, for ops along dim 0 or -1 (which a 0-d tensor has, as in PyTorch).
const std::vector<Case> kRank3Or0d = {{{Shape{2, 3, 4}}},
                                      {{Shape{3, 1, 2}}},
                                      {{Shape{4, 3, 2}, kT}},
                                      {{Shape{2, 2, 3}, kS}},
                                      {{Shape{}}}};
// Three inputs that broadcast (lerp, clamp with tensor bounds).
const std::vector<Case> kTernary = {
    {{Shape{2, 3}}, {Shape{2, 3}}, {Shape{2, 3}}},
    {{Shape{4, 3}, kT}, {Shape{3}, kS}, {Shape{4, 1}}},
    {{Shape{2, 1, 3}}, {Shape{}}, {Shape{1, 3}, kS}},
};

// ---- Constant operands built from the inputs' shapes ------------------------------------------

// A fixed true/false pattern of `shape` (mixed, true at the first element).
DynTensor pattern_mask(const Shape& shape) {
  std::vector<int64_t> v(static_cast<size_t>(shape.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>((i * 5 + 1) % 3);
  return ne(from_data(TensorData::from(v, shape)), 0);
}

// An i64 index of `shape` with values (step * i_dim + the other coordinates) % n. With step 1
// and shape[dim] <= n the values along dim are distinct, as scatter needs.
DynTensor index_pattern(const Shape& shape, int dim, int64_t n, int64_t step) {
  const Host h{shape, {}};
  std::vector<int64_t> v(static_cast<size_t>(shape.numel()));
  for (int64_t i = 0; i < shape.numel(); ++i) {
    const std::vector<int64_t> idx = h.index(i);
    int64_t s = 0;
    for (int d = 0; d < shape.rank(); ++d) s += (d == dim ? step : 1) * idx[static_cast<size_t>(d)];
    v[static_cast<size_t>(i)] = s % n;
  }
  return from_data(TensorData::from(v, shape));
}

// A 1-D index of length k into a dim of size n, with repeats: n-1, n-1, 0, 0, 1, 1, ...
DynTensor repeated_index(int64_t k, int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i) v[static_cast<size_t>(i)] = (n - 1 + i / 2) % n;
  return from_data(TensorData::from(v, Shape{k}));
}

Shape with_size(Shape s, int dim, int64_t size) {
  s[dim] = size;
  return s;
}

DynTensor cat_reversed(std::vector<DynTensor> parts, int64_t dim) {
  std::reverse(parts.begin(), parts.end());
  return cat(parts, dim);
}

// ---- The table ----------------------------------------------------------------------------------

// The elementwise rows are the op table's (tests/tensor/elementwise_rows.hpp): each op's row
// there carries the domain its gradient is checked on.
BinaryOp binary_op_named(const std::string& name) {
#define EMBER_NAMED(Name, name_, ...) \
  if (name == #name_) return BinaryOp::Name;
  EMBER_BINARY_OPS(EMBER_NAMED)
#undef EMBER_NAMED
  ADD_FAILURE() << "no binary op is named " << name;
  return BinaryOp::Add;
}

std::vector<Row> elementwise_rows() {
  std::vector<Row> rows;
  for (const UnaryRow& u : unary_rows()) {
    if (!differentiable(u)) continue;
    rows.push_back({u.name,
                    [fn = u.fn](const Xs& x) { return fn(x[0]); },
                    kUnary,
                    {u.grad.range},
                    u.grad.check});
  }
  // Parameter values whose gradients take their own branches.
  // clang-format off
  const std::vector<Row> variants = {
      {"pow(x, -1.5)", [](const Xs& x) { return pow(x[0], -1.5); }, kUnary, {{0.2, 2}}},
      {"pow(x, 3.0)", [](const Xs& x) { return pow(x[0], 3.0); }, kUnary},  // odd, negative bases
      {"pow(x, 0.0)", [](const Xs& x) { return pow(x[0], 0.0); }, kUnary},
      {"softplus(beta 2, threshold 3)", [](const Xs& x) { return softplus(x[0], 2.0, 3.0); },
       kUnary, {{-3, 3}}},
      {"clone", [](const Xs& x) { return clone(x[0]); }, kUnary},
      {"polygamma(3, x)", [](const Xs& x) { return polygamma(3, x[0]); }, kUnary, {{0.5, 4}}},
      {"nan_to_num", [](const Xs& x) { return nan_to_num(x[0]); }, kUnary},
      {"round(x, 2)", [](const Xs& x) { return round(x[0], 2); }, kUnary, {{}}, Check::kZero},
      {"round(x, -1)", [](const Xs& x) { return round(x[0], -1); }, kUnary, {{}}, Check::kZero},
  };
  // clang-format on
  rows.insert(rows.end(), variants.begin(), variants.end());

  // Binary ops: tensor-tensor (broadcasting), tensor-scalar and scalar-tensor.
  for (const BinaryRow& b : binary_rows()) {
    if (!differentiable(b)) continue;
    const std::string name = b.name;
    const BinaryOp op = binary_op_named(name);
    const double sa = b.grad.scalar_a, sb = b.grad.scalar_b;
    rows.push_back({name + "(a, b)",
                    [op](const Xs& x) { return binary(op, x[0], x[1]); },
                    kBinary,
                    {b.grad.a, b.grad.b}});
    rows.push_back({name + "(a, scalar)",
                    [op, sb](const Xs& x) { return binary(op, x[0], sb); },
                    kUnary,
                    {b.grad.a}});
    rows.push_back({name + "(scalar, b)",
                    [op, sa](const Xs& x) { return binary(op, sa, x[0]); },
                    kUnary,
                    {b.grad.b}});
  }

  // clang-format off
  const std::vector<Row> rest = {
      {"where(cond, a, b)", [](const Xs& x) {
         const Shape shape = broadcast_shapes(x[0].shape(), x[1].shape(), "where");
         return where(pattern_mask(shape), x[0], x[1]);
       }, kBinary},
      {"where(cond broadcast, a, 0.5)", [](const Xs& x) {
         return where(pattern_mask(Shape{x[0].rank() ? x[0].size(-1) : 1}), x[0], 0.5);
       }, kUnary},
      {"lerp(a, b, weight)", [](const Xs& x) { return lerp(x[0], x[1], x[2]); }, kTernary,
       {{}, {}, {0, 1}}},
      {"lerp(a, b, 0.3)", [](const Xs& x) { return lerp(x[0], x[1], 0.3); }, kBinary},
      {"clamp(x, min, max) tensors", [](const Xs& x) { return clamp(x[0], x[1], x[2]); }, kTernary,
       {{}, {-1.5, -0.2}, {0.2, 1.5}}},
      {"addcmul(x, t1, t2, 0.5)", [](const Xs& x) { return addcmul(x[0], x[1], x[2], 0.5); },
       kTernary},
      {"addcdiv(x, t1, t2, -2)", [](const Xs& x) { return addcdiv(x[0], x[1], x[2], -2); },
       kTernary, {{}, {}, {0.5, 2}}},
      // f32 rounding: a wider step keeps the difference quotient accurate (the op is linear).
      {"cast f64 -> f32 -> f64", [](const Xs& x) {
         return cast(cast(x[0], DType::f32), DType::f64);
       }, kUnary, {{}}, Check::kFd, 1e-3},
      {"cast f64 -> f32", [](const Xs& x) { return cast(x[0], DType::f32); },
       kUnary, {{}}, Check::kFd, 1e-3},
  };
  // clang-format on
  rows.insert(rows.end(), rest.begin(), rest.end());
  return rows;
}

std::vector<Row> reduce_rows() {
  using ReduceFn = DynTensor (*)(const DynTensor&, const Dims&, bool);
  struct ReduceRow {
    const char* name;
    ReduceFn fn;
    Range range;
  };
  const std::vector<ReduceRow> reductions = {{"sum", &sum, {}},
                                             {"mean", &mean, {}},
                                             {"prod", &prod, {-1.5, 1.5, 0.4}},
                                             {"amax", &amax, {}},
                                             {"amin", &amin, {}}};
  struct DimsVariant {
    const char* suffix;
    Dims dims;
    bool keepdim;
    const std::vector<Case>& cases;
  };
  const std::vector<DimsVariant> variants = {{"()", {}, false, kRank3Or0d},
                                             {"(1)", {1}, false, kRank3},
                                             {"({0, 2})", {0, 2}, false, kRank3},
                                             {"(-1, keepdim)", {-1}, true, kRank3Or0d}};
  std::vector<Row> rows;
  for (const ReduceRow& r : reductions) {
    for (const DimsVariant& v : variants) {
      rows.push_back({std::string(r.name) + v.suffix,
                      [fn = r.fn, dims = v.dims, keepdim = v.keepdim](const Xs& x) {
                        return fn(x[0], dims, keepdim);
                      },
                      v.cases,
                      {r.range}});
    }
  }

  // Products and cumulative products are multilinear, so differences are exact at zeros.
  const std::vector<Case> with_zeros = {{{Shape{2, 3, 4}, {}, {0, 4, 13}}},
                                        {{Shape{3, 1, 2}, {}, {2}}},
                                        {{Shape{4, 3, 2}, kT, {0, 1}}},
                                        {{Shape{2, 2, 3}, kS, {5}}}};
  std::vector<Case> with_zeros_or_0d = with_zeros;
  with_zeros_or_0d.push_back({{Shape{}, {}, {0}}});
  const Range r{-1.5, 1.5, 0.4};
  // clang-format off
  const std::vector<Row> rest = {
      {"prod(1) with zeros", [](const Xs& x) { return prod(x[0], {1}); }, with_zeros, {r}},
      {"prod() with zeros", [](const Xs& x) { return prod(x[0]); }, with_zeros_or_0d, {r}},
      {"prod({0, 2}, keepdim) with zeros", [](const Xs& x) { return prod(x[0], {0, 2}, true); },
       with_zeros, {r}},
      {"max(x, 1).values", [](const Xs& x) { return max(x[0], 1).values; }, kRank3},
      {"max(x, -1, keepdim).values", [](const Xs& x) { return max(x[0], -1, true).values; },
       kRank3Or0d},
      {"max(x)", [](const Xs& x) { return max(x[0]); }, kRank3Or0d},
      {"min(x, 0).values", [](const Xs& x) { return min(x[0], 0).values; }, kRank3Or0d},
      {"min(x, -1, keepdim).values", [](const Xs& x) { return min(x[0], -1, true).values; },
       kRank3},
      {"var()", [](const Xs& x) { return var(x[0]); }, kRank3},
      {"var(1, correction 0)", [](const Xs& x) { return var(x[0], {1}, 0); }, kRank3},
      {"var({0, 2}, keepdim)", [](const Xs& x) { return var(x[0], {0, 2}, 1, true); }, kRank3},
      // Not over the size-1 dim alone: sqrt at a zero variance has no derivative.
      {"std()", [](const Xs& x) { return ember::std(x[0]); }, kRank3},
      {"std({0, 2})", [](const Xs& x) { return ember::std(x[0], {0, 2}); }, kRank3},
      {"std(-1, keepdim)", [](const Xs& x) { return ember::std(x[0], {-1}, 1, true); }, kRank3},
      {"norm(p 1)", [](const Xs& x) { return norm(x[0], 1.0); }, kRank3, {{-2, 2, 0.2}}},
      {"norm(p 2)", [](const Xs& x) { return norm(x[0]); }, kRank3Or0d, {{-2, 2, 0.2}}},
      {"norm(p 2, dim 1)", [](const Xs& x) { return norm(x[0], 2.0, {1}); },
       kRank3, {{-2, 2, 0.2}}},
      {"norm(p 3, {0, 2}, keepdim)", [](const Xs& x) { return norm(x[0], 3.0, {0, 2}, true); },
       kRank3, {{-2, 2, 0.2}}},
      {"norm(p inf)", [](const Xs& x) { return norm(x[0], kInf); }, kRank3, {{-2, 2, 0.2}}},
      {"norm(p inf, dim -1)", [](const Xs& x) { return norm(x[0], kInf, {-1}); },
       kRank3, {{-2, 2, 0.2}}},
      {"logsumexp()", [](const Xs& x) { return logsumexp(x[0], {}); }, kRank3Or0d},
      {"logsumexp(1)", [](const Xs& x) { return logsumexp(x[0], {1}); }, kRank3},
      {"logsumexp({0, 2}, keepdim)", [](const Xs& x) { return logsumexp(x[0], {0, 2}, true); },
       kRank3},
      {"cumsum(0)", [](const Xs& x) { return cumsum(x[0], 0); }, kRank3Or0d},
      {"cumsum(-1)", [](const Xs& x) { return cumsum(x[0], -1); }, kRank3Or0d},
      {"cumprod(1)", [](const Xs& x) { return cumprod(x[0], 1); }, kRank3},
      {"cumprod(-1)", [](const Xs& x) { return cumprod(x[0], -1); }, kRank3Or0d},
      {"cumprod(-1) with zeros", [](const Xs& x) { return cumprod(x[0], -1); },
       with_zeros_or_0d, {r}},
      {"cumprod(0) with zeros", [](const Xs& x) { return cumprod(x[0], 0); },
       with_zeros_or_0d, {r}},
      {"sort(-1).values", [](const Xs& x) { return sort(x[0]).values; }, kRank3Or0d},
      {"sort(1, descending).values", [](const Xs& x) { return sort(x[0], 1, true).values; },
       kRank3},
      {"topk(2, -1).values", [](const Xs& x) { return topk(x[0], x[0].rank() ? 2 : 1).values; },
       kRank3Or0d},
      {"topk(2, 0, smallest).values", [](const Xs& x) { return topk(x[0], 2, 0, false).values; },
       kRank3},
  };
  // clang-format on
  rows.insert(rows.end(), rest.begin(), rest.end());
  return rows;
}

std::vector<Row> linalg_rows() {
  const std::vector<Case> matmul_cases = {
      {{Shape{4}}, {Shape{4}, kS}},                 // 1-D . 1-D
      {{Shape{3}}, {Shape{3, 2}}},                  // 1-D . 2-D
      {{Shape{2, 3}, kT}, {Shape{3}}},              // 2-D . 1-D
      {{Shape{2, 3}}, {Shape{3, 4}, kT}},           // 2-D . 2-D
      {{Shape{2, 2, 3}}, {Shape{3, 2}, kS}},        // batched . 2-D
      {{Shape{2, 3, 2, 3}, kT}, {Shape{3, 2}}},     // stacked, transposed . 2-D (folded)
      {{Shape{2, 1, 2, 3}}, {Shape{3, 3, 2}, kT}},  // batch dims broadcast both ways
      {{Shape{1, 1}}, {Shape{2, 1, 3}}},            // size-1 inner dim
  };
  // clang-format off
  return {
      {"matmul", [](const Xs& x) { return matmul(x[0], x[1]); }, matmul_cases, {{}}},
      {"dot", [](const Xs& x) { return dot(x[0], x[1]); },
       {{{Shape{5}}, {Shape{5}}}, {{Shape{1}}, {Shape{1}}}, {{Shape{4}, kS}, {Shape{4}}}}, {{}}},
      {"outer", [](const Xs& x) { return outer(x[0], x[1]); },
       {{{Shape{3}}, {Shape{4}}}, {{Shape{1}}, {Shape{3}, kS}}, {{Shape{4}, kS}, {Shape{1}}}}},
      {"softmax(1)", [](const Xs& x) { return softmax(x[0], 1); }, kRank3, {{-3, 3}}},
      {"softmax(-1)", [](const Xs& x) { return softmax(x[0], -1); }, kRank3Or0d, {{-3, 3}}},
      {"log_softmax(0)", [](const Xs& x) { return log_softmax(x[0], 0); }, kRank3Or0d, {{-3, 3}}},
      {"log_softmax(-1)", [](const Xs& x) { return log_softmax(x[0], -1); }, kRank3, {{-3, 3}}},
  };
  // clang-format on
}

std::vector<Row> movement_rows() {
  const std::vector<Case> expand_cases = {{{Shape{3, 1, 2}}},
                                          {{Shape{1, 4, 1}, kT}},
                                          {{Shape{2, 1, 3}, kS}},
                                          {{Shape{}}},
                                          {{Shape{1}}}};
  // Sizes of 1 become 3, and a leading dim of 2 is added.
  auto expanded = [](const Shape& s, bool minus_one) {
    Shape out{2};
    for (int64_t d : s) out.push_back(d == 1 ? 3 : (minus_one ? -1 : d));
    return out;
  };
  const std::vector<Case> cat_cases = {
      {{Shape{2, 3}}, {Shape{2, 1}}, {Shape{2, 4}}},
      {{Shape{3, 2}, kT}, {Shape{3, 1}}, {Shape{3, 3}, kS}},
      {{Shape{1, 2, 2}}, {Shape{1, 1, 2}, kS}},
  };
  const std::vector<Case> cat0_cases = {
      {{Shape{1, 3}}, {Shape{2, 3}}},
      {{Shape{2, 2}, kT}, {Shape{3, 2}, kS}},
      {{Shape{1, 1}}, {Shape{1, 1}}, {Shape{1, 1}}},
  };
  const std::vector<Case> stack_cases = {
      {{Shape{2, 3}}, {Shape{2, 3}}},
      {{Shape{3, 2}, kT}, {Shape{3, 2}, kS}},
      {{Shape{1}}, {Shape{1}}, {Shape{1}}},
      {{Shape{}}, {Shape{}}},
  };
  // clang-format off
  return {
      {"reshape(x, {n0, -1})", [](const Xs& x) { return reshape(x[0], Shape{x[0].size(0), -1}); },
       kRank3},
      {"reshape(x, {-1})", [](const Xs& x) { return reshape(x[0], Shape{-1}); }, kRank3Or0d},
      {"view(x, with a 1 inserted)", [](const Xs& x) {
         Shape s = x[0].shape();
         s.insert(1, 1);
         return view(x[0], s);
       }, kRank3},
      {"flatten()", [](const Xs& x) { return flatten(x[0]); }, kRank3Or0d},
      {"flatten(1, 2)", [](const Xs& x) { return flatten(x[0], 1, 2); }, kRank3},
      {"squeeze()", [](const Xs& x) { return squeeze(x[0]); }, kRank3Or0d},
      {"squeeze(1)", [](const Xs& x) { return squeeze(x[0], 1); }, kRank3},
      {"unsqueeze(0)", [](const Xs& x) { return unsqueeze(x[0], 0); }, kRank3Or0d},
      {"unsqueeze(-1)", [](const Xs& x) { return unsqueeze(x[0], -1); }, kRank3},
      {"transpose(0, 2)", [](const Xs& x) { return transpose(x[0], 0, 2); }, kRank3},
      {"permute(2, 0, 1)", [](const Xs& x) { return permute(x[0], {2, 0, 1}); }, kRank3},
      {"expand", [expanded](const Xs& x) { return expand(x[0], expanded(x[0].shape(), false)); },
       expand_cases},
      {"broadcast_to (with -1)", [expanded](const Xs& x) {
         return broadcast_to(x[0], expanded(x[0].shape(), true));
       }, expand_cases},
      {"slice(-1, 1, end, 2)", [](const Xs& x) { return slice(x[0], -1, 1, kEnd, 2); }, kRank3},
      {"slice(0, -2, end)", [](const Xs& x) { return slice(x[0], 0, -2, kEnd); }, kRank3},
      {"slice({1:, ::2})", [](const Xs& x) { return slice(x[0], {Slice{1}, Slice{0, kEnd, 2}}); },
       kRank3},
      {"narrow(-1, 1, n - 1)", [](const Xs& x) { return narrow(x[0], -1, 1, x[0].size(-1) - 1); },
       kRank3},
      {"select(1, -1)", [](const Xs& x) { return select(x[0], 1, -1); }, kRank3},
      {"select(0, 1)", [](const Xs& x) { return select(x[0], 0, 1); }, kRank3},
      {"flip({0, 2})", [](const Xs& x) { return flip(x[0], {0, 2}); }, kRank3},
      {"flip({-1})", [](const Xs& x) { return flip(x[0], {-1}); }, kRank3Or0d},
      {"repeat({2, 1, 3})", [](const Xs& x) { return repeat(x[0], {2, 1, 3}); }, kRank3},
      {"repeat({2, 1, 1, 2})", [](const Xs& x) { return repeat(x[0], {2, 1, 1, 2}); }, kRank3},
      {"cat(1)", [](const Xs& x) { return cat(x, 1); }, cat_cases},
      {"cat(0)", [](const Xs& x) { return cat(x, 0); }, cat0_cases},
      {"stack(-1)", [](const Xs& x) { return stack(x, -1); }, stack_cases},
      {"stack(0)", [](const Xs& x) { return stack(x, 0); }, stack_cases},
      {"split(2, -1)", [](const Xs& x) { return cat_reversed(split(x[0], 2, -1), -1); }, kRank3},
      {"split({1, n - 1}, 0)", [](const Xs& x) {
         return cat_reversed(split(x[0], std::vector<int64_t>{1, x[0].size(0) - 1}, 0), 0);
       }, kRank3},
      {"chunk(2, 1)", [](const Xs& x) { return cat_reversed(chunk(x[0], 2, 1), 1); }, kRank3},
      {"contiguous", [](const Xs& x) { return contiguous(x[0]); }, kRank3Or0d},
      {"pad constant {1, 2, 0, 1}", [](const Xs& x) {
         return pad(x[0], {1, 2, 0, 1}, PadMode::Constant, 0.5);
       }, kRank3},
      {"pad constant crop {-1, 1}", [](const Xs& x) { return pad(x[0], {-1, 1}); }, kRank3},
      {"pad reflect {1, 1}", [](const Xs& x) { return pad(x[0], {1, 1}, PadMode::Reflect); },
       kRank3},
      {"pad replicate {2, 1, 1, 0}", [](const Xs& x) {
         return pad(x[0], {2, 1, 1, 0}, PadMode::Replicate);
       }, kRank3},
  };
  // clang-format on
}

std::vector<Row> indexing_rows() {
  // x, then src: src no larger than x outside dim 0 (scatter needs distinct indices, so src
  // has at most x's size along dim 0).
  const std::vector<Case> scatter_cases = {
      {{Shape{3, 4}}, {Shape{2, 4}}},
      {{Shape{4, 1, 3}, kT}, {Shape{2, 1, 3}}},
      {{Shape{3, 5}, kS}, {Shape{3, 2}, kT}},
      {{Shape{2}}, {Shape{1}}},
  };
  // scatter_add and index_add: more source rows than x rows, so indices repeat.
  const std::vector<Case> add_cases = {
      {{Shape{2, 4}}, {Shape{3, 4}}},
      {{Shape{3, 1, 3}, kT}, {Shape{4, 1, 3}, kS}},
      {{Shape{2, 5}, kS}, {Shape{3, 5}, kT}},
  };
  const std::vector<Case> slice_assign_cases = {
      {{Shape{3, 4}}, {Shape{2, 2}}},
      {{Shape{3, 1, 4}, kS}, {Shape{4}}},
      {{Shape{4, 3}, kT}, {Shape{3, 1}, kS}},
      {{Shape{2, 2}}, {Shape{}}},
  };
  const std::vector<Case> rank_ge1 = {
      {{Shape{6}}}, {{Shape{3, 1, 4}}}, {{Shape{4, 5}, kT}}, {{Shape{2, 5}, kS}}};
  // clang-format off
  return {
      {"gather(1) with repeats", [](const Xs& x) {
         return gather(x[0], 1, index_pattern(with_size(x[0].shape(), 1, 3), 1, x[0].size(1), 2));
       }, kRank3},
      {"gather(-1)", [](const Xs& x) {
         return gather(x[0], -1, index_pattern(with_size(x[0].shape(), 2, 2), 2, x[0].size(-1), 1));
       }, kRank3},
      {"scatter(0, index, src)", [](const Xs& x) {
         return scatter(x[0], 0, index_pattern(x[1].shape(), 0, x[0].size(0), 1), x[1]);
       }, scatter_cases},
      {"scatter(0, index, 0.5)", [](const Xs& x) {
         const int64_t n = x[0].size(0);
         return scatter(x[0], 0, index_pattern(with_size(x[0].shape(), 0, n - 1), 0, n, 1), 0.5);
       }, kRank3},
      {"scatter_add(0, index with repeats, src)", [](const Xs& x) {
         return scatter_add(x[0], 0, index_pattern(x[1].shape(), 0, x[0].size(0), 1), x[1]);
       }, add_cases},
      {"index_select(0, repeats)", [](const Xs& x) {
         return index_select(x[0], 0, repeated_index(3, x[0].size(0)));
       }, kRank3},
      {"index_select(-1)", [](const Xs& x) {
         const DynTensor& t = x[0];
         const DynTensor index = t.rank() ? repeated_index(2, t.size(-1)) : repeated_index(1, 1);
         return index_select(t, -1, index);
       }, kRank3Or0d},
      {"index_add(0, repeats, src, 1.5)", [](const Xs& x) {
         return index_add(x[0], 0, repeated_index(x[1].size(0), x[0].size(0)), x[1], 1.5);
       }, add_cases},
      {"masked_fill(mask, 0.5)", [](const Xs& x) {
         return masked_fill(x[0], pattern_mask(x[0].shape()), 0.5);
       }, kUnary},
      {"masked_fill(mask broadcast, 0.5)", [](const Xs& x) {
         return masked_fill(x[0], pattern_mask(Shape{x[0].size(-1)}), 0.5);
       }, rank_ge1},
      {"masked_select(mask)", [](const Xs& x) {
         return masked_select(x[0], pattern_mask(x[0].shape()));
       }, kUnary},
      {"masked_select(mask broadcasts x)", [](const Xs& x) {
         Shape s = x[0].shape();
         s.insert(0, 2);
         return masked_select(x[0], pattern_mask(s));
       }, kUnary},
      {"slice_assign({1:, :2}, value)", [](const Xs& x) {
         return slice_assign(x[0], {Slice{1}, Slice{0, 2}}, x[1]);
       }, slice_assign_cases},
  };
  // clang-format on
}

std::vector<Row> conv_rows() {
  // x, weight, bias: small f64 shapes; non-contiguous inputs in some cases.
  const std::vector<Case> conv2d_cases = {
      {{Shape{2, 3, 5, 4}}, {Shape{2, 3, 3, 3}}, {Shape{2}}},
      {{Shape{1, 2, 4, 5}, kT}, {Shape{3, 2, 2, 3}, kS}, {Shape{3}}},
  };
  const std::vector<Case> grouped_cases = {
      {{Shape{1, 4, 6, 5}}, {Shape{4, 2, 3, 2}}, {Shape{4}}},
      {{Shape{2, 4, 5, 5}, kS}, {Shape{4, 2, 2, 2}}, {Shape{4}, kS}},
  };
  const std::vector<Case> depthwise_cases = {{{Shape{1, 3, 5, 4}}, {Shape{3, 1, 3, 3}}}};
  const std::vector<Case> conv1d_cases = {
      {{Shape{2, 2, 7}}, {Shape{3, 2, 3}}, {Shape{3}}},
      {{Shape{1, 2, 6}, kS}, {Shape{2, 2, 2}, kT}, {Shape{2}}},
  };
  const std::vector<Case> conv3d_cases = {{{Shape{1, 2, 3, 4, 3}}, {Shape{2, 2, 2, 2, 2}}}};
  // Transposed: x [N, C, ...], weight [C, O / groups, ...].
  const std::vector<Case> transpose2d_cases = {
      {{Shape{1, 2, 3, 3}}, {Shape{2, 3, 3, 2}}, {Shape{3}}},
      {{Shape{2, 4, 2, 3}, kT}, {Shape{4, 1, 2, 2}}, {Shape{2}}},
  };
  const std::vector<Case> transpose1d_cases = {{{Shape{2, 2, 4}}, {Shape{2, 3, 3}}, {Shape{3}}}};
  const std::vector<Case> transpose3d_cases = {
      {{Shape{1, 4, 2, 3, 2}, kT}, {Shape{4, 1, 2, 2, 2}}, {Shape{2}}}};
  const std::vector<Case> pool2d_cases = {
      {{Shape{2, 2, 5, 6}}}, {{Shape{1, 3, 6, 5}, kT}}, {{Shape{2, 5, 5}, kS}}};
  const std::vector<Case> pool1d_cases = {{{Shape{2, 3, 9}}}, {{Shape{3, 8}, kS}}};
  // clang-format off
  return {
      {"conv2d(x, w, b, stride 1, padding 1)", [](const Xs& x) {
         return conv2d(x[0], x[1], x[2], {1}, {1});
       }, conv2d_cases},
      {"conv2d(x, w, b, padding 1, fused relu)", [](const Xs& x) {
         return conv2d(x[0], x[1], x[2], {1}, {1}, {1}, 1, true);
       }, conv2d_cases},
      {"conv2d(x, w, b, stride {2, 1}, padding {0, 1}, dilation {1, 2})", [](const Xs& x) {
         return conv2d(x[0], x[1], x[2], {2, 1}, {0, 1}, {1, 2});
       }, conv2d_cases},
      {"conv2d(x, w, b, stride 2, padding 1, groups 2)", [](const Xs& x) {
         return conv2d(x[0], x[1], x[2], {2}, {1}, {1}, 2);
       }, grouped_cases},
      {"conv2d(x, w, depthwise, padding 1)", [](const Xs& x) {
         return conv2d(x[0], x[1], {}, {1}, {1}, {1}, 3);
       }, depthwise_cases},
      {"conv1d(x, w, b, stride 2, padding 1)", [](const Xs& x) {
         return conv1d(x[0], x[1], x[2], {2}, {1});
       }, conv1d_cases},
      {"conv3d(x, w, padding {1, 0, 1})", [](const Xs& x) {
         return conv3d(x[0], x[1], {}, {1}, {1, 0, 1});
       }, conv3d_cases},
      {"conv_transpose2d(x, w, b, stride 2, padding 1, output_padding 1)", [](const Xs& x) {
         return conv_transpose2d(x[0], x[1], x[2], {2}, {1}, {1});
       }, {transpose2d_cases[0]}},
      {"conv_transpose2d(x, w, b, stride {1, 2}, groups 2, dilation 2)", [](const Xs& x) {
         return conv_transpose2d(x[0], x[1], x[2], {1, 2}, {0}, {0}, 2, {2});
       }, {transpose2d_cases[1]}},
      {"conv_transpose1d(x, w, b, stride 3, padding 1, output_padding 2)", [](const Xs& x) {
         return conv_transpose1d(x[0], x[1], x[2], {3}, {1}, {2});
       }, transpose1d_cases},
      {"conv_transpose3d(x, w, b, stride {2, 1, 2}, padding 1, output_padding {1, 0, 0}, groups 2, dilation {1, 2, 1})", [](const Xs& x) {
         return conv_transpose3d(x[0], x[1], x[2], {2, 1, 2}, {1}, {1, 0, 0}, 2, {1, 2, 1});
       }, transpose3d_cases},
      {"max_pool2d(x, 2)", [](const Xs& x) { return max_pool2d(x[0], {2}); }, pool2d_cases},
      {"max_pool2d(x, 3, stride 2, padding 1, ceil_mode)", [](const Xs& x) {
         return max_pool2d(x[0], {3}, {2}, {1}, {1}, true);
       }, pool2d_cases},
      {"max_pool2d(x, {2, 3}, stride 1, dilation {2, 1})", [](const Xs& x) {
         return max_pool2d(x[0], {2, 3}, {1}, {0}, {2, 1});
       }, pool2d_cases},
      {"max_pool1d(x, 3, stride 2, padding 1)", [](const Xs& x) {
         return max_pool1d(x[0], {3}, {2}, {1});
       }, pool1d_cases},
      {"avg_pool2d(x, 2)", [](const Xs& x) { return avg_pool2d(x[0], {2}); }, pool2d_cases},
      {"avg_pool2d(x, 3, stride 2, padding 1, ceil_mode, exclude pad)", [](const Xs& x) {
         return avg_pool2d(x[0], {3}, {2}, {1}, true, false);
       }, pool2d_cases},
      {"avg_pool1d(x, 3, stride 2, padding 1)", [](const Xs& x) {
         return avg_pool1d(x[0], {3}, {2}, {1});
       }, pool1d_cases},
      {"adaptive_avg_pool2d(x, {3, 4})", [](const Xs& x) {
         return adaptive_avg_pool2d(x[0], {3, 4});
       }, pool2d_cases},
      {"adaptive_avg_pool2d(x, 1)", [](const Xs& x) {
         return adaptive_avg_pool2d(x[0], {1});
       }, pool2d_cases},
      {"adaptive_avg_pool1d(x, 4)", [](const Xs& x) {
         return adaptive_avg_pool1d(x[0], {4});
       }, pool1d_cases},
  };
  // clang-format on
}

// ---- Running the table --------------------------------------------------------------------------

std::vector<double> draw(const Arg& arg, const Range& range, std::mt19937& gen) {
  std::uniform_real_distribution<double> dist(range.lo, range.hi);
  std::vector<double> v(static_cast<size_t>(arg.shape.numel()));
  for (double& x : v) {
    do {
      x = dist(gen);
    } while (std::fabs(x) < range.gap);
  }
  for (int64_t z : arg.zeros) v[static_cast<size_t>(z)] = 0.0;
  return v;
}

std::string describe(const Case& c) {
  std::string s = "(";
  for (size_t i = 0; i < c.size(); ++i) {
    s += (i ? ", " : "") + to_string(c[i].shape);
    if (c[i].layout != Layout::Contiguous) s += std::string(" ") + layout_name(c[i].layout);
  }
  return s + ")";
}

// Runs every case of every row: the first-order check (or the zero check), then gradgradcheck.
void run(const char* table, const std::vector<Row>& rows) {
  const auto start = std::chrono::steady_clock::now();
  int checks = 0, passed = 0, second = 0, second_passed = 0;
  for (const Row& row : rows) {
    std::mt19937 gen(12345);
    for (const Case& c : row.cases) {
      std::vector<GradInput> inputs;
      for (size_t i = 0; i < c.size(); ++i) {
        const Range& range = row.ranges[std::min(i, row.ranges.size() - 1)];
        inputs.push_back({c[i].shape, c[i].layout, draw(c[i], range, gen)});
      }
      const std::string name = row.name + " " + describe(c);
      GradTol tol;
      tol.eps = row.eps;
      auto guarded = [&](const std::function<bool()>& check) {
        try {
          return check();
        } catch (const Error& e) {
          ADD_FAILURE() << name << ": threw " << e.what();
          return false;
        }
      };
      ++checks;
      if (row.check == Check::kZero) {
        passed += guarded([&] { return zerogradcheck(name, row.fn, inputs); }) ? 1 : 0;
        continue;
      }
      passed += guarded([&] { return gradcheck(name, row.fn, inputs, tol); }) ? 1 : 0;
      ++second;
      second_passed += guarded([&] { return gradgradcheck(name, row.fn, inputs, tol); }) ? 1 : 0;
    }
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "[ gradcheck] %s: %zu rows; first order %d of %d passed, second order %d of %d; "
      "%.2f s\n",
      table, rows.size(), passed, checks, second_passed, second, secs);
}

TEST(Gradcheck, Elementwise) { run("elementwise", elementwise_rows()); }
TEST(Gradcheck, Reductions) { run("reductions", reduce_rows()); }
TEST(Gradcheck, Linalg) { run("linalg", linalg_rows()); }
TEST(Gradcheck, Movement) { run("movement", movement_rows()); }
TEST(Gradcheck, Indexing) { run("indexing", indexing_rows()); }
TEST(Gradcheck, Conv) { run("conv and pool", conv_rows()); }

// The failure messages `fn` reports, captured instead of failing the running test.
std::vector<std::string> failures_of(const std::function<void()>& fn) {
  ::testing::TestPartResultArray results;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    fn();
  }
  std::vector<std::string> messages;
  for (int i = 0; i < results.size(); ++i)
    messages.push_back(results.GetTestPartResult(i).message());
  return messages;
}

// The checker itself: it catches a wrong or missing gradient, and its layouts are as named.
TEST(Gradcheck, CatchesWrongGradients) {
  const std::vector<double> values = {0.5, -1.0, 2.0, 0.25, 1.5, -0.75};
  const std::vector<GradInput> in = {{Shape{2, 3}, kT, values}};
  auto expect_caught = [&](const std::string& name, const GradFn& fn, bool zero, const char* says) {
    bool ok = true;
    const std::vector<std::string> failures =
        failures_of([&] { ok = zero ? zerogradcheck(name, fn, in) : gradcheck(name, fn, in); });
    EXPECT_FALSE(ok) << name;
    ASSERT_FALSE(failures.empty()) << name;
    EXPECT_NE(failures[0].find(name), std::string::npos) << failures[0];
    EXPECT_NE(failures[0].find(says), std::string::npos) << failures[0];
  };
  const GradFn square_fn = [](const Xs& x) { return mul(x[0], x[0]); };
  // Autodiff sees only half of d(x^2)/dx = 2x here.
  const GradFn half_fn = [](const Xs& x) { return mul(x[0], detach(x[0])); };
  const GradFn detached_fn = [](const Xs& x) { return detach(x[0]); };
  expect_caught("x * detach(x)", half_fn, false, "element 0 [0, 0] of [2, 3] transposed: analytic");
  expect_caught("detach", detached_fn, false, "not tracked");
  expect_caught("x * x", square_fn, true, "expected exactly 0");
  EXPECT_TRUE(gradcheck("x * x", square_fn, in));
  EXPECT_TRUE(gradgradcheck("x * x", square_fn, in));
  for (Layout layout : {kT, kS}) {
    const DynTensor t = materialize({Shape{2, 3}, layout, values}, values);
    EXPECT_FALSE(t.is_contiguous()) << layout_name(layout);
    EXPECT_EQ(t.to_vector<double>(), values) << layout_name(layout);
  }
}

// Ops whose results have no gradient: not tracked, and backward on them is an ember::Error.
TEST(Gradcheck, NonDifferentiableOpsSaySo) {
  const DynTensor x = require_grad(from_data(
      TensorData::from(std::vector<double>{0.5, -1.25, 2.0, 0.75, -0.1, 1.5}, Shape{2, 3})));
  const DynTensor y = require_grad(zeros(Shape{3}, DType::f64));
  const std::vector<std::pair<const char*, DynTensor>> outputs = {
      {"eq", eq(x, 0.5)},
      {"ne", ne(x, y)},
      {"lt", lt(x, y)},
      {"le", le(x, 0.0)},
      {"gt", gt(x, y)},
      {"ge", ge(x, 1.0)},
      {"logical_and", logical_and(gt(x, 0.0), lt(x, 1.0))},
      {"logical_not", logical_not(gt(x, 0.0))},
      {"isnan", isnan(x)},
      {"isinf", isinf(x)},
      {"argmax", argmax(x)},
      {"argmin(1)", argmin(x, 1)},
      {"max(1).indices", max(x, 1).indices},
      {"argsort", argsort(x)},
      {"sort.indices", sort(x).indices},
      {"topk.indices", topk(x, 2).indices},
      {"cast to i64", cast(x, DType::i64)},
      {"cast to bool", cast(x, DType::boolean)},
      {"all", all(gt(x, 0.0))},
      {"any", any(gt(x, 0.0), {1})},
      {"nonzero", nonzero(x)},
      {"sum of Int", sum(cast(x, DType::i64))},
  };
  for (const auto& [name, out] : outputs) {
    EXPECT_FALSE(out.requires_grad()) << name;
    EXPECT_THROW(backward(sum(cast(out, DType::f64))), Error) << name;
    try {
      backward(out, ones_like(out));
      ADD_FAILURE() << name << ": backward did not throw";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("does not require grad"), std::string::npos)
          << name << ": " << e.what();
    }
  }
}

// The registry's gradient column is checked through the op table's rows: every elementwise op
// with a gradient has a row that the Elementwise test above runs, and no row claims a gradient
// for an op the registry says has none.
TEST(Gradcheck, EveryDifferentiableRegistryOpHasARow) {
  auto row_is_checked = [](const std::string& name) {
    for (const UnaryRow& u : unary_rows()) {
      if (u.name == name) return differentiable(u);
    }
    for (const BinaryRow& b : binary_rows()) {
      if (b.name == name) return differentiable(b);
    }
    return false;
  };
#define EMBER_EXPECT_ROW(Op, Name, name)                                               \
  EXPECT_EQ(row_is_checked(#name), op_def(Op::Name).grad != nullptr)                   \
      << #name << ": the registry and the row disagree on whether it has a gradient, " \
      << "or the op has no row in tests/tensor/elementwise_rows.hpp";
#define EMBER_UNARY_ROW(Name, name, ...) EMBER_EXPECT_ROW(UnaryOp, Name, name)
#define EMBER_BINARY_ROW(Name, name, ...) EMBER_EXPECT_ROW(BinaryOp, Name, name)
  EMBER_ALL_UNARY_OPS(EMBER_UNARY_ROW)
  EMBER_BINARY_OPS(EMBER_BINARY_ROW)
#undef EMBER_UNARY_ROW
#undef EMBER_BINARY_ROW
#undef EMBER_EXPECT_ROW
}

}  // namespace
}  // namespace ember::test
