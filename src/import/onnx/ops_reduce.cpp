// ONNX's operators: reductions (Reduce*), arg-reductions (ArgMax, ArgMin), TopK and CumSum.
// Results keep the input's dtype, as ONNX requires (Ember sums integers in i64 and computes means
// in floats, as PyTorch does): each op casts back.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "ember/tensor/ops/reduce.hpp"
#include "registry.hpp"

namespace ember::onnx {
namespace {

// ---- Reduce* ----

using ReduceFn = DynTensor (*)(const DynTensor& x, const Dims& dims, bool keepdim);

// The value a reduction gives over an empty set (ONNX 1.13 pins these down): the identity of
// the operation, or the dtype's extreme for max/min when it has no infinity.
enum class EmptyValue : uint8_t { Zero, One, Lowest, Highest, NaN, NegInf };

Scalar empty_value(EmptyValue e, DType dtype) {
  const bool fp = is_floating(dtype);
  const double inf = std::numeric_limits<double>::infinity();
  switch (e) {
    case EmptyValue::Zero:
      return 0;
    case EmptyValue::One:
      return 1;
    case EmptyValue::NaN:
      return std::numeric_limits<double>::quiet_NaN();
    case EmptyValue::NegInf:
      return -inf;
    case EmptyValue::Lowest:
      if (fp) return -inf;
      return visit_dtype(dtype, [](auto t) {
        return Scalar(static_cast<int64_t>(std::numeric_limits<decltype(t)>::lowest()));
      });
    case EmptyValue::Highest:
      if (fp) return inf;
      return visit_dtype(dtype, [](auto t) {
        return Scalar(static_cast<int64_t>(std::numeric_limits<decltype(t)>::max()));
      });
  }
  return 0;
}

DynTensor as_float(const DynTensor& x) { return is_floating(x.dtype()) ? x : cast(x, DType::f64); }

DynTensor reduce_mean(const DynTensor& x, const Dims& d, bool k) { return mean(as_float(x), d, k); }
DynTensor reduce_sum_square(const DynTensor& x, const Dims& d, bool k) {
  return sum(mul(x, x), d, k);
}
DynTensor reduce_l1(const DynTensor& x, const Dims& d, bool k) { return sum(abs(x), d, k); }
DynTensor reduce_l2(const DynTensor& x, const Dims& d, bool k) {
  // norm's gradient is 0 at 0 where sqrt's would be inf * 0.
  return norm(as_float(x), 2.0, d, k);
}
DynTensor reduce_log_sum(const DynTensor& x, const Dims& d, bool k) {
  return log(sum(as_float(x), d, k));
}
DynTensor reduce_log_sum_exp(const DynTensor& x, const Dims& d, bool k) {
  return logsumexp(as_float(x), d, k);
}

// Axes in [0, rank), each once; ONNX allows [-rank, rank).
Dims normal_axes(const OpContext& c, std::vector<int64_t> axes, int rank) {
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) c.fail("axis ", a, " is out of range for rank ", rank);
    if (a < 0) a += rank;
    if (seen[static_cast<size_t>(a)]) c.fail("axis ", a, " is listed twice");
    seen[static_cast<size_t>(a)] = true;
  }
  return axes;
}

// A Reduce* node. `axes_input`: the axes come as the optional input 1 (ReduceSum from opset 13,
// the others from 18), where noop_with_empty_axes may make "no axes" mean "no reduction".
OpFn reduce_op(ReduceFn f, EmptyValue empty, bool axes_input) {
  return [f, empty, axes_input](OpContext& c) {
    const DynTensor& x = c.in(0);
    const bool keepdims = c.attr_int("keepdims", 1) != 0;
    std::vector<int64_t> axes;
    if (axes_input) {
      if (c.has(1)) axes = c.ints(1);
    } else {
      axes = c.attr_ints("axes");
    }
    if (axes.empty()) {
      if (axes_input && c.attr_int("noop_with_empty_axes", 0) != 0) return one(x);
      for (int d = 0; d < x.rank(); ++d) axes.push_back(d);
    }
    const Dims dims = normal_axes(c, axes, x.rank());
    Shape out_shape;
    int64_t count = 1;
    for (int d = 0; d < x.rank(); ++d) {
      const bool reduced = std::find(dims.begin(), dims.end(), d) != dims.end();
      if (reduced) count *= x.size(d);
      if (!reduced) out_shape.push_back(x.size(d));
      if (reduced && keepdims) out_shape.push_back(1);
    }
    if (count == 0)
      return one(full(out_shape, empty_value(empty, x.dtype()), x.dtype(), x.device()));
    DynTensor y = x.rank() == 0 ? x : f(x, dims, keepdims);
    return one(y.dtype() == x.dtype() ? y : cast(y, x.dtype()));
  };
}

// ---- ArgMax, ArgMin ----

