// ONNX's neural-network operators: convolutions and pools, normalisations, Gemm, the softmax
// family, Dropout, Resize / Upsample, GridSample, Einsum, the two losses, RNN / LSTM / GRU,
// RoiAlign, NonMaxSuppression and the integer (quantised) convolutions and products. Each is
// written with Ember's tensor ops, so it runs on every backend and under autodiff; only shape-like
// values are read to the host (sizes, scales, roi, pads, RoiAlign's largest adaptive grid), plus
// NonMaxSuppression's boxes and scores (its output size depends on them).
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "ember/tensor/ops/conv.hpp"
#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/indexing.hpp"
#include "ember/tensor/ops/linalg.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "ember/tensor/ops/reduce.hpp"
#include "ember/tensor/ops/shape_linalg.hpp"
#include "ember/tensor/ops/vision.hpp"
#include "registry.hpp"

namespace ember::onnx {
namespace {

// ---- Helpers --------------------------------------------------------------------------------

/// True when the node asks for output j.
bool wants(const OpContext& c, size_t j) {
  return j < c.node().outputs.size() && !c.node().outputs[j].empty();
}

DynTensor int64s(const Ints& v, const Shape& shape, Device d) {
  return from_data(TensorData::from(v, shape), d);
}
DynTensor doubles(const std::vector<double>& v, const Shape& shape, DType dtype, Device d) {
  return cast(from_data(TensorData::from(v, shape), d), dtype);
}

/// A [C] vector shaped to broadcast along dim 1 of a rank-`rank` tensor ([C, 1, 1] for 4-D).
DynTensor per_channel(const DynTensor& v, int rank) {
  Ints s(std::max(rank - 1, 1), 1);
  s[0] = v.numel();
  return reshape(v, Shape(s));
}

Ints spatial_dims(const Shape& s) { return Ints(s.begin() + 2, s.end()); }

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

// ---- Window geometry (Conv, pools) ----------------------------------------------------------

/// Kernel, strides, dilations and the padding at each end of every spatial dim, from the
/// attributes (auto_pad resolved against the input's spatial sizes `in`).
struct Geometry {
  int n = 0;
  Ints kernel, stride, dilation, begin, end;
  bool symmetric() const { return begin == end; }
  int64_t effective(int i) const { return (kernel[i] - 1) * dilation[i] + 1; }
};

Geometry geometry(const OpContext& c, const Ints& in, const Ints& kernel) {
  Geometry g;
  g.n = static_cast<int>(in.size());
  g.kernel = kernel;
  g.stride = c.attr_ints("strides", Ints(g.n, 1));
  g.dilation = c.attr_ints("dilations", Ints(g.n, 1));
  Ints pads = c.attr_ints("pads", Ints(2 * g.n, 0));
  if (static_cast<int>(g.kernel.size()) != g.n || static_cast<int>(g.stride.size()) != g.n ||
      static_cast<int>(g.dilation.size()) != g.n || static_cast<int>(pads.size()) != 2 * g.n) {
    c.fail("kernel_shape, strides, dilations (", g.n, " values each) or pads (", 2 * g.n,
           ") do not match the ", g.n, " spatial dims");
  }
  for (int i = 0; i < g.n; ++i) {
    if (g.kernel[i] < 1 || g.stride[i] < 1 || g.dilation[i] < 1 || pads[i] < 0 ||
        pads[g.n + i] < 0) {
      c.fail("kernel_shape, strides and dilations must be positive and pads non-negative");
    }
  }
  const std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  g.begin.assign(pads.begin(), pads.begin() + g.n);
  g.end.assign(pads.begin() + g.n, pads.end());
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    // Output ceil(in / stride); the odd padding goes at the end (UPPER) or the start (LOWER).
    for (int i = 0; i < g.n; ++i) {
      const int64_t out = ceil_div(in[i], g.stride[i]);
      const int64_t total = std::max<int64_t>(0, (out - 1) * g.stride[i] + g.effective(i) - in[i]);
      const int64_t small = total / 2, big = total - small;
      g.begin[i] = auto_pad == "SAME_UPPER" ? small : big;
      g.end[i] = auto_pad == "SAME_UPPER" ? big : small;
    }
  } else if (auto_pad == "VALID") {
    g.begin.assign(g.n, 0);
    g.end.assign(g.n, 0);
  } else if (auto_pad != "NOTSET") {
    c.fail("unsupported: auto_pad '", auto_pad, "'");
  }
  return g;
}

/// x padded with `value` at both ends of its spatial dims, as `g` says.
DynTensor pad_spatial(const DynTensor& x, const Geometry& g, double value) {
  Ints p;
  for (int i = g.n - 1; i >= 0; --i) {
    p.push_back(g.begin[i]);
    p.push_back(g.end[i]);
  }
  return pad(x, p, PadMode::Constant, value);
}

/// The spatial-rank check every windowed op makes: 1 to 3 spatial dims after [N, C].
int spatial_rank(const OpContext& c, const DynTensor& x) {
  const int n = x.rank() - 2;
  if (n < 1 || n > 3) {
    c.fail("unsupported: input of shape ", x.shape(), " (Ember has 1-D to 3-D windows over ",
           "[N, C, spatial...])");
  }
  return n;
}

// ---- Conv, ConvTranspose --------------------------------------------------------------------

ConvParams conv_params(const Geometry& g, int64_t groups) {
  ConvParams p;
  p.spatial = g.n;
  p.groups = groups;
  for (int i = 0; i < g.n; ++i) {
    p.stride[i] = g.stride[i];
    p.dilation[i] = g.dilation[i];
  }
  return p;
}

/// Convolution with ONNX's padding: symmetric pads go to the kernel, others pad x first; with
/// `relu`, relu(conv) in one pass where the backend fuses it.
DynTensor onnx_conv(const OpContext& c, const DynTensor& x, const DynTensor& w, const DynTensor& b,
                    bool relu = false) {
  spatial_rank(c, x);
  if (w.rank() != x.rank()) c.fail("weight ", w.shape(), " does not match input ", x.shape());
  const Geometry g =
      geometry(c, spatial_dims(x.shape()), c.attr_ints("kernel_shape", spatial_dims(w.shape())));
  ConvParams p = conv_params(g, c.attr_int("group", 1));
  p.relu = relu;
  if (g.symmetric()) {
    for (int i = 0; i < g.n; ++i) p.padding[i] = g.begin[i];
    return convolution(x, w, b, p, false);
  }
  return convolution(pad_spatial(x, g, 0.0), w, b, p, false);
}

std::vector<Value> conv(OpContext& c) {
  return one(onnx_conv(c, c.in(0), c.in(1), c.has(2) ? c.in(2) : DynTensor()));
}
// Conv -> Relu as one step (fusion.cpp): the Conv node's inputs and attributes, Relu's output.
std::vector<Value> conv_relu(OpContext& c) {
  return one(onnx_conv(c, c.in(0), c.in(1), c.has(2) ? c.in(2) : DynTensor(), true));
}

// The transposed convolution runs unpadded (full size (in - 1) stride + (k - 1) dilation + 1),
// then ONNX's window of it is cut out: from pads' start, output_shape long (zeros past the end).
std::vector<Value> conv_transpose(OpContext& c) {
  const DynTensor& x = c.in(0);
  const DynTensor& w = c.in(1);
  const int n = spatial_rank(c, x);
  if (w.rank() != x.rank()) c.fail("weight ", w.shape(), " does not match input ", x.shape());
  const Ints in = spatial_dims(x.shape());
  const Geometry g = geometry(c, Ints(n, 1), c.attr_ints("kernel_shape", spatial_dims(w.shape())));
  for (int i = 0; i < n; ++i) {
    if (g.kernel[i] != w.size(2 + i)) c.fail("kernel_shape does not match weight ", w.shape());
  }
  const DynTensor full =
      convolution(x, w, DynTensor(), conv_params(g, c.attr_int("group", 1)), true);
  const Ints out_pad = c.attr_ints("output_padding", Ints(n, 0));
  Ints out_shape = c.attr_ints("output_shape");
  if (out_shape.size() == static_cast<size_t>(n + 2))
    out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  if (static_cast<int>(out_pad.size()) != n ||
      (!out_shape.empty() && static_cast<int>(out_shape.size()) != n)) {
    c.fail("output_padding and output_shape need one value per spatial dim (", n, ")");
  }
  const std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  DynTensor y = full;
  for (int i = 0; i < n; ++i) {
    const int64_t size = full.size(2 + i), with_op = size + out_pad[i];
    int64_t begin = 0, out = 0;
    if (same) {
      out = out_shape.empty() ? in[i] * g.stride[i] : out_shape[i];
      const int64_t total = with_op - out, half = floor_div(total, 2);
      begin = auto_pad == "SAME_UPPER" ? half : total - half;
    } else {
      begin = g.begin[i];
      out = out_shape.empty() ? with_op - g.begin[i] - g.end[i] : out_shape[i];
    }
    if (out < 1) c.fail("the output would be empty along spatial dim ", i);
    const int64_t lo = std::clamp<int64_t>(begin, 0, size),
                  hi = std::clamp<int64_t>(begin + out, lo, size);
    y = slice(y, 2 + i, lo, hi);
    Ints p(2 * (x.rank() - 3 - i), 0);  // pad() lists the last dim first
    p.push_back(std::max<int64_t>(0, -begin));
    p.push_back(out - (hi - lo) - std::max<int64_t>(0, -begin));
    if (p[p.size() - 1] > 0 || p[p.size() - 2] > 0) y = pad(y, p);
  }
  if (c.has(2)) y = add(y, per_channel(c.in(2), y.rank()));
  return one(y);
}

// ---- Pools ----------------------------------------------------------------------------------

PoolParams pool_params(const Geometry& g, bool ceil_mode, bool padded) {
  PoolParams p;
  p.spatial = g.n;
  p.ceil_mode = ceil_mode;
  for (int i = 0; i < g.n; ++i) {
    p.kernel[i] = g.kernel[i];
    p.stride[i] = g.stride[i];
    p.dilation[i] = g.dilation[i];
    p.padding[i] = padded ? g.begin[i] : 0;
  }
  return p;
}

/// Whether Ember's pool takes g's padding itself (PyTorch's: symmetric, at most half the window).
bool pool_pads_fit(const Geometry& g) {
  if (!g.symmetric()) return false;
  for (int i = 0; i < g.n; ++i) {
    if (g.begin[i] > g.effective(i) / 2) return false;
  }
  return true;
}

Geometry pool_geometry(const OpContext& c, const DynTensor& x) {
  spatial_rank(c, x);
  if (!c.has_attr("kernel_shape")) c.fail("attribute 'kernel_shape' is required");
  return geometry(c, spatial_dims(x.shape()), c.attr_ints("kernel_shape"));
}

/// Max pooling's flat plane indices (of a plane of sizes `from`, shifted by `offset`) rewritten
/// as ONNX's: over the whole [N, C, spatial...] input of `x_shape`, row- or column-major planes.
DynTensor onnx_pool_indices(DynTensor idx, const Ints& from, const Ints& offset,
                            const Shape& x_shape, bool column_major) {
  const Ints to = spatial_dims(x_shape);
  const int n = static_cast<int>(to.size());
  if (from != to || column_major) {
    std::vector<DynTensor> coord(n);
    DynTensor rest = idx;
    for (int i = n - 1; i >= 0; --i) {
      coord[i] = sub(remainder(rest, from[i]), offset[i]);
      rest = floor_divide(rest, from[i]);
    }
    idx = zeros_like(idx);
    if (column_major) {
      for (int i = n - 1; i >= 0; --i) idx = add(mul(idx, to[i]), coord[i]);
    } else {
      for (int i = 0; i < n; ++i) idx = add(mul(idx, to[i]), coord[i]);
    }
  }
  int64_t plane = 1;
  for (int64_t s : to) plane *= s;
  Ints base_shape(x_shape.rank(), 1);
  base_shape[0] = x_shape[0];
  base_shape[1] = x_shape[1];
  const DynTensor base =
      reshape(arange(0, x_shape[0] * x_shape[1] * plane, plane, DType::i64, idx.device()),
              Shape(base_shape));
  return add(idx, base);
}

std::vector<Value> max_pool_op(OpContext& c) {
  const DynTensor& x = c.in(0);
  const Geometry g = pool_geometry(c, x);
  const bool ceil_mode = c.opset() >= 10 && c.attr_int("ceil_mode", 0) != 0;
  // Ember pools floats: 8-bit integers go through f32 exactly.
  const DynTensor xf = is_floating(x.dtype()) ? x : cast(x, DType::f32);
  const bool fits = pool_pads_fit(g);
  const DynTensor xp = fits ? xf : pad_spatial(xf, g, -std::numeric_limits<double>::infinity());
  const PoolParams p = pool_params(g, ceil_mode, fits);
  if (!wants(c, 1)) return one(cast(max_pool_values(xp, p), x.dtype()));
  const ValuesIndices r = ember::max_pool(xp, p, DType::i64);
  const DynTensor y = cast(r.values, x.dtype());
  const Ints from = spatial_dims(xp.shape()), offset = fits ? Ints(g.n, 0) : g.begin;
  const bool column_major = c.attr_int("storage_order", 0) != 0;
  return {Value::of(y),
          Value::of(onnx_pool_indices(r.indices, from, offset, x.shape(), column_major))};
}

std::vector<Value> average_pool(OpContext& c) {
  const DynTensor& x = c.in(0);
  const Geometry g = pool_geometry(c, x);
  for (int64_t d : g.dilation) {
    if (d != 1) c.fail("unsupported: dilations in AveragePool");
  }
  const bool ceil_mode = c.opset() >= 10 && c.attr_int("ceil_mode", 0) != 0;
  const bool include_pad = c.opset() >= 7 && c.attr_int("count_include_pad", 0) != 0;
  if (pool_pads_fit(g)) {
    PoolParams p = pool_params(g, ceil_mode, true);
    p.count_include_pad = include_pad;
    return one(avg_pool(x, p));
  }
  const PoolParams p = pool_params(g, ceil_mode, false);
  const DynTensor pooled = avg_pool(pad_spatial(x, g, 0.0), p);
  if (include_pad) return one(pooled);
  // Without the padding in the count: divide by the share of real elements in each window.
  Ints ones_shape(x.rank(), 1);
  for (int i = 2; i < x.rank(); ++i) ones_shape[i] = x.size(i);
  const DynTensor share =
      avg_pool(pad_spatial(ones(Shape(ones_shape), x.dtype(), x.device()), g, 0.0), p);
  return one(div(pooled, share));
}

// LpPool: (sum over the window of |x|^p)^(1/p). The sum is a depthwise convolution with a
// kernel of ones, so asymmetric pads, dilations and ceil_mode (more zero padding at the end)
// all come for free: zeros add nothing to the sum.
std::vector<Value> lp_pool(OpContext& c) {
  const DynTensor& x = c.in(0);
  Geometry g = pool_geometry(c, x);
  const double p =
      c.opset() >= 2 ? static_cast<double>(c.attr_int("p", 2)) : c.attr_float("p", 2.0);
  if (c.opset() >= 18 && c.attr_int("ceil_mode", 0) != 0) {
    for (int i = 0; i < g.n; ++i) {
      const int64_t span = x.size(2 + i) + g.begin[i] + g.end[i] - g.effective(i);
      g.end[i] += ceil_div(span, g.stride[i]) * g.stride[i] - span;
    }
  }
  const int64_t channels = x.size(1);
  Ints k{channels, 1};
  k.insert(k.end(), g.kernel.begin(), g.kernel.end());
  const DynTensor ones_k = ones(Shape(k), x.dtype(), x.device());
  const DynTensor sum = convolution(pad_spatial(pow(abs(x), p), g, 0.0), ones_k, DynTensor(),
                                    conv_params(g, channels), false);
  return one(pow(sum, 1.0 / p));
}

Ints spatial_axes(const DynTensor& x) {
  Ints a;
  for (int i = 2; i < x.rank(); ++i) a.push_back(i);
  return a;
}

std::vector<Value> global_average_pool(OpContext& c) {
  return one(mean(c.in(0), spatial_axes(c.in(0)), true));
}
std::vector<Value> global_max_pool(OpContext& c) {
  return one(amax(c.in(0), spatial_axes(c.in(0)), true));
}
std::vector<Value> global_lp_pool(OpContext& c) {
  const double p =
      c.opset() >= 2 ? static_cast<double>(c.attr_int("p", 2)) : c.attr_float("p", 2.0);
  return one(pow(sum(pow(abs(c.in(0)), p), spatial_axes(c.in(0)), true), 1.0 / p));
}

// MaxUnpool: the values scattered to the flat (whole-tensor) positions MaxPool's Indices give,
// in a tensor of the shape the pool's geometry infers; a larger output_shape pads it with zeros
// at the end of each dim (ONNX's reference).
std::vector<Value> max_unpool(OpContext& c) {
  const DynTensor& x = c.in(0);
  const DynTensor& idx = c.in(1);
  if (idx.shape() != x.shape()) c.fail("indices ", idx.shape(), " must match X ", x.shape());
  const Geometry g = pool_geometry(c, x);
  Ints inferred{x.size(0), x.size(1)};
  for (int i = 0; i < g.n; ++i) {
    inferred.push_back((x.size(2 + i) - 1) * g.stride[i] + g.kernel[i] - g.begin[i] - g.end[i]);
  }
  const Shape shape(inferred);
  const DynTensor flat = zeros(Shape{shape.numel()}, x.dtype(), x.device());
  DynTensor y = reshape(
      scatter(flat, 0, reshape(cast(idx, DType::i64), Shape{-1}), reshape(x, Shape{-1})), shape);
  if (!c.has(2)) return one(y);
  const Ints out = c.ints(2);
  if (static_cast<int>(out.size()) != x.rank()) c.fail("output_shape must have rank ", x.rank());
  Ints p;
  for (int i = x.rank() - 1; i >= 0; --i) {
    if (out[i] < inferred[i]) c.fail("output_shape ", Shape(out), " is smaller than ", shape);
    p.push_back(0);
    p.push_back(out[i] - inferred[i]);
  }
  return one(pad(y, p));
}

// ---- Gemm -----------------------------------------------------------------------------------

// alpha A' B' + beta C, C broadcast to the result (opset < 7: only with broadcast = 1, which
// numpy broadcasting covers too).
std::vector<Value> gemm(OpContext& c) {
  DynTensor a = c.in(0), b = c.in(1);
  if (a.rank() != 2 || b.rank() != 2) c.fail("A ", a.shape(), " and B ", b.shape(), " must be 2-D");
  if (c.attr_int("transA", 0) != 0) a = transpose(a, 0, 1);
  if (c.attr_int("transB", 0) != 0) b = transpose(b, 0, 1);
  const double alpha = c.attr_float("alpha", 1.0), beta = c.attr_float("beta", 1.0);
  const DType dtype = a.dtype();
  DynTensor y = matmul(a, b);
  if (alpha != 1.0) y = mul(y, alpha);
  if (c.has(2) && beta != 0.0) y = add(y, beta == 1.0 ? c.in(2) : mul(c.in(2), beta));
  return one(cast(y, dtype));
}

// ---- Softmax, LogSoftmax, Hardmax -----------------------------------------------------------

/// Before opset 13 these coerce x to 2-D ([prod(dims before axis), prod(the rest)], axis
/// default 1) and work along the second dim; from 13 on, along `axis` (default -1).
template <class F>
std::vector<Value> softmax_like(OpContext& c, F along) {
  const DynTensor& x = c.in(0);
  const int rank = std::max(x.rank(), 1);
  if (c.opset() >= 13) return one(along(x, axis_of(c, c.attr_int("axis", -1), rank)));
  int64_t axis = c.attr_int("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank)
    c.fail("axis ", c.attr_int("axis", 1), " is out of range for rank ", rank);
  int64_t rows = 1;
  for (int i = 0; i < axis; ++i) rows *= x.size(i);
  return one(reshape(along(reshape(x, Shape{rows, -1}), 1), x.shape()));
}

DynTensor hardmax(const DynTensor& x, int64_t axis) {
  Ints iota_shape(x.rank(), 1);
  iota_shape[axis] = x.size(axis);
  const DynTensor iota =
      reshape(arange(0, x.size(axis), 1, DType::i64, x.device()), Shape(iota_shape));
  return cast(eq(argmax(x, axis, true), iota), x.dtype());  // argmax: the first maximum
}

// ---- Normalisations -------------------------------------------------------------------------

/// (x - mean) / sqrt(var + eps) over `dims` (population variance), in f32 at least: f16 and
/// bf16 are computed in f32, as ONNX's stash_type = 1 asks.
struct Normalised {
  DynTensor y, mean, var, inv_std;  // the statistics keep the reduced dims (size 1)
};
Normalised normalise(const DynTensor& x, const Ints& dims, double eps) {
  const bool widen = x.dtype() == DType::f16 || x.dtype() == DType::bf16;
  const DynTensor xs = widen ? cast(x, DType::f32) : x;
  Normalised r;
  r.mean = mean(xs, dims, true);
  const DynTensor centred = sub(xs, r.mean);
  r.var = mean(mul(centred, centred), dims, true);
  r.inv_std = rsqrt(add(r.var, eps));
  r.y = mul(centred, r.inv_std);
  return r;
}

// Inference: the given statistics. training_mode (opset 14+; or older models asking for the
// statistics outputs): the batch's own, and the running ones updated with momentum.
std::vector<Value> batch_norm(OpContext& c) {
  const DynTensor& x = c.in(0);
  const int rank = x.rank();
  const DynTensor scale = per_channel(c.in(1), rank), bias = per_channel(c.in(2), rank);
  const DynTensor run_mean = c.in(3), run_var = c.in(4);
  const double eps = c.attr_float("epsilon", 1e-5), momentum = c.attr_float("momentum", 0.9);
  if (c.opset() < 9 && c.attr_int("spatial", 1) == 0) c.fail("unsupported: spatial = 0");
  const bool training =
      c.opset() >= 14 ? c.attr_int("training_mode", 0) != 0 : wants(c, 1) || wants(c, 2);
  if (!training) {  // x k + (bias - mean k): two passes over x
    const DynTensor k = mul(scale, rsqrt(add(per_channel(run_var, rank), eps)));
    return one(add(mul(x, k), sub(bias, mul(per_channel(run_mean, rank), k))));
  }
  Ints dims{0};
  for (int i = 2; i < rank; ++i) dims.push_back(i);
  const Normalised n = normalise(x, dims, eps);
  const DynTensor batch_mean = reshape(n.mean, Shape{-1}), batch_var = reshape(n.var, Shape{-1});
  std::vector<Value> out{
      Value::of(add(mul(cast(n.y, x.dtype()), scale), bias)),
      Value::of(
          add(mul(run_mean, momentum), mul(cast(batch_mean, run_mean.dtype()), 1 - momentum))),
      Value::of(add(mul(run_var, momentum), mul(cast(batch_var, run_var.dtype()), 1 - momentum)))};
  if (c.opset() < 14) {  // saved_mean, saved_var
    out.push_back(Value::of(batch_mean));
    out.push_back(Value::of(batch_var));
  }
  return out;
}

std::vector<Value> instance_norm(OpContext& c) {
  const DynTensor& x = c.in(0);
  const Normalised n = normalise(x, spatial_axes(x), c.attr_float("epsilon", 1e-5));
  return one(add(mul(cast(n.y, x.dtype()), per_channel(c.in(1), x.rank())),
                 per_channel(c.in(2), x.rank())));
}

// Y, and the Mean and InvStdDev of the normalised dims [axis, rank) (kept as size 1).
std::vector<Value> layer_norm(OpContext& c) {
  const DynTensor& x = c.in(0);
  const int64_t axis = axis_of(c, c.attr_int("axis", -1), x.rank());
  Ints dims;
  for (int64_t i = axis; i < x.rank(); ++i) dims.push_back(i);
  const Normalised n = normalise(x, dims, c.attr_float("epsilon", 1e-5));
  DynTensor y = mul(n.y, c.in(1));
  if (c.has(2)) y = add(y, c.in(2));
  return {Value::of(cast(y, x.dtype())), Value::of(n.mean), Value::of(n.inv_std)};
}

// Opset 18: scale and bias per group; 21: per channel.
std::vector<Value> group_norm(OpContext& c) {
  const DynTensor& x = c.in(0);
  const int64_t groups = c.attr_int("num_groups", 0), channels = x.size(1);
  if (groups < 1 || channels % groups != 0)
    c.fail("num_groups ", groups, " must divide C = ", channels);
  Ints grouped{x.size(0), groups, -1};
  const Normalised n = normalise(reshape(x, Shape(grouped)), {2}, c.attr_float("epsilon", 1e-5));
  DynTensor scale = c.in(1), bias = c.in(2);
  if (c.opset() < 21 && scale.numel() == groups && groups != channels) {
    scale = repeat_interleave(scale, channels / groups);
    bias = repeat_interleave(bias, channels / groups);
  }
  const DynTensor y = reshape(cast(n.y, x.dtype()), x.shape());
  return one(add(mul(y, per_channel(scale, x.rank())), per_channel(bias, x.rank())));
}

// x / (bias + alpha / size * s)^beta, s the sum of x^2 over the channels from
// c - floor((size - 1) / 2) to c + ceil((size - 1) / 2).
std::vector<Value> lrn(OpContext& c) {
  const DynTensor& x = c.in(0);
  const int64_t size = c.attr_int("size", 0);
  if (size < 1 || x.rank() < 2) c.fail("size must be positive and X at least 2-D");
  const double alpha = c.attr_float("alpha", 1e-4), beta = c.attr_float("beta", 0.75),
               bias = c.attr_float("bias", 1.0);
  Ints p(2 * (x.rank() - 2), 0);
  p.push_back((size - 1) / 2);
  p.push_back(size - 1 - (size - 1) / 2);
  const DynTensor sq = pad(mul(x, x), p);
  DynTensor total = slice(sq, 1, 0, x.size(1));
  for (int64_t i = 1; i < size; ++i) total = add(total, slice(sq, 1, i, i + x.size(1)));
  return one(div(x, pow(add(mul(total, alpha / static_cast<double>(size)), bias), beta)));
}

// (x - mean) / (std + 1e-9) over `axes` (ONNX's function body; population std).
std::vector<Value> mean_variance_norm(OpContext& c) {
  const DynTensor& x = c.in(0);
  Ints axes = c.attr_ints("axes", {0, 2, 3});
  for (int64_t& a : axes) a = axis_of(c, a, x.rank());
  const DynTensor m = mean(x, axes, true);
  const DynTensor centred = sub(x, m);
  return one(div(centred, add(sqrt(mean(mul(centred, centred), axes, true)), 1e-9)));
}

// ---- Dropout --------------------------------------------------------------------------------

// Inference is the identity with an all-true mask. Training (opset 12+: the training_mode
// input) drops with probability `ratio` and scales the rest by 1 / (1 - ratio).
std::vector<Value> dropout(OpContext& c) {
  const DynTensor& x = c.in(0);
  double ratio = c.attr_float("ratio", 0.5);
  bool training = false;  // before opset 12 runtimes (ORT too) treat Dropout as inference
  if (c.opset() >= 12) {
    if (c.has(1)) ratio = c.scalar(1);
    training = c.has(2) && c.scalar(2) != 0;
  }
  if (ratio < 0 || ratio >= 1) c.fail("ratio ", ratio, " must be in [0, 1)");
  const DType mask_dtype = c.opset() >= 10 ? DType::boolean : x.dtype();
  if (!training || ratio == 0) {
    // Built in one go: GCC 12's -Warray-bounds misfires on a push_back of a Value here.
    if (!wants(c, 1)) return one(x);
    return {Value::of(x), Value::of(ones(x.shape(), mask_dtype, x.device()))};
  }
  Generator gen(static_cast<uint64_t>(c.attr_int("seed", 0)));
  const DynTensor keep = bernoulli(x.shape(), 1 - ratio, DType::boolean, x.device(),
                                   c.has_attr("seed") ? &gen : nullptr);
  const DynTensor y = mul(where(keep, x, 0.0), 1.0 / (1 - ratio));
  return {Value::of(cast(y, x.dtype())), Value::of(cast(keep, mask_dtype))};
}

// ---- Einsum ---------------------------------------------------------------------------------

std::vector<Value> einsum_op(OpContext& c) {
  std::string eq = c.attr_string("equation", "");
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  std::vector<DynTensor> xs;
  for (size_t i = 0; i < c.num_inputs(); ++i) xs.push_back(c.in(i));
  return one(einsum(eq, xs));
}

// ---- Resize, Upsample -----------------------------------------------------------------------
//
// Resize is separable: each resized axis is resampled in turn, out[o] = sum_k w[o][k] x[i[o][k]],
// with the source indices and weights computed on the host from the sizes alone (as ONNX's
// reference computes them: the taps nearest the source coordinate, edge-clamped), then applied
// with index_select and a weighted sum, so values stay on the device and differentiable.

struct ResizeMode {
  std::string mode = "nearest", coord = "half_pixel", nearest = "round_prefer_floor";
  double cubic_a = -0.75, extrapolation = 0;
  bool exclude_outside = false, antialias = false;
};

/// One axis's taps: n per output position.
struct Taps {
  int64_t n = 1;
  Ints index;                    // [out * n], clamped to the input
  std::vector<double> weight;    // [out * n]
  std::vector<uint8_t> outside;  // [out]: tf_crop_and_resize's extrapolated positions
  bool identity = true;          // out[o] = x[o]: nothing to do
};

double source_coordinate(const ResizeMode& m, int64_t o, int64_t in, int64_t out, double scale,
                         double roi_start, double roi_end) {
  const double x = static_cast<double>(o), width = scale * static_cast<double>(in);
  const std::string& t = m.coord;
  if (t == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (t == "asymmetric") return x / scale;
  if (t == "align_corners") return width == 1 ? 0 : x * (in - 1) / (width - 1);
  if (t == "pytorch_half_pixel") return width == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
  if (t == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  if (t == "half_pixel_symmetric") {
    const double offset = in / 2.0 * (1 - static_cast<double>(out) / width);
    return offset + (x + 0.5) / scale - 0.5;
  }
  // tf_crop_and_resize
  const double span = (roi_end - roi_start) * (in - 1);
  return (width == 1 ? span / 2 : x * span / (width - 1)) + roi_start * (in - 1);
}

double cubic_weight(double d, double a) {
  d = std::fabs(d);
  if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
  if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
  return 0;
}

Taps resize_taps(const OpContext& c, const ResizeMode& m, int64_t in, int64_t out, double scale,
                 double roi_start, double roi_end) {
  Taps t;
  const bool nearest = m.mode == "nearest", linear = m.mode == "linear";
  if (!nearest && !linear && m.mode != "cubic") c.fail("unsupported: mode '", m.mode, "'");
  // Antialiasing widens the filter by 1 / scale when downsampling.
  const double s = m.antialias && !nearest ? std::min(scale, 1.0) : 1.0;
  const int64_t start = nearest  ? 0
                        : linear ? static_cast<int64_t>(std::floor(-1 / s)) + 1
                                 : static_cast<int64_t>(std::floor(-2 / s)) + 1;
  t.n = nearest ? 1 : 2 - 2 * start;
  t.outside.assign(out, 0);
  for (int64_t o = 0; o < out; ++o) {
    const double x = source_coordinate(m, o, in, out, scale, roi_start, roi_end);
    if (m.coord == "tf_crop_and_resize" && (x < 0 || x > in - 1)) t.outside[o] = 1;
    // base + ratio = x with ratio in (0, 1]: the reference prefers the left neighbour.
    const int64_t base = static_cast<int64_t>(std::ceil(x)) - 1;
    const double ratio = x - static_cast<double>(base);
    std::vector<double> w(t.n);
    Ints idx(t.n);
    if (nearest) {
      bool up = ratio == 1;
      if (!up) {
        const std::string& nm = m.nearest;
        if (nm == "round_prefer_floor")
          up = ratio > 0.5;
        else if (nm == "round_prefer_ceil")
          up = ratio >= 0.5;
        else if (nm == "ceil")
          up = true;
        else if (nm == "simple")
          up = scale < 1;  // opset 10 / Upsample (ORT's): ceil downsampling
        else if (nm != "floor")
          c.fail("unsupported: nearest_mode '", nm, "'");
      }
      idx[0] = base + (up ? 1 : 0);
      w[0] = 1;
    } else {
      double total = 0;
      for (int64_t k = 0; k < t.n; ++k) {
        idx[k] = base + start + k;
        const double d = (static_cast<double>(start + k) - ratio) * s;
        w[k] = linear ? std::clamp(1 - std::fabs(d), 0.0, 1.0) : cubic_weight(d, m.cubic_a);
        if (m.exclude_outside && (idx[k] < 0 || idx[k] >= in)) w[k] = 0;
        total += w[k];
      }
      if (m.antialias || m.exclude_outside) {
        for (double& v : w) v /= total;
      }
    }
    double at_o = 0, elsewhere = 0;  // all of the weight on x[o]: an identity position
    for (int64_t k = 0; k < t.n; ++k) {
      idx[k] = std::clamp<int64_t>(idx[k], 0, in - 1);
      t.index.push_back(idx[k]);
      t.weight.push_back(w[k]);
      (idx[k] == o ? at_o : elsewhere) += std::fabs(w[k]);
    }
    if (at_o != 1 || elsewhere != 0) t.identity = false;
  }
  if (in != out || std::any_of(t.outside.begin(), t.outside.end(), [](uint8_t v) { return v; }))
    t.identity = false;
  return t;
}

DynTensor resample_axis(const DynTensor& x, int axis, const Taps& t, DType compute) {
  const int64_t out = static_cast<int64_t>(t.outside.size());
  const DynTensor idx = int64s(t.index, Shape{out * t.n}, x.device());
  DynTensor g = index_select(x, axis, idx);
  if (t.n == 1) return g;  // nearest: every weight is 1
  Ints shape = x.shape().vec(), wshape(x.rank() + 1, 1);
  shape[axis] = out;
  shape.insert(shape.begin() + axis + 1, t.n);
  wshape[axis] = out;
  wshape[axis + 1] = t.n;
  const DynTensor w = doubles(t.weight, Shape(wshape), compute, x.device());
  return sum(mul(reshape(g, Shape(shape)), w), {axis + 1});
}

/// Resizes x to `out` (a size per dim) with `scales` per dim; roi per dim as [starts, ends].
DynTensor resize_to(const OpContext& c, const DynTensor& x, const Ints& out,
                    const std::vector<double>& scales, const std::vector<double>& roi,
                    const ResizeMode& m) {
  const int rank = x.rank();
  const bool integral = !is_floating(x.dtype());
  const DType compute = integral ? DType::f32 : x.dtype();
  DynTensor y = integral && m.mode != "nearest" ? cast(x, compute) : x;
  DynTensor outside;
  for (int a = 0; a < rank; ++a) {
    if (out[a] < 1) c.fail("the output would be empty (sizes ", Shape(out), ")");
    const double r0 = roi.empty() ? 0 : roi[a], r1 = roi.empty() ? 1 : roi[rank + a];
    const Taps t = resize_taps(c, m, x.size(a), out[a], scales[a], r0, r1);
    if (t.identity) continue;
    y = resample_axis(y, a, t, compute);
    if (m.coord != "tf_crop_and_resize") continue;
    Ints mshape(rank, 1);
    mshape[a] = out[a];
    const DynTensor o =
        cast(from_data(TensorData::from(t.outside, Shape(mshape)), x.device()), DType::boolean);
    outside = outside.defined() ? logical_or(outside, o) : o;
  }
  if (outside.defined()) y = where(outside, full_like(y, m.extrapolation), y);
  if (integral && m.mode != "nearest") y = cast(round(y), x.dtype());
  return y;
}

std::vector<double> float_values(const OpContext& c, size_t i) {
  return c.in(i).to_vector<double>();
}

/// An input that is present and not empty (opset 11-12 models pass "" or an empty tensor).
bool given(const OpContext& c, size_t i) { return c.has(i) && c.in(i).numel() > 0; }

std::vector<Value> resize(OpContext& c) {
  const DynTensor& x = c.in(0);
  const int rank = x.rank();
  ResizeMode m;
  m.mode = c.attr_string("mode", "nearest");
  if (c.opset() < 11) {
    m.coord = "asymmetric";
    m.nearest = "simple";
  } else {
    m.coord = c.attr_string("coordinate_transformation_mode", "half_pixel");
    m.nearest = c.attr_string("nearest_mode", "round_prefer_floor");
    m.cubic_a = c.attr_float("cubic_coeff_a", -0.75);
    m.exclude_outside = c.attr_int("exclude_outside", 0) != 0;
    m.extrapolation = c.attr_float("extrapolation_value", 0.0);
    m.antialias = c.attr_int("antialias", 0) != 0;
  }
  // Opset 18: scales, sizes and roi may cover only `axes`.
  Ints axes = c.attr_ints("axes");
  if (axes.empty()) {
    for (int a = 0; a < rank; ++a) axes.push_back(a);
  }
  for (int64_t& a : axes) a = axis_of(c, a, rank);
  const size_t na = axes.size();
  const size_t scales_at = c.opset() < 11 ? 1 : 2, sizes_at = 3;
  std::vector<double> roi;
  if (c.opset() >= 11 && given(c, 1) && m.coord == "tf_crop_and_resize") {
    const std::vector<double> r = float_values(c, 1);
    if (r.size() != 2 * na) c.fail("roi needs ", 2 * na, " values, got ", r.size());
    roi.assign(2 * rank, 0.0);
    for (int a = 0; a < rank; ++a) roi[rank + a] = 1.0;
    for (size_t i = 0; i < na; ++i) {
      roi[axes[i]] = r[i];
      roi[rank + axes[i]] = r[na + i];
    }
  }
  Ints out = x.shape().vec();
  std::vector<double> scales(rank, 1.0);
  if (given(c, scales_at)) {
    const std::vector<double> s = float_values(c, scales_at);
    if (s.size() != na) c.fail("scales needs ", na, " values, got ", s.size());
    for (size_t i = 0; i < na; ++i) {
      if (s[i] <= 0) c.fail("scales must be positive");
      scales[axes[i]] = s[i];
      out[axes[i]] = static_cast<int64_t>(std::floor(s[i] * static_cast<double>(x.size(axes[i]))));
    }
  } else if (c.opset() >= 11 && given(c, sizes_at)) {
    const Ints sz = c.ints(sizes_at);
    if (sz.size() != na) c.fail("sizes needs ", na, " values, got ", sz.size());
    const std::string policy = c.attr_string("keep_aspect_ratio_policy", "stretch");
    double keep = policy == "not_larger" ? std::numeric_limits<double>::infinity() : 0;
    for (size_t i = 0; i < na; ++i) {
      scales[axes[i]] = static_cast<double>(sz[i]) / static_cast<double>(x.size(axes[i]));
      out[axes[i]] = sz[i];
      keep = policy == "not_larger" ? std::min(keep, scales[axes[i]])
                                    : std::max(keep, scales[axes[i]]);
    }
    if (policy != "stretch") {
      if (policy != "not_larger" && policy != "not_smaller")
        c.fail("unsupported: keep_aspect_ratio_policy '", policy, "'");
      for (int64_t a : axes) {
        scales[a] = keep;
        out[a] = static_cast<int64_t>(keep * static_cast<double>(x.size(a)) + 0.5);
      }
    }
  } else {
    c.fail("one of scales or sizes is required");
  }
  return one(resize_to(c, x, out, scales, roi, m));
}

// Upsample (deprecated since opset 10): Resize's asymmetric mapping, scales an attribute
// (opset 7) or an input (opset 9).
std::vector<Value> upsample(OpContext& c) {
  const DynTensor& x = c.in(0);
  ResizeMode m;
  m.mode = c.attr_string("mode", "nearest");
  if (m.mode == "bilinear" || m.mode == "trilinear") m.mode = "linear";
  m.coord = "asymmetric";
  m.nearest = "simple";
  const std::vector<double> scales = c.opset() >= 9 ? float_values(c, 1) : c.attr_floats("scales");
  if (static_cast<int>(scales.size()) != x.rank()) c.fail("scales needs ", x.rank(), " values");
  Ints out(x.rank());
  for (int a = 0; a < x.rank(); ++a) {
    out[a] = static_cast<int64_t>(std::floor(scales[a] * static_cast<double>(x.size(a))));
  }
  return one(resize_to(c, x, out, scales, {}, m));
}

// ---- NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss -------------------------------------

/// -input[n, target[n, d...], d...] * weight[target], reduced: "mean" divides by the summed
/// weights of the targets that count (those not equal to ignore_index).
DynTensor nll(const OpContext& c, const DynTensor& input, const DynTensor& target,
              const DynTensor& weight) {
  if (input.rank() < 2 || target.rank() != input.rank() - 1) {
    c.fail("input ", input.shape(), " must be [N, C, d...] and target [N, d...], got target ",
           target.shape());
  }
  const DynTensor t = cast(target, DType::i64);
  DynTensor ignored;
  DynTensor safe = t;
  if (c.has_attr("ignore_index")) {
    ignored = eq(t, c.attr_int("ignore_index", 0));
    safe = where(ignored, zeros_like(t), t);  // any class: its loss is zeroed below
  }
  DynTensor loss = neg(squeeze(gather(input, 1, unsqueeze(safe, 1)), 1));
  DynTensor w;
  if (weight.defined()) w = reshape(index_select(weight, 0, reshape(safe, Shape{-1})), t.shape());
  if (ignored.defined()) {
    const DynTensor keep = logical_not(ignored);
    w = w.defined() ? where(keep, w, 0.0) : cast(keep, input.dtype());
  }
  if (w.defined()) loss = mul(loss, w);
  const std::string reduction = c.attr_string("reduction", "mean");
  if (reduction == "none") return loss;
  if (reduction == "sum") return sum(loss);
  if (reduction != "mean") c.fail("unsupported: reduction '", reduction, "'");
  return w.defined() ? div(sum(loss), sum(w)) : mean(loss);
}

std::vector<Value> nll_loss(OpContext& c) {
  return one(nll(c, c.in(0), c.in(1), c.has(2) ? c.in(2) : DynTensor()));
}

std::vector<Value> softmax_cross_entropy(OpContext& c) {
  const DynTensor log_prob = log_softmax(c.in(0), 1);
  return {Value::of(nll(c, log_prob, c.in(1), c.has(2) ? c.in(2) : DynTensor())),
          Value::of(log_prob)};
}

// ---- RNN, GRU, LSTM -------------------------------------------------------------------------
//
// One loop over time per direction. X's products with W are computed for every step at once;
// each step adds H's product with R. sequence_lens masks the steps past each sequence's end:
// the state holds and Y is zero there (a reverse pass starts at each sequence's own end).

struct Activation {
  std::string name;
  double alpha = 0, beta = 0;
};

DynTensor activate(const OpContext& c, const Activation& a, const DynTensor& x) {
  const std::string& f = a.name;
  if (f == "Sigmoid") return sigmoid(x);
  if (f == "Tanh") return tanh(x);
  if (f == "Relu") return relu(x);
  if (f == "Affine") return add(mul(x, a.alpha), a.beta);
  if (f == "LeakyRelu") return where(ge(x, 0.0), x, mul(x, a.alpha));
  if (f == "ThresholdedRelu") return where(gt(x, a.alpha), x, 0.0);
  if (f == "ScaledTanh") return mul(tanh(mul(x, a.beta)), a.alpha);
  if (f == "HardSigmoid") return clamp(add(mul(x, a.alpha), a.beta), 0.0, 1.0);
  if (f == "Elu") return where(ge(x, 0.0), x, mul(expm1(x), a.alpha));
  if (f == "Softsign") return div(x, add(abs(x), 1.0));
  if (f == "Softplus") return softplus(x, 1.0);
  c.fail("unsupported: activation '", f, "'");
}

/// The activations of every direction (`per_dir` each), the defaults filled in; alpha and beta
/// are taken in order by the activations that use them (as ONNX Runtime reads them).
std::vector<Activation> activations(const OpContext& c, const std::vector<std::string>& defaults,
                                    int dirs) {
  std::vector<std::string> names;
  if (c.has_attr("activations")) names = c.attr("activations").strings;
  if (names.empty()) {
    for (int d = 0; d < dirs; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  }
  if (names.size() != defaults.size() * dirs) {
    c.fail("activations needs ", defaults.size() * dirs, " names, got ", names.size());
  }
  const std::vector<double> alphas = c.attr_floats("activation_alpha"),
                            betas = c.attr_floats("activation_beta");
  size_t ia = 0, ib = 0;
  std::vector<Activation> out;
  for (std::string n : names) {
    // ONNX spells them in CamelCase; some exporters write lower case.
    static const char* known[] = {
        "Sigmoid",    "Tanh",        "Relu", "Affine",   "LeakyRelu", "ThresholdedRelu",
        "ScaledTanh", "HardSigmoid", "Elu",  "Softsign", "Softplus"};
    for (const char* k : known) {
      std::string lower = k, ln = n;
      std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
      std::transform(ln.begin(), ln.end(), ln.begin(), ::tolower);
      if (lower == ln) n = k;
    }
    Activation a{n};
    const bool uses_alpha = n == "Affine" || n == "LeakyRelu" || n == "ThresholdedRelu" ||
                            n == "ScaledTanh" || n == "HardSigmoid" || n == "Elu";
    const bool uses_beta = n == "Affine" || n == "ScaledTanh" || n == "HardSigmoid";
    const double alpha_default = n == "LeakyRelu" ? 0.01 : n == "HardSigmoid" ? 0.2 : 1.0;
    a.alpha = uses_alpha && ia < alphas.size() ? alphas[ia++] : alpha_default;
    a.beta = uses_beta && ib < betas.size() ? betas[ib++] : (n == "HardSigmoid" ? 0.5 : 0.0);
    out.push_back(a);
  }
  return out;
}

enum class Cell : uint8_t { Rnn, Gru, Lstm };

struct RnnState {
  DynTensor h, c;  // [batch, hidden]; c for LSTM only
};

/// One direction's weights, transposed for h @ R, and the cell's settings.
struct RnnDirection {
  Cell cell = Cell::Rnn;
  int64_t hidden = 0;
  const Activation* f = nullptr;  // f, g (GRU, LSTM), h (LSTM)
  DynTensor rt, rb, p;            // R^T [hidden, gates hidden]; R's bias; LSTM peepholes (i, o, f)
  double clip = 0;
  bool linear_before_reset = false, input_forget = false;

  DynTensor gate(const DynTensor& t, int k) const { return narrow(t, -1, k * hidden, hidden); }
  DynTensor act(const OpContext& c, int k, const DynTensor& t) const {
    return activate(c, f[k], clip > 0 ? clamp(t, -clip, clip) : t);
  }
  DynTensor with_bias(DynTensor t, int64_t from, int64_t count) const {
    return rb.defined() ? add(t, narrow(rb, 0, from, count)) : t;
  }

  /// The next state from xw = x_t W^T + W's bias ([batch, gates hidden]).
  RnnState step(const OpContext& c, const DynTensor& xw, const RnnState& s) const {
    if (cell == Cell::Rnn) return {act(c, 0, add(xw, with_bias(matmul(s.h, rt), 0, hidden))), {}};
    if (cell == Cell::Gru) {  // gates z, r, h
      const DynTensor hzr = with_bias(matmul(s.h, narrow(rt, 1, 0, 2 * hidden)), 0, 2 * hidden);
      const DynTensor z = act(c, 0, add(gate(xw, 0), gate(hzr, 0)));
      const DynTensor r = act(c, 0, add(gate(xw, 1), gate(hzr, 1)));
      const DynTensor rh = narrow(rt, 1, 2 * hidden, hidden);
      const DynTensor hh = linear_before_reset
                               ? mul(r, with_bias(matmul(s.h, rh), 2 * hidden, hidden))
                               : with_bias(matmul(mul(r, s.h), rh), 2 * hidden, hidden);
      const DynTensor h = act(c, 1, add(gate(xw, 2), hh));
      return {add(mul(sub(1.0, z), h), mul(z, s.h)), {}};
    }
    // LSTM: gates i, o, f, c; peepholes read the previous cell (i, f) and the new one (o).
    const DynTensor a = add(xw, with_bias(matmul(s.h, rt), 0, 4 * hidden));
    DynTensor ai = gate(a, 0), ao = gate(a, 1), af = gate(a, 2);
    if (p.defined()) {
      ai = add(ai, mul(narrow(p, 0, 0, hidden), s.c));
      af = add(af, mul(narrow(p, 0, 2 * hidden, hidden), s.c));
    }
    const DynTensor i = act(c, 0, ai);
    const DynTensor f_t = input_forget ? sub(1.0, i) : act(c, 0, af);
    RnnState next;
    next.c = add(mul(f_t, s.c), mul(i, act(c, 1, gate(a, 3))));
    if (p.defined()) ao = add(ao, mul(narrow(p, 0, hidden, hidden), next.c));
    next.h = mul(act(c, 0, ao), activate(c, f[2], next.c));
    return next;
  }
};

std::vector<Value> recurrent(OpContext& c, Cell cell) {
  const int gates = cell == Cell::Rnn ? 1 : cell == Cell::Gru ? 3 : 4;
  const bool batch_first = c.attr_int("layout", 0) != 0;
  DynTensor x = c.in(0);
  const DynTensor& w = c.in(1);
  const DynTensor& r = c.in(2);
  if (x.rank() != 3 || w.rank() != 3 || r.rank() != 3) {
    c.fail("X ", x.shape(), ", W ", w.shape(), " and R ", r.shape(), " must be 3-D");
  }
  if (batch_first) x = transpose(x, 0, 1);  // [seq, batch, input]
  const std::string direction = c.attr_string("direction", "forward");
  const int dirs = direction == "bidirectional" ? 2 : 1;
  if (direction != "forward" && direction != "reverse" && dirs != 2) {
    c.fail("unsupported: direction '", direction, "'");
  }
  const int64_t hidden = c.attr_int("hidden_size", r.size(2)), steps = x.size(0), batch = x.size(1);
  if (w.size(0) != dirs || w.size(1) != gates * hidden || r.size(1) != gates * hidden ||
      r.size(2) != hidden) {
    c.fail("W ", w.shape(), " or R ", r.shape(), " does not match ", dirs, " direction(s), ", gates,
           " gate(s) and hidden_size ", hidden);
  }
  const std::vector<std::string> defaults =
      cell == Cell::Rnn   ? std::vector<std::string>{"Tanh"}
      : cell == Cell::Gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                          : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  const std::vector<Activation> acts = activations(c, defaults, dirs);
  auto initial = [&](size_t i) {
    if (!c.has(i)) return zeros(Shape{dirs, batch, hidden}, x.dtype(), x.device());
    return batch_first ? transpose(c.in(i), 0, 1) : c.in(i);
  };
  const DynTensor h0 = initial(5), c0 = cell == Cell::Lstm ? initial(6) : DynTensor();
  // valid[t]: [batch, 1], true while step t is inside each sequence.
  DynTensor valid;
  if (c.has(4)) {
    valid = lt(reshape(arange(0, steps, 1, DType::i64, x.device()), Shape{steps, 1, 1}),
               reshape(cast(c.in(4), DType::i64), Shape{1, batch, 1}));
  }
  std::vector<DynTensor> ys, hs, cs;
  for (int d = 0; d < dirs; ++d) {
    RnnDirection k;
    k.cell = cell;
    k.hidden = hidden;
    k.f = &acts[d * defaults.size()];
    k.clip = c.attr_float("clip", 0.0);
    k.linear_before_reset = c.attr_int("linear_before_reset", 0) != 0;
    k.input_forget = c.attr_int("input_forget", 0) != 0;
    k.rt = transpose(select(r, 0, d), 0, 1);
    DynTensor xw = matmul(x, transpose(select(w, 0, d), 0, 1));  // [seq, batch, gates hidden]
    if (c.has(3)) {
      const DynTensor b = select(c.in(3), 0, d);
      xw = add(xw, narrow(b, 0, 0, gates * hidden));
      k.rb = narrow(b, 0, gates * hidden, gates * hidden);
    }
    if (cell == Cell::Lstm && c.has(7)) k.p = select(c.in(7), 0, d);
    RnnState s{select(h0, 0, d), cell == Cell::Lstm ? select(c0, 0, d) : DynTensor()};
    std::vector<DynTensor> y(steps);
    const bool reverse = direction == "reverse" || d == 1;
    for (int64_t i = 0; i < steps; ++i) {
      const int64_t t = reverse ? steps - 1 - i : i;
      RnnState next = k.step(c, select(xw, 0, t), s);
      if (valid.defined()) {  // past a sequence's end: the state holds and Y is zero
        const DynTensor v = select(valid, 0, t);
        y[t] = where(v, next.h, 0.0);
        next.h = where(v, next.h, s.h);
        if (next.c.defined()) next.c = where(v, next.c, s.c);
      } else {
        y[t] = next.h;
      }
      s = next;
    }
    ys.push_back(unsqueeze(stack(y, 0), 1));  // [seq, 1, batch, hidden]
    hs.push_back(s.h);
    cs.push_back(s.c);
  }
  DynTensor y = ys.size() == 1 ? ys[0] : cat(ys, 1);
  DynTensor yh = stack(hs, 0);
  DynTensor yc = cell == Cell::Lstm ? stack(cs, 0) : DynTensor();
  if (batch_first) {
    y = permute(y, {2, 0, 1, 3});
    yh = transpose(yh, 0, 1);
    if (yc.defined()) yc = transpose(yc, 0, 1);
  }
  std::vector<Value> out{Value::of(y), Value::of(yh)};
  if (yc.defined()) out.push_back(Value::of(yc));
  return out;
}

// ---- GridSample -----------------------------------------------------------------------------

/// A tap coordinate `c` (float, integral values) of a dim of `size` moved inside as `padding`
/// says (PyTorch's compute_coordinates), and whether it reads a value (zeros: inside only).
std::pair<DynTensor, DynTensor> bounded(const DynTensor& c, int64_t size, GridPadding padding,
                                        bool align_corners) {
  const double hi = static_cast<double>(size - 1);
  DynTensor v = c;
  if (padding == GridPadding::Reflection && size > 1) {
    // Reflect about the border pixels' centres (align_corners) or their outer edges.
    const double lo2 = align_corners ? 0 : -1, hi2 = align_corners ? 2 * hi : 2.0 * size - 1;
    const double min = lo2 / 2, span = (hi2 - lo2) / 2;
    const DynTensor in = abs(sub(v, min));
    const DynTensor extra = fmod(in, span), flips = floor(div(in, span));
    v = where(eq(remainder(flips, 2.0), 0.0), add(extra, min), add(sub(span, extra), min));
  }
  DynTensor valid;
  if (padding == GridPadding::Zeros) valid = logical_and(ge(v, 0.0), le(v, hi));
  return {clamp(v, 0.0, hi), valid};
}

/// Bicubic grid sampling of x [N, C, H, W] (PyTorch's: Keys' kernel, A = -0.75, each of the
/// 4 x 4 taps padded on its own).
DynTensor grid_sample_bicubic(const DynTensor& x, const DynTensor& grid, GridPadding padding,
                              bool align_corners) {
  const int64_t n = x.size(0), ch = x.size(1), h = x.size(2), w = x.size(3);
  const int64_t ho = grid.size(1), wo = grid.size(2);
  auto unnormalise = [&](const DynTensor& g, int64_t size) {
    return align_corners ? mul(add(g, 1.0), (size - 1) / 2.0)
                         : div(sub(mul(add(g, 1.0), static_cast<double>(size)), 1.0), 2.0);
  };
  const DynTensor ix = unnormalise(select(grid, 3, 0), w), iy = unnormalise(select(grid, 3, 1), h);
  const DynTensor x0 = floor(ix), y0 = floor(iy);
  auto coeffs = [](const DynTensor& t) {
    const double a = -0.75;
    std::vector<DynTensor> k;
    for (int i = 0; i < 4; ++i) {
      const DynTensor d = abs(sub(t, static_cast<double>(i - 1)));  // distance to tap i
      const DynTensor near = add(mul(mul(sub(mul(d, a + 2), a + 3), d), d), 1.0);
      const DynTensor far = sub(mul(add(mul(sub(mul(d, a), 5 * a), d), 8 * a), d), 4 * a);
      k.push_back(where(le(d, 1.0), near, far));
    }
    return k;
  };
  const std::vector<DynTensor> wx = coeffs(sub(ix, x0)), wy = coeffs(sub(iy, y0));
  const DynTensor flat = reshape(x, Shape{n, ch, h * w});
  DynTensor y;
  for (int j = 0; j < 4; ++j) {
    const auto [yy, vy] = bounded(add(y0, j - 1.0), h, padding, align_corners);
    for (int i = 0; i < 4; ++i) {
      const auto [xx, vx] = bounded(add(x0, i - 1.0), w, padding, align_corners);
      const DynTensor idx =
          reshape(cast(add(mul(yy, static_cast<double>(w)), xx), DType::i64), Shape{n, 1, ho * wo});
      const DynTensor v =
          reshape(gather(flat, 2, expand(idx, Shape{n, ch, ho * wo})), Shape{n, ch, ho, wo});
      DynTensor k = mul(wx[i], wy[j]);
      if (vx.defined()) k = where(logical_and(vx, vy), k, 0.0);
      const DynTensor term = mul(v, unsqueeze(k, 1));
      y = y.defined() ? add(y, term) : term;
    }
  }
  return y;
}

std::vector<Value> grid_sample_op(OpContext& c) {
  const DynTensor& x = c.in(0);
  const DynTensor& grid = c.in(1);
  const std::string mode = c.attr_string("mode", c.opset() >= 20 ? "linear" : "bilinear"),
                    pad_mode = c.attr_string("padding_mode", "zeros");
  const bool align = c.attr_int("align_corners", 0) != 0;
  GridPadding padding = GridPadding::Zeros;
  if (pad_mode == "border")
    padding = GridPadding::Border;
  else if (pad_mode == "reflection")
    padding = GridPadding::Reflection;
  else if (pad_mode != "zeros")
    c.fail("unsupported: padding_mode '", pad_mode, "'");
  if (x.rank() != 4 && x.rank() != 5) c.fail("unsupported: ", x.rank(), "-D input");
  if (mode == "bicubic" || mode == "cubic") {
    if (x.rank() != 4) c.fail("unsupported: cubic sampling of a ", x.rank(), "-D input");
    return one(grid_sample_bicubic(x, grid, padding, align));
  }
  GridMode m = GridMode::Bilinear;
  if (mode == "nearest")
    m = GridMode::Nearest;
  else if (mode != "bilinear" && mode != "linear")
    c.fail("unsupported: mode '", mode, "'");
  return one(grid_sample(x, grid, m, padding, align));
}

// ---- RoiAlign -------------------------------------------------------------------------------
//
// Each output bin averages (or takes the max of) a grid of bilinear samples, all gathered at
// once. With sampling_ratio 0 the grid adapts to each ROI (ceil(roi size / bins)); the samples
// are laid out for the largest grid (one host read) and the extra ones masked out.

std::vector<Value> roi_align(OpContext& c) {
  const DynTensor& x = c.in(0);
  const DynTensor& rois = c.in(1);
  if (x.rank() != 4 || rois.rank() != 2 || rois.size(1) != 4) {
    c.fail("X ", x.shape(), " must be [N, C, H, W] and rois ", rois.shape(), " [R, 4]");
  }
  const int64_t ch = x.size(1), h = x.size(2), w = x.size(3), nr = rois.size(0);
  const int64_t oh = c.attr_int("output_height", 1), ow = c.attr_int("output_width", 1);
  const int64_t ratio = c.attr_int("sampling_ratio", 0);
  const double scale = c.attr_float("spatial_scale", 1.0);
  const std::string mode = c.attr_string("mode", "avg");
  const bool half_pixel = c.opset() >= 16 && c.attr_string("coordinate_transformation_mode",
                                                           "half_pixel") == "half_pixel";
  if (mode != "avg" && mode != "max") c.fail("unsupported: mode '", mode, "'");
  const DType dt = x.dtype();
  const DynTensor b = sub(mul(cast(rois, dt), scale), half_pixel ? 0.5 : 0.0);
  auto col = [&](int k) { return narrow(b, 1, k, 1); };  // [R, 1]
  DynTensor roi_w = sub(col(2), col(0)), roi_h = sub(col(3), col(1));
  if (!half_pixel) {
    roi_w = clamp_min(roi_w, 1.0);
    roi_h = clamp_min(roi_h, 1.0);
  }
  const DynTensor bin_w = div(roi_w, static_cast<double>(ow)),
                  bin_h = div(roi_h, static_cast<double>(oh));
  DynTensor grid_w, grid_h;  // [R, 1] samples per bin
  int64_t gw = ratio, gh = ratio;
  if (ratio > 0) {
    grid_w = full(Shape{nr, 1}, static_cast<double>(ratio), dt, x.device());
    grid_h = grid_w;
  } else {
    grid_w = ceil(bin_w);
    grid_h = ceil(bin_h);
    gw = nr ? std::max<int64_t>(1, static_cast<int64_t>(amax(grid_w).item<double>())) : 1;
    gh = nr ? std::max<int64_t>(1, static_cast<int64_t>(amax(grid_h).item<double>())) : 1;
  }
  // Sample positions along one axis: [R, bins * grid], and which of them are real.
  auto positions = [&](const DynTensor& start, const DynTensor& bin, const DynTensor& grid,
                       int64_t bins, int64_t g) {
    std::vector<double> pb, ps;
    for (int64_t p = 0; p < bins; ++p) {
      for (int64_t i = 0; i < g; ++i) {
        pb.push_back(static_cast<double>(p));
        ps.push_back(static_cast<double>(i));
      }
    }
    const DynTensor bidx = doubles(pb, Shape{1, bins * g}, dt, x.device()),
                    sidx = doubles(ps, Shape{1, bins * g}, dt, x.device());
    const DynTensor pos = add(add(start, mul(bidx, bin)), div(mul(add(sidx, 0.5), bin), grid));
    return std::pair{pos, lt(sidx, grid)};
  };
  const auto [py, vy] = positions(col(1), bin_h, grid_h, oh, gh);
  const auto [px, vx] = positions(col(0), bin_w, grid_w, ow, gw);
  // Bilinear taps of one axis (ONNX Runtime's rules: outside [-1, size] reads nothing).
  struct Axis {
    DynTensor lo, hi, wlo, whi, inside;
  };
  auto axis = [&](const DynTensor& p, int64_t size) {
    Axis a;
    a.inside = logical_and(ge(p, -1.0), le(p, static_cast<double>(size)));
    const DynTensor q = clamp_min(p, 0.0);
    const DynTensor lo = floor(q);
    const DynTensor at_end = ge(lo, static_cast<double>(size - 1));
    a.lo = where(at_end, full_like(lo, static_cast<double>(size - 1)), lo);
    a.hi = where(at_end, a.lo, add(lo, 1.0));
    const DynTensor frac = where(at_end, zeros_like(q), sub(q, lo));
    a.whi = frac;
    a.wlo = sub(1.0, frac);
    return a;
  };
  const Axis ay = axis(py, h), ax = axis(px, w);
  const int64_t sy = oh * gh, sx = ow * gw;
  // [R, sy, sx] grids of the four corners.
  auto grid2 = [&](const DynTensor& a, const DynTensor& b2) {
    return mul(unsqueeze(a, 2), unsqueeze(b2, 1));
  };
  const DynTensor xs = reshape(index_select(x, 0, cast(c.in(2), DType::i64)), Shape{nr, ch, h * w});
  auto both = [](const DynTensor& a, const DynTensor& b2) {
    return logical_and(unsqueeze(a, 2), unsqueeze(b2, 1));
  };
  const DynTensor valid =
      both(logical_and(vy, ay.inside), logical_and(vx, ax.inside));  // [R, sy, sx]
  std::vector<DynTensor> terms;
  for (int j = 0; j < 2; ++j) {
    for (int i = 0; i < 2; ++i) {
      const DynTensor yy = j ? ay.hi : ay.lo, xx = i ? ax.hi : ax.lo;
      const DynTensor idx =
          cast(add(mul(unsqueeze(yy, 2), static_cast<double>(w)), unsqueeze(xx, 1)),
               DType::i64);  // [R, sy, sx]
      const DynTensor v =
          gather(xs, 2, expand(reshape(idx, Shape{nr, 1, sy * sx}), Shape{nr, ch, sy * sx}));
      const DynTensor k = where(valid, grid2(j ? ay.whi : ay.wlo, i ? ax.whi : ax.wlo), 0.0);
      terms.push_back(mul(reshape(v, Shape{nr, ch, sy, sx}), unsqueeze(k, 1)));
    }
  }
  const Shape bins{nr, ch, oh, gh, ow, gw};
  const DynTensor real = unsqueeze(both(vy, vx), 1);  // samples that exist (adaptive grids)
  if (mode == "avg") {
    const DynTensor total = add(add(terms[0], terms[1]), add(terms[2], terms[3]));
    const DynTensor count = clamp_min(mul(grid_h, grid_w), 1.0);  // [R, 1]
    return one(div(sum(reshape(total, bins), {3, 5}), reshape(count, Shape{nr, 1, 1, 1})));
  }
  // max: ONNX Runtime's: the largest weighted corner of every sample.
  DynTensor m = maximum(maximum(terms[0], terms[1]), maximum(terms[2], terms[3]));
  m = where(real, m, -std::numeric_limits<double>::infinity());
  return one(amax(reshape(m, bins), {3, 5}));
}

// ---- NonMaxSuppression ----------------------------------------------------------------------
//
// Greedy selection per batch and class. The output's size depends on the boxes, so they and
// the scores are read to the host (as nonzero() must); the result is a new i64 tensor.

std::vector<Value> non_max_suppression(OpContext& c) {
  const DynTensor& boxes_t = c.in(0);
  const DynTensor& scores_t = c.in(1);
  if (boxes_t.rank() != 3 || boxes_t.size(2) != 4 || scores_t.rank() != 3 ||
      scores_t.size(0) != boxes_t.size(0) || scores_t.size(2) != boxes_t.size(1)) {
    c.fail("boxes ", boxes_t.shape(), " must be [B, N, 4] and scores ", scores_t.shape(),
           " [B, C, N]");
  }
  const int64_t nb = boxes_t.size(0), nbox = boxes_t.size(1), ncls = scores_t.size(1);
  const int64_t max_out = c.has(2) && c.in(2).numel() > 0 ? c.ints(2)[0] : 0;
  const double iou_thr = given(c, 3) ? c.scalar(3) : 0.0;
  const bool has_score_thr = given(c, 4);
  const double score_thr = has_score_thr ? c.scalar(4) : 0.0;
  const bool center = c.attr_int("center_point_box", 0) != 0;
  const std::vector<double> boxes = boxes_t.to_vector<double>(),
                            scores = scores_t.to_vector<double>();
  // Corners (y1, x1, y2, x2) ordered min to max.
  auto corners = [&](int64_t bi, int64_t k) {
    const double* p = &boxes[(bi * nbox + k) * 4];
    std::array<double, 4> r;
    if (center) {
      r = {p[1] - p[3] / 2, p[0] - p[2] / 2, p[1] + p[3] / 2, p[0] + p[2] / 2};
    } else {
      r = {std::min(p[0], p[2]), std::min(p[1], p[3]), std::max(p[0], p[2]), std::max(p[1], p[3])};
    }
    return r;
  };
  auto suppresses = [&](const std::array<double, 4>& a, const std::array<double, 4>& b) {
    const double ih = std::min(a[2], b[2]) - std::max(a[0], b[0]),
                 iw = std::min(a[3], b[3]) - std::max(a[1], b[1]);
    if (ih <= 0 || iw <= 0) return false;
    const double area_a = (a[2] - a[0]) * (a[3] - a[1]), area_b = (b[2] - b[0]) * (b[3] - b[1]);
    const double inter = ih * iw, uni = area_a + area_b - inter;
    if (area_a <= 0 || area_b <= 0 || uni <= 0) return false;
    return inter / uni > iou_thr;
  };
  Ints out;
  for (int64_t bi = 0; bi < nb; ++bi) {
    for (int64_t ci = 0; ci < ncls && max_out > 0; ++ci) {
      const double* s = &scores[(bi * ncls + ci) * nbox];
      Ints order;
      for (int64_t k = 0; k < nbox; ++k) {
        if (!has_score_thr || s[k] > score_thr) order.push_back(k);
      }
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t b) { return s[a] > s[b]; });
      std::vector<std::array<double, 4>> kept;
      for (int64_t k : order) {
        if (static_cast<int64_t>(kept.size()) >= max_out) break;
        const std::array<double, 4> box = corners(bi, k);
        if (std::any_of(kept.begin(), kept.end(),
                        [&](const auto& q) { return suppresses(q, box); }))
          continue;
        kept.push_back(box);
        out.insert(out.end(), {bi, ci, k});
      }
    }
  }
  return one(int64s(out, Shape{static_cast<int64_t>(out.size() / 3), 3}, c.device()));
}

// ---- Integer and quantised products ---------------------------------------------------------
//
// Ember computes these in f64 (exact for every 8-bit product sum up to 2^53) and rounds back:
// int32 accumulators for ConvInteger / MatMulInteger, the output zero point's 8-bit type for
// QLinearConv / QLinearMatMul (round half to even, saturated).

DynTensor shifted(const DynTensor& v, const DynTensor& zero_point) {
  const DynTensor f = cast(v, DType::f64);
  return zero_point.defined() ? sub(f, cast(zero_point, DType::f64)) : f;
}

DynTensor optional_in(const OpContext& c, size_t i) { return c.has(i) ? c.in(i) : DynTensor(); }

/// A per-row zero point or scale ([M] against [..., M, K]) shaped to broadcast.
DynTensor per_row(const DynTensor& v, int rank) {
  if (!v.defined() || v.rank() == 0 || v.numel() == 1 || rank < 2) return v;
  return unsqueeze(v, -1);
}

/// A per-output-channel zero point or scale ([M]) for a conv weight [M, C, k...].
DynTensor per_out_channel(const DynTensor& v, int rank) {
  if (!v.defined() || v.rank() == 0 || v.numel() == 1) return v;
  return per_channel(v, rank + 1);  // [M, 1, ...]: rank dims
}

DynTensor quantise(const DynTensor& real, const DynTensor& zero_point) {
  const DType dt = zero_point.defined() ? zero_point.dtype() : DType::u8;
  const double lo = dt == DType::i8 ? -128 : 0, hi = dt == DType::i8 ? 127 : 255;
  DynTensor q = round(real);
  if (zero_point.defined()) q = add(q, cast(zero_point, DType::f64));
  return cast(clamp(q, lo, hi), dt);
}

std::vector<Value> matmul_integer(OpContext& c) {
  const DynTensor& a = c.in(0);
  const DynTensor a_zp = per_row(optional_in(c, 2), a.rank());
  return one(cast(matmul(shifted(a, a_zp), shifted(c.in(1), optional_in(c, 3))), DType::i32));
}

std::vector<Value> conv_integer(OpContext& c) {
  const DynTensor& w = c.in(1);
  const DynTensor x = shifted(c.in(0), optional_in(c, 2));
  return one(
      cast(onnx_conv(c, x, shifted(w, per_out_channel(optional_in(c, 3), w.rank())), DynTensor()),
           DType::i32));
}

std::vector<Value> qlinear_matmul(OpContext& c) {
  const DynTensor& a = c.in(0);
  const DynTensor& b = c.in(3);
  const DynTensor acc = matmul(shifted(a, per_row(c.in(2), a.rank())), shifted(b, c.in(5)));
  const DynTensor k =
      div(mul(cast(per_row(c.in(1), a.rank()), DType::f64), cast(c.in(4), DType::f64)),
          cast(c.in(6), DType::f64));
  return one(quantise(mul(acc, k), c.in(7)));
}

std::vector<Value> qlinear_conv(OpContext& c) {
  const DynTensor& w = c.in(3);
  const DynTensor x = shifted(c.in(0), c.in(2));
  DynTensor acc = onnx_conv(c, x, shifted(w, per_out_channel(c.in(5), w.rank())), DynTensor());
  if (c.has(8)) acc = add(acc, per_channel(cast(c.in(8), DType::f64), acc.rank()));
  DynTensor w_scale = cast(c.in(4), DType::f64);
  if (w_scale.numel() > 1) w_scale = per_channel(w_scale, acc.rank());
  const DynTensor k = div(mul(cast(c.in(1), DType::f64), w_scale), cast(c.in(6), DType::f64));
  return one(quantise(mul(acc, k), c.in(7)));
}

}  // namespace

void register_nn_ops(Registry& r) {
  r.add("Conv", conv);
  r.add(kFusedDomain, "Conv+Relu", conv_relu);
  r.add("ConvTranspose", conv_transpose);
  r.add("MaxPool", max_pool_op);
  r.add("AveragePool", average_pool);
  r.add("LpPool", lp_pool);
  r.add("GlobalAveragePool", global_average_pool);
  r.add("GlobalMaxPool", global_max_pool);
  r.add("GlobalLpPool", global_lp_pool);
  r.add("", "MaxUnpool", max_unpool, 9);
  r.add("Gemm", gemm);
  r.add("Softmax", [](OpContext& c) {
    return softmax_like(c, [](const DynTensor& x, int64_t a) { return softmax(x, a); });
  });
  r.add("LogSoftmax", [](OpContext& c) {
    return softmax_like(c, [](const DynTensor& x, int64_t a) { return log_softmax(x, a); });
  });
  r.add("Hardmax", [](OpContext& c) { return softmax_like(c, hardmax); });
  r.add("BatchNormalization", batch_norm);
  r.add("InstanceNormalization", instance_norm);
  r.add("", "LayerNormalization", layer_norm, 17);
  r.add("", "GroupNormalization", group_norm, 18);
  r.add("LRN", lrn);
  r.add("", "MeanVarianceNormalization", mean_variance_norm, 9);
  r.add("Dropout", dropout);
  r.add("", "Einsum", einsum_op, 12);
  r.add("", "Resize", resize, 10);
  r.add("", "Upsample", upsample, 7);
  r.add("", "NegativeLogLikelihoodLoss", nll_loss, 12);
  r.add("", "SoftmaxCrossEntropyLoss", softmax_cross_entropy, 12);
  r.add("RNN", [](OpContext& c) { return recurrent(c, Cell::Rnn); });
  r.add("GRU", [](OpContext& c) { return recurrent(c, Cell::Gru); });
  r.add("LSTM", [](OpContext& c) { return recurrent(c, Cell::Lstm); });
  r.add("", "GridSample", grid_sample_op, 16);
  r.add("", "RoiAlign", roi_align, 10);
  r.add("", "NonMaxSuppression", non_max_suppression, 10);
  r.add("", "MatMulInteger", matmul_integer, 10);
  r.add("", "ConvInteger", conv_integer, 10);
  r.add("", "QLinearMatMul", qlinear_matmul, 10);
  r.add("", "QLinearConv", qlinear_conv, 10);
}

}  // namespace ember::onnx
