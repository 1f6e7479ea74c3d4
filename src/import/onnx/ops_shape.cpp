// ONNX's shape and indexing operators: shapes, reshapes, slicing, concatenation and splitting,
// gather/scatter, padding, generators (Range, OneHot, EyeLike, ConstantOfShape), Unique and Det.
// Every one is written with Ember's tensor ops, so it runs on every backend and under autodiff.
// Shape-like inputs (shapes, axes, starts/ends, pads, repeats, k) are read to the host with
// c.ints(); ops whose output size is data (NonZero, Compress, Unique) wait for the device through
// nonzero(), as PyTorch does. Attributes that became inputs are read by opset.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/indexing.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "ember/tensor/ops/reduce.hpp"
#include "ember/tensor/ops/shape_linalg.hpp"
#include "ember/tensor/ops/vision.hpp"
#include "registry.hpp"

namespace ember::onnx {
namespace {

// ---- helpers -------------------------------------------------------------------------------

/// A 1-D i64 tensor of host values on `device`.
DynTensor i64_tensor(const Ints& v, Device device) {
  return from_data(TensorData::from(v, Shape{static_cast<int64_t>(v.size())}), device);
}

/// An axis in [-rank, rank) made non-negative; anything else fails naming the node.
int64_t wrap_axis(const OpContext& c, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) c.fail("axis ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

Ints wrap_axes(const OpContext& c, Ints axes, int64_t rank) {
  for (int64_t& a : axes) a = wrap_axis(c, a, rank);
  return axes;
}

/// Negative indices count from the end of a dim of size n (ONNX allows them from opset 11).
DynTensor wrap_indices(const DynTensor& idx, int64_t n) {
  const DynTensor i = cast(idx, DType::i64);
  return where(lt(i, 0), add(i, n), i);
}

int64_t product(const Shape& s, int begin, int end) {
  int64_t p = 1;
  for (int i = begin; i < end; ++i) p *= s[i];
  return p;
}

/// `axes` read from an attribute before opset `since`, from input `index` from it on (empty when
/// omitted).
Ints axes_arg(const OpContext& c, size_t index, int64_t since) {
  if (c.opset() < since) return c.attr_ints("axes");
  return c.has(index) ? c.ints(index) : Ints{};
}

std::vector<Value> many(std::vector<DynTensor> ts) {
  std::vector<Value> out;
  for (DynTensor& t : ts) out.push_back(Value::of(std::move(t)));
  return out;
}

// ---- shapes ----------------------------------------------------------------------------------

// Shape-15's start and end select a range of dims, clamped to [0, rank] after wrapping.
std::vector<Value> shape_op(OpContext& c) {
  const Shape& s = c.in(0).shape();
  const int64_t r = s.rank();
  auto clamp_dim = [r](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + r : i, 0, r); };
  const int64_t start = clamp_dim(c.attr_int("start", 0)), end = clamp_dim(c.attr_int("end", r));
  const Ints dims(s.begin() + start, s.begin() + std::max(start, end));
  return one(i64_tensor(dims, c.device()));
}

std::vector<Value> size_op(OpContext& c) {
  return one(full(Shape{}, c.in(0).numel(), DType::i64, c.device()));
}

// 0 copies the input's dim (unless allowzero, opset 14), -1 is inferred; shape was an attribute
// before opset 5.
std::vector<Value> reshape_op(OpContext& c) {
  const DynTensor& x = c.in(0);
  Ints shape = c.opset() < 5 ? c.attr_ints("shape") : c.ints(1);
  const bool allowzero = c.opset() >= 14 && c.attr_int("allowzero", 0) != 0;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] != 0 || allowzero) continue;
    if (static_cast<int>(i) >= x.rank())
      c.fail("shape ", Shape(shape), " copies dim ", i, " of an input of shape ", x.shape());
    shape[i] = x.size(static_cast<int>(i));
  }
  return one(reshape(x, Shape(shape)));
}

std::vector<Value> flatten_op(OpContext& c) {
  const DynTensor& x = c.in(0);
  const int64_t r = x.rank();
  int64_t axis = c.attr_int("axis", 1);
  if (axis < -r || axis > r) c.fail("axis ", axis, " is out of range for rank ", r);
  if (axis < 0) axis += r;
  const int a = static_cast<int>(axis);
  return one(reshape(x, Shape{product(x.shape(), 0, a), product(x.shape(), a, x.rank())}));
}

// Without axes, every dim of size 1 goes.
std::vector<Value> squeeze_op(OpContext& c) {
  const DynTensor& x = c.in(0);
  const Ints axes = wrap_axes(c, axes_arg(c, 1, 13), x.rank());
  Ints shape;
  for (int i = 0; i < x.rank(); ++i) {
    const bool listed = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (listed && x.size(i) != 1) c.fail("cannot squeeze dim ", i, " of shape ", x.shape());
    if (listed || (axes.empty() && x.size(i) == 1)) continue;
    shape.push_back(x.size(i));
  }
  return one(reshape(x, Shape(shape)));
}

// Axes index the output, whose rank is the input's plus their count.
std::vector<Value> unsqueeze_op(OpContext& c) {
  const DynTensor& x = c.in(0);
  const Ints raw = axes_arg(c, 1, 13);
  const int64_t out_rank = x.rank() + static_cast<int64_t>(raw.size());
  const Ints axes = wrap_axes(c, raw, out_rank);
  Ints shape;
  int next = 0;
  for (int64_t i = 0; i < out_rank; ++i) {
    const auto n = std::count(axes.begin(), axes.end(), i);
    if (n > 1) c.fail("axis ", i, " is listed twice");
    shape.push_back(n == 1 ? 1 : x.size(next++));
  }
  return one(reshape(x, Shape(shape)));
}

