// Gradient rules of the movement and indexing ops against central finite differences in float64,
// on random non-zero data, with non-contiguous inputs and size-1 dims; plus second derivatives
// through the rules and checks that composite ops record one node, not their pieces.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include <ember/autodiff/node.hpp>
#include <ember/ember.hpp>

namespace ember {
namespace {

using Fn = std::function<DynTensor(const std::vector<DynTensor>&)>;

constexpr double kEps = 1e-6, kAtol = 1e-5, kRtol = 1e-3;

DynTensor rnd(const Shape& shape) { return randn(shape, DType::f64); }
// A non-contiguous [rows, cols] input: the transpose of a [cols, rows] tensor.
DynTensor rnd_t(int64_t rows, int64_t cols) { return transpose(rnd({cols, rows}), 0, 1); }
DynTensor idx(const std::vector<int64_t>& v, const Shape& shape) {
  return from_data(TensorData::from(v, shape));
}
DynTensor bools(const std::vector<int64_t>& v, const Shape& shape) {
  return cast(idx(v, shape), DType::boolean);
}

// Checks the gradients of sum(f(xs) * w), w random, with respect to every x against central
// differences. f runs on tracked inputs in both paths (so it may itself call grad()).
void check_grad(const Fn& f, const std::vector<DynTensor>& xs) {
  std::vector<DynTensor> leaves;
  for (const DynTensor& x : xs) leaves.push_back(require_grad(x));
  const DynTensor y = f(leaves);
  ASSERT_TRUE(y.requires_grad());
  const DynTensor w = rnd(y.shape());
  const std::vector<DynTensor> grads = ember::grad(y, leaves, w);
  auto loss = [&](const std::vector<DynTensor>& in) {
    std::vector<DynTensor> tracked;
    for (const DynTensor& t : in) tracked.push_back(require_grad(t));
    return sum(mul(f(tracked), w)).item<double>();
  };
  for (size_t i = 0; i < xs.size(); ++i) {
    ASSERT_TRUE(grads[i].defined()) << "input " << i;
    ASSERT_EQ(grads[i].shape(), xs[i].shape()) << "input " << i;
    const std::vector<double> g = grads[i].to_vector<double>();
    std::vector<double> v = xs[i].to_vector<double>();
    for (size_t j = 0; j < v.size(); ++j) {
      std::vector<DynTensor> in = xs;
      const double x0 = v[j];
      v[j] = x0 + kEps;
      in[i] = from_data(TensorData::from(v, xs[i].shape()));
      const double hi = loss(in);
      v[j] = x0 - kEps;
      in[i] = from_data(TensorData::from(v, xs[i].shape()));
      const double lo = loss(in);
      v[j] = x0;
      const double fd = (hi - lo) / (2 * kEps);
      EXPECT_NEAR(g[j], fd, kAtol + kRtol * std::abs(fd)) << "input " << i << ", element " << j;
    }
  }
}

// The same for the first derivative itself: f's gradient (made with create_graph) of
// sum(f(xs)^2 * w) is differentiated again, which runs every rule's ops under recording.
void check_grad_grad(const Fn& f, const std::vector<DynTensor>& xs) {
  DynTensor w;
  const Fn df = [&](const std::vector<DynTensor>& in) {
    const DynTensor y = f(in);
    if (!w.defined()) w = rnd(y.shape());
    const DynTensor l = sum(mul(square(y), w));
    return ember::grad(l, {in[0]}, {}, {.create_graph = true})[0];
  };
  check_grad(df, xs);
}

const autodiff::Node* input_node(const DynTensor& y, size_t i) {
  return y.node()->inputs()[i].get();
}

// The checks as macros, so that a failure names the test line that asked for it.
#define CHECK_GRAD(...)      \
  do {                       \
    SCOPED_TRACE("");        \
    check_grad(__VA_ARGS__); \
  } while (0)
#define CHECK_GRAD_GRAD(...)      \
  do {                            \
    SCOPED_TRACE("");             \
    check_grad_grad(__VA_ARGS__); \
  } while (0)

// Movement.

TEST(MovementGrad, Slice) {
  CHECK_GRAD([](auto& in) { return slice(in[0], 1, 1, 4); }, {rnd_t(3, 5)});
  CHECK_GRAD([](auto& in) { return slice(in[0], 0, 1, 100, 2); }, {rnd_t(6, 2)});
  CHECK_GRAD([](auto& in) { return slice(in[0], -1, -3, -1); }, {rnd({2, 1, 4})});
  CHECK_GRAD([](auto& in) { return slice(in[0], 2, 0, 4, 3); }, {rnd({2, 1, 4})});
  CHECK_GRAD([](auto& in) { return slice(in[0], {{0, 2}, {0, 1}, {1, 4, 2}}); }, {rnd({3, 1, 4})});
}

TEST(MovementGrad, NarrowSplitChunk) {
  CHECK_GRAD([](auto& in) { return narrow(in[0], 0, 1, 2); }, {rnd_t(4, 3)});
  CHECK_GRAD(
      [](auto& in) {
        const auto parts = split(in[0], 2, 1);  // sizes 2, 2, 1
        return add(mul(parts[0], parts[1]), sum(parts[2], {1}, true));
      },
      {rnd_t(3, 5)});
  CHECK_GRAD(
      [](auto& in) {
        const auto parts = chunk(in[0], 3, 0);
        return cat({mul(parts[2], 2.0), parts[0]}, 0);
      },
      {rnd({6, 1})});
}

TEST(MovementGrad, Select) {
  CHECK_GRAD([](auto& in) { return select(in[0], 1, 2); }, {rnd_t(3, 4)});
  CHECK_GRAD([](auto& in) { return select(in[0], 0, -1); }, {rnd({3, 1, 2})});
  CHECK_GRAD([](auto& in) { return select(in[0], 0, 0); }, {rnd({1})});
}

// Slices and selects give the engine sparse pieces, added into one buffer per input: overlapping
// pieces, a dense gradient in the same slot, steps and negative indices.
TEST(MovementGrad, SparsePiecesAccumulate) {
  CHECK_GRAD(
      [](auto& in) {
        const DynTensor& x = in[0];
        return stack({add(select(x, 0, 1), select(x, 0, 1)), sum(slice(x, 0, 0, 2), {0}),
                      mul(sum(x, {0}), 0.5), sum(slice(x, 0, 1, 4, 2), {0}), select(x, 0, -1)},
                     0);
      },
      {rnd_t(4, 3)});
  CHECK_GRAD(
      [](auto& in) {
        std::vector<DynTensor> steps;
        for (int64_t t = 0; t < in[0].size(1); ++t) steps.push_back(select(in[0], 1, t));
        return add(stack(steps, 1), narrow(in[0], 1, 0, 1));
      },
      {rnd({2, 5, 3})});
  // Pieces that tile the input exactly (split, chunk) are copied into place, with no zeros and
  // no adds; a pair that overlaps, or one that leaves a gap, takes the adding path.
  CHECK_GRAD(
      [](auto& in) {
        const auto parts = split(in[0], 2, 1);  // [3, 2], [3, 2], [3, 1] of [3, 5]
        return cat({mul(parts[0], 2.0), exp(parts[1]), mul(parts[2], parts[2])}, 1);
      },
      {rnd_t(3, 5)});
  CHECK_GRAD(
      [](auto& in) {
        const auto parts = chunk(in[0], 2, 1);  // [2, 2, 3] twice, of [2, 4, 3]
        return add(mul(parts[0], parts[1]), parts[1]);
      },
      {rnd({2, 4, 3})});
  CHECK_GRAD(
      [](auto& in) {
        return cat({narrow(in[0], 1, 0, 3), narrow(in[0], 1, 2, 2), narrow(in[0], 1, 4, 1)}, 1);
      },
      {rnd({2, 5})});
  CHECK_GRAD(
      [](auto& in) {
        return cat({narrow(in[0], 1, 0, 2), narrow(in[0], 1, 3, 2)}, 1);
      },
      {rnd({2, 5})});
  // A slice's gradient passed on through another node before it is taken.
  CHECK_GRAD([](auto& in) { return mul(select(slice(in[0], 1, 1, 3), 0, 1), 3.0); },
             {rnd({2, 4, 2})});
}

// Pieces that already sit in place in one buffer (a split's parts concatenated in order: cat's
// backward passes views of its gradient) are that buffer, with no copy; out of place (the parts
// reordered) they are copied.
TEST(MovementGrad, PiecesAlreadyInPlaceAreTheirBuffer) {
  CHECK_GRAD([](auto& in) { return cat(split(in[0], 2, 1), 1); }, {rnd_t(3, 5)});
  const DynTensor x = require_grad(rnd({3, 5}));
  const DynTensor w = rnd({3, 5});
  const DynTensor g = ember::grad(cat(split(x, 2, 1), 1), {x}, w)[0];
  EXPECT_EQ(g.raw().data(), w.raw().data());
  EXPECT_EQ(g.to_vector<double>(), w.to_vector<double>());
  const DynTensor r = ember::grad(cat({narrow(x, 1, 2, 3), narrow(x, 1, 0, 2)}, 1), {x}, w)[0];
  EXPECT_NE(r.raw().data(), w.raw().data());
  EXPECT_EQ(cat({narrow(r, 1, 2, 3), narrow(r, 1, 0, 2)}, 1).to_vector<double>(),
            w.to_vector<double>());
}

TEST(MovementGrad, Flip) {
  CHECK_GRAD([](auto& in) { return flip(in[0], {0, -1}); }, {rnd_t(3, 4)});
  CHECK_GRAD([](auto& in) { return flip(in[0], {1}); }, {rnd({2, 1, 3})});
  CHECK_GRAD([](auto& in) { return flip(in[0], {}); }, {rnd({2, 3})});
}

TEST(MovementGrad, Repeat) {
  CHECK_GRAD([](auto& in) { return repeat(in[0], {2, 3}); }, {rnd_t(2, 3)});
  CHECK_GRAD([](auto& in) { return repeat(in[0], {2, 1, 3}); }, {rnd({3, 1})});
  // More repeat dims than the interleaved view can hold: the dim-by-dim path.
  CHECK_GRAD([](auto& in) { return repeat(in[0], {1, 2, 1, 1, 1, 3, 2}); }, {rnd({2, 1, 3})});
  // A zero count gives an empty output and zero gradients.
  const DynTensor x = require_grad(rnd({2, 3}));
  const DynTensor y = repeat(x, {0, 2});
  const DynTensor g = backward(sum(y)).get(x);
  EXPECT_EQ(g.shape(), x.shape());
  EXPECT_EQ(sum(abs(g)).item<double>(), 0.0);
}

TEST(MovementGrad, Cat) {
  CHECK_GRAD(
      [](auto& in) {
        return cat({in[0], in[1], in[2]}, 1);
      },
      {rnd_t(2, 3), rnd({2, 1}), rnd({2, 2})});
  CHECK_GRAD([](auto& in) { return cat({in[0], in[1]}, -2); }, {rnd({1, 3}), rnd_t(2, 3)});
  // A 1-D empty input is skipped (and gets no gradient); an Int input promotes the result.
  const DynTensor a = require_grad(rnd({2, 2})), e = require_grad(rnd({0}));
  const DynTensor i = idx({1, 2, 3, 4}, {2, 2});
  const DynTensor y = cat({a, e, i}, 0);
  EXPECT_EQ(y.dtype(), DType::f64);
  Gradients grads = backward(sum(mul(y, y)));
  EXPECT_TRUE(allclose(grads.get(a), mul(a, 2.0)));
  EXPECT_FALSE(grads.contains(e));
  // f32 and f64 inputs: the f32 one's gradient comes back as f32.
  const DynTensor f = require_grad(randn({2, 2}, DType::f32));
  const DynTensor gf = backward(sum(cat({f, a}, 1))).get(f);
  EXPECT_EQ(gf.dtype(), DType::f32);
  EXPECT_TRUE(allclose(gf, ones({2, 2}, DType::f32)));
}

TEST(MovementGrad, Stack) {
  CHECK_GRAD([](auto& in) { return stack({in[0], in[1]}, 1); }, {rnd_t(2, 3), rnd({2, 3})});
}

TEST(MovementGrad, Pad) {
  CHECK_GRAD([](auto& in) { return pad(in[0], {1, 2}); }, {rnd_t(2, 3)});
  CHECK_GRAD(
      [](auto& in) {
        return pad(in[0], {-1, 2, 0, 1}, PadMode::Constant, 3.0);
      },
      {rnd({2, 1, 4})});
  CHECK_GRAD([](auto& in) { return pad(in[0], {2, 1, 1, 0}, PadMode::Reflect); }, {rnd_t(3, 4)});
  CHECK_GRAD([](auto& in) { return pad(in[0], {1, 2}, PadMode::Replicate); }, {rnd({2, 1, 3})});
}

// Indexing.

TEST(IndexingGrad, Gather) {
  const DynTensor i = idx({0, 2, 2, 1, 0, 0}, {2, 3});  // repeats: gradients add up
  CHECK_GRAD([&](auto& in) { return gather(in[0], 1, i); }, {rnd_t(3, 4)});
  const DynTensor j = idx({1, 0, 1}, {1, 3});  // smaller than x outside dim 0
  CHECK_GRAD([&](auto& in) { return gather(in[0], 0, j); }, {rnd({2, 4})});
  CHECK_GRAD([&](auto& in) { return gather(in[0], 1, idx({0, 0}, {2, 1})); }, {rnd({2, 1})});
}

TEST(IndexingGrad, Scatter) {
  const DynTensor i = idx({2, 0, 1, 3}, {2, 2});  // distinct positions in each row
  // src larger than the index: its unread elements get zero gradient.
  CHECK_GRAD([&](auto& in) { return scatter(in[0], 1, i, in[1]); }, {rnd_t(2, 4), rnd({3, 3})});
  CHECK_GRAD(
      [&](auto& in) {
        return scatter(in[0], 0, idx({1, 0}, {1, 2}), in[1]);
      },
      {rnd({2, 2}), rnd_t(1, 2)});
  CHECK_GRAD([&](auto& in) { return scatter(in[0], 1, i, 5.0); }, {rnd({2, 4})});
}

TEST(IndexingGrad, ScatterAdd) {
  const DynTensor i = idx({1, 1, 0, 2, 2, 2}, {2, 3});
  CHECK_GRAD([&](auto& in) { return scatter_add(in[0], 1, i, in[1]); }, {rnd_t(2, 3), rnd({2, 4})});
  CHECK_GRAD(
      [&](auto& in) {
        return scatter_add(in[0], 0, idx({0, 0, 0}, {3, 1}), in[1]);
      },
      {rnd({1, 1}), rnd({3, 1})});
}

TEST(IndexingGrad, IndexSelect) {
  const DynTensor i = idx({2, 0, 2}, {3});
  CHECK_GRAD([&](auto& in) { return index_select(in[0], 1, i); }, {rnd_t(2, 3)});
  CHECK_GRAD([&](auto& in) { return index_select(in[0], 0, idx({0}, {})); }, {rnd({1, 3})});
  CHECK_GRAD([&](auto& in) { return index_select(in[0], 0, idx({0}, {1})); }, {rnd({})});
}

TEST(IndexingGrad, IndexAdd) {
  const DynTensor i = idx({1, 1, 0}, {3});
  CHECK_GRAD([&](auto& in) { return index_add(in[0], 0, i, in[1], 2.5); },
             {rnd({2, 3}), rnd_t(3, 3)});
  CHECK_GRAD([&](auto& in) { return index_add(in[0], 1, i, in[1]); }, {rnd_t(1, 2), rnd({1, 3})});
}

TEST(IndexingGrad, MaskedFill) {
  const DynTensor m = bools({1, 0, 0, 1, 1, 0}, {2, 3});
  CHECK_GRAD([&](auto& in) { return masked_fill(in[0], m, -2.0); }, {rnd_t(2, 3)});
  // The mask broadcasts over x's leading dim.
  CHECK_GRAD([&](auto& in) { return masked_fill(in[0], m, 0.0); }, {rnd({4, 2, 3})});
}

TEST(IndexingGrad, MaskedSelect) {
  const DynTensor m = bools({1, 0, 1, 1, 0, 0}, {2, 3});
  CHECK_GRAD([&](auto& in) { return masked_select(in[0], m); }, {rnd_t(2, 3)});
  // x broadcasts against a larger mask: a selected x element is picked several times.
  CHECK_GRAD([&](auto& in) { return masked_select(in[0], m); }, {rnd({1, 3})});
  CHECK_GRAD([&](auto& in) { return masked_select(in[0], m); }, {rnd({3, 2, 3})});
  // Nothing selected: an empty output and a zero gradient.
  const DynTensor x = require_grad(rnd({2, 3}));
  const DynTensor g = backward(sum(masked_select(x, zeros({2, 3}, DType::boolean)))).get(x);
  EXPECT_EQ(sum(abs(g)).item<double>(), 0.0);
}

TEST(IndexingGrad, SliceAssign) {
  const std::vector<Slice> region = {{0, 2}, {1, 4, 2}};
  CHECK_GRAD([&](auto& in) { return slice_assign(in[0], region, in[1]); },
             {rnd_t(3, 4), rnd({2, 2})});
  // The value broadcasts to the region: its gradient sums over the broadcast dims.
  CHECK_GRAD([&](auto& in) { return slice_assign(in[0], region, in[1]); },
             {rnd({3, 4}), rnd({1, 2})});
  CHECK_GRAD(
      [&](auto& in) {
        return slice_assign(in[0], {{1, 2}}, in[1]);
      },
      {rnd({3, 1, 2}), rnd({2})});
}

TEST(IndexingGrad, ZeroDimInputs) {
  CHECK_GRAD([](auto& in) { return gather(in[0], 0, idx({0, 0, 0}, {3})); }, {rnd({})});
  CHECK_GRAD([](auto& in) { return gather(in[0], 0, idx({0}, {})); }, {rnd({})});
  CHECK_GRAD([](auto& in) { return scatter(in[0], 0, idx({0}, {}), in[1]); }, {rnd({}), rnd({})});
  CHECK_GRAD(
      [](auto& in) {
        return scatter_add(in[0], 0, idx({0, 0}, {2}), in[1]);
      },
      {rnd({}), rnd({})});
  CHECK_GRAD([](auto& in) { return index_add(in[0], 0, idx({0}, {1}), in[1], 0.5); },
             {rnd({}), rnd({})});
}

// Second derivatives: every rule's backward is itself recorded and differentiable.

TEST(MovementIndexingGradGrad, Movement) {
  CHECK_GRAD_GRAD([](auto& in) { return slice(in[0], 1, 0, 3, 2); }, {rnd_t(2, 4)});
  CHECK_GRAD_GRAD([](auto& in) { return select(in[0], 0, 1); }, {rnd({2, 3})});
  CHECK_GRAD_GRAD([](auto& in) { return flip(in[0], {1}); }, {rnd({2, 3})});
  CHECK_GRAD_GRAD([](auto& in) { return repeat(in[0], {2, 1}); }, {rnd({2, 3})});
  CHECK_GRAD_GRAD([](auto& in) { return cat({in[0], mul(in[0], in[0])}, 0); }, {rnd({2, 3})});
  CHECK_GRAD_GRAD([](auto& in) { return pad(in[0], {1, -1}); }, {rnd({2, 3})});
}

TEST(MovementIndexingGradGrad, Indexing) {
  const DynTensor i = idx({1, 1, 0, 2}, {2, 2});
  CHECK_GRAD_GRAD([&](auto& in) { return gather(in[0], 1, i); }, {rnd({2, 3})});
  const DynTensor distinct = idx({1, 0, 0, 2}, {2, 2});  // scatter with repeats is ill-defined
  CHECK_GRAD_GRAD([&](auto& in) { return scatter(in[0], 1, distinct, mul(in[0], in[0])); },
                  {rnd({2, 3})});
  CHECK_GRAD_GRAD([&](auto& in) { return scatter_add(in[0], 1, i, mul(in[0], in[0])); },
                  {rnd({2, 3})});
  CHECK_GRAD_GRAD(
      [&](auto& in) {
        return index_select(in[0], 0, idx({1, 1}, {2}));
      },
      {rnd({2, 3})});
  CHECK_GRAD_GRAD(
      [&](auto& in) {
        return index_add(in[0], 0, idx({1, 1}, {2}), mul(in[0], in[0]), 2.0);
      },
      {rnd({2, 3})});
  CHECK_GRAD_GRAD([&](auto& in) { return masked_fill(in[0], gt(in[0], 0.0), 1.0); }, {rnd({2, 3})});
  CHECK_GRAD_GRAD(
      [&](auto& in) {
        return masked_select(in[0], bools({1, 0, 1}, {3}));
      },
      {rnd({2, 3})});
  CHECK_GRAD_GRAD(
      [&](auto& in) {
        return slice_assign(in[0], {{0, 1}}, slice(in[0], 0, 1, 2));
      },
      {rnd({2, 3})});
}

// Composites record one node on their public inputs, not one per internal step.

TEST(MovementIndexingGrad, CompositesRecordOnce) {
  const DynTensor x = require_grad(rnd({3, 4}));
  const DynTensor n = narrow(x, 1, 1, 2);
  EXPECT_STREQ(n.node()->name(), "slice");
  EXPECT_EQ(input_node(n, 0), x.node().get());
  for (const DynTensor& part : split(x, 2, 0)) EXPECT_EQ(input_node(part, 0), x.node().get());
  const DynTensor s = scatter(x, 1, idx({0, 1, 2}, {3, 1}), 1.0);
  EXPECT_STREQ(s.node()->name(), "scatter");
  EXPECT_EQ(input_node(s, 0), x.node().get());
  EXPECT_EQ(input_node(s, 1), nullptr);
  const DynTensor src = require_grad(rnd({3, 4}));
  const DynTensor ia = index_add(x, 0, idx({2, 0}, {2}), slice(src, 0, 0, 2), 3.0);
  EXPECT_STREQ(ia.node()->name(), "index_add");
  EXPECT_EQ(input_node(ia, 0), x.node().get());
  const DynTensor mf = masked_fill(x, gt(x, 0.0), 0.0);
  EXPECT_STREQ(mf.node()->name(), "masked_fill");
  EXPECT_EQ(input_node(mf, 0), x.node().get());
  const DynTensor ms = masked_select(x, gt(x, 0.0));
  EXPECT_STREQ(ms.node()->name(), "masked_select");
  EXPECT_EQ(input_node(ms, 0), x.node().get());
  const DynTensor p = pad(x, {1, 1});
  EXPECT_EQ(input_node(p, 0), x.node().get());
  const DynTensor r = repeat(x, {2, 1, 1});
  EXPECT_STREQ(r.node()->name(), "repeat");
  EXPECT_EQ(input_node(r, 0), x.node().get());
  const DynTensor v = require_grad(rnd({1, 4}));
  const DynTensor sa = slice_assign(x, {{0, 1}}, v);
  EXPECT_EQ(input_node(sa, 0), x.node().get());
  EXPECT_EQ(input_node(sa, 1), v.node().get());
  const DynTensor is = index_select(x, 0, idx({1}, {1}));
  EXPECT_EQ(input_node(is, 0), x.node().get());
  // Index tensors and masks never take part.
  EXPECT_EQ(gather(x, 0, idx({0}, {1, 1})).node()->inputs().size(), 1u);
  {
    auto guard = no_grad();
    EXPECT_FALSE(slice(x, 0, 0, 1).requires_grad());
    EXPECT_FALSE(cat({x, x}).requires_grad());
    EXPECT_FALSE(gather(x, 0, idx({0}, {1, 1})).requires_grad());
  }
}

}  // namespace
}  // namespace ember