// select_last_index (opset 12): the last of equal extremes, found as the first in the flipped
// tensor.
OpFn arg_op(bool is_max) {
  return [is_max](OpContext& c) {
    const DynTensor& x = c.in(0);
    const int64_t rank = x.rank();
    int64_t axis = c.attr_int("axis", 0);
    if (axis < -rank || axis >= rank) c.fail("axis ", axis, " is out of range for rank ", rank);
    if (axis < 0) axis += rank;
    const bool keepdims = c.attr_int("keepdims", 1) != 0;
    if (c.attr_int("select_last_index", 0) == 0) {
      return one(is_max ? argmax(x, axis, keepdims) : argmin(x, axis, keepdims));
    }
    const DynTensor flipped = flip(x, {axis});
    const DynTensor i = is_max ? argmax(flipped, axis, keepdims) : argmin(flipped, axis, keepdims);
    return one(sub(full_like(i, x.size(static_cast<int>(axis)) - 1), i));
  };
}

// ---- TopK ----

// k is an attribute in opset 1 and a 1-element input from 10; largest and sorted come in 11.
std::vector<Value> top_k(OpContext& c) {
  const DynTensor& x = c.in(0);
  int64_t k = 0;
  if (c.opset() < 10) {
    c.attr("k");  // required
    k = c.attr_int("k", 0);
  } else {
    const std::vector<int64_t> ks = c.ints(1);
    if (ks.size() != 1) c.fail("k must hold one value, got ", ks.size());
    k = ks[0];
  }
  const int64_t rank = x.rank();
  int64_t axis = c.attr_int("axis", -1);
  if (axis < -rank || axis >= rank) c.fail("axis ", axis, " is out of range for rank ", rank);
  if (axis < 0) axis += rank;
  if (k < 0 || k > x.size(static_cast<int>(axis))) {
    c.fail("k = ", k, " is out of range for axis ", axis, " of shape ", x.shape());
  }
  const bool largest = c.attr_int("largest", 1) != 0;
  // Ember's topk is always sorted (ties by lower index), a valid answer to sorted = 0 too.
  const ValuesIndices r = topk(x, k, axis, largest, true);
  return {Value::of(r.values), Value::of(r.indices)};
}

// ---- CumSum, CumProd ----

// exclusive: each position combines the ones before it (the identity first, the last one
// dropped); reverse: runs from the end, computed on the flipped tensor.
template <bool Product>
std::vector<Value> cumulative(OpContext& c) {
  const DynTensor& x = c.in(0);
  const std::vector<int64_t> axes = c.ints(1);
  if (axes.size() != 1) c.fail("axis must hold one value, got ", axes.size());
  const int64_t rank = x.rank();
  int64_t axis = axes[0];
  if (axis < -rank || axis >= rank) c.fail("axis ", axis, " is out of range for rank ", rank);
  if (axis < 0) axis += rank;
  const bool reverse = c.attr_int("reverse", 0) != 0;
  const DynTensor xs = reverse ? flip(x, {axis}) : x;
  DynTensor y = Product ? cumprod(xs, axis) : cumsum(xs, axis);
  if (y.dtype() != x.dtype()) y = cast(y, x.dtype());
  const int64_t n = x.size(static_cast<int>(axis));
  if (c.attr_int("exclusive", 0) != 0 && n > 0) {
    const DynTensor first = slice(xs, axis, 0, 1);
    y = cat({Product ? ones_like(first) : zeros_like(first), slice(y, axis, 0, n - 1)}, axis);
  }
  return one(reverse ? flip(y, {axis}) : y);
}

}  // namespace

void register_reduce_ops(Registry& r) {
  struct Row {
    const char* name;
    ReduceFn f;
    EmptyValue empty;
  };
  const Row rows[] = {
      {"ReduceSum", sum, EmptyValue::Zero},
      {"ReduceMean", reduce_mean, EmptyValue::NaN},
      {"ReduceMax", amax, EmptyValue::Lowest},
      {"ReduceMin", amin, EmptyValue::Highest},
      {"ReduceProd", prod, EmptyValue::One},
      {"ReduceSumSquare", reduce_sum_square, EmptyValue::Zero},
      {"ReduceL1", reduce_l1, EmptyValue::Zero},
      {"ReduceL2", reduce_l2, EmptyValue::Zero},
      {"ReduceLogSum", reduce_log_sum, EmptyValue::NegInf},
      {"ReduceLogSumExp", reduce_log_sum_exp, EmptyValue::NegInf},
  };
  for (const Row& row : rows) {
    // Axes become an input at opset 13 for ReduceSum, at 18 for the others.
    const int64_t axes_input_since = std::string(row.name) == "ReduceSum" ? 13 : 18;
    r.add("", row.name, reduce_op(row.f, row.empty, false), 1);
    r.add("", row.name, reduce_op(row.f, row.empty, true), axes_input_since);
  }
  r.add("", "ArgMax", arg_op(true), 1);
  r.add("", "ArgMin", arg_op(false), 1);
  r.add("", "TopK", top_k, 1);
  r.add("", "CumSum", cumulative<false>, 11);
  r.add("", "CumProd", cumulative<true>, 26);
}

}  // namespace ember::onnx
