// int64 on the Vulkan backend against the Cpu, bit for bit: arithmetic, comparisons, where,
// copies, casts, reductions and indexing, on values past 32 bits (int64's ends included) and on
// strided and broadcast operands. ctest runs these twice: on the device as it is (lavapipe's WIDE
// variants) and as a device without float64 (`no_float64.`: the PAIR variants, int64 in two
// 32-bit words, which a GPU without shaderInt64 or shaderFloat64 takes).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <ember/backends/vulkan/vulkan.hpp>
#include <ember/ember.hpp>

#include "vulkan_test_util.hpp"

namespace ember {
namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// Values whose high words differ in sign and size, whose low words carry when added, and
// int64's ends.
const std::vector<int64_t>& wide_values() {
  static const std::vector<int64_t> v = {
      kMin, kMax, -1, 0, 1, 7, -9,
      4294967295,  // 2^32 - 1: a carry into the high word
      4294967296, -4294967296, (int64_t{1} << 40) + 12345, -(int64_t{1} << 35) + 3,
      2147483648,                           // 2^31: negative as an int32
      -2147483649, (int64_t{1} << 53) + 1,  // not a float or a double
      16777217,                             // 2^24 + 1: not a float
      -33554435,
      // half a float's last place above 2^40, and 1 more:
      // rounds up only if the bits past the first 32 count
      (int64_t{1} << 40) + (1 << 16) + 1, -((int64_t{1} << 40) + (1 << 16) + 1),
      1234567890123456789};
  return v;
}

DynTensor int64s(const std::vector<int64_t>& v, const Shape& shape) {
  return from_data(TensorData::from(v, shape), Device::cpu());
}

// The values, shuffled and repeated to n, so that every pairing of high and low words occurs.
std::vector<int64_t> pick(size_t n, size_t seed) {
  const std::vector<int64_t>& v = wide_values();
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = v[(i * 7 + seed * 5 + i / v.size()) % v.size()];
  return out;
}

std::vector<int64_t> as_int64s(const DynTensor& t) {
  return to_device(t, Device::cpu()).to_vector<int64_t>();
}

void expect_same(const DynTensor& got, const DynTensor& want, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const DynTensor g = to_device(got, Device::cpu());
  if (want.dtype() == DType::i64) {
    EXPECT_EQ(g.to_vector<int64_t>(), want.to_vector<int64_t>()) << what;
  } else {  // every other dtype holds its values exactly in a double: the same bits, or NaN
    const std::vector<double> a = cast(g, DType::f64).to_vector<double>();
    const std::vector<double> b = cast(want, DType::f64).to_vector<double>();
    for (size_t i = 0; i < a.size(); ++i) {
      const bool same = std::isnan(a[i]) ? std::isnan(b[i])
                                         : a[i] == b[i] && std::signbit(a[i]) == std::signbit(b[i]);
      EXPECT_TRUE(same) << what << ": element " << i << " is " << a[i] << ", the Cpu's " << b[i];
    }
  }
}

TEST(Vulkan, Int64ArithmeticComparisonsAndWhereMatchTheCpu) {
  EMBER_REQUIRE_VULKAN();
  const DynTensor a = int64s(pick(4 * 18, 1), Shape{4, 1, 18});
  const DynTensor b = transpose(int64s(pick(18 * 6, 2), Shape{18, 6}), 0, 1);  // [6, 18], strided
  const DynTensor av = to_device(a, vk()), bv = to_device(b, vk());
  using Binary = DynTensor (*)(const DynTensor&, const DynTensor&);
  const std::vector<std::pair<const char*, Binary>> ops = {
      {"add", add},
      {"sub", sub},
      {"mul", mul},
      {"maximum", maximum},
      {"minimum", minimum},
      {"bitwise_and", [](const DynTensor& x, const DynTensor& y) { return x & y; }},
      {"bitwise_or", [](const DynTensor& x, const DynTensor& y) { return x | y; }},
      {"bitwise_xor", [](const DynTensor& x, const DynTensor& y) { return x ^ y; }},
      {"eq", eq},
      {"ne", ne},
      {"lt", lt},
      {"le", le},
      {"gt", gt},
      {"ge", ge},
      {"logical_and", logical_and},
      {"logical_or", logical_or},
      {"logical_xor", logical_xor}};
  for (const auto& [name, f] : ops) expect_same(f(av, bv), f(a, b), name);
  using Unary = DynTensor (*)(const DynTensor&);
  const std::vector<std::pair<const char*, Unary>> unary_ops = {
      {"neg", neg}, {"abs", abs}, {"sign", sign}, {"square", square}, {"relu", relu}};
  for (const auto& [name, f] : unary_ops) expect_same(f(bv), f(b), name);
  expect_same(clamp(bv, Scalar(-5e9), Scalar(int64_t{3} << 33)),
              clamp(b, Scalar(-5e9), Scalar(int64_t{3} << 33)), "clamp");
  expect_same(clamp_min(bv, Scalar(-7)), clamp_min(b, Scalar(-7)), "clamp_min");
  expect_same(clamp_max(bv, Scalar(1e30)), clamp_max(b, Scalar(1e30)), "clamp_max past int64");
  // A scalar operand (the front end broadcasts it): cross_entropy's ignore_index test.
  expect_same(ne(av, Scalar(int64_t{-100})), ne(a, Scalar(int64_t{-100})), "ne scalar");
  const DynTensor cond = lt(a, b);
  expect_same(where(to_device(cond, vk()), av, bv), where(cond, a, b), "where");
  // A strided copy: the transposed b made contiguous on the device.
  expect_same(contiguous(bv), contiguous(b), "contiguous");
  expect_no_validation_errors();
}

TEST(Vulkan, Int64CastsMatchTheCpu) {
  EMBER_REQUIRE_VULKAN();
  const std::vector<DType> others = {DType::f32,     DType::i32, DType::u8,  DType::i8,
                                     DType::boolean, DType::f16, DType::bf16};
  const DynTensor wide = int64s(wide_values(), Shape{static_cast<int64_t>(wide_values().size())});
  const double inf = std::numeric_limits<double>::infinity();
  // Floats into int64: truncation, both ends and past them (saturating), NaN, a word's edge.
  const std::vector<double> floats = {
      -3.7,         -0.5,          0.0,     2.5,   127.9,
      200.5,        -120.4,        65504.0, 3e9,   -3e9,
      4294967296.0, -4294967295.0, 1e15,    -1e18, 9.2e18,
      -9.3e18,      1e30,          -inf,    inf,   std::numeric_limits<double>::quiet_NaN()};
  const DynTensor narrow = from_data(
      TensorData::from(floats, Shape{static_cast<int64_t>(floats.size())}), Device::cpu());
  for (DType other : others) {
    const std::string name(dtype_name(other));
    expect_same(cast(to_device(wide, vk()), other), cast(wide, other), "int64 -> " + name);
    const DynTensor src = cast(narrow, other);
    expect_same(cast(to_device(src, vk()), DType::i64), cast(src, DType::i64), name + " -> int64");
  }
  // Into a strided int64 destination (a column of a matrix).
  DynTensor m = to_device(zeros(Shape{20, 3}, DType::i64, Device::cpu()), vk());
  const DynTensor column = select(m, 1, 1);
  const DynTensor f = cast(narrow, DType::f32);
  copy_into(column, to_device(f, vk()));
  DynTensor want = zeros(Shape{20, 3}, DType::i64, Device::cpu());
  copy_into(select(want, 1, 1), f);
  expect_same(m, want, "float32 values into an int64 column");
  expect_no_validation_errors();
}

// arange, as the Cpu's double sums give it: integral start and step into int64 past 32 bits,
// float32 and bfloat16 (rounded once) and into narrower integers (saturating past their range);
// a fractional step into every dtype but the float ones, whose values may differ in the last
// place on a device without float64 (computed in float32 there).
TEST(Vulkan, Int64ArangeMatchesTheCpu) {
  EMBER_REQUIRE_VULKAN();
  const double start = -3e9, step = 987654321.0;
  for (DType t : {DType::i64, DType::f32, DType::bf16, DType::i32, DType::u8}) {
    expect_same(arange(start, start + 40 * step, step, t, vk()),
                arange(start, start + 40 * step, step, t, Device::cpu()),
                "arange of " + std::string(dtype_name(t)));
  }
  for (DType t : {DType::i32, DType::u8, DType::i8, DType::boolean, DType::i64}) {
    expect_same(arange(-20.0, 300.0, 2.5, t, vk()), arange(-20.0, 300.0, 2.5, t, Device::cpu()),
                "arange of " + std::string(dtype_name(t)) + " with a fractional step");
  }
  const DynTensor halves = arange(-2.0, 3.0, 0.25, DType::f16, vk());
  expect_same(halves, arange(-2.0, 3.0, 0.25, DType::f16, Device::cpu()), "arange of float16");
  expect_no_validation_errors();
}

TEST(Vulkan, Int64ReductionsMatchTheCpu) {
  EMBER_REQUIRE_VULKAN();
  const DynTensor x = int64s(pick(5 * 7 * 18, 3), Shape{5, 7, 18});
  const DynTensor xv = to_device(x, vk());
  for (const Dims& dims : {Dims{}, Dims{1}, Dims{0, 2}}) {
    const std::string d = "dims of size " + std::to_string(dims.size());
    expect_same(sum(xv, dims), sum(x, dims), "sum, " + d);
    expect_same(prod(xv, dims), prod(x, dims), "prod, " + d);
    expect_same(amax(xv, dims), amax(x, dims), "amax, " + d);
    expect_same(amin(xv, dims), amin(x, dims), "amin, " + d);
    expect_same(all(xv, dims), all(x, dims), "all, " + d);
    expect_same(any(xv, dims), any(x, dims), "any, " + d);
  }
  // Sums of narrower integers and Bool are int64, the counts of a training loop's accuracy;
  // 40,000 of them a row are cut into parts folded apart.
  const DynTensor hits = gt(input(Shape{2, 40000}, 4), 1.0);
  expect_same(sum(to_device(hits, vk()), {1}), sum(hits, {1}), "sum of Bool");
  const DynTensor bytes = cast(mul(input(Shape{3, 50}, 5), 150.0), DType::u8);
  expect_same(sum(to_device(bytes, vk()), {1}), sum(bytes, {1}), "sum of uint8");
  const DynTensor ints = cast(sub(mul(input(Shape{3, 50}, 6), 4e9), 4e9), DType::i32);
  expect_same(sum(to_device(ints, vk()), {0}), sum(ints, {0}), "sum of int32");
  expect_no_validation_errors();
}

TEST(Vulkan, Int64IndexingMatchesTheCpu) {
  EMBER_REQUIRE_VULKAN();
  const DynTensor x = int64s(pick(6 * 18, 4), Shape{6, 18});
  const DynTensor index = int64s({5, 0, 3, 3, 1, 17, 2, 4, 9, 11, 0, 16}, Shape{2, 6});
  const DynTensor rows = int64s({4, 0, 4, 2}, Shape{4});
  const DynTensor xv = to_device(x, vk()), iv = to_device(index, vk());
  expect_same(gather(xv, 1, iv), gather(x, 1, index), "gather");
  expect_same(index_select(xv, 0, to_device(rows, vk())), index_select(x, 0, rows), "index_select");
  const DynTensor src = int64s(pick(12, 5), Shape{2, 6});
  const DynTensor srcv = to_device(src, vk());
  expect_same(scatter(xv, 1, iv, srcv), scatter(x, 1, index, src), "scatter");
  expect_same(scatter_add(xv, 1, iv, srcv), scatter_add(x, 1, index, src), "scatter_add");
  for (const char* reduce : {"prod", "amax", "amin"}) {
    expect_same(scatter_reduce(xv, 1, iv, srcv, reduce), scatter_reduce(x, 1, index, src, reduce),
                std::string("scatter_reduce ") + reduce);
  }
  // An index past the dim is the Cpu's error, raised when the device is next read.
  const DynTensor bad = to_device(int64s({0, 18}, Shape{1, 2}), vk());
  expect_error([&] { (void)as_int64s(gather(xv, 1, bad)); }, "18");
  expect_no_validation_errors();
}

// Within a rounding of a 16-bit float's dtype, relative (others orders of sums, a driver's exp).
void expect_near(const DynTensor& got, const DynTensor& want, const std::string& what) {
  const double tol = want.dtype() == DType::f16 ? 2e-3 : 1.6e-2;
  const DynTensor g = cast(to_device(got, Device::cpu()), DType::f64);
  const DynTensor w = cast(want, DType::f64);
  EXPECT_LE(amax(div(abs(sub(g, w)), add(abs(w), 1e-2)), {}).item<double>(), tol) << what;
}

// float16 and bfloat16 against the Cpu, which computes them in float: exactly for the rounded
// arithmetic, comparisons, where, indexing and extremes; within a rounding of the dtype for exp
// (the driver's float exp on a device without float64), sums and matmul (other orders). ctest
// runs this as a device without float64 too (`no_float64.`), where each op runs in float32.
TEST(Vulkan, NarrowDtypesThroughWiderOnesMatchTheCpu) {
  EMBER_REQUIRE_VULKAN();
  for (DType t : {DType::f16, DType::bf16}) {
    const std::string d(dtype_name(t));
    const DynTensor a = cast(sub(mul(input(Shape{6, 40}, 50), 8.0), 6.0), t);
    const DynTensor b = cast(input(Shape{6, 40}, 51), t);
    const DynTensor av = to_device(a, vk()), bv = to_device(b, vk());
    expect_same(add(av, bv), add(a, b), d + " add");
    expect_same(mul(av, 0.375), mul(a, 0.375), d + " mul by a scalar (broadcast)");
    expect_same(mul(av, bv), mul(a, b), d + " mul");
    expect_same(div(av, bv), div(a, b), d + " div");
    expect_same(neg(av), neg(a), d + " neg");
    expect_same(sqrt(bv), sqrt(b), d + " sqrt");
    expect_same(lt(av, bv), lt(a, b), d + " lt");
    expect_same(where(lt(av, bv), av, bv), where(lt(a, b), a, b), d + " where");
    expect_same(amax(av, {1}), amax(a, {1}), d + " amax");
    const DynTensor rows =
        from_data(TensorData::from(std::vector<int64_t>{5, 0, 2}, Shape{3}), Device::cpu());
    expect_same(index_select(av, 0, to_device(rows, vk())), index_select(a, 0, rows),
                d + " index_select");
    const auto near = [&](const DynTensor& got, const DynTensor& want, const std::string& what) {
      expect_near(got, want, what);
    };
    near(exp(av), exp(a), d + " exp");
    near(sum(av, {1}), sum(a, {1}), d + " sum");
    near(matmul(av, transpose(bv, 0, 1)), matmul(a, transpose(b, 0, 1)), d + " matmul");
    near(cumsum(bv, 1), cumsum(b, 1), d + " cumsum");
    expect_same(argmax(av, 1), argmax(a, 1), d + " argmax");
    // A small CNN's layers: convolution with bias and pooling.
    const DynTensor img = cast(input(Shape{2, 3, 9, 9}, 54), t),
                    ker = cast(input(Shape{4, 3, 3, 3}, 55), t);
    const DynTensor bias = cast(input(Shape{4}, 56), t);
    const DynTensor imgv = to_device(img, vk()), kerv = to_device(ker, vk()),
                    biasv = to_device(bias, vk());
    near(conv2d(imgv, kerv, biasv), conv2d(img, ker, bias), d + " conv2d");
    expect_same(max_pool2d(imgv, SpatialArg{2}), max_pool2d(img, SpatialArg{2}), d + " max_pool2d");
    near(avg_pool2d(imgv, SpatialArg{3}), avg_pool2d(img, SpatialArg{3}), d + " avg_pool2d");
  }
  // uint8, int8 and Bool there as int32: wrapped back to the byte, or "not zero".
  const DynTensor u = cast(mul(input(Shape{5, 30}, 52), 150.0), DType::u8);
  const DynTensor v = cast(mul(input(Shape{5, 30}, 53), 120.0), DType::u8);
  const DynTensor uv = to_device(u, vk()), vv = to_device(v, vk());
  expect_same(add(uv, vv), add(u, v), "uint8 add, wrapping");
  expect_same(mul(uv, vv), mul(u, v), "uint8 mul, wrapping");
  expect_same(maximum(cast(uv, DType::i8), cast(vv, DType::i8)),
              maximum(cast(u, DType::i8), cast(v, DType::i8)), "int8 maximum");
  const DynTensor p = gt(u, 90.0), q = lt(v, 80.0);
  const DynTensor pv = to_device(p, vk()), qv = to_device(q, vk());
  expect_same(logical_and(pv, qv), logical_and(p, q), "Bool logical_and");
  expect_same(logical_not(pv), logical_not(p), "Bool logical_not");
  expect_same(pv & qv, p & q, "Bool bitwise_and");
  expect_same(pv ^ qv, p ^ q, "Bool bitwise_xor");
  expect_same(bitwise_not(pv), bitwise_not(p), "Bool bitwise_not");
  expect_same(uv | vv, u | v, "uint8 bitwise_or");
  const DynTensor edges = cast(int64s({-128, 127, -1, 0, 5, -7}, Shape{6}), DType::i8);
  const DynTensor ev = to_device(edges, vk());
  expect_same(abs(ev), abs(edges), "int8 abs of -128, wrapping");
  expect_same(neg(ev), neg(edges), "int8 neg");
  expect_same(bitwise_not(ev), bitwise_not(edges), "int8 bitwise_not");
  expect_same(clamp(ev, Scalar(-300), Scalar(3)), clamp(edges, Scalar(-300), Scalar(3)),
              "int8 clamp past its range");
  expect_same(neg(uv), neg(u), "uint8 neg, wrapping");
  expect_same(clamp(uv, Scalar(-5), Scalar(100)), clamp(u, Scalar(-5), Scalar(100)), "uint8 clamp");
  expect_same(clamp_max(uv, Scalar(-5)), clamp_max(u, Scalar(-5)), "uint8 clamp_max below 0");
  const DynTensor w = cast(sub(mul(input(Shape{5, 30}, 58), 4e9), 4e9), DType::i32);
  expect_same(abs(to_device(w, vk())), abs(w), "int32 abs");
  expect_same(sign(to_device(w, vk())), sign(w), "int32 sign");
  expect_same(where(pv, uv, vv), where(p, u, v), "uint8 where");
  expect_same(index_select(pv, 1, to_device(int64s({3, 0, 29}, Shape{3}), vk())),
              index_select(p, 1, int64s({3, 0, 29}, Shape{3})), "Bool index_select");
  expect_no_validation_errors();
}

// The gradients of a small CNN's layers in float16 and bfloat16 (convolution, pooling), and
// scatters of the 1- and 2-byte dtypes (gather's and index_select's gradients): on a device
// without float64 (`no_float64.`) through float32 and int32, the 16-bit floats' scatters
// rounded at each step as the Cpu's, so that they match it exactly.
TEST(Vulkan, NarrowDtypesGradientsAndScattersMatchTheCpu) {
  EMBER_REQUIRE_VULKAN();
  for (DType t : {DType::f16, DType::bf16}) {
    const std::string d(dtype_name(t));
    const DynTensor img = cast(input(Shape{2, 3, 9, 9}, 64), t),
                    ker = cast(input(Shape{4, 3, 3, 3}, 65), t),
                    bias = cast(input(Shape{4}, 66), t);
    const auto layer_grads = [](const DynTensor& x, const DynTensor& w, const DynTensor& b) {
      const DynTensor xg = require_grad(x), wg = require_grad(w), bg = require_grad(b);
      const DynTensor y = relu(conv2d(xg, wg, bg));
      const DynTensor pooled = add(max_pool2d(y, SpatialArg{2}), avg_pool2d(y, SpatialArg{2}));
      const DynTensor seed = to_device(cast(input(pooled.shape(), 67), x.dtype()), x.device());
      return grad(pooled, {xg, wg, bg}, seed);
    };
    const std::vector<DynTensor> got = layer_grads(to_device(img, vk()), to_device(ker, vk()),
                                                   to_device(bias, vk())),
                                 want = layer_grads(img, ker, bias);
    expect_near(got[0], want[0], d + " conv's and pooling's input gradient");
    expect_near(got[1], want[1], d + " conv's weight gradient");
    expect_near(got[2], want[2], d + " conv's bias gradient");
    // Eleven values into each of few places: each step rounded to the dtype.
    const DynTensor x = cast(input(Shape{3, 5}, 68), t);
    const DynTensor src = cast(mul(input(Shape{3, 33}, 69), 3.3), t);
    std::vector<int64_t> idx(3 * 33);
    for (size_t i = 0; i < idx.size(); ++i)
      idx[i] = static_cast<int64_t>((i * 7) % 5 == 3 ? 0 : i % 3);
    const DynTensor index = int64s(idx, Shape{3, 33});
    const DynTensor xv = to_device(x, vk()), sv = to_device(src, vk()), iv = to_device(index, vk());
    expect_same(scatter_add(xv, 1, iv, sv), scatter_add(x, 1, index, src), d + " scatter_add");
    for (const char* reduce : {"prod", "amax", "amin"}) {
      expect_same(scatter_reduce(xv, 1, iv, sv, reduce), scatter_reduce(x, 1, index, src, reduce),
                  d + " scatter_reduce " + reduce);
    }
    expect_same(scatter(xv, 1, iv, sv), scatter(x, 1, index, src), d + " scatter");
    const DynTensor rows = int64s({2, 0, 2, 2, 1, 0}, Shape{6});
    const DynTensor add_src = cast(input(Shape{6, 5}, 70), t);
    expect_same(index_add(xv, 0, to_device(rows, vk()), to_device(add_src, vk())),
                index_add(x, 0, rows, add_src), d + " index_add");
  }
  // Embedding rows: moved as words where a row packs into them (12 bytes, 8 halves), widened
  // where it does not (an odd row of halves, a row of 5 bytes starting inside a word).
  const DynTensor ids = int64s({3, 0, 9, 3}, Shape{4});
  const DynTensor idv = to_device(ids, vk());
  for (const DynTensor& table :
       {cast(mul(input(Shape{10, 12}, 76), 100.0), DType::u8),
        cast(input(Shape{10, 8}, 77), DType::f16), cast(input(Shape{10, 7}, 78), DType::bf16),
        slice(cast(mul(input(Shape{10, 6}, 79), 50.0), DType::i8), 1, 1, 6)}) {
    expect_same(
        index_select(to_device(table, vk()), 0, idv), index_select(table, 0, ids),
        std::string(dtype_name(table.dtype())) + " rows " + std::to_string(table.shape()[1]));
  }
  const DynTensor bytes = cast(mul(input(Shape{3, 5}, 71), 100.0), DType::u8);
  const DynTensor more = cast(mul(input(Shape{3, 33}, 72), 100.0), DType::u8);
  std::vector<int64_t> idx(3 * 33);
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int64_t>(i % 4);
  const DynTensor index = int64s(idx, Shape{3, 33});
  const DynTensor iv = to_device(index, vk());
  for (const DynTensor& x : {bytes, cast(bytes, DType::i8), gt(bytes, 60.0)}) {
    const DynTensor src = x.dtype() == DType::boolean ? gt(more, 40.0) : cast(more, x.dtype());
    const std::string d(dtype_name(x.dtype()));
    const DynTensor xv = to_device(x, vk()), sv = to_device(src, vk());
    expect_same(scatter_add(xv, 1, iv, sv), scatter_add(x, 1, index, src), d + " scatter_add");
    for (const char* reduce : {"prod", "amax", "amin"}) {
      expect_same(scatter_reduce(xv, 1, iv, sv, reduce), scatter_reduce(x, 1, index, src, reduce),
                  d + " scatter_reduce " + reduce);
    }
  }
  expect_no_validation_errors();
}

// Scatters whose lines hold many entries (an embedding's gradient through index_add: 300 tokens
// into 40 rows), which sort each line first and binary-search it: the Cpu's order exactly, so
// that even float sums are bit for bit; for int64 (in two words without float64), float32,
// float16 (rounded each step) and a general index of many lines.
TEST(Vulkan, Int64AndOtherLongScattersMatchTheCpu) {
  EMBER_REQUIRE_VULKAN();
  std::vector<int64_t> tokens(300);
  for (size_t i = 0; i < tokens.size(); ++i)
    tokens[i] = static_cast<int64_t>((i * 37 + i / 7) % 40);
  const DynTensor ids = int64s(tokens, Shape{300}), idv = to_device(ids, vk());
  const DynTensor wide = int64s(pick(40 * 3, 10), Shape{40, 3});
  const DynTensor wide_src = int64s(pick(300 * 3, 11), Shape{300, 3});
  expect_same(index_add(to_device(wide, vk()), 0, idv, to_device(wide_src, vk())),
              index_add(wide, 0, ids, wide_src), "int64 index_add");
  for (DType t : {DType::f32, DType::f16}) {
    const std::string d(dtype_name(t));
    const DynTensor table = cast(input(Shape{40, 6}, 80), t);
    const DynTensor grads = cast(sub(input(Shape{300, 6}, 81), 1.0), t);
    expect_same(index_add(to_device(table, vk()), 0, idv, to_device(grads, vk())),
                index_add(table, 0, ids, grads), d + " index_add");
    // columns: the index along dim 1, a line per row
    const DynTensor cols = transpose(table, 0, 1), cols_src = transpose(grads, 0, 1);
    expect_same(index_add(to_device(cols, vk()), 1, idv, to_device(cols_src, vk())),
                index_add(cols, 1, ids, cols_src), d + " index_add along dim 1");
  }
  // A general index: 4 lines of 100 entries with repeats, every fold.
  std::vector<int64_t> lines(100 * 4);
  for (size_t i = 0; i < lines.size(); ++i) lines[i] = static_cast<int64_t>((i * 13 + i / 9) % 25);
  const DynTensor index = int64s(lines, Shape{100, 4}), iv = to_device(index, vk());
  const DynTensor x = sub(mul(input(Shape{25, 4}, 82), 2.0), 2.0);
  const DynTensor src = sub(mul(input(Shape{100, 4}, 83), 2.0), 2.0);
  const DynTensor xv = to_device(x, vk()), sv = to_device(src, vk());
  expect_same(scatter(xv, 0, iv, sv), scatter(x, 0, index, src), "scatter, the last write wins");
  expect_same(scatter_add(xv, 0, iv, sv), scatter_add(x, 0, index, src), "scatter_add");
  for (const char* reduce : {"prod", "amax", "amin"}) {
    expect_same(scatter_reduce(xv, 0, iv, sv, reduce), scatter_reduce(x, 0, index, src, reduce),
                std::string("scatter_reduce ") + reduce);
  }
  // gather's gradient: scatter_add into zeros
  const DynTensor xg = require_grad(xv), xc = require_grad(x);
  const DynTensor seed = input(Shape{100, 4}, 84);
  expect_same(grad(gather(xg, 0, iv), {xg}, to_device(seed, vk()))[0],
              grad(gather(xc, 0, index), {xc}, seed)[0], "gather's gradient");
  expect_no_validation_errors();
}

// sort and topk, stable and NaN-last as the Cpu's, of float32 (ties, -0 and +0, NaN, a
// subnormal), int64 past 32 bits, float16 and uint8; in two-word keys on a device without
// float64 (`no_float64.`).
TEST(Vulkan, Int64AndOtherSortsMatchTheCpu) {
  EMBER_REQUIRE_VULKAN();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> f = {3.0f, -0.0f, 0.0f, nan, -2.5f, 1e-40f, 3.0f, -1e-40f, -2.5f, 7.0f};
  const DynTensor floats = from_data(TensorData::from(f, Shape{2, 5}), Device::cpu());
  const DynTensor wide = int64s(pick(4 * 18, 6), Shape{4, 18});
  const DynTensor halves = cast(floats, DType::f16);
  const DynTensor bytes = cast(mul(input(Shape{3, 11}, 57), 100.0), DType::u8);
  const DynTensor signed_bytes = cast(sub(mul(input(Shape{3, 11}, 59), 200.0), 200.0), DType::i8);
  const DynTensor ints = cast(sub(mul(input(Shape{3, 11}, 60), 4e9), 4e9), DType::i32);
  for (const DynTensor& x :
       {floats, wide, halves, bytes, signed_bytes, ints, cast(floats, DType::bf16)}) {
    const std::string d(dtype_name(x.dtype()));
    const DynTensor xv = to_device(x, vk());
    for (bool descending : {false, true}) {
      const ValuesIndices got = sort(xv, 1, descending), want = sort(x, 1, descending);
      expect_same(got.values, want.values, d + " sort values");
      expect_same(got.indices, want.indices, d + " sort indices");
    }
    const ValuesIndices top = topk(xv, 2, 1), top_cpu = topk(x, 2, 1);
    expect_same(top.values, top_cpu.values, d + " topk values");
    expect_same(top.indices, top_cpu.indices, d + " topk indices");
  }
  expect_no_validation_errors();
}

// Scans, argmax/argmin and nonzero of the integers and Bool, and all/any/nonzero of floats: as
// the Cpu's, bit for bit. On a device without float64 (`no_float64.`) the integers scan and
// compare as int64 in two words, and the others are tested against zero into a Bool first.
TEST(Vulkan, Int64ScansExtremesAndNonzeroMatchTheCpu) {
  EMBER_REQUIRE_VULKAN();
  const DynTensor wide = transpose(int64s(pick(18 * 5, 7), Shape{18, 5}), 0, 1);  // [5, 18]
  const DynTensor ints = cast(sub(mul(input(Shape{5, 18}, 61), 4e9), 4e9), DType::i32);
  const DynTensor bytes = cast(mul(input(Shape{5, 18}, 62), 100.0), DType::u8);
  const DynTensor flags = gt(input(Shape{5, 18}, 63), 1.0);
  for (const DynTensor& x : {wide, ints, bytes, cast(bytes, DType::i8), flags}) {
    const std::string d(dtype_name(x.dtype()));
    const DynTensor xv = to_device(x, vk());
    expect_same(cumsum(xv, 1), cumsum(x, 1), d + " cumsum");  // wraps past int64's ends
    expect_same(cumprod(xv, 0), cumprod(x, 0), d + " cumprod");
    for (int dim : {0, 1}) {  // ties go to the first index
      expect_same(argmax(xv, dim), argmax(x, dim), d + " argmax");
      expect_same(argmin(xv, dim), argmin(x, dim), d + " argmin");
      const ValuesIndices got = max(xv, dim), want = max(x, dim);
      expect_same(got.values, want.values, d + " max values");
    }
    expect_same(nonzero(xv), nonzero(x), d + " nonzero");
  }
  // A high word alone set (2^32) is nonzero; NaN is nonzero, -0 is not.
  const DynTensor high = int64s({0, int64_t{1} << 32, 0, kMin, 3, 0}, Shape{2, 3});
  expect_same(nonzero(to_device(high, vk())), nonzero(high), "int64 nonzero, high words");
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const DynTensor f = from_data(
      TensorData::from(std::vector<float>{0.0f, -0.0f, nan, 1e-40f, 0.0f, -2.0f, 0.0f, -0.0f},
                       Shape{2, 4}),
      Device::cpu());
  for (const DynTensor& x : {f, cast(f, DType::f16), cast(f, DType::bf16)}) {
    const std::string d(dtype_name(x.dtype()));
    const DynTensor xv = to_device(x, vk());
    expect_same(nonzero(xv), nonzero(x), d + " nonzero");
    expect_same(nonzero(transpose(xv, 0, 1)), nonzero(transpose(x, 0, 1)), d + " strided nonzero");
    for (const Dims& dims : {Dims{}, Dims{1}, Dims{0}}) {
      expect_same(all(xv, dims), all(x, dims), d + " all");
      expect_same(any(xv, dims), any(x, dims), d + " any");
    }
  }
  expect_no_validation_errors();
}

// float32 division bit for bit as the Cpu's on every driver (math32.glsl's div_of; Vulkan allows
// 2.5 ulps): 65,536 pairs of random bit patterns (subnormals, huge and tiny quotients, overflow
// and underflow, NaN and infinities among them), and subnormal quotients exactly halfway between
// two subnormals, which round to the even one.
TEST(Vulkan, Float32DivisionIsCorrectlyRounded) {
  EMBER_REQUIRE_VULKAN();
  const size_t n = 65536;
  std::vector<float> x(n), y(n);
  uint64_t state = 0x9e3779b97f4a7c15ULL;
  auto next = [&] {  // splitmix64
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return static_cast<uint32_t>((z ^ (z >> 31)) >> 32);
  };
  const size_t ties = 4096;
  for (size_t i = 0; i < n - ties; ++i) {
    const uint32_t a = next(), b = next();
    std::memcpy(&x[i], &a, 4);
    std::memcpy(&y[i], &b, 4);
  }
  // (2k + 1) 2^(j - 150) / 2^j = (k + 1/2) 2^-149: a tie between subnormals k and k + 1.
  for (size_t i = n - ties; i < n; ++i) {
    const uint32_t k = next() & 0x7fffffu, j = 1 + next() % 100;
    x[i] = std::ldexp(static_cast<float>(2 * k + 1), static_cast<int>(j) - 150);
    y[i] = (i % 2 == 0 ? 1.0f : -1.0f) * std::ldexp(1.0f, static_cast<int>(j));
  }
  const DynTensor a = from_data(TensorData::from(x, Shape{static_cast<int64_t>(n)}), Device::cpu());
  const DynTensor b = from_data(TensorData::from(y, Shape{static_cast<int64_t>(n)}), Device::cpu());
  expect_same(div(to_device(a, vk()), to_device(b, vk())), div(a, b), "div");
  expect_no_validation_errors();
}

// float32's division, pow, atan2, hypot, remainder, fmod and floor_divide, and the integers' pow,
// division and shifts: in double and int64 where the device has them, and as a device without
// float64 (`no_float64.`) in float32 (division correctly rounded and fmod exact on any driver;
// pow, atan2 and hypot within a few ulps, with C's zeros, infinities and signs) and int32 or two
// words.
TEST(Vulkan, Float32BinaryMathAndIntegerDivisionMatchTheCpu) {
  EMBER_REQUIRE_VULKAN();
  using Binary = DynTensor (*)(const DynTensor&, const DynTensor&);
  const std::vector<std::pair<const char*, Binary>> exact = {
      {"div", div}, {"remainder", remainder}, {"fmod", fmod}, {"floor_divide", floor_divide}};
  const std::vector<std::pair<const char*, Binary>> rounded = {
      {"pow", pow}, {"atan2", atan2}, {"hypot", hypot}};
  const DynTensor a = sub(mul(input(Shape{6, 40}, 73), 40.0), 40.0);  // both signs, up to 40
  const DynTensor b = sub(mul(input(Shape{6, 40}, 74), 3.0), 3.0);
  const DynTensor base = input(Shape{6, 40}, 75), exponent = sub(mul(b, 4.0), 1.0);
  const DynTensor av = to_device(a, vk()), bv = to_device(b, vk());
  for (const auto& [name, f] : exact) expect_same(f(av, bv), f(a, b), name);
  for (const auto& [name, f] : rounded) {
    const bool is_pow = std::string(name) == "pow";
    const DynTensor x = is_pow ? base : a, y = is_pow ? exponent : b;
    const DynTensor want = f(x, y);
    const DynTensor got = to_device(f(to_device(x, vk()), to_device(y, vk())), Device::cpu());
    EXPECT_LE(amax(div(abs(sub(got, want)), abs(want)), {}).item<double>(), 4e-6) << name;
  }
  // Zeros, infinities, NaN, negative bases and huge quotients: the Cpu's values and signs
  // (pow, atan2 and hypot within 4e-6 where finite).
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  const std::vector<float> edges = {0.0f, -0.0f, 1.0f, -1.0f, 2.0f,  -3.0f, 0.5f,
                                    inf,  -inf,  nan,  7.5f,  -2.5f, 3e38f, 1e-30f};
  const int64_t n = static_cast<int64_t>(edges.size());
  const DynTensor ex = from_data(TensorData::from(edges, Shape{n, 1}), Device::cpu());
  const DynTensor ey = from_data(TensorData::from(edges, Shape{1, n}), Device::cpu());
  const DynTensor exv = to_device(ex, vk()), eyv = to_device(ey, vk());
  for (const auto& [name, f] : exact)
    expect_same(f(exv, eyv), f(ex, ey), std::string(name) + " edges");
  for (const auto& [name, f] : rounded) {
    const std::vector<float> want = f(ex, ey).to_vector<float>();
    const std::vector<float> got = to_device(f(exv, eyv), Device::cpu()).to_vector<float>();
    for (size_t i = 0; i < want.size(); ++i) {
      const std::string at = std::string(name) + " of " + std::to_string(edges[i / edges.size()]) +
                             ", " + std::to_string(edges[i % edges.size()]);
      if (std::isnan(want[i]) || std::isinf(want[i]) || want[i] == 0.0f) {
        EXPECT_TRUE(std::isnan(want[i])
                        ? std::isnan(got[i])
                        : got[i] == want[i] && std::signbit(got[i]) == std::signbit(want[i]))
            << at << ": " << got[i] << ", the Cpu's " << want[i];
      } else {  // a subnormal result may be flushed to zero by a float32 pow or division
        EXPECT_NEAR(got[i], want[i], 4e-6 * std::max(1.0f, std::abs(want[i]))) << at;
      }
    }
  }
  // The integers: int64 past 32 bits, int32, and the bytes through int32 without float64.
  const std::vector<std::pair<const char*, Binary>> ints = {
      {"pow", pow},
      {"remainder", remainder},
      {"fmod", fmod},
      {"floor_divide", floor_divide},
      {"bitwise_left_shift", bitwise_left_shift},
      {"bitwise_right_shift", bitwise_right_shift}};
  const DynTensor x64 = int64s(pick(4 * 18, 8), Shape{4, 18});
  std::vector<int64_t> divisors = pick(4 * 18, 9);
  for (int64_t& d : divisors) d = d == 0 ? 3 : d;  // a zero divisor is the front end's error
  const DynTensor y64 = int64s(divisors, Shape{4, 18});
  std::vector<int64_t> small(4 * 18);
  for (size_t i = 0; i < small.size(); ++i) small[i] = static_cast<int64_t>(i % 70) - 3;
  const DynTensor s64 = int64s(small, Shape{4, 18});  // exponents and shifts, past the widths
  for (DType t : {DType::i64, DType::i32, DType::i8, DType::u8}) {
    const std::string d(dtype_name(t));
    const DynTensor x = cast(x64, t);
    DynTensor y = cast(y64, t);
    y = where(eq(y, Scalar(0)), cast(full_like(y, 5.0), t), y);
    const DynTensor s = cast(s64, t);
    const DynTensor xv = to_device(x, vk()), yv = to_device(y, vk()), sv = to_device(s, vk());
    for (const auto& [name, f] : ints) {
      const bool by_small = std::string(name) == "pow" || std::string(name).find("shift") == 0 ||
                            std::string(name).find("bitwise") == 0;
      expect_same(by_small ? f(xv, sv) : f(xv, yv), by_small ? f(x, s) : f(x, y), d + " " + name);
    }
  }
  expect_no_validation_errors();
}

// The first failed check's reported value, through the backend's queue as the front end uses it.
RangeError first_failure(const DynTensor& x, double lo, double hi) {
  RangeCheck check;
  check.lo = lo;
  check.hi = hi;
  check.op = "test";
  (void)vulkan::backend().check_range(x.raw(), check);
  return vulkan::backend().synchronize(x.device());
}

TEST(Vulkan, Int64AndFloat32RangeChecksReportTheCpusValue) {
  EMBER_REQUIRE_VULKAN();
  const DynTensor ints = to_device(int64s({3, int64_t{1} << 40, -5, 12}, Shape{4}), vk());
  RangeError e = first_failure(ints, 0.0, 8589934592.5);  // the smallest bad value: below lo
  EXPECT_TRUE(e.found);
  EXPECT_EQ(e.index, -5);
  e = first_failure(ints, -10.0, 1e12);  // the largest: above hi
  EXPECT_EQ(e.index, int64_t{1} << 40);
  EXPECT_FALSE(first_failure(ints, -5.0, 1099511627776.0).found);  // both ends inside
  EXPECT_TRUE(first_failure(ints, -4.5, 1e300).found);
  EXPECT_FALSE(first_failure(ints, -1e300, 1e300).found);
  EXPECT_TRUE(first_failure(ints, 1e19, 2e19).found);  // above every int64
  EXPECT_EQ(first_failure(to_device(int64s({kMin, kMax}, Shape{2}), vk()), -1.0, 1.0).index, kMin);
  const DynTensor bytes = to_device(cast(int64s({200, 3, 255}, Shape{3}), DType::u8), vk());
  EXPECT_EQ(first_failure(bytes, 0.0, 9.0).index, 255);
  const DynTensor small = to_device(cast(int64s({-7, 3, 2}, Shape{3}), DType::i32), vk());
  EXPECT_EQ(first_failure(small, 0.0, 9.0).index, -7);
  // float32 against bounds that are not floats: 0.1f is above 0.1, the float below it is not.
  const float tenth = 0.1f, below = std::nextafter(tenth, 0.0f);
  const float past_one = std::nextafter(1.0f, 2.0f);
  const auto floats = [](std::vector<float> v) {
    const auto n = static_cast<int64_t>(v.size());
    return to_device(from_data(TensorData::from(v, Shape{n}), Device::cpu()), vk());
  };
  EXPECT_FALSE(first_failure(floats({tenth, 1.0f, 0.5f}), 0.1, 1.0).found);
  // Bounds whose nearest float lies on the other side of them: 0.7f is below 0.7, 0.3f above 0.3.
  EXPECT_TRUE(first_failure(floats({0.8f, 0.7f}), 0.7, 1.0).found);
  EXPECT_TRUE(first_failure(floats({0.1f, 0.3f}), 0.0, 0.3).found);
  e = first_failure(floats({0.5f, below, past_one}), 0.1, 1.0);
  EXPECT_EQ(e.value, static_cast<double>(below));
  e = first_failure(floats({0.5f, past_one, 0.7f}), 0.1, 1.0);
  EXPECT_EQ(e.value, static_cast<double>(past_one));
  e = first_failure(floats({0.5f, std::numeric_limits<float>::quiet_NaN()}), 0.0, 1.0);
  EXPECT_TRUE(std::isnan(e.value));
  expect_no_validation_errors();
}

}  // namespace
}  // namespace ember