std::vector<Value> transpose_op(OpContext& c) {
  const DynTensor& x = c.in(0);
  Ints perm(static_cast<size_t>(x.rank()));
  std::iota(perm.rbegin(), perm.rend(), 0);  // the default reverses the dims
  perm = c.attr_ints("perm", perm);
  return one(permute(x, perm));
}

// Expand broadcasts both ways: a 1 in `shape` keeps the input's dim.
std::vector<Value> expand_op(OpContext& c) {
  const DynTensor& x = c.in(0);
  const Shape out = broadcast_shapes(x.shape(), Shape(c.ints(1)), "Expand");
  return one(expand(x, out));
}

// Tile-1 repeated along one axis (inputs tiles and axis); Tile-6 takes a repeat per dim.
std::vector<Value> tile_op(OpContext& c) {
  const DynTensor& x = c.in(0);
  Ints repeats;
  if (c.opset() < 6) {
    repeats.assign(static_cast<size_t>(x.rank()), 1);
    repeats[static_cast<size_t>(wrap_axis(c, c.ints(2).at(0), x.rank()))] = c.ints(1).at(0);
  } else {
    repeats = c.ints(1);
  }
  if (static_cast<int64_t>(repeats.size()) != x.rank())
    c.fail("repeats ", Shape(repeats), " must have one entry per dim of shape ", x.shape());
  return one(repeat(x, repeats));
}

// ---- concatenation, splitting, slicing -------------------------------------------------------

std::vector<Value> concat_op(OpContext& c) {
  std::vector<DynTensor> xs;
  for (size_t i = 0; i < c.num_inputs(); ++i) xs.push_back(c.in(i));
  // Concat-1 defaulted axis to 1; it is required from opset 4.
  if (c.opset() >= 4 && !c.has_attr("axis")) c.fail("attribute 'axis' is required");
  const int64_t axis = wrap_axis(c, c.attr_int("axis", 1), xs.at(0).rank());
  // Ember's cat skips 1-D empty tensors whatever the others' rank (PyTorch's legacy rule); ONNX
  // has all inputs of one rank, so only a 1-D result can contain them and skipping is harmless.
  return one(cat(xs, axis));
}

// Sizes come from the split attribute (opsets 2-12) or input (1, 13+); else num_outputs
// (opset 18) or the node's output count gives equal parts, the last one smaller when uneven.
std::vector<Value> split_op(OpContext& c) {
  const DynTensor& x = c.in(0);
  const int64_t axis = wrap_axis(c, c.attr_int("axis", 0), x.rank());
  const int64_t n = x.size(static_cast<int>(axis));
  Ints sizes;
  if (c.opset() >= 2 && c.opset() < 13) {
    sizes = c.attr_ints("split");
  } else if (c.has(1)) {
    sizes = c.ints(1);
  }
  if (sizes.empty()) {
    const int64_t parts = c.opset() >= 18 && c.has_attr("num_outputs")
                              ? c.attr_int("num_outputs", 0)
                              : static_cast<int64_t>(c.node().outputs.size());
    if (parts <= 0) c.fail("cannot split into ", parts, " parts");
    const int64_t chunk = (n + parts - 1) / parts;
    for (int64_t at = 0, i = 0; i < parts; ++i, at += chunk)
      sizes.push_back(std::clamp<int64_t>(n - at, 0, chunk));
  }
  return many(split(x, sizes, axis));
}

// One axis of Slice, clamped as the spec says: starts and ends wrap once, then clamp to [0, n]
// for a positive step and to [0, n-1] (start) and [-1, n-1] (end) for a negative one.
DynTensor slice_axis(const OpContext& c, const DynTensor& x, int axis, int64_t start, int64_t end,
                     int64_t step) {
  if (step == 0) c.fail("slice step must be nonzero");
  const int64_t n = x.size(axis);
  if (start < 0) start += n;
  if (end < 0) end += n;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, n);
    end = std::clamp<int64_t>(end, 0, n);
    return slice(x, axis, start, std::max(start, end), step);
  }
  if (n == 0) return slice(x, axis, 0, 0);
  start = std::clamp<int64_t>(start, 0, n - 1);
  end = std::clamp<int64_t>(end, -1, n - 1);
  const int64_t mag = step == INT64_MIN ? INT64_MAX : -step;
  if (start <= end) return slice(x, axis, 0, 0);
  const int64_t count = (start - end - 1) / mag + 1;
  // The same elements taken forwards from the last one, then reversed.
  const int64_t last = start - (count - 1) * mag;
  return flip(slice(x, axis, last, start + 1, mag), {axis});
}

