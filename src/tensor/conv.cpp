// Convolution and pooling: argument parsing and validation (errors name the op and every shape),
// output sizes, and the calls into the backend's Conv and Pool families. Gradients are in
// src/autodiff/grad_conv.cpp.
#include "ember/tensor/ops/conv.hpp"

#include <string>

#include "ember/tensor/autocast.hpp"
#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "ember/tensor/ops/reduce.hpp"
#include "internal.hpp"
#include "layout.hpp"
#include "record.hpp"

namespace ember {
namespace {

std::string list(const int64_t* v, int n) {
  std::string s = "[";
  for (int i = 0; i < n; ++i) {
    if (i) s += ", ";
    s += std::to_string(v[i]);
  }
  return s + "]";
}
std::string list(const SpatialArg& v) { return list(v.data(), static_cast<int>(v.size())); }

// PyTorch's int-or-tuple argument: one value for every spatial dim or one per dim, each >= min.
void spatial_arg(const std::string& op, const char* what, const SpatialArg& v, int spatial,
                 int64_t min, int64_t* dst) {
  EMBER_CHECK(v.size() == 1 || v.size() == static_cast<size_t>(spatial), "[", op, "] ", what,
              " needs 1 or ", spatial, " values, got ", list(v));
  for (int i = 0; i < spatial; ++i) {
    dst[i] = v.size() == 1 ? v[0] : v[static_cast<size_t>(i)];
    EMBER_CHECK(dst[i] >= min, "[", op, "] ", what, " must be at least ", min, ", got ", list(v));
  }
}

std::string conv_name(int spatial, bool transposed) {
  return std::string(transposed ? "conv_transpose" : "conv") + std::to_string(spatial) + "d";
}

std::string pool_name(const char* kind, int spatial) {
  return std::string(kind) + std::to_string(spatial) + "d";
}

void check_float(const DynTensor& t, const std::string& op, const char* what) {
  EMBER_CHECK(is_floating(t.dtype()), "[", op, "] ", what, " must be floating, got ", t.dtype());
}

// Checks the weight's rank and the channel counts of x (batched or not) against it; returns the
// output channel count. Conv weight [O, C / g, k...]; transposed weight [C, O / g, k...].
int64_t check_channels(const std::string& op, const DynTensor& x, const DynTensor& w, int64_t g,
                       bool transposed) {
  const int64_t c = x.size(x.rank() == w.rank() ? 1 : 0);
  EMBER_CHECK(g >= 1, "[", op, "] groups must be at least 1, got ", g);
  if (!transposed) {
    EMBER_CHECK(w.size(0) % g == 0, "[", op, "] weight has ", w.size(0),
                " output channels, not divisible by groups ", g, ": weight ", w.shape());
    EMBER_CHECK(c == w.size(1) * g, "[", op, "] input has ", c, " channels but weight expects ",
                w.size(1) * g, " (groups ", g, "): input ", x.shape(), ", weight ", w.shape());
    return w.size(0);
  }
  EMBER_CHECK(c == w.size(0), "[", op, "] input has ", c, " channels but weight expects ",
              w.size(0), ": input ", x.shape(), ", weight ", w.shape());
  EMBER_CHECK(c % g == 0, "[", op, "] input channels ", c, " are not divisible by groups ", g,
              ": input ", x.shape(), ", weight ", w.shape());
  return w.size(1) * g;
}

// conv1d/2d/3d and conv_transpose accept unbatched [C, *spatial] inputs, as PyTorch does.
template <class F>
DynTensor maybe_unbatched(const DynTensor& x, const DynTensor& w, const ConvParams& p,
                          bool transposed, const std::string& op, const F& f) {
  const int spatial = p.spatial;
  detail::check_defined(x, op.c_str());
  detail::check_defined(w, op.c_str(), "weight");
  EMBER_CHECK(w.rank() == spatial + 2, "[", op, "] expects a ", spatial + 2, "-D weight, got ",
              w.shape());
  EMBER_CHECK(x.rank() == spatial + 1 || x.rank() == spatial + 2, "[", op, "] expects a ",
              spatial + 2, "-D input [N, C, ",
              spatial == 1   ? "L"
              : spatial == 2 ? "H, W"
                             : "D, H, W",
              "] or a ", spatial + 1, "-D unbatched one, got ", x.shape());
  if (x.rank() == spatial + 2) return f(x);
  check_channels(op, x, w, p.groups, transposed);  // names the unbatched shape on failure
  return squeeze(f(unsqueeze(x, 0)), 0);
}

DynTensor conv_nd(int spatial, const DynTensor& x, const DynTensor& w, const DynTensor& bias,
                  const SpatialArg& stride, const SpatialArg& padding, const SpatialArg& dilation,
                  int64_t groups, bool relu) {
  const std::string op = conv_name(spatial, false);
  ConvParams p;
  p.spatial = spatial;
  spatial_arg(op, "stride", stride, spatial, 1, p.stride);
  spatial_arg(op, "padding", padding, spatial, 0, p.padding);
  spatial_arg(op, "dilation", dilation, spatial, 1, p.dilation);
  p.groups = groups;
  p.relu = relu;
  return maybe_unbatched(x, w, p, false, op,
                         [&](const DynTensor& xb) { return convolution(xb, w, bias, p, false); });
}

DynTensor conv_transpose_nd(int spatial, const DynTensor& x, const DynTensor& w,
                            const DynTensor& bias, const SpatialArg& stride,
                            const SpatialArg& padding, const SpatialArg& output_padding,
                            int64_t groups, const SpatialArg& dilation) {
  const std::string op = conv_name(spatial, true);
  ConvParams p;
  p.spatial = spatial;
  spatial_arg(op, "stride", stride, spatial, 1, p.stride);
  spatial_arg(op, "padding", padding, spatial, 0, p.padding);
  spatial_arg(op, "output_padding", output_padding, spatial, 0, p.output_padding);
  spatial_arg(op, "dilation", dilation, spatial, 1, p.dilation);
  p.groups = groups;
  for (int i = 0; i < spatial; ++i) {
    EMBER_CHECK(p.output_padding[i] < p.stride[i] || p.output_padding[i] < p.dilation[i], "[", op,
                "] output_padding ", list(p.output_padding, spatial),
                " must be smaller than either stride ", list(p.stride, spatial), " or dilation ",
                list(p.dilation, spatial));
  }
  return maybe_unbatched(x, w, p, true, op,
                         [&](const DynTensor& xb) { return convolution(xb, w, bias, p, true); });
}

// bias [O] viewed as [1, O, 1, ...] to broadcast over an output of rank `rank`.
DynTensor bias_view(const DynTensor& bias, int rank) {
  Shape s = Shape::filled(rank, 1);
  s[1] = bias.size(0);
  return reshape(bias, s);
}

// The output size of a pooling window along one dim, PyTorch's formula with ceil_mode.
// `eff` is the dilated kernel's extent, checked by the caller; 2 * pad <= eff, so no sum below
// overflows, and a stride near 2^63 is divided, never added.
int64_t pool_out(int64_t in, int64_t eff, int64_t s, int64_t pad, bool ceil_mode) {
  const int64_t span = in - eff + 2 * pad;
  if (span < 0) return 0;
  int64_t out = span / s + (ceil_mode && span % s != 0 ? 1 : 0) + 1;
  // The last window must start inside the input or its left padding.
  int64_t last = 0;
  if (ceil_mode && (!checked_mul(out - 1, s, &last) || last >= in + pad)) --out;
  return out;
}

// Validates a pooling input and its parameters; returns the output shape.
Shape pool_shape(const DynTensor& x, const PoolParams& p, const std::string& op) {
  detail::check_defined(x, op.c_str());
  const int sp = p.spatial;
  EMBER_CHECK(x.rank() == sp + 1 || x.rank() == sp + 2, "[", op, "] expects a ", sp + 2,
              "-D input [N, C, ",
              sp == 1   ? "L"
              : sp == 2 ? "H, W"
                        : "D, H, W",
              "] or a ", sp + 1, "-D unbatched one, got ", x.shape());
  check_float(x, op, "input");
  Shape out = x.shape();
  for (int i = 0; i < sp; ++i) {
    const int dim = x.rank() - sp + i;
    const int64_t in = x.size(dim);
    EMBER_CHECK(in > 0, "[", op, "] spatial dims must be non-empty, got input ", x.shape());
    if (p.adaptive) {
      out[dim] = p.output_size[i];
      continue;
    }
    int64_t eff = 0;
    EMBER_CHECK(checked_mul(p.dilation[i], p.kernel[i] - 1, &eff) && checked_add(eff, 1, &eff), "[",
                op, "] kernel ", list(p.kernel, sp), " with dilation ", list(p.dilation, sp),
                " overflows int64");
    EMBER_CHECK(p.padding[i] <= eff / 2, "[", op, "] padding ", list(p.padding, sp),
                " must be at most half the kernel size ", list(p.kernel, sp),
                p.dilation[i] > 1 ? " (dilated)" : "");
    out[dim] = pool_out(in, eff, p.stride[i], p.padding[i], p.ceil_mode);
    EMBER_CHECK(out[dim] > 0, "[", op, "] the output would be empty: input ", x.shape(),
                ", kernel ", list(p.kernel, sp), ", stride ", list(p.stride, sp), ", padding ",
                list(p.padding, sp), ", dilation ", list(p.dilation, sp));
  }
  return out;
}

PoolParams window_params(const std::string& op, int spatial, const SpatialArg& kernel,
                         const SpatialArg& stride, const SpatialArg& padding,
                         const SpatialArg& dilation, bool ceil_mode) {
  PoolParams p;
  p.spatial = spatial;
  spatial_arg(op, "kernel_size", kernel, spatial, 1, p.kernel);
  spatial_arg(op, "stride", stride.empty() ? kernel : stride, spatial, 1, p.stride);
  spatial_arg(op, "padding", padding, spatial, 0, p.padding);
  spatial_arg(op, "dilation", dilation, spatial, 1, p.dilation);
  p.ceil_mode = ceil_mode;
  return p;
}

// Whether the backend runs x's (non-transposed) convolutions channels-last: their outputs and
// data gradients are allocated so, and their operands pass as they are when already so.
bool channels_last_conv(const DynTensor& x, const ConvParams& p) {
  return p.groups == 1 && detail::backend_of(x).channels_last(OpFamily::Conv, x.dtype(), p.spatial);
}

// An operand of a convolution's backward: contiguous, or channels-last as it is where the
// backend takes that.
DynTensor operand_of(const DynTensor& t, const ConvParams& p) {
  return channels_last_conv(t, p) ? detail::contiguous_or_channels_last(t) : contiguous(t);
}

// The forwards; the public functions record them as one node each.
DynTensor convolution_unrecorded(const DynTensor& x, const DynTensor& w, const DynTensor& bias,
                                 const ConvParams& p, bool transposed);
DynTensor conv_backward_weight_unrecorded(const DynTensor& x, const DynTensor& grad_out,
                                          const Shape& weight_shape, const ConvParams& p,
                                          DynTensor* grad_bias);

}  // namespace

namespace detail {

DynTensor conv_relu_composite(const DynTensor& x, const DynTensor& w, const DynTensor& bias,
                              const ConvParams& p) {
  ConvParams plain = p;
  plain.relu = false;
  return relu(convolution(x, w, bias, plain, false));
}

}  // namespace detail

DynTensor convolution(const DynTensor& x, const DynTensor& w, const DynTensor& bias,
                      const ConvParams& p, bool transposed) {
  if (detail::autocast_lowers(x, w, bias)) {
    using detail::autocast_lower;
    return convolution(autocast_lower(x), autocast_lower(w), autocast_lower(bias), p, transposed);
  }
  // Conv + relu is one pass where the backend fuses it, else two ops (each recorded).
  if (p.relu && !transposed && x.defined() &&
      !detail::backend_of(x).supports(OpFamily::ConvRelu, x.dtype())) {
    return detail::conv_relu_composite(x, w, bias, p);
  }
  // A weight nothing trains here (inference, a frozen layer) may stay in the backend's layout.
  ConvParams q = p;
  q.constant_weight = !transposed && w.defined() && !(w.requires_grad() && grad_enabled());
  return detail::recorded(transposed ? ops::conv_transpose : ops::convolution, {&x, &w, &bias}, q,
                          [&] { return convolution_unrecorded(x, w, bias, q, transposed); });
}

namespace {
DynTensor convolution_unrecorded(const DynTensor& x, const DynTensor& w, const DynTensor& bias,
                                 const ConvParams& p, bool transposed) {
  const int sp = p.spatial;
  EMBER_CHECK(sp >= 1 && sp <= 3, "[convolution] supports 1 to 3 spatial dims, got ", sp);
  const std::string op = conv_name(sp, transposed);
  detail::check_defined(x, op.c_str());
  detail::check_defined(w, op.c_str(), "weight");
  detail::check_same_device(x, w, op.c_str());
  EMBER_CHECK(x.rank() == sp + 2 && w.rank() == sp + 2, "[", op, "] expects a ", sp + 2,
              "-D input and weight, got input ", x.shape(), ", weight ", w.shape());
  check_float(x, op, "input");
  EMBER_CHECK(x.dtype() == w.dtype(), "[", op, "] input (", x.dtype(), ") and weight (", w.dtype(),
              ") must have the same dtype");
  const int64_t o = check_channels(op, x, w, p.groups, transposed);
  if (bias.defined()) {
    detail::check_same_device(x, bias, op.c_str());
    EMBER_CHECK(bias.rank() == 1 && bias.size(0) == o, "[", op, "] bias must have shape [", o,
                "], got ", bias.shape());
    EMBER_CHECK(bias.dtype() == x.dtype(), "[", op, "] bias (", bias.dtype(), ") and input (",
                x.dtype(), ") must have the same dtype");
  }
  Shape out_shape{x.size(0), o};
  for (int i = 0; i < sp; ++i) {
    EMBER_CHECK(
        p.stride[i] >= 1 && p.dilation[i] >= 1 && p.padding[i] >= 0 && p.output_padding[i] >= 0,
        "[", op, "] needs stride and dilation >= 1, padding and output_padding >= 0, got ",
        "stride ", list(p.stride, sp), ", padding ", list(p.padding, sp), ", dilation ",
        list(p.dilation, sp), ", output_padding ", list(p.output_padding, sp));
    const int64_t in = x.size(2 + i);
    // Padding, stride and dilation are the user's: every product here is checked.
    int64_t eff = 0, padded = 0, out = 0;
    bool fits = checked_mul(p.dilation[i], w.size(2 + i) - 1, &eff) && checked_add(eff, 1, &eff) &&
                checked_mul(p.padding[i], 2, &padded) && checked_add(padded, in, &padded);
    if (transposed) {
      int64_t span = 0;
      fits = fits && checked_mul(in - 1, p.stride[i], &span) && checked_add(span, eff, &out) &&
             checked_add(out, p.output_padding[i], &out);
      if (fits) out -= padded - in;  // 2 * padding, which fits
    }
    EMBER_CHECK(fits, "[", op, "] the output size overflows int64: input ", x.shape(), ", weight ",
                w.shape(), ", stride ", list(p.stride, sp), ", padding ", list(p.padding, sp),
                ", dilation ", list(p.dilation, sp));
    if (!transposed) {
      EMBER_CHECK(padded >= eff, "[", op, "] the kernel (", eff,
                  " wide after dilation) is larger than the padded input: input ", x.shape(),
                  ", weight ", w.shape(), ", padding ", list(p.padding, sp), ", dilation ",
                  list(p.dilation, sp));
      out = (padded - eff) / p.stride[i] + 1;
    } else {
      EMBER_CHECK(out >= 1, "[", op, "] the output would be empty: input ", x.shape(), ", weight ",
                  w.shape(), ", stride ", list(p.stride, sp), ", padding ", list(p.padding, sp));
    }
    out_shape.push_back(out);
  }
  detail::check_supported(x, OpFamily::Conv, x.dtype(), op.c_str());

  Backend& be = detail::backend_of(x);
  const bool cl = !transposed && channels_last_conv(x, p);
  const DynTensor xc = cl ? detail::contiguous_or_channels_last(x) : contiguous(x);
  const DynTensor wc = contiguous(w);
  DynTensor out =
      cl ? detail::make_empty_channels_last(out_shape, x.dtype(), x.device(), op.c_str())
         : detail::make_empty(out_shape, x.dtype(), x.device(), op.c_str());
  // The kernels allocate workspace (im2col columns, oneDNN buffers): a failure there names op.
  if (!transposed) {
    const DynTensor bc = bias.defined() ? contiguous(bias) : DynTensor();
    ConvParams q = p;  // a contiguous copy made here is no weight to keep
    q.constant_weight = p.constant_weight && wc.raw().storage == w.raw().storage;
    as_op(op.c_str(), [&] { be.conv(xc.raw(), wc.raw(), bc.raw(), q, out.raw()); });
    return out;
  }
  // The transposed conv is the data gradient of the conv from its output back to its input.
  as_op(op.c_str(), [&] { be.conv_backward_data(xc.raw(), wc.raw(), p, out.raw()); });
  if (bias.defined()) out = add(out, bias_view(bias, out.rank()));
  return p.relu ? relu(out) : out;
}
}  // namespace

DynTensor conv_backward_weight(const DynTensor& x, const DynTensor& grad_out,
                               const Shape& weight_shape, const ConvParams& p,
                               DynTensor* grad_bias) {
  DynTensor out = detail::recorded(ops::conv_backward_weight, {&x, &grad_out}, p, [&] {
    return conv_backward_weight_unrecorded(x, grad_out, weight_shape, p, grad_bias);
  });
  if (grad_bias && out.requires_grad()) {
    Dims dims = {0};
    for (int i = 2; i < grad_out.rank(); ++i) dims.push_back(i);
    *grad_bias = sum(grad_out, dims);  // recorded, for a second derivative
  }
  return out;
}

namespace {
DynTensor conv_backward_weight_unrecorded(const DynTensor& x, const DynTensor& grad_out,
                                          const Shape& weight_shape, const ConvParams& p,
                                          DynTensor* grad_bias) {
  const char* op = "conv_backward_weight";
  const int sp = p.spatial;
  detail::check_defined(x, op);
  detail::check_defined(grad_out, op, "grad_out");
  detail::check_same_device(x, grad_out, op);
  EMBER_CHECK(sp >= 1 && sp <= 3 && x.rank() == sp + 2 && grad_out.rank() == sp + 2 &&
                  weight_shape.rank() == sp + 2,
              "[", op, "] expects ", sp + 2, "-D tensors, got input ", x.shape(), ", grad_out ",
              grad_out.shape(), ", weight ", weight_shape);
  EMBER_CHECK(x.dtype() == grad_out.dtype() && is_floating(x.dtype()), "[", op,
              "] input and grad_out must share a floating dtype, got ", x.dtype(), " and ",
              grad_out.dtype());
  const int64_t g = p.groups;
  EMBER_CHECK(g >= 1 && x.size(0) == grad_out.size(0) && weight_shape[0] == grad_out.size(1) &&
                  weight_shape[0] % g == 0 && weight_shape[1] * g == x.size(1),
              "[", op, "] shapes do not match (groups ", g, "): input ", x.shape(), ", grad_out ",
              grad_out.shape(), ", weight ", weight_shape);
  for (int i = 0; i < sp; ++i) {
    // Every output window must lie within the padded input (a grad_out may be cut short).
    const int64_t eff = p.dilation[i] * (weight_shape[2 + i] - 1) + 1;
    EMBER_CHECK(
        p.stride[i] >= 1 && p.dilation[i] >= 1 && p.padding[i] >= 0 &&
            (grad_out.size(2 + i) - 1) * p.stride[i] + eff <= x.size(2 + i) + 2 * p.padding[i],
        "[", op, "] grad_out ", grad_out.shape(), " does not fit input ", x.shape(),
        " with weight ", weight_shape, ", stride ", list(p.stride, sp), ", padding ",
        list(p.padding, sp), ", dilation ", list(p.dilation, sp));
  }
  detail::check_supported(x, OpFamily::Conv, x.dtype(), op);
  const DynTensor xc = operand_of(x, p), gc = operand_of(grad_out, p);
  DynTensor out = detail::make_empty(weight_shape, x.dtype(), x.device(), op);
  DynTensor gb;
  if (grad_bias) gb = detail::make_empty(Shape{weight_shape[0]}, x.dtype(), x.device(), op);
  as_op(op, [&] {
    detail::backend_of(out).conv_backward_weight(xc.raw(), gc.raw(), p, out.raw(), gb.raw());
  });
  if (grad_bias) *grad_bias = gb;
  return out;
}
}  // namespace

ConvGrads conv_backward(const DynTensor& x, const DynTensor& w, const DynTensor& y,
                        const DynTensor& grad_out, const ConvParams& p,
                        const std::array<bool, 3>& need) {
  const char* op = "conv_backward";
  detail::check_defined(x, op);
  detail::check_defined(w, op, "weight");
  detail::check_defined(grad_out, op, "grad_out");
  const int sp = p.spatial;
  EMBER_CHECK(sp >= 1 && sp <= 3 && x.rank() == sp + 2 && w.rank() == sp + 2 &&
                  grad_out.rank() == sp + 2 && x.size(0) == grad_out.size(0) &&
                  w.size(0) == grad_out.size(1) && w.size(1) * p.groups == x.size(1) &&
                  x.dtype() == w.dtype() && x.dtype() == grad_out.dtype() && is_floating(x.dtype()),
              "[", op, "] input ", x.shape(), " (", x.dtype(), "), weight ", w.shape(), " (",
              w.dtype(), ") and grad_out ", grad_out.shape(), " (", grad_out.dtype(),
              ") do not belong to one convolution");
  EMBER_CHECK(!p.relu || (y.defined() && y.shape() == grad_out.shape()), "[", op,
              "] a fused relu needs the convolution's output, shaped like grad_out ",
              grad_out.shape());
  detail::check_supported(x, OpFamily::Conv, x.dtype(), op);
  if (p.relu && !detail::backend_of(x).supports(OpFamily::ConvRelu, x.dtype())) {
    ConvParams plain = p;  // the relu mask as its own op
    plain.relu = false;
    return conv_backward(x, w, DynTensor(), relu_backward(grad_out, y), plain, need);
  }
  ConvGrads r;
  if (!need[0] && !need[1] && !need[2]) return r;
  const DynTensor xc = operand_of(detach(x), p), wc = contiguous(detach(w)),
                  gc = operand_of(detach(grad_out), p);
  const DynTensor yc = p.relu ? operand_of(detach(y), p) : DynTensor();
  if (need[0]) {
    r.input = channels_last_conv(x, p)
                  ? detail::make_empty_channels_last(x.shape(), x.dtype(), x.device(), op)
                  : detail::make_empty(x.shape(), x.dtype(), x.device(), op);
  }
  if (need[1]) r.weight = detail::make_empty(w.shape(), w.dtype(), w.device(), op);
  if (need[2]) r.bias = detail::make_empty(Shape{w.size(0)}, w.dtype(), w.device(), op);
  as_op(op, [&] {
    detail::backend_of(xc).conv_backward(xc.raw(), wc.raw(), yc.raw(), gc.raw(), p, r.input.raw(),
                                         r.weight.raw(), r.bias.raw());
  });
  return r;
}

namespace {
// Whether a pool's output holds one element per plane.
bool one_per_plane(const Shape& out, const PoolParams& p) {
  for (int i = 0; i < p.spatial; ++i) {
    if (out[out.rank() - p.spatial + i] != 1) return false;
  }
  return true;
}

// Pooling kernels take contiguous operands; a channels-last input (or gradient) gets its result
// back channels-last, as PyTorch's pooling keeps the memory format, so the convolutions around
// a pool see no layout change.
DynTensor in_layout_of(const DynTensor& out, const DynTensor& like) {
  return detail::only_channels_last(like.raw()) ? detail::channels_last_copy(out) : out;
}

// max_pool with indices of `index_dtype`, or none (an undefined tensor) when `with_indices` is
// false and nothing records the op.
ValuesIndices max_pool_impl(const DynTensor& x, const PoolParams& p, DType index_dtype,
                            bool with_indices) {
  const std::string op = pool_name("max_pool", p.spatial);
  EMBER_CHECK(p.spatial >= 1 && p.spatial <= 3, "[max_pool] supports 1 to 3 spatial dims");
  const Shape out_shape = pool_shape(x, p, op);
  detail::check_supported(x, OpFamily::Pool, x.dtype(), op.c_str());
  const DynTensor xc = contiguous(detach(x));  // recorded once below
  EMBER_CHECK(index_dtype == DType::i64 || index_dtype == DType::i32, "[", op,
              "] indices are i64 or i32, not ", index_dtype);
  int64_t plane = 1;
  for (int i = 0; i < p.spatial; ++i) plane *= x.size(x.rank() - p.spatial + i);
  if (plane > INT32_MAX) index_dtype = DType::i64;
  ValuesIndices r;
  r.values = detail::make_empty(out_shape, x.dtype(), x.device(), op.c_str());
  if (with_indices) r.indices = detail::make_empty(out_shape, index_dtype, x.device(), op.c_str());
  detail::backend_of(xc).max_pool(xc.raw(), p, r.values.raw(), r.indices.raw());
  r.values = in_layout_of(r.values, x);
  if (with_indices) detail::record(ops::max_pool, {&x}, r.values, PoolIndices{p, r.indices});
  return r;
}
}  // namespace

ValuesIndices max_pool(const DynTensor& x, const PoolParams& p, DType index_dtype) {
  return max_pool_impl(x, p, index_dtype, true);
}

DynTensor max_pool_values(const DynTensor& x, const PoolParams& p) {
  detail::check_defined(x, pool_name("max_pool", p.spatial).c_str());
  const DynTensor* in[] = {&x};
  const bool recorded = ops::max_pool.grad != nullptr && detail::any_tracked(in);
  return max_pool_impl(x, p, detail::backend_of(x).pool_index_dtype(), recorded).values;
}

DynTensor max_pool_backward(const DynTensor& grad_out, const DynTensor& indices,
                            const Shape& input_shape, const PoolParams& p) {
  const char* op = "max_pool_backward";
  detail::check_defined(grad_out, op, "grad_out");
  detail::check_defined(indices, op, "indices");
  EMBER_CHECK(grad_out.shape() == indices.shape() &&
                  (indices.dtype() == DType::i64 || indices.dtype() == DType::i32) &&
                  input_shape.rank() == grad_out.rank() && p.spatial >= 1 &&
                  p.spatial < grad_out.rank() + 1,
              "[", op, "] grad_out ", grad_out.shape(), " and i64 (or i32) indices ",
              indices.shape(), " must match, for an input of shape ", input_shape);
  detail::check_supported(grad_out, OpFamily::Pool, grad_out.dtype(), op);
  const DynTensor gc = contiguous(detach(grad_out)), ic = contiguous(indices);
  DynTensor out = detail::make_empty(input_shape, grad_out.dtype(), grad_out.device(), op);
  detail::backend_of(out).max_pool_backward(gc.raw(), ic.raw(), p, out.raw());
  out = in_layout_of(out, grad_out);
  detail::record(ops::max_pool_backward, {&grad_out}, out, PoolIndices{p, indices});
  return out;
}

DynTensor avg_pool(const DynTensor& x, const PoolParams& p) {
  EMBER_CHECK(p.spatial >= 1 && p.spatial <= 3, "[avg_pool] supports 1 to 3 spatial dims");
  const std::string op = pool_name(p.adaptive ? "adaptive_avg_pool" : "avg_pool", p.spatial);
  const Shape out_shape = pool_shape(x, p, op);
  if (p.adaptive && one_per_plane(out_shape, p)) {
    // One output per plane (a classifier's global pool) is the mean over the spatial dims: the
    // reduction reads any layout (a channels-last input needs no copy) and its gradient is a
    // broadcast, which takes the layout of the activation it meets.
    Dims dims;
    for (int i = 0; i < p.spatial; ++i) dims.push_back(x.rank() - p.spatial + i);
    return mean(x, dims, true);
  }
  detail::check_supported(x, OpFamily::Pool, x.dtype(), op.c_str());
  const DynTensor xc = contiguous(detach(x));
  DynTensor out = detail::make_empty(out_shape, x.dtype(), x.device(), op.c_str());
  detail::backend_of(out).avg_pool(xc.raw(), p, out.raw());
  out = in_layout_of(out, x);
  detail::record(ops::avg_pool, {&x}, out, p);
  return out;
}

DynTensor avg_pool_backward(const DynTensor& grad_out, const Shape& input_shape,
                            const PoolParams& p) {
  const char* op = "avg_pool_backward";
  detail::check_defined(grad_out, op, "grad_out");
  EMBER_CHECK(
      input_shape.rank() == grad_out.rank() && p.spatial >= 1 && p.spatial < grad_out.rank() + 1,
      "[", op, "] grad_out ", grad_out.shape(), " does not match an input of shape ", input_shape);
  detail::check_supported(grad_out, OpFamily::Pool, grad_out.dtype(), op);
  const DynTensor gc = contiguous(detach(grad_out));
  DynTensor out = detail::make_empty(input_shape, grad_out.dtype(), grad_out.device(), op);
  detail::backend_of(out).avg_pool_backward(gc.raw(), p, out.raw());
  out = in_layout_of(out, grad_out);
  detail::record(ops::avg_pool_backward, {&grad_out}, out, p);
  return out;
}

// ---- The named functions --------------------------------------------------------------------

DynTensor conv1d(const DynTensor& x, const DynTensor& w, const DynTensor& bias,
                 const SpatialArg& stride, const SpatialArg& padding, const SpatialArg& dilation,
                 int64_t groups, bool relu) {
  return conv_nd(1, x, w, bias, stride, padding, dilation, groups, relu);
}
DynTensor conv2d(const DynTensor& x, const DynTensor& w, const DynTensor& bias,
                 const SpatialArg& stride, const SpatialArg& padding, const SpatialArg& dilation,
                 int64_t groups, bool relu) {
  return conv_nd(2, x, w, bias, stride, padding, dilation, groups, relu);
}
DynTensor conv3d(const DynTensor& x, const DynTensor& w, const DynTensor& bias,
                 const SpatialArg& stride, const SpatialArg& padding, const SpatialArg& dilation,
                 int64_t groups, bool relu) {
  return conv_nd(3, x, w, bias, stride, padding, dilation, groups, relu);
}
DynTensor conv_transpose1d(const DynTensor& x, const DynTensor& w, const DynTensor& bias,
                           const SpatialArg& stride, const SpatialArg& padding,
                           const SpatialArg& output_padding, int64_t groups,
                           const SpatialArg& dilation) {
  return conv_transpose_nd(1, x, w, bias, stride, padding, output_padding, groups, dilation);
}
DynTensor conv_transpose2d(const DynTensor& x, const DynTensor& w, const DynTensor& bias,
                           const SpatialArg& stride, const SpatialArg& padding,
                           const SpatialArg& output_padding, int64_t groups,
                           const SpatialArg& dilation) {
  return conv_transpose_nd(2, x, w, bias, stride, padding, output_padding, groups, dilation);
}
DynTensor conv_transpose3d(const DynTensor& x, const DynTensor& w, const DynTensor& bias,
                           const SpatialArg& stride, const SpatialArg& padding,
                           const SpatialArg& output_padding, int64_t groups,
                           const SpatialArg& dilation) {
  return conv_transpose_nd(3, x, w, bias, stride, padding, output_padding, groups, dilation);
}

ValuesIndices max_pool1d_with_indices(const DynTensor& x, const SpatialArg& kernel,
                                      const SpatialArg& stride, const SpatialArg& padding,
                                      const SpatialArg& dilation, bool ceil_mode) {
  return max_pool(x, window_params("max_pool1d", 1, kernel, stride, padding, dilation, ceil_mode));
}
ValuesIndices max_pool2d_with_indices(const DynTensor& x, const SpatialArg& kernel,
                                      const SpatialArg& stride, const SpatialArg& padding,
                                      const SpatialArg& dilation, bool ceil_mode) {
  return max_pool(x, window_params("max_pool2d", 2, kernel, stride, padding, dilation, ceil_mode));
}
DynTensor max_pool1d(const DynTensor& x, const SpatialArg& kernel, const SpatialArg& stride,
                     const SpatialArg& padding, const SpatialArg& dilation, bool ceil_mode) {
  detail::check_defined(x, "max_pool1d");
  return max_pool_values(
      x, window_params("max_pool1d", 1, kernel, stride, padding, dilation, ceil_mode));
}
DynTensor max_pool2d(const DynTensor& x, const SpatialArg& kernel, const SpatialArg& stride,
                     const SpatialArg& padding, const SpatialArg& dilation, bool ceil_mode) {
  detail::check_defined(x, "max_pool2d");
  return max_pool_values(
      x, window_params("max_pool2d", 2, kernel, stride, padding, dilation, ceil_mode));
}

DynTensor avg_pool1d(const DynTensor& x, const SpatialArg& kernel, const SpatialArg& stride,
                     const SpatialArg& padding, bool ceil_mode, bool count_include_pad) {
  PoolParams p = window_params("avg_pool1d", 1, kernel, stride, padding, {1}, ceil_mode);
  p.count_include_pad = count_include_pad;
  return avg_pool(x, p);
}
DynTensor avg_pool2d(const DynTensor& x, const SpatialArg& kernel, const SpatialArg& stride,
                     const SpatialArg& padding, bool ceil_mode, bool count_include_pad) {
  PoolParams p = window_params("avg_pool2d", 2, kernel, stride, padding, {1}, ceil_mode);
  p.count_include_pad = count_include_pad;
  return avg_pool(x, p);
}

DynTensor adaptive_avg_pool1d(const DynTensor& x, const SpatialArg& output_size) {
  PoolParams p;
  p.spatial = 1;
  p.adaptive = true;
  spatial_arg("adaptive_avg_pool1d", "output_size", output_size, 1, 1, p.output_size);
  return avg_pool(x, p);
}
DynTensor adaptive_avg_pool2d(const DynTensor& x, const SpatialArg& output_size) {
  PoolParams p;
  p.spatial = 2;
  p.adaptive = true;
  spatial_arg("adaptive_avg_pool2d", "output_size", output_size, 2, 1, p.output_size);
  return avg_pool(x, p);
}

}  // namespace ember
