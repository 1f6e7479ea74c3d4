// The per-channel normalisation ops: validation, contiguous operands (f16 and bf16 computed in
// f32: read as they are where the backend's kernels take them, else cast first), then the
// backend's fused Norm kernels where it has them, or the same values from tensor ops (the
// *_composite functions) where it has not. Statistics come back in the compute dtype.
#include "ember/tensor/ops/norm.hpp"

#include <initializer_list>
#include <tuple>

#include "ember/autodiff/autodiff.hpp"
#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "ember/tensor/ops/reduce.hpp"
#include "internal.hpp"
#include "layout.hpp"

namespace ember {
namespace {

// The dtype the op runs in: x's own, or f32 for the 16-bit floats.
DType compute_dtype(const DynTensor& x, const char* op) {
  detail::check_defined(x, op);
  EMBER_CHECK(is_floating(x.dtype()), "[", op, "] needs a floating tensor, got ", x.dtype());
  EMBER_CHECK(x.rank() >= 2, "[", op, "] expects [N, C, *], got ", x.shape());
  return x.dtype() == DType::f64 ? DType::f64 : DType::f32;
}

bool has_kernels(const DynTensor& x, DType dt) {
  return detail::backend_of(x).supports(OpFamily::Norm, dt);
}

// The dtype x's data goes to the kernels in: its own where they take it, else the compute dtype.
DType data_dtype(const DynTensor& x, DType dt) {
  return has_kernels(x, x.dtype()) ? x.dtype() : dt;
}

// Whether the channel operands go to the kernels channels-last: some operand is, and the backend
// reads that layout (batch norm between channels-last convolutions).
bool channels_last_operands(std::initializer_list<const DynTensor*> ts, DType dt) {
  for (const DynTensor* t : ts) {
    if (t->defined() && detail::only_channels_last(t->raw())) {
      return detail::backend_of(*t).channels_last(OpFamily::Norm, dt, t->rank() - 2);
    }
  }
  return false;
}

// An untracked operand in `dt`: contiguous, or channels-last (a cast keeps the layout).
DynTensor operand(const DynTensor& t, DType dt, bool channels_last = false) {
  const DynTensor c = cast(detach(t), dt);
  return channels_last ? detail::channels_last_copy(c) : contiguous(c);
}

// A per-channel operand: [C] on x's device.
DynTensor coefficient(const DynTensor& k, const DynTensor& x, DType dt, const char* op,
                      const char* what) {
  detail::check_defined(k, op, what);
  detail::check_same_device(x, k, op);
  EMBER_CHECK(k.rank() == 1 && k.numel() == x.size(1), "[", op, "] ", what, " of shape ", k.shape(),
              " does not match the ", x.size(1), " channels of ", x.shape());
  return operand(k, dt);
}

// Every dim of x but 1 (the channels).
Dims channel_dims(const DynTensor& x) {
  Dims dims{0};
  for (int d = 2; d < x.rank(); ++d) dims.push_back(d);
  return dims;
}

// k [C] viewed as [C, 1, ...] to broadcast against x [N, C, *].
DynTensor per_channel(const DynTensor& k, const DynTensor& x) {
  Shape s = Shape::filled(x.rank() - 1, 1);
  s[0] = k.numel();
  return reshape(k, s);
}

}  // namespace

namespace detail {

DynTensor channel_moments_composite(const DynTensor& x) {
  const Dims dims = channel_dims(x);
  const DynTensor mu = mean(x, dims, true);
  const DynTensor var = mean(square(sub(x, mu)), dims);
  return stack({reshape(mu, Shape{x.size(1)}), var});
}

DynTensor channel_dot_composite(const DynTensor& a, const DynTensor& b, const DynTensor& center) {
  const Dims dims = channel_dims(a);
  return stack({sum(a, dims), sum(mul(a, sub(b, per_channel(center, a))), dims)});
}

DynTensor channel_fma_composite(const DynTensor& a, const DynTensor& ka, const DynTensor& b,
                                const DynTensor& kb, const DynTensor& k0) {
  DynTensor out = mul(a, per_channel(ka, a));
  if (b.defined()) out = add(out, mul(b, per_channel(kb, a)));
  return add(out, per_channel(k0, a));
}

}  // namespace detail

DynTensor channel_operand(const DynTensor& x) {
  detail::check_defined(x, "channel_operand");
  const DynTensor d = detach(x);
  if (d.is_contiguous()) return d;
  if (x.rank() >= 2 && channels_last_operands({&d}, compute_dtype(x, "channel_operand"))) return d;
  return contiguous(d);
}

DynTensor channel_moments(const DynTensor& x) {
  const char* op = "channel_moments";
  const DType dt = compute_dtype(x, op);
  const DynTensor xc = operand(x, data_dtype(x, dt), channels_last_operands({&x}, dt));
  if (!has_kernels(x, dt)) return detail::channel_moments_composite(xc);
  DynTensor out = detail::make_empty(Shape{2, x.size(1)}, dt, x.device(), op);
  detail::backend_of(out).channel_moments(xc.raw(), out.raw());
  return out;
}

DynTensor channel_dot(const DynTensor& a, const DynTensor& b, const DynTensor& center) {
  const char* op = "channel_dot";
  const DType dt = compute_dtype(a, op);
  detail::check_defined(b, op, "b");
  detail::check_same_device(a, b, op);
  EMBER_CHECK(a.shape() == b.shape(), "[", op, "] operands differ in shape: ", a.shape(), " and ",
              b.shape());
  const DType data = data_dtype(a, dt);
  const bool cl = channels_last_operands({&a, &b}, dt);
  const DynTensor ac = operand(a, data, cl), bc = operand(b, data, cl);
  const DynTensor cc = coefficient(center, a, dt, op, "center");
  if (!has_kernels(a, dt)) return detail::channel_dot_composite(ac, bc, cc);
  DynTensor out = detail::make_empty(Shape{2, a.size(1)}, dt, a.device(), op);
  detail::backend_of(out).channel_dot(ac.raw(), bc.raw(), cc.raw(), out.raw());
  return out;
}

DynTensor channel_fma(const DynTensor& a, const DynTensor& ka, const DynTensor& b,
                      const DynTensor& kb, const DynTensor& k0) {
  const char* op = "channel_fma";
  const DType dt = compute_dtype(a, op), data = data_dtype(a, dt);
  const bool cl = channels_last_operands({&a, &b}, dt);
  const DynTensor ac = operand(a, data, cl);
  const DynTensor kac = coefficient(ka, a, dt, op, "ka"), k0c = coefficient(k0, a, dt, op, "k0");
  DynTensor bc, kbc;
  if (b.defined()) {
    detail::check_same_device(a, b, op);
    EMBER_CHECK(a.shape() == b.shape(), "[", op, "] operands differ in shape: ", a.shape(), " and ",
                b.shape());
    bc = operand(b, data, cl);
    kbc = coefficient(kb, a, dt, op, "kb");
  }
  if (!has_kernels(a, dt)) {
    return cast(detail::channel_fma_composite(ac, kac, bc, kbc, k0c), a.dtype());
  }
  DynTensor out = cl ? detail::make_empty_channels_last(a.shape(), data, a.device(), op)
                     : detail::make_empty(a.shape(), data, a.device(), op);
  detail::backend_of(out).channel_fma(ac.raw(), kac.raw(), bc.raw(), kbc.raw(), k0c.raw(),
                                      out.raw());
  return cast(out, a.dtype());
}

namespace detail {

DynTensor batch_norm_coefficients_composite(const DynTensor& moments, const DynTensor& weight,
                                            const DynTensor& bias, double eps) {
  const DynTensor mean = select(moments, 0, 0), var = select(moments, 0, 1);
  const DynTensor invstd = rsqrt(add(var, eps));
  const DynTensor scale = weight.defined() ? mul(weight, invstd) : invstd;
  DynTensor shift = neg(mul(mean, scale));
  if (bias.defined()) shift = add(shift, bias);
  return stack({invstd, scale, shift});
}

DynTensor batch_norm_backward_coefficients_composite(const DynTensor& d,
                                                     const DynTensor& coefficients,
                                                     const DynTensor& moments, double count) {
  const DynTensor sum_g = select(d, 0, 0), sum_gxc = select(d, 0, 1);
  const DynTensor invstd = select(coefficients, 0, 0), scale = select(coefficients, 0, 1);
  const DynTensor mean = select(moments, 0, 0);
  const DynTensor k2 = neg(div(mul(mul(scale, square(invstd)), sum_gxc), count));
  const DynTensor k3 = sub(neg(div(mul(scale, sum_g), count)), mul(k2, mean));
  return stack({k2, k3, mul(sum_gxc, invstd), sum_g});
}

}  // namespace detail

namespace {

// A [rows, C] per-channel operand of the coefficient ops, in dtype `dt`.
DynTensor vectors(const DynTensor& t, int64_t rows, int64_t channels, DType dt, const char* op,
                  const char* what) {
  detail::check_defined(t, op, what);
  EMBER_CHECK(t.rank() == 2 && t.size(0) == rows && t.size(1) == channels, "[", op, "] ", what,
              " must be [", rows, ", ", channels, "], got ", t.shape());
  return operand(t, dt);
}

bool has_coefficient_kernels(const DynTensor& t, DType dt) {
  return detail::backend_of(t).supports(OpFamily::BatchNormCoefficients, dt);
}

}  // namespace

DynTensor batch_norm_coefficients(const DynTensor& moments, const DynTensor& weight,
                                  const DynTensor& bias, double eps) {
  const char* op = "batch_norm_coefficients";
  detail::check_defined(moments, op, "moments");
  EMBER_CHECK(moments.rank() == 2 && moments.size(0) == 2 && is_floating(moments.dtype()), "[", op,
              "] moments must be a floating [2, C], got ", moments.dtype(), " ", moments.shape());
  const int64_t c = moments.size(1);
  const DType dt = moments.dtype() == DType::f64 ? DType::f64 : DType::f32;
  const DynTensor m = operand(moments, dt);
  DynTensor w, b;
  for (auto [t, out, what] : {std::tuple{&weight, &w, "weight"}, std::tuple{&bias, &b, "bias"}}) {
    if (!t->defined()) continue;
    detail::check_same_device(moments, *t, op);
    EMBER_CHECK(t->rank() == 1 && t->numel() == c, "[", op, "] ", what, " of shape ", t->shape(),
                " does not match the ", c, " channels of the moments");
    *out = operand(*t, dt);
  }
  if (!has_coefficient_kernels(m, dt))
    return detail::batch_norm_coefficients_composite(m, w, b, eps);
  DynTensor out = detail::make_empty(Shape{3, c}, dt, m.device(), op);
  detail::backend_of(out).batch_norm_coefficients(m.raw(), w.raw(), b.raw(), eps, out.raw());
  return out;
}

DynTensor batch_norm_backward_coefficients(const DynTensor& d, const DynTensor& coefficients,
                                           const DynTensor& moments, double count) {
  const char* op = "batch_norm_backward_coefficients";
  detail::check_defined(d, op, "d");
  EMBER_CHECK(d.rank() == 2 && is_floating(d.dtype()), "[", op,
              "] d must be a floating [2, C], got ", d.dtype(), " ", d.shape());
  const int64_t c = d.size(1);
  const DType dt = d.dtype() == DType::f64 ? DType::f64 : DType::f32;
  const DynTensor dc = vectors(d, 2, c, dt, op, "d");
  const DynTensor kc = vectors(coefficients, 3, c, dt, op, "coefficients");
  const DynTensor mc = vectors(moments, 2, c, dt, op, "moments");
  detail::check_same_device(dc, kc, op);
  detail::check_same_device(dc, mc, op);
  if (!has_coefficient_kernels(dc, dt)) {
    return detail::batch_norm_backward_coefficients_composite(dc, kc, mc, count);
  }
  DynTensor out = detail::make_empty(Shape{4, c}, dt, dc.device(), op);
  detail::backend_of(out).batch_norm_backward_coefficients(dc.raw(), kc.raw(), mc.raw(), count,
                                                           out.raw());
  return out;
}

bool fused_layer_norm_supported(const DynTensor& x) {
  return x.defined() && detail::backend_of(x).supports(OpFamily::LayerNorm, x.dtype());
}

namespace {
// layer_norm's rows (center) or rms_norm's (no mean, no bias) through the backend's kernels.
LayerNormRows norm_rows(const DynTensor& x_in, int64_t d, const DynTensor& weight,
                        const DynTensor& bias, double eps, DType out_dtype, bool center) {
  const char* op = center ? "layer_norm" : "rms_norm";
  EMBER_CHECK(fused_layer_norm_supported(x_in) && d > 0 && x_in.numel() % d == 0, "[", op,
              "] the fused kernel does not take ", x_in.dtype(), " ", x_in.shape(), " on ",
              x_in.device(), " over its last ", d, " elements");
  for (const DynTensor* p : {&weight, &bias}) {
    EMBER_CHECK(!p->defined() || (p->dtype() == DType::f32 && p->numel() == d), "[", op,
                "] the fused kernel takes f32 weight and bias of ", d, " elements, got ",
                p->dtype(), " ", p->shape());
  }
  const DynTensor x = contiguous(detach(x_in));
  const int64_t n = x.numel() / d;
  LayerNormRows r;
  r.y = detail::make_empty(x.shape(), out_dtype, x.device(), op);
  if (center) r.mean = detail::make_empty(Shape{n}, DType::f32, x.device(), op);
  r.rstd = detail::make_empty(Shape{n}, DType::f32, x.device(), op);
  auto flat = [&](const DynTensor& t) {
    return t.raw().view(Shape{n, d}, Strides{d, 1}, t.raw().offset);
  };
  auto vec = [](const DynTensor& t) {
    return t.defined() ? contiguous(detach(t)).raw() : RawTensor();
  };
  Backend& be = detail::backend_of(x);
  if (center) {
    be.layer_norm(flat(x), vec(weight), vec(bias), eps, flat(r.y), r.mean.raw(), r.rstd.raw());
  } else {
    be.rms_norm(flat(x), vec(weight), eps, flat(r.y), r.rstd.raw());
  }
  return r;
}
}  // namespace

LayerNormRows layer_norm_rows(const DynTensor& x, int64_t d, const DynTensor& weight,
                              const DynTensor& bias, double eps, DType out_dtype) {
  return norm_rows(x, d, weight, bias, eps, out_dtype, true);
}

LayerNormRows rms_norm_rows(const DynTensor& x, int64_t d, const DynTensor& weight, double eps,
                            DType out_dtype) {
  return norm_rows(x, d, weight, DynTensor(), eps, out_dtype, false);
}

std::array<DynTensor, 3> layer_norm_rows_backward(const DynTensor& dy_in, const DynTensor& x_in,
                                                  const LayerNormRows& fwd, const DynTensor& weight,
                                                  bool want_dweight, bool want_dbias) {
  const bool center = fwd.mean.defined();  // else rms_norm's rows
  const char* op = center ? "layer_norm_backward" : "rms_norm_backward";
  EMBER_CHECK(center || !want_dbias, "[", op, "] rms_norm has no bias");
  const DynTensor x = contiguous(detach(x_in));
  const DynTensor dy = contiguous(cast(detach(dy_in), fwd.y.dtype()));
  const int64_t n = fwd.rstd.numel(), d = n > 0 ? x.numel() / n : 0;
  std::array<DynTensor, 3> g{detail::make_empty(x.shape(), x.dtype(), x.device(), op)};
  if (want_dweight) g[1] = detail::make_empty(Shape{d}, DType::f32, x.device(), op);
  if (want_dbias) g[2] = detail::make_empty(Shape{d}, DType::f32, x.device(), op);
  auto flat = [&](const DynTensor& t) {
    return t.raw().view(Shape{n, d}, Strides{d, 1}, t.raw().offset);
  };
  const RawTensor w = weight.defined() ? contiguous(detach(weight)).raw() : RawTensor();
  const RawTensor dw = want_dweight ? g[1].raw() : RawTensor();
  Backend& be = detail::backend_of(x);
  if (center) {
    be.layer_norm_backward(flat(dy), flat(x), fwd.mean.raw(), fwd.rstd.raw(), w, flat(g[0]), dw,
                           want_dbias ? g[2].raw() : RawTensor());
  } else {
    be.rms_norm_backward(flat(dy), flat(x), fwd.rstd.raw(), w, flat(g[0]), dw);
  }
  return g;
}

}  // namespace ember