// Slice-1 has starts/ends/axes attributes; from opset 10 they are inputs, with steps.
std::vector<Value> slice_op(OpContext& c) {
  DynTensor x = c.in(0);
  Ints starts, ends, axes, steps;
  if (c.opset() < 10) {
    starts = c.attr_ints("starts");
    ends = c.attr_ints("ends");
    axes = c.attr_ints("axes");
  } else {
    starts = c.ints(1);
    ends = c.ints(2);
    if (c.has(3)) axes = c.ints(3);
    if (c.has(4)) steps = c.ints(4);
  }
  if (axes.empty()) {
    axes.resize(starts.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    c.fail("starts, ends, axes and steps differ in length: ", starts.size(), ", ", ends.size(),
           ", ", axes.size(), ", ", steps.size());
  }
  for (size_t i = 0; i < starts.size(); ++i) {
    const int axis = static_cast<int>(wrap_axis(c, axes[i], x.rank()));
    x = slice_axis(c, x, axis, starts[i], ends[i], steps[i]);
  }
  return one(x);
}

// ---- gather and scatter ----------------------------------------------------------------------

// Output: data.shape[:axis] + indices.shape + data.shape[axis+1:].
std::vector<Value> gather_op(OpContext& c) {
  const DynTensor &x = c.in(0), &idx = c.in(1);
  const int axis = static_cast<int>(wrap_axis(c, c.attr_int("axis", 0), x.rank()));
  const DynTensor flat = reshape(wrap_indices(idx, x.size(axis)), Shape{idx.numel()});
  Ints shape(x.shape().begin(), x.shape().begin() + axis);
  for (int64_t d : idx.shape()) shape.push_back(d);
  for (int i = axis + 1; i < x.rank(); ++i) shape.push_back(x.size(i));
  return one(reshape(index_select(x, axis, flat), Shape(shape)));
}

std::vector<Value> gather_elements_op(OpContext& c) {
  const DynTensor& x = c.in(0);
  const int axis = static_cast<int>(wrap_axis(c, c.attr_int("axis", 0), x.rank()));
  return one(gather(x, axis, wrap_indices(c.in(1), x.size(axis))));
}

// The row-major position of each index tuple (the last dim of `indices`, of length k) among the
// dims data.shape[b, b + k), offset by its batch (the leading b dims) times their count: the
// addressing GatherND and ScatterND share. Result: indices.shape[:-1], i64.
DynTensor linear_index(const OpContext& c, const Shape& data, const DynTensor& indices, int b) {
  const int q = indices.rank();
  const int64_t k = indices.size(-1);
  if (q < 1 || b + k > data.rank())
    c.fail("index tuples of length ", k, " after ", b, " batch dims do not fit data of shape ",
           data);
  Ints dims, strides(static_cast<size_t>(k));
  for (int64_t j = 0; j < k; ++j) dims.push_back(data[b + static_cast<int>(j)]);
  int64_t stride = 1;
  for (int64_t j = k - 1; j >= 0; --j) {
    strides[static_cast<size_t>(j)] = stride;
    stride *= dims[static_cast<size_t>(j)];
  }
  const DynTensor n = i64_tensor(dims, indices.device());
  DynTensor idx = cast(indices, DType::i64);
  idx = where(lt(idx, 0), add(idx, n), idx);
  DynTensor lin = sum(mul(idx, i64_tensor(strides, indices.device())), {-1});
  if (b > 0) {
    // Batch i starts at i * stride: an arange shaped as the batch dims, broadcast over the rest.
    Ints bshape(indices.shape().begin(), indices.shape().begin() + b);
    bshape.resize(static_cast<size_t>(q - 1), 1);
    const int64_t nb = product(data, 0, b);
    const DynTensor base = arange(0, nb * stride, stride, DType::i64, indices.device());
    lin = add(lin, reshape(base, Shape(bshape)));
  }
  return lin;
}

std::vector<Value> gather_nd_op(OpContext& c) {
  const DynTensor &x = c.in(0), &indices = c.in(1);
  const int b = static_cast<int>(c.attr_int("batch_dims", 0));
  if (b < 0 || b >= indices.rank() || b >= x.rank()) c.fail("batch_dims ", b, " is out of range");
  for (int i = 0; i < b; ++i) {
    if (x.size(i) != indices.size(i))
      c.fail("batch dims of data ", x.shape(), " and indices ", indices.shape(), " differ");
  }
  const DynTensor lin = linear_index(c, x.shape(), indices, b);
  const int inner = b + static_cast<int>(indices.size(-1));
  Ints rows{product(x.shape(), 0, inner)}, out(lin.shape().begin(), lin.shape().end());
  for (int i = inner; i < x.rank(); ++i) {
    rows.push_back(x.size(i));
    out.push_back(x.size(i));
  }
  const DynTensor picked =
      index_select(reshape(x, Shape(rows)), 0, reshape(lin, Shape{lin.numel()}));
  return one(reshape(picked, Shape(out)));
}

// x with src folded in at index along dim: reduction none/add/mul (opset 16), max/min (18).
DynTensor scatter_reduction(const OpContext& c, const DynTensor& x, int dim, const DynTensor& index,
                            const DynTensor& src) {
  const std::string reduction = c.attr_string("reduction", "none");
  if (reduction == "none") return scatter(x, dim, index, src);
  const char* torch_name = reduction == "add"   ? "sum"
                           : reduction == "mul" ? "prod"
                           : reduction == "max" ? "amax"
                           : reduction == "min" ? "amin"
                                                : nullptr;
  if (torch_name == nullptr) c.fail("unsupported: reduction '", reduction, "'");
  return scatter_reduce(x, dim, index, src, torch_name, true);
}

// ScatterElements, and Scatter (its deprecated name, opsets 9-10).
std::vector<Value> scatter_elements_op(OpContext& c) {
  const DynTensor& x = c.in(0);
  const int axis = static_cast<int>(wrap_axis(c, c.attr_int("axis", 0), x.rank()));
  return one(scatter_reduction(c, x, axis, wrap_indices(c.in(1), x.size(axis)), c.in(2)));
}

// data viewed as [positions, rest...], updates as [tuples, rest...]: a scatter along dim 0 with
// each tuple's linear position broadcast over the rest.
std::vector<Value> scatter_nd_op(OpContext& c) {
  const DynTensor &x = c.in(0), &indices = c.in(1), &updates = c.in(2);
  const DynTensor lin = linear_index(c, x.shape(), indices, 0);
  const int k = static_cast<int>(indices.size(-1));
  Ints rows{product(x.shape(), 0, k)}, upd{lin.numel()}, idx_shape{lin.numel()};
  for (int i = k; i < x.rank(); ++i) {
    rows.push_back(x.size(i));
    upd.push_back(x.size(i));
    idx_shape.push_back(1);
  }
  if (updates.numel() != Shape(upd).numel())
    c.fail("updates of shape ", updates.shape(), " do not match indices ", indices.shape(),
           " and data ", x.shape());
  const DynTensor src = reshape(updates, Shape(upd));
  const DynTensor index = expand(reshape(lin, Shape(idx_shape)), Shape(upd));
  return one(reshape(scatter_reduction(c, reshape(x, Shape(rows)), 0, index, src), x.shape()));
}

// ---- padding ---------------------------------------------------------------------------------

// pads = [begin_0, ..., begin_n, end_0, ..., end_n] over `axes` (all dims by default; axes is
// input 3 from opset 18). Pads were an attribute before opset 11 ('paddings' in Pad-1), the
// constant value too ('value'); negative pads crop.
std::vector<Value> pad_op(OpContext& c) {
  DynTensor x = c.in(0);
  const int r = x.rank();
  Ints pads;
  double value = 0;
  if (c.opset() < 11) {
    pads = c.attr_ints(c.opset() < 2 ? "paddings" : "pads");
    value = c.attr_float("value", 0.0);
  } else {
    pads = c.ints(1);
  }
  Ints axes(static_cast<size_t>(r));
  std::iota(axes.begin(), axes.end(), 0);
  if (c.opset() >= 18 && c.has(3)) axes = wrap_axes(c, c.ints(3), r);
  if (pads.size() != 2 * axes.size())
    c.fail("expects ", 2 * axes.size(), " pads for shape ", x.shape(), ", got ", pads.size());
  Ints begin(static_cast<size_t>(r), 0), end(static_cast<size_t>(r), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    begin[static_cast<size_t>(axes[i])] = pads[i];
    end[static_cast<size_t>(axes[i])] = pads[i + axes.size()];
  }
  const std::string mode = c.attr_string("mode", "constant");
  PadMode pm = PadMode::Constant;
  if (mode == "reflect") {
    pm = PadMode::Reflect;
  } else if (mode == "edge") {
    pm = PadMode::Replicate;
  } else if (mode == "wrap") {
    pm = PadMode::Circular;
  } else if (mode != "constant") {
    c.fail("unsupported: mode '", mode, "'");
  }
  // Ember's pad takes PyTorch's order (last dim first); its non-constant modes do not crop, so
  // negative pads are sliced off first.
  Ints torch_pads;
  for (int d = r - 1; d >= 0; --d) {
    int64_t &b = begin[static_cast<size_t>(d)], &e = end[static_cast<size_t>(d)];
    if (pm != PadMode::Constant && (b < 0 || e < 0)) {
      x = slice(x, d, std::max<int64_t>(-b, 0), x.size(d) - std::max<int64_t>(-e, 0));
      b = std::max<int64_t>(b, 0);
      e = std::max<int64_t>(e, 0);
    }
    torch_pads.push_back(b);
    torch_pads.push_back(e);
  }
  if (pm != PadMode::Constant || c.opset() < 11 || !c.has(2))
    return one(pad(x, torch_pads, pm, value));
  // The constant_value input stays on the device: the padding is where a padded mask is false.
  const DynTensor mask = pad(ones(x.shape(), DType::boolean, x.device()), torch_pads);
  const DynTensor fill = cast(reshape(c.in(2), Shape{}), x.dtype());
  return one(where(mask, pad(x, torch_pads), fill));
}

// ---- generators ------------------------------------------------------------------------------

std::vector<Value> constant_of_shape_op(OpContext& c) {
  const Shape shape(c.ints(0));
  if (!c.has_attr("value")) return one(zeros(shape, DType::f32, c.device()));
  const Attribute& a = c.attr("value");
  if (a.kind != Attribute::Kind::Tensor || a.t.shape.numel() != 1)
    c.fail("attribute 'value' must be a one-element tensor");
  const DType dtype = a.t.dtype;
  const Scalar v = is_floating(dtype)        ? Scalar(a.t.to_vector<double>()[0])
                   : dtype == DType::boolean ? Scalar(a.t.to_vector<int64_t>()[0] != 0)
                                             : Scalar(a.t.to_vector<int64_t>()[0]);
  return one(full(shape, v, dtype, c.device()));
}

// max(ceil((limit - start) / delta), 0) elements of the inputs' dtype.
std::vector<Value> range_op(OpContext& c) {
  const DType dtype = c.in(0).dtype();
  Scalar start, limit, delta;
  if (is_floating(dtype)) {
    start = c.scalar(0);
    limit = c.scalar(1);
    delta = c.scalar(2);
  } else {
    start = c.ints(0).at(0);
    limit = c.ints(1).at(0);
    delta = c.ints(2).at(0);
  }
  if (delta.to_double() == 0) c.fail("delta must be nonzero");
  const bool empty_range = delta.to_double() > 0 ? limit.to_double() <= start.to_double()
                                                 : limit.to_double() >= start.to_double();
  if (empty_range) return one(empty(Shape{0}, dtype, c.device()));
  return one(arange(start, limit, delta, dtype, c.device()));
}

// values = [off, on]; indices outside [-depth, depth) (opset 11; [0, depth) in 9) give a row of
// `off`. The new dim goes at `axis` of the output.
std::vector<Value> one_hot_op(OpContext& c) {
  const DynTensor &indices = c.in(0), &values = c.in(2);
  const auto depth = static_cast<int64_t>(c.scalar(1));
  if (values.numel() != 2) c.fail("values must hold [off, on], got shape ", values.shape());
  const int64_t r = indices.rank() + 1;
  const int64_t axis = wrap_axis(c, c.attr_int("axis", -1), r);
  DynTensor idx = cast(indices, DType::i64);
  if (c.opset() >= 11) idx = where(lt(idx, 0), add(idx, depth), idx);
  Ints cls_shape(static_cast<size_t>(r), 1);
  cls_shape[static_cast<size_t>(axis)] = depth;
  const DynTensor classes = reshape(arange(0, depth, 1, DType::i64, c.device()), Shape(cls_shape));
  const DynTensor hit = eq(unsqueeze(idx, axis), classes);
  const DynTensor flat = reshape(values, Shape{2});
  return one(where(hit, select(flat, 0, 1), select(flat, 0, 0)));
}

std::vector<Value> eye_like_op(OpContext& c) {
  const DynTensor& x = c.in(0);
  if (x.rank() != 2) c.fail("expects a 2-D input, got shape ", x.shape());
  const DType dtype =
      c.has_attr("dtype") ? dtype_from_onnx(c, c.attr_int("dtype", 1), "EyeLike of") : x.dtype();
  const int64_t k = c.attr_int("k", 0);
  const DynTensor rows = unsqueeze(arange(0, x.size(0), 1, DType::i64, c.device()), 1);
  const DynTensor cols = unsqueeze(arange(0, x.size(1), 1, DType::i64, c.device()), 0);
  return one(cast(eq(sub(cols, rows), k), dtype));
}

// ---- selection -------------------------------------------------------------------------------

// [rank, count] i64: the transpose of PyTorch's nonzero.
std::vector<Value> non_zero_op(OpContext& c) {
  const DynTensor& x = c.in(0);
  if (x.rank() == 0) return one(cast(transpose(nonzero(reshape(x, Shape{1})), 0, 1), DType::i64));
  return one(cast(transpose(nonzero(x), 0, 1), DType::i64));
}

// Keeps the slices along axis (or elements of the flattened input) where condition is true; a
// condition shorter than the dim leaves the rest out.
std::vector<Value> compress_op(OpContext& c) {
  DynTensor x = c.in(0);
  const DynTensor& cond = c.in(1);
  int64_t axis = 0;
  if (c.has_attr("axis")) {
    axis = wrap_axis(c, c.attr_int("axis", 0), x.rank());
  } else {
    x = reshape(x, Shape{x.numel()});
  }
  const DynTensor where_true = nonzero(reshape(cast(cond, DType::boolean), Shape{cond.numel()}));
  return one(index_select(x, axis, reshape(where_true, Shape{where_true.size(0)})));
}

std::vector<Value> trilu_op(OpContext& c) {
  const int64_t k = c.has(1) ? c.ints(1).at(0) : 0;
  const DynTensor& x = c.in(0);
  return one(c.attr_int("upper", 1) != 0 ? triu(x, k) : tril(x, k));
}

// Reverses the first seq_lens[b] steps along time_axis in each batch b: a gather along the time
// axis with index len - 1 - t for t < len, t after it.
std::vector<Value> reverse_sequence_op(OpContext& c) {
  const DynTensor& x = c.in(0);
  const int r = x.rank();
  const int batch = static_cast<int>(wrap_axis(c, c.attr_int("batch_axis", 1), r));
  const int time = static_cast<int>(wrap_axis(c, c.attr_int("time_axis", 0), r));
  if (batch == time) c.fail("batch_axis and time_axis must differ");
  Ints tshape(static_cast<size_t>(r), 1), bshape(static_cast<size_t>(r), 1);
  tshape[static_cast<size_t>(time)] = x.size(time);
  bshape[static_cast<size_t>(batch)] = x.size(batch);
  const DynTensor t = reshape(arange(0, x.size(time), 1, DType::i64, c.device()), Shape(tshape));
  const DynTensor len = reshape(cast(c.in(1), DType::i64), Shape(bshape));
  const DynTensor src = where(lt(t, len), sub(sub(len, 1), t), t);
  return one(gather(x, time, contiguous(expand(src, x.shape()))));
}

// ---- space/depth -----------------------------------------------------------------------------

// DCR (the default, and DepthToSpace-1's only mode) reads the channels as [b, b, C'], CRD as
// [C', b, b].
std::vector<Value> depth_to_space_op(OpContext& c) {
  const DynTensor& x = c.in(0);
  if (x.rank() != 4) c.fail("expects a 4-D input, got shape ", x.shape());
  const int64_t b = c.attr_int("blocksize", 0);
  const int64_t n = x.size(0), ch = x.size(1), h = x.size(2), w = x.size(3);
  if (b <= 0 || ch % (b * b) != 0)
    c.fail("blocksize ", b, " does not divide the channels of shape ", x.shape());
  const int64_t oc = ch / (b * b);
  const std::string mode = c.attr_string("mode", "DCR");
  DynTensor y;
  if (mode == "DCR") {
    y = permute(reshape(x, Shape{n, b, b, oc, h, w}), {0, 3, 4, 1, 5, 2});
  } else if (mode == "CRD") {
    y = permute(reshape(x, Shape{n, oc, b, b, h, w}), {0, 1, 4, 2, 5, 3});
  } else {
    c.fail("unsupported: mode '", mode, "'");
  }
  return one(reshape(y, Shape{n, oc, h * b, w * b}));
}

// The inverse of DepthToSpace: DCR (the default) writes the channels as [b, b, C], CRD (the
// mode attribute, opset 28) as [C, b, b].
std::vector<Value> space_to_depth_op(OpContext& c) {
  const DynTensor& x = c.in(0);
  if (x.rank() != 4) c.fail("expects a 4-D input, got shape ", x.shape());
  const int64_t b = c.attr_int("blocksize", 0);
  const int64_t n = x.size(0), ch = x.size(1), h = x.size(2), w = x.size(3);
  if (b <= 0 || h % b != 0 || w % b != 0)
    c.fail("blocksize ", b, " does not divide the spatial dims of shape ", x.shape());
  const DynTensor blocks = reshape(x, Shape{n, ch, h / b, b, w / b, b});
  const std::string mode = c.attr_string("mode", "DCR");
  DynTensor y;
  if (mode == "DCR") {
    y = permute(blocks, {0, 3, 5, 1, 2, 4});
  } else if (mode == "CRD") {
    y = permute(blocks, {0, 1, 3, 5, 2, 4});
  } else {
    c.fail("unsupported: mode '", mode, "'");
  }
  return one(reshape(y, Shape{n, ch * b * b, h / b, w / b}));
}

// ---- Unique ----------------------------------------------------------------------------------

// Unique over the rows of x2 [n, w]: rows sorted lexicographically by stable sorts from the last
// column to the first (so equal rows keep their input order and each run starts at its first
// occurrence), runs found by comparing neighbours. Outputs as ONNX's: values (rows), the first
// occurrence of each, each row's position in values, and counts; `sorted` false orders them by
// first occurrence instead.
std::vector<DynTensor> unique_rows(const DynTensor& x2, bool sorted) {
  const int64_t n = x2.size(0);
  const Device dev = x2.device();
  DynTensor perm = arange(0, n, 1, DType::i64, dev);
  for (int64_t col = x2.size(1) - 1; col >= 0; --col) {
    const DynTensor key = index_select(select(x2, 1, col), 0, perm);
    perm = index_select(perm, 0, argsort(key, 0, false, true));
  }
  const DynTensor rows = index_select(x2, 0, perm);
  DynTensor flags = ones(Shape{std::min<int64_t>(n, 1)}, DType::boolean, dev);
  if (n > 1) {
    const DynTensor differs = ne(slice(rows, 0, 1, n), slice(rows, 0, 0, n - 1));
    flags = cat({flags, any(differs, {1})});
  }
  const DynTensor at = nonzero(flags);  // the host waits: the count is data
  const int64_t count = at.size(0);
  DynTensor starts = reshape(at, Shape{count});
  DynTensor values = index_select(rows, 0, starts);
  DynTensor first = index_select(perm, 0, starts);
  const DynTensor group = sub(cumsum(cast(flags, DType::i64), 0), 1);
  DynTensor inverse = scatter(zeros(Shape{n}, DType::i64, dev), 0, perm, group);
  DynTensor counts =
      sub(cat({slice(starts, 0, 1, count), full(Shape{1}, n, DType::i64, dev)}), starts);
  if (!sorted) {
    const DynTensor order = argsort(first, 0, false, true);
    values = index_select(values, 0, order);
    first = index_select(first, 0, order);
    counts = index_select(counts, 0, order);
    const DynTensor rank = scatter(zeros(Shape{count}, DType::i64, dev), 0, order,
                                   arange(0, count, 1, DType::i64, dev));
    inverse = index_select(rank, 0, inverse);
  }
  return {values, first, inverse, counts};
}

// Without axis, over the flattened input; with one, over the slices along it (compared as
// their flattened contents).
std::vector<Value> unique_op(OpContext& c) {
  const DynTensor& x = c.in(0);
  const bool sorted = c.attr_int("sorted", 1) != 0;
  if (!c.has_attr("axis")) {
    std::vector<DynTensor> out = unique_rows(reshape(x, Shape{x.numel(), 1}), sorted);
    out[0] = reshape(out[0], Shape{out[0].size(0)});
    return many(out);
  }
  const int axis = static_cast<int>(wrap_axis(c, c.attr_int("axis", 0), x.rank()));
  Ints to_front(static_cast<size_t>(x.rank()));
  std::iota(to_front.begin(), to_front.end(), 0);
  to_front.erase(to_front.begin() + axis);
  to_front.insert(to_front.begin(), axis);
  const DynTensor moved = contiguous(permute(x, to_front));
  const int64_t n = x.size(axis), w = n == 0 ? 0 : x.numel() / n;
  std::vector<DynTensor> out = unique_rows(reshape(moved, Shape{n, w}), sorted);
  Ints shape = moved.shape().vec();
  shape[0] = out[0].size(0);
  Ints back(static_cast<size_t>(x.rank()));  // the inverse permutation
  for (size_t i = 0; i < to_front.size(); ++i) back[static_cast<size_t>(to_front[i])] = int64_t(i);
  out[0] = permute(reshape(out[0], Shape(shape)), back);
  return many(out);
}

// ---- Det -------------------------------------------------------------------------------------

// Determinants of the matrices in the last two dims: Gaussian elimination with partial
// pivoting, batched, from tensor ops (so it runs on every backend and is differentiable). A zero
// pivot column leaves the matrix unchanged for that step (its determinant is 0 anyway).
std::vector<Value> det_op(OpContext& c) {
  const DynTensor& a = c.in(0);
  if (a.rank() < 2 || a.size(-1) != a.size(-2))
    c.fail("expects square matrices in the last two dims, got shape ", a.shape());
  if (!is_floating(a.dtype())) c.fail("unsupported: Det of ", a.dtype());
  const int64_t m = a.size(-1), batch = product(a.shape(), 0, a.rank() - 2);
  const Device dev = a.device();
  DynTensor mat = reshape(a, Shape{batch, m, m});
  DynTensor sign = ones(Shape{batch}, a.dtype(), dev);
  const DynTensor rows = arange(0, m, 1, DType::i64, dev);
  for (int64_t k = 0; k < m; ++k) {
    const DynTensor col = abs(select(slice(mat, 1, k, m), 2, k));  // [batch, m - k]
    const DynTensor p = add(argmax(col, 1), k);                    // the pivot row
    const DynTensor pk = unsqueeze(p, 1);
    // Swap rows k and p: each output row i reads row src[i].
    const DynTensor src = where(eq(rows, k), pk, where(eq(rows, pk), Scalar(k), rows));
    mat = gather(mat, 1, contiguous(expand(unsqueeze(src, 2), Shape{batch, m, m})));
    sign = where(ne(p, k), neg(sign), sign);
    if (k + 1 == m) break;
    const DynTensor pivot = select(select(mat, 1, k), 1, k);
    const DynTensor safe = where(eq(pivot, 0), Scalar(1.0), pivot);
    const DynTensor below = slice(mat, 1, k + 1, m);
    const DynTensor factor = div(select(below, 2, k), unsqueeze(safe, 1));  // [batch, m - k - 1]
    const DynTensor reduced = sub(below, mul(unsqueeze(factor, 2), slice(mat, 1, k, k + 1)));
    mat = cat({slice(mat, 1, 0, k + 1), reduced}, 1);
  }
  const DynTensor det = mul(sign, prod(diagonal(mat, 0, 1, 2), {1}));
  return one(reshape(det, Shape(Ints(a.shape().begin(), a.shape().end() - 2))));
}

// ---- CenterCropPad (opset 18) ----

// Each listed axis (all by default) cut or zero-padded to its target size around the centre: of
// an odd difference, the smaller half goes at the start (the reference's rule).
std::vector<Value> center_crop_pad_op(OpContext& c) {
  DynTensor y = c.in(0);
  const int64_t rank = y.rank();
  const std::vector<int64_t> shape = c.ints(1);
  std::vector<int64_t> axes = c.attr_ints("axes");
  if (!c.has_attr("axes")) {
    axes.resize(size_t(rank));
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (shape.size() != axes.size()) {
    c.fail("shape has ", shape.size(), " values for ", axes.size(), " axes");
  }
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = axes[i];
    if (a < -rank || a >= rank) c.fail("axis ", a, " is out of range for rank ", rank);
    if (a < 0) a += rank;
    const int64_t dim = y.size(int(a)), target = shape[i];
    if (target < 0) c.fail("shape values must be non-negative, got ", target);
    if (target < dim) {
      y = narrow(y, a, (dim - target) / 2, target);
    } else if (target > dim) {
      // pad() lists (before, after) pairs from the last dim backwards.
      std::vector<int64_t> pads(size_t(2 * (rank - a)), 0);
      pads[pads.size() - 2] = (target - dim) / 2;
      pads[pads.size() - 1] = target - dim - (target - dim) / 2;
      y = pad(y, pads);
    }
  }
  return one(y);
}

// ---- Col2Im (opset 18) ----

// The adjoint of im2col over any number of spatial dims: x [N, C * prod(block), L] -> [N, C,
// image...], each column's values added at its block's positions. The target of every (kernel
// offset, block) pair in the padded image is computed on the host from the shapes alone, then
// one index_add sums them on the device; the padding (begin and end may differ) is cut off.
std::vector<Value> col2im_op(OpContext& c) {
  const DynTensor& x = c.in(0);
  const std::vector<int64_t> image = c.ints(1), block = c.ints(2);
  const size_t nd = image.size();
  if (nd == 0 || block.size() != nd) {
    c.fail("image_shape ", image.size(), " and block_shape ", block.size(),
           " must list the same spatial dims");
  }
  const std::vector<int64_t> dil = c.attr_ints("dilations", std::vector<int64_t>(nd, 1)),
                             stride = c.attr_ints("strides", std::vector<int64_t>(nd, 1)),
                             pads = c.attr_ints("pads", std::vector<int64_t>(2 * nd, 0));
  if (dil.size() != nd || stride.size() != nd || pads.size() != 2 * nd) {
    c.fail("dilations, strides and pads must have ", nd, ", ", nd, " and ", 2 * nd, " values");
  }
  std::vector<int64_t> padded(nd), blocks(nd);
  int64_t kk = 1, n_blocks = 1, plane = 1;
  for (size_t i = 0; i < nd; ++i) {
    padded[i] = image[i] + pads[i] + pads[i + nd];
    blocks[i] = (padded[i] - dil[i] * (block[i] - 1) - 1) / stride[i] + 1;
    if (block[i] < 1 || dil[i] < 1 || stride[i] < 1 || blocks[i] < 1) {
      c.fail("block_shape, dilations and strides must be positive and fit the padded image");
    }
    kk *= block[i];
    n_blocks *= blocks[i];
    plane *= padded[i];
  }
  if (x.rank() != 3 || x.size(1) % kk != 0 || x.size(2) != n_blocks) {
    c.fail("input ", x.shape(), " must be [N, C * ", kk, ", ", n_blocks, "]");
  }
  // Flat index into the padded image for each (kernel offset k, block b), k major as x's rows.
  std::vector<int64_t> index(size_t(kk * n_blocks));
  for (int64_t k = 0; k < kk; ++k) {
    for (int64_t b = 0; b < n_blocks; ++b) {
      int64_t flat = 0, kr = k, br = b, kdiv = kk, bdiv = n_blocks;
      for (size_t i = 0; i < nd; ++i) {
        kdiv /= block[i];
        bdiv /= blocks[i];
        const int64_t off = kr / kdiv, pos = br / bdiv;
        kr %= kdiv;
        br %= bdiv;
        flat = flat * padded[i] + pos * stride[i] + off * dil[i];
      }
      index[size_t(k * n_blocks + b)] = flat;
    }
  }
  const int64_t n = x.size(0), ch = x.size(1) / kk;
  const DynTensor idx =
      to_device(from_data(TensorData::from(index, Shape{kk * n_blocks})), x.device());
  const DynTensor src = reshape(x, Shape{n, ch, kk * n_blocks});
  Shape padded_shape{n, ch};
  for (int64_t d : padded) padded_shape.push_back(d);
  DynTensor y = reshape(index_add(zeros(Shape{n, ch, plane}, x.dtype(), x.device()), 2, idx, src),
                        padded_shape);
  for (size_t i = 0; i < nd; ++i) y = narrow(y, int64_t(i) + 2, pads[i], image[i]);
  return one(y);
}

// ---- AffineGrid (opset 20) ----

// PyTorch's affine_grid: theta [N, 2, 3] (or [N, 3, 4]) over the normalized coordinates of
// size = [N, C, H, W] (or [N, C, D, H, W]).
std::vector<Value> affine_grid_op(OpContext& c) {
  const DynTensor& theta = c.in(0);
  const std::vector<int64_t> size = c.ints(1);
  if (size.size() != 4 && size.size() != 5) {
    c.fail("size must be [N, C, H, W] or [N, C, D, H, W], got ", size.size(), " values");
  }
  const int64_t nd = int64_t(size.size()) - 2;
  if (theta.rank() != 3 || theta.size(0) != size[0] || theta.size(1) != nd ||
      theta.size(2) != nd + 1) {
    c.fail("theta ", theta.shape(), " does not fit size ", Shape(size));
  }
  return one(affine_grid(theta, Shape(size), c.attr_int("align_corners", 0) != 0));
}

// ---- DeformConv (opset 19) ----

// torchvision's deform_conv2d, whose conventions ONNX's follow: offset [N, offset_group * kh * kw
// * 2, oh, ow] as (dy, dx) per tap, offset groups major; mask [N, offset_group * kh * kw, oh, ow];
// taps read bilinearly, points outside the image reading 0. Ember's takes one symmetric padding:
// ONNX's begin/end pads are applied as explicit zeros instead, which reads the same. 2-D only.
std::vector<Value> deform_conv_op(OpContext& c) {
  const DynTensor &x = c.in(0), &w = c.in(1), &offset = c.in(2);
  if (x.rank() != 4 || w.rank() != 4) {
    c.fail("unsupported: DeformConv of ", x.rank() - 2, " spatial dims (Ember's is 2-D)");
  }
  const int64_t group = c.attr_int("group", 1), offset_group = c.attr_int("offset_group", 1);
  const std::vector<int64_t> kernel = c.attr_ints("kernel_shape", {w.size(2), w.size(3)});
  if (kernel != std::vector<int64_t>{w.size(2), w.size(3)}) {
    c.fail("kernel_shape does not match the weight ", w.shape());
  }
  if (group < 1 || w.size(1) * group != x.size(1)) {
    c.fail("group ", group, " does not fit input ", x.shape(), " and weight ", w.shape());
  }
  if (offset.rank() != 4 || offset.size(1) != offset_group * 2 * w.size(2) * w.size(3)) {
    c.fail("offset ", offset.shape(), " does not fit offset_group ", offset_group, " and kernel ",
           w.shape());
  }
  const std::vector<int64_t> pads = c.attr_ints("pads", {0, 0, 0, 0});
  if (pads.size() != 4) c.fail("pads must have 4 values, got ", pads.size());
  const DynTensor xp = pad(x, {pads[1], pads[3], pads[0], pads[2]});
  const DynTensor bias = c.has(3) ? c.in(3) : DynTensor{};
  const DynTensor mask = c.has(4) ? c.in(4) : DynTensor{};
  return one(deform_conv2d(xp, offset, w, bias, c.attr_ints("strides", {1, 1}), {0},
                           c.attr_ints("dilations", {1, 1}), mask));
}

}  // namespace

