// Convolution, pooling, the fused normalisation statistics and the Adam step through ATen.
// Half types are computed in f32, as the Cpu backend does.
#include <algorithm>
#include <vector>

#include "aten.hpp"

namespace ember::libtorch {
namespace {

std::vector<int64_t> first(const int64_t (&v)[3], int n) { return {v, v + n}; }

at::Tensor optional_view(const RawTensor& t) {
  return t.defined() ? compute_view(t) : at::Tensor();
}

// A tensor of `t`'s shape and compute dtype whose values ATen's backward functions do not read
// (they take the forward input for its size only). `t` is the output the entry writes: in f32
// and f64 its own view serves, with no allocation; half types need an f32 stand-in.
at::Tensor shape_only(const RawTensor& t) {
  if (t.dtype == DType::f32 || t.dtype == DType::f64) return view_of(t);
  return at::empty(std::vector<int64_t>(t.shape.begin(), t.shape.end()), at::kFloat);
}

// True when `t` is f32 or f64 and every operand in `same` has its dtype: ATen's out= forms then
// compute in Ember's dtype and write into Ember's buffer (no temporary and copy).
bool direct(const RawTensor& t, std::initializer_list<const RawTensor*> same) {
  if (t.dtype != DType::f32 && t.dtype != DType::f64) return false;
  for (const RawTensor* o : same) {
    if (o->defined() && o->dtype != t.dtype) return false;
  }
  return true;
}

// ATen 1.13's oneDNN path refuses some geometries (dilated grouped convolutions among them);
// those run again on ATen's own kernels. The switch is process-wide: a convolution on another
// thread meanwhile takes the slower path too, with the same results.
template <class F>
auto with_mkldnn_fallback(F&& f) {
  try {
    return f();
  } catch (const c10::Error&) {
    throw;
  } catch (const std::exception&) {
    at::Context& ctx = at::globalContext();
    const bool was = ctx.userEnabledMkldnn();
    ctx.setUserEnabledMkldnn(false);
    try {
      auto r = f();
      ctx.setUserEnabledMkldnn(was);
      return r;
    } catch (...) {
      ctx.setUserEnabledMkldnn(was);
      throw;
    }
  }
}

// The gradients conv_backward is asked for; ATen computes the three in one call.
void conv_grads(const at::Tensor& go, const at::Tensor& x, const at::Tensor& w, const ConvParams& p,
                const RawTensor& grad_in, const RawTensor& grad_w, const RawTensor& grad_bias) {
  const int n = p.spatial;
  const std::vector<int64_t> zeros(static_cast<size_t>(n), 0);
  const std::vector<int64_t> bias_sizes{w.size(0)};
  auto [gi, gw, gb] = with_mkldnn_fallback([&] {
    return at::convolution_backward(
        go, x, w, grad_bias.defined() ? at::OptionalIntArrayRef(bias_sizes) : c10::nullopt,
        first(p.stride, n), first(p.padding, n), first(p.dilation, n), false, zeros, p.groups,
        {grad_in.defined(), grad_w.defined(), grad_bias.defined()});
  });
  if (grad_in.defined()) assign(grad_in, gi);
  if (grad_w.defined()) assign(grad_w, gw);
  if (grad_bias.defined()) assign(grad_bias, gb);
}

// Pooling in ATen's layout: [1, planes, *spatial], 1-d pooling as 2-d over [1, L].
struct PoolArgs {
  std::vector<int64_t> kernel, stride, padding, dilation, output;
  int dims;  // 2 or 3: which ATen function
};

// `in`: the input, for its spatial sizes.
PoolArgs pool_args(const PoolParams& p, const RawTensor& in) {
  const int n = p.spatial;
  PoolArgs a{first(p.kernel, n),   first(p.stride, n),      first(p.padding, n),
             first(p.dilation, n), first(p.output_size, n), n == 3 ? 3 : 2};
  // A stride past the padded input gives one window whatever its value; ATen's size arithmetic
  // overflows on strides near 2^63, so they are clamped to that length.
  for (int d = 0; d < n; ++d) {
    const int64_t len = in.shape[in.rank() - n + d] + 2 * p.padding[d];
    auto& s = a.stride[static_cast<size_t>(d)];
    s = std::min(s, std::max<int64_t>(len, 1));
  }
  if (n == 1) {
    a.kernel.insert(a.kernel.begin(), 1);
    a.stride.insert(a.stride.begin(), 1);
    a.padding.insert(a.padding.begin(), 0);
    a.dilation.insert(a.dilation.begin(), 1);
    a.output.insert(a.output.begin(), 1);
  }
  return a;
}

at::Tensor pool_layout(const at::Tensor& t, const PoolParams& p) {
  at::Tensor r = as_pool_input(t, p.spatial);
  return p.spatial == 1 ? r.unsqueeze(2) : r;
}

// `t` in ATen's pooling layout as a view of Ember's buffer, or an undefined tensor when the
// layout needs a copy (a strided `t`).
at::Tensor pool_out_view(const RawTensor& t, const PoolParams& p) {
  const at::Tensor v = view_of(t);
  return v.is_contiguous() ? pool_layout(v, p) : at::Tensor();
}

at::Tensor shaped_like(const at::Tensor& r, const RawTensor& like) {
  return r.reshape(std::vector<int64_t>(like.shape.begin(), like.shape.end()));
}

// [1, C, 1, ...]: a per-channel operand broadcast over [N, C, *].
at::Tensor per_channel(const at::Tensor& v, int rank) {
  std::vector<int64_t> shape(static_cast<size_t>(rank), 1);
  shape[1] = v.numel();
  return v.reshape(shape);
}

std::vector<int64_t> all_but_channel(int rank) {
  std::vector<int64_t> dims{0};
  for (int d = 2; d < rank; ++d) dims.push_back(d);
  return dims;
}

// adam_step in f32/f64: the same operations in the same order as below (and as the Cpu kernel),
// written into Ember's outputs in place where ATen allows, so 3 temporaries instead of 13 and no
// copies. lerp(m, g, w) is m + w * (g - m) for w < 0.5 (the caller checks 1 - beta1 < 0.5).
void adam_direct(const RawTensor& param, const RawTensor& grad, const RawTensor& exp_avg,
                 const RawTensor& exp_avg_sq, const RawTensor& max_exp_avg_sq, const AdamParams& p,
                 const RawTensor& param_out, const RawTensor& exp_avg_out,
                 const RawTensor& exp_avg_sq_out, const RawTensor& max_exp_avg_sq_out) {
  at::Tensor w = view_of(param), g = view_of(grad);
  at::Tensor m = view_of(exp_avg_out), v = view_of(exp_avg_sq_out), po = view_of(param_out);
  if (p.decoupled && p.weight_decay != 0) w = w * (1 - p.lr * p.weight_decay);
  if (!p.decoupled && p.weight_decay != 0) g = g + w * p.weight_decay;
  at::lerp_out(m, view_of(exp_avg), g, 1 - p.beta1);
  at::Tensor g2 = g * g;
  g2.mul_(1 - p.beta2);
  at::mul_out(v, view_of(exp_avg_sq), at::scalar_tensor(p.beta2, w.options()));
  v.add_(g2);
  at::Tensor second = v;
  if (p.amsgrad) {
    second = view_of(max_exp_avg_sq_out);
    at::maximum_out(second, view_of(max_exp_avg_sq), v);
  }
  at::Tensor denom = second.sqrt();
  denom.div_(p.bias_correction2_sqrt).add_(p.eps);
  at::div_out(denom, m, denom);
  denom.mul_(-(p.lr / p.bias_correction1));
  at::add_out(po, w, denom);
}

}  // namespace

void LibTorchBackend::conv(const RawTensor& x, const RawTensor& w, const RawTensor& bias,
                           const ConvParams& p, const RawTensor& out) {
  run("conv", [&] {
    const int n = p.spatial;
    const at::Tensor xv = compute_view(x), wv = compute_view(w), bv = optional_view(bias);
    at::Tensor r = with_mkldnn_fallback([&] {
      return at::convolution(xv, wv, bv, first(p.stride, n), first(p.padding, n),
                             first(p.dilation, n), false,
                             std::vector<int64_t>(static_cast<size_t>(n), 0), p.groups);
    });
    if (p.relu && direct(out, {&x, &w, &bias})) {
      at::Tensor o = view_of(out);
      at::clamp_min_out(o, r, 0);  // ATen's relu is clamp_min(0): NaN stays NaN
      return;
    }
    if (p.relu) r.relu_();
    assign(out, r);
  });
}

void LibTorchBackend::conv_backward_data(const RawTensor& grad_out, const RawTensor& w,
                                         const ConvParams& p, const RawTensor& grad_in) {
  run("conv_transpose", [&] {
    // The transposed convolution; grad_in's size fixes output_padding (what strides leave open).
    const int n = p.spatial;
    std::vector<int64_t> output_padding(static_cast<size_t>(n));
    for (int d = 0; d < n; ++d) {
      const int64_t in = grad_in.shape[grad_in.rank() - n + d];
      const int64_t out = grad_out.shape[grad_out.rank() - n + d];
      output_padding[static_cast<size_t>(d)] = in - ((out - 1) * p.stride[d] - 2 * p.padding[d] +
                                                     p.dilation[d] * (w.shape[2 + d] - 1) + 1);
    }
    const at::Tensor go = compute_view(grad_out), wv = compute_view(w);
    assign(grad_in, with_mkldnn_fallback([&] {
             return at::convolution(go, wv, at::Tensor(), first(p.stride, n), first(p.padding, n),
                                    first(p.dilation, n), true, output_padding, p.groups);
           }));
  });
}

void LibTorchBackend::conv_backward_weight(const RawTensor& x, const RawTensor& grad_out,
                                           const ConvParams& p, const RawTensor& grad_w,
                                           const RawTensor& grad_bias) {
  run("conv_backward_weight", [&] {
    conv_grads(compute_view(grad_out), compute_view(x), shape_only(grad_w), p, {}, grad_w,
               grad_bias);
  });
}

void LibTorchBackend::conv_backward(const RawTensor& x, const RawTensor& w, const RawTensor& y,
                                    const RawTensor& grad_out, const ConvParams& p,
                                    const RawTensor& grad_in, const RawTensor& grad_w,
                                    const RawTensor& grad_bias) {
  run("conv_backward", [&] {
    at::Tensor go = compute_view(grad_out);
    if (y.defined()) go = at::threshold_backward(go, compute_view(y), 0);  // the fused relu
    conv_grads(go, compute_view(x), compute_view(w), p, grad_in, grad_w, grad_bias);
  });
}

void LibTorchBackend::max_pool(const RawTensor& x, const PoolParams& p, const RawTensor& out,
                               const RawTensor& indices) {
  run("max_pool", [&] {
    const PoolArgs a = pool_args(p, x);
    const at::Tensor v = pool_layout(compute_view(x), p);
    if (!indices.defined() && !p.adaptive) {  // the values only
      assign(out, shaped_like(a.dims == 3 ? at::max_pool3d(v, a.kernel, a.stride, a.padding,
                                                           a.dilation, p.ceil_mode)
                                          : at::max_pool2d(v, a.kernel, a.stride, a.padding,
                                                           a.dilation, p.ceil_mode),
                              out));
      return;
    }
    const bool i32 = indices.dtype == DType::i32;
    at::Tensor o = !p.adaptive && direct(out, {&x}) && indices.defined() ? pool_out_view(out, p)
                                                                         : at::Tensor();
    if (o.defined()) {
      // Straight into out, and into i64 indices (i32 ones, the front end's choice for max_pool2d,
      // are ATen's i64 converted).
      at::Tensor oi = i32 ? at::empty(o.sizes(), at::kLong) : pool_out_view(indices, p);
      if (oi.defined()) {
        if (a.dims == 3) {
          at::max_pool3d_with_indices_out(o, oi, v, a.kernel, a.stride, a.padding, a.dilation,
                                          p.ceil_mode);
        } else {
          at::max_pool2d_with_indices_out(o, oi, v, a.kernel, a.stride, a.padding, a.dilation,
                                          p.ceil_mode);
        }
        if (i32) assign(indices, shaped_like(oi, indices));
        return;
      }
    }
    at::Tensor r, i;
    if (p.adaptive) {
      std::tie(r, i) =
          a.dims == 3 ? at::adaptive_max_pool3d(v, a.output) : at::adaptive_max_pool2d(v, a.output);
    } else if (a.dims == 3) {
      std::tie(r, i) =
          at::max_pool3d_with_indices(v, a.kernel, a.stride, a.padding, a.dilation, p.ceil_mode);
    } else {
      std::tie(r, i) =
          at::max_pool2d_with_indices(v, a.kernel, a.stride, a.padding, a.dilation, p.ceil_mode);
    }
    assign(out, shaped_like(r, out));
    if (indices.defined()) assign(indices, shaped_like(i, indices));  // flat in the plane
  });
}

void LibTorchBackend::max_pool_backward(const RawTensor& grad_out, const RawTensor& indices,
                                        const PoolParams& p, const RawTensor& grad_in) {
  run("max_pool_backward", [&] {
    if (!p.adaptive && p.spatial >= 2) {
      // ATen's own backward (threaded), given the forward's geometry and indices (in i64).
      const PoolArgs a = pool_args(p, grad_in);
      const at::Tensor go = pool_layout(compute_view(grad_out), p);
      const at::Tensor self = pool_layout(shape_only(grad_in), p);
      at::Tensor idx = pool_layout(view_of(indices), p);
      if (indices.dtype != DType::i64) idx = idx.to(at::kLong);
      at::Tensor gi = direct(grad_in, {&grad_out}) ? pool_out_view(grad_in, p) : at::Tensor();
      if (gi.defined()) {  // straight into grad_in (ATen reads `self` for its size only)
        if (a.dims == 3) {
          at::max_pool3d_with_indices_backward_out(gi, go, self, a.kernel, a.stride, a.padding,
                                                   a.dilation, p.ceil_mode, idx);
        } else {
          at::max_pool2d_with_indices_backward_out(gi, go, self, a.kernel, a.stride, a.padding,
                                                   a.dilation, p.ceil_mode, idx);
        }
        return;
      }
      const at::Tensor r =
          a.dims == 3 ? at::max_pool3d_with_indices_backward(
                            go, self, a.kernel, a.stride, a.padding, a.dilation, p.ceil_mode, idx)
                      : at::max_pool2d_with_indices_backward(
                            go, self, a.kernel, a.stride, a.padding, a.dilation, p.ceil_mode, idx);
      assign(grad_in, shaped_like(r, grad_in));
      return;
    }
    // Every output's gradient added at its argmax, plane by plane (sequential: deterministic).
    int64_t in_plane = 1, out_plane = 1;
    for (int d = grad_in.rank() - p.spatial; d < grad_in.rank(); ++d) in_plane *= grad_in.shape[d];
    for (int d = grad_out.rank() - p.spatial; d < grad_out.rank(); ++d) {
      out_plane *= grad_out.shape[d];
    }
    const int64_t planes = in_plane == 0 ? 0 : grad_in.numel() / in_plane;
    const at::Tensor go = compute_view(grad_out).reshape({planes, out_plane});
    const at::Tensor idx = view_of(indices).reshape({planes, out_plane}).to(at::kLong);
    at::Tensor gi = at::zeros({planes, in_plane}, go.options());
    gi.scatter_add_(1, idx, go);
    assign(grad_in, shaped_like(gi, grad_in));
  });
}

void LibTorchBackend::avg_pool(const RawTensor& x, const PoolParams& p, const RawTensor& out) {
  run("avg_pool", [&] {
    const PoolArgs a = pool_args(p, x);
    const at::Tensor v = pool_layout(compute_view(x), p);
    at::Tensor r;
    if (p.adaptive) {
      r = a.dims == 3 ? at::adaptive_avg_pool3d(v, a.output) : at::adaptive_avg_pool2d(v, a.output);
    } else if (a.dims == 3) {
      r = at::avg_pool3d(v, a.kernel, a.stride, a.padding, p.ceil_mode, p.count_include_pad);
    } else {
      r = at::avg_pool2d(v, a.kernel, a.stride, a.padding, p.ceil_mode, p.count_include_pad);
    }
    assign(out, shaped_like(r, out));
  });
}

void LibTorchBackend::avg_pool_backward(const RawTensor& grad_out, const PoolParams& p,
                                        const RawTensor& grad_in) {
  run("avg_pool_backward", [&] {
    const PoolArgs a = pool_args(p, grad_in);
    const at::Tensor go = pool_layout(compute_view(grad_out), p);
    const at::Tensor self = pool_layout(shape_only(grad_in), p);
    at::Tensor r;
    if (p.adaptive) {
      r = a.dims == 3 ? at::_adaptive_avg_pool3d_backward(go, self)
                      : at::_adaptive_avg_pool2d_backward(go, self);
    } else if (a.dims == 3) {
      r = at::avg_pool3d_backward(go, self, a.kernel, a.stride, a.padding, p.ceil_mode,
                                  p.count_include_pad, c10::nullopt);
    } else {
      r = at::avg_pool2d_backward(go, self, a.kernel, a.stride, a.padding, p.ceil_mode,
                                  p.count_include_pad, c10::nullopt);
    }
    assign(grad_in, shaped_like(r, grad_in));
  });
}

// The statistics in double, as the Cpu kernels accumulate them.
void LibTorchBackend::channel_moments(const RawTensor& x, const RawTensor& out) {
  run("channel_moments", [&] {
    const at::Tensor v = view_of(x).to(at::kDouble);
    const std::vector<int64_t> dims = all_but_channel(x.rank());
    const at::Tensor mean = v.mean(dims, true);
    const at::Tensor var = (v - mean).square().mean(dims);  // two passes, as the Cpu kernel
    assign(out, at::stack({mean.flatten(), var}));
  });
}

void LibTorchBackend::channel_dot(const RawTensor& a, const RawTensor& b, const RawTensor& center,
                                  const RawTensor& out) {
  run("channel_dot", [&] {
    const at::Tensor av = view_of(a).to(at::kDouble);
    const at::Tensor bv = view_of(b).to(at::kDouble);
    const at::Tensor c = per_channel(view_of(center).to(at::kDouble), a.rank());
    const std::vector<int64_t> dims = all_but_channel(a.rank());
    assign(out, at::stack({av.sum(dims), (av * (bv - c)).sum(dims)}));
  });
}

void LibTorchBackend::channel_fma(const RawTensor& a, const RawTensor& ka, const RawTensor& b,
                                  const RawTensor& kb, const RawTensor& k0, const RawTensor& out) {
  run("channel_fma", [&] {
    const int rank = a.rank();
    at::Tensor r = compute_view(a) * per_channel(compute_view(ka), rank);
    if (b.defined()) r = r + compute_view(b) * per_channel(compute_view(kb), rank);
    assign(out, r + per_channel(compute_view(k0), rank));
  });
}

// torch.optim's Adam in the Cpu kernel's operation order (src/backends/cpu/optim.cpp).
void LibTorchBackend::adam_step(const RawTensor& param, const RawTensor& grad,
                                const RawTensor& exp_avg, const RawTensor& exp_avg_sq,
                                const RawTensor& max_exp_avg_sq, const AdamParams& p,
                                const RawTensor& param_out, const RawTensor& exp_avg_out,
                                const RawTensor& exp_avg_sq_out,
                                const RawTensor& max_exp_avg_sq_out) {
  run("adam_step", [&] {
    if (direct(param, {&grad, &exp_avg, &exp_avg_sq, &max_exp_avg_sq, &param_out, &exp_avg_out,
                       &exp_avg_sq_out, &max_exp_avg_sq_out}) &&
        1 - p.beta1 < 0.5) {
      return adam_direct(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, p, param_out,
                         exp_avg_out, exp_avg_sq_out, max_exp_avg_sq_out);
    }
    at::Tensor w = compute_view(param), g = compute_view(grad);
    const at::Tensor m0 = compute_view(exp_avg);
    if (p.decoupled && p.weight_decay != 0) w = w * (1 - p.lr * p.weight_decay);
    if (!p.decoupled && p.weight_decay != 0) g = g + w * p.weight_decay;
    const at::Tensor m = m0 + (g - m0) * (1 - p.beta1);
    const at::Tensor v = compute_view(exp_avg_sq) * p.beta2 + (g * g) * (1 - p.beta2);
    at::Tensor second = v;
    if (p.amsgrad) {
      second = at::maximum(compute_view(max_exp_avg_sq), v);
      assign(max_exp_avg_sq_out, second);
    }
    const at::Tensor denom = second.sqrt() / p.bias_correction2_sqrt + p.eps;
    assign(param_out, w + (m / denom) * (-(p.lr / p.bias_correction1)));
    assign(exp_avg_out, m);
    assign(exp_avg_sq_out, v);
  });
}

}  // namespace ember::libtorch