void register_shape_ops(Registry& r) {
  r.add("Shape", shape_op);
  r.add("Size", size_op);
  r.add("Reshape", reshape_op);
  r.add("Flatten", flatten_op);
  r.add("Squeeze", squeeze_op);
  r.add("Unsqueeze", unsqueeze_op);
  r.add("Transpose", transpose_op);
  r.add("Expand", expand_op);
  r.add("Tile", tile_op);
  r.add("Concat", concat_op);
  r.add("Split", split_op);
  r.add("Slice", slice_op);
  r.add("Gather", gather_op);
  r.add("GatherElements", gather_elements_op);
  r.add("GatherND", gather_nd_op);
  r.add("Scatter", scatter_elements_op);
  r.add("ScatterElements", scatter_elements_op);
  r.add("ScatterND", scatter_nd_op);
  r.add("Pad", pad_op);
  r.add("ConstantOfShape", constant_of_shape_op);
  r.add("Range", range_op);
  r.add("OneHot", one_hot_op);
  r.add("EyeLike", eye_like_op);
  r.add("NonZero", non_zero_op);
  r.add("Compress", compress_op);
  r.add("Trilu", trilu_op);
  r.add("ReverseSequence", reverse_sequence_op);
  r.add("DepthToSpace", depth_to_space_op);
  r.add("SpaceToDepth", space_to_depth_op);
  r.add("Unique", unique_op);
  r.add("Det", det_op);
  r.add("", "CenterCropPad", center_crop_pad_op, 18);
  r.add("", "Col2Im", col2im_op, 18);
  r.add("", "DeformConv", deform_conv_op, 19);
  r.add("", "AffineGrid", affine_grid_op, 20);
}

}  // namespace ember::onnx
