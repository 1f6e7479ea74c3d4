// Normalisation composites, each as PyTorch defines it (biased variance for normalising).
#include "ember/nn/norm.hpp"

#include <limits>
#include <memory>

#include "config_json.hpp"
#include "ember/autodiff/node.hpp"
#include "ember/core/error.hpp"
#include "ember/tensor/autocast.hpp"
#include "ember/tensor/ops/norm.hpp"

namespace ember::nn {
namespace {

bool is_16bit(const DynTensor& t) { return t.dtype() == DType::bf16 || t.dtype() == DType::f16; }

// The last n dims of a rank-r tensor, after checking they equal `shape`.
Dims last_dims(const DynTensor& x, const std::vector<int64_t>& shape, const char* op) {
  const int n = static_cast<int>(shape.size());
  EMBER_CHECK(n >= 1 && x.rank() >= n, "[", op, "] normalized_shape of ", n,
              " dims does not fit an input of shape ", x.shape());
  Dims dims;
  for (int i = 0; i < n; ++i) {
    const int d = x.rank() - n + i;
    EMBER_CHECK(x.size(d) == shape[static_cast<size_t>(i)], "[", op, "] input ", x.shape(),
                " does not end in normalized_shape ", Shape(std::span<const int64_t>(shape)));
    dims.push_back(d);
  }
  return dims;
}

DynTensor normalize(const DynTensor& x, const Dims& dims, double eps) {
  const DynTensor mu = mean(x, dims, true);
  const DynTensor centered = sub(x, mu);
  const DynTensor v = mean(square(centered), dims, true);
  return mul(centered, rsqrt(add(v, eps)));
}

// [C] parameters against [N, C, *]: viewed as [C, 1, ...].
DynTensor per_channel(const DynTensor& p, const DynTensor& x) {
  Shape s = Shape::filled(x.rank() - 1, 1);
  s[0] = p.numel();
  return reshape(p, s);
}

DynTensor affine(const DynTensor& y, const DynTensor& weight, const DynTensor& bias,
                 const DynTensor& x) {
  DynTensor out = y;
  if (weight.defined()) out = mul(out, per_channel(weight, x));
  if (bias.defined()) out = add(out, per_channel(bias, x));
  return out;
}

void check_channels(const DynTensor& x, const DynTensor& p, const char* op, const char* what) {
  if (!p.defined()) return;
  EMBER_CHECK(p.rank() == 1 && p.numel() == x.size(1), "[", op, "] ", what, " of shape ", p.shape(),
              " does not match the ", x.size(1), " channels of input ", x.shape());
}

}  // namespace

namespace {
// layer_norm's result type outside autocast: its operands' promoted type (as the composite's
// multiply and add give it).
DType result_dtype(const DynTensor& x, const DynTensor& weight, const DynTensor& bias) {
  DType t = x.dtype();
  if (weight.defined()) t = promote_types(t, weight.dtype());
  if (bias.defined()) t = promote_types(t, bias.dtype());
  return t;
}

// layer_norm on the backend's one-pass kernels: 16-bit inputs are read once (under autocast the
// result is f32, as the widened composite's), one node whose backward is one kernel for dx and
// two for the weight and bias gradients. Under create_graph the backward is the composite's
// formula in tensor ops, so higher derivatives stay exact.
DynTensor layer_norm_fused(const DynTensor& x, const Dims& dims, int64_t d, const DynTensor& weight,
                           const DynTensor& bias, double eps) {
  const DType out = ember::detail::autocast_widens(x) ? DType::f32 : result_dtype(x, weight, bias);
  auto fwd = std::make_shared<LayerNormRows>(layer_norm_rows(x, d, weight, bias, eps, out));
  DynTensor y = fwd->y;
  const DynTensor* w = weight.defined() ? &weight : nullptr;  // null: a constant
  const DynTensor* b = bias.defined() ? &bias : nullptr;
  if (!autodiff::should_record({&x, w, b})) return y;
  autodiff::record(
      "layer_norm", {&x, w, b}, y, [x, weight, bias, fwd, dims, eps](autodiff::BackwardArgs& a) {
        constexpr size_t iw = 1, ib = 2;
        if (a.options.create_graph) {
          const DynTensor xf = cast(x, DType::f32);
          const DynTensor xhat = normalize(xf, dims, eps);
          const DynTensor rstd =
              rsqrt(add(mean(square(sub(xf, mean(xf, dims, true))), dims, true), eps));
          const DynTensor gy = cast(a.grad, DType::f32);
          const DynTensor g = weight.defined() ? mul(gy, weight) : gy;
          const DynTensor dx = mul(
              rstd, sub(sub(g, mean(g, dims, true)), mul(xhat, mean(mul(g, xhat), dims, true))));
          a.input_grads[0] = cast(dx, x.dtype());
          Dims rows;
          for (int i = 0; i < x.rank() - static_cast<int>(dims.size()); ++i) rows.push_back(i);
          if (weight.defined())
            a.input_grads[iw] = reshape(sum(mul(gy, xhat), rows), weight.shape());
          if (bias.defined()) a.input_grads[ib] = reshape(sum(gy, rows), bias.shape());
          return;
        }
        auto g =
            layer_norm_rows_backward(a.grad, x, *fwd, weight, weight.defined(), bias.defined());
        a.input_grads[0] = g[0];
        if (weight.defined()) a.input_grads[iw] = reshape(g[1], weight.shape());
        if (bias.defined()) a.input_grads[ib] = reshape(g[2], bias.shape());
      });
  return y;
}
}  // namespace

DynTensor layer_norm(const DynTensor& x, const std::vector<int64_t>& normalized_shape,
                     const DynTensor& weight, const DynTensor& bias, double eps) {
  if (fused_layer_norm_supported(x) && x.numel() > 0) {
    const Dims dims = last_dims(x, normalized_shape, "layer_norm");
    int64_t d = 1;
    for (int64_t s : normalized_shape) d *= s;
    auto f32_of = [d](const DynTensor& p) {
      return !p.defined() || (p.dtype() == DType::f32 && p.numel() == d);
    };
    if (d > 0 && f32_of(weight) && f32_of(bias)) {
      return as_op("layer_norm", [&] { return layer_norm_fused(x, dims, d, weight, bias, eps); });
    }
  }
  if (ember::detail::autocast_widens(x)) {
    return layer_norm(cast(x, DType::f32), normalized_shape, weight, bias, eps);
  }
  if (x.dtype() == DType::f16 || x.dtype() == DType::bf16) {
    // Statistics in f32, as the kernels and PyTorch keep them; rounded once at the end.
    return cast(layer_norm(cast(x, DType::f32), normalized_shape, weight, bias, eps),
                result_dtype(x, weight, bias));
  }
  const Dims dims = last_dims(x, normalized_shape, "layer_norm");
  return as_op("layer_norm", [&] {
    DynTensor y = normalize(x, dims, eps);
    if (weight.defined()) y = mul(y, weight);
    if (bias.defined()) y = add(y, bias);
    return y;
  });
}

namespace {
// torch.finfo(dtype).eps: rms_norm's default epsilon, of the type it computes in.
double finfo_eps(DType dtype) {
  switch (dtype) {
    case DType::f64:
      return std::numeric_limits<double>::epsilon();
    case DType::f16:
      return 0.0009765625;
    case DType::bf16:
      return 0.0078125;
    default:
      return std::numeric_limits<float>::epsilon();
  }
}

// rms_norm on the backend's one-pass kernels, as layer_norm_fused: 16-bit inputs read once, one
// node whose backward is one kernel for dx and two for the weight gradient; the composite's
// formula in tensor ops under create_graph.
DynTensor rms_norm_fused(const DynTensor& x, const Dims& dims, int64_t d, const DynTensor& weight,
                         double eps) {
  const DType out = ember::detail::autocast_widens(x) ? DType::f32
                    : weight.defined()                ? promote_types(x.dtype(), weight.dtype())
                                                      : x.dtype();
  auto fwd = std::make_shared<LayerNormRows>(rms_norm_rows(x, d, weight, eps, out));
  DynTensor y = fwd->y;
  const DynTensor* w = weight.defined() ? &weight : nullptr;  // null: a constant
  if (!autodiff::should_record({&x, w})) return y;
  autodiff::record("rms_norm", {&x, w}, y, [x, weight, fwd, dims, eps](autodiff::BackwardArgs& a) {
    if (a.options.create_graph) {
      const DynTensor xf = cast(x, DType::f32);
      const DynTensor rstd = rsqrt(add(mean(square(xf), dims, true), eps));
      const DynTensor xhat = mul(xf, rstd);
      const DynTensor gy = cast(a.grad, DType::f32);
      const DynTensor g = weight.defined() ? mul(gy, weight) : gy;
      a.input_grads[0] =
          cast(mul(rstd, sub(g, mul(xhat, mean(mul(g, xhat), dims, true)))), x.dtype());
      Dims rows;
      for (int i = 0; i < x.rank() - static_cast<int>(dims.size()); ++i) rows.push_back(i);
      if (weight.defined()) a.input_grads[1] = reshape(sum(mul(gy, xhat), rows), weight.shape());
      return;
    }
    auto g = layer_norm_rows_backward(a.grad, x, *fwd, weight, weight.defined(), false);
    a.input_grads[0] = g[0];
    if (weight.defined()) a.input_grads[1] = reshape(g[1], weight.shape());
  });
  return y;
}
}  // namespace

DynTensor rms_norm(const DynTensor& x, const std::vector<int64_t>& normalized_shape,
                   const DynTensor& weight, std::optional<double> eps) {
  const bool widen = ember::detail::autocast_widens(x);
  if (fused_layer_norm_supported(x) && x.numel() > 0) {
    const Dims dims = last_dims(x, normalized_shape, "rms_norm");
    int64_t d = 1;
    for (int64_t s : normalized_shape) d *= s;
    if (d > 0 && (!weight.defined() || (weight.dtype() == DType::f32 && weight.numel() == d))) {
      const double e = eps ? *eps : finfo_eps(widen ? DType::f32 : x.dtype());
      return as_op("rms_norm", [&] { return rms_norm_fused(x, dims, d, weight, e); });
    }
  }
  if (widen) return rms_norm(cast(x, DType::f32), normalized_shape, weight, eps);
  const Dims dims = last_dims(x, normalized_shape, "rms_norm");
  const double e = eps ? *eps : finfo_eps(x.dtype());
  return as_op("rms_norm", [&] {
    DynTensor y = mul(x, rsqrt(add(mean(square(x), dims, true), e)));
    if (weight.defined()) y = mul(y, weight);
    return y;
  });
}

DynTensor group_norm(const DynTensor& x, int64_t num_groups, const DynTensor& weight,
                     const DynTensor& bias, double eps) {
  if (ember::detail::autocast_widens(x)) {
    return group_norm(cast(x, DType::f32), num_groups, weight, bias, eps);
  }
  EMBER_CHECK(x.rank() >= 2, "[group_norm] expects [N, C, *], got ", x.shape());
  EMBER_CHECK(num_groups > 0 && x.size(1) % num_groups == 0, "[group_norm] ", x.size(1),
              " channels do not split into ", num_groups, " groups");
  check_channels(x, weight, "group_norm", "weight");
  check_channels(x, bias, "group_norm", "bias");
  const DynTensor grouped = reshape(x, Shape{x.size(0), num_groups, -1});
  const DynTensor y = reshape(normalize(grouped, Dims{2}, eps), x.shape());
  return affine(y, weight, bias, x);
}

DynTensor instance_norm(const DynTensor& x, const DynTensor& weight, const DynTensor& bias,
                        double eps) {
  EMBER_CHECK(x.rank() >= 3, "[instance_norm] expects [N, C, L] or [N, C, H, W], got ", x.shape());
  check_channels(x, weight, "instance_norm", "weight");
  check_channels(x, bias, "instance_norm", "bias");
  Dims spatial;
  for (int d = 2; d < x.rank(); ++d) spatial.push_back(d);
  return affine(normalize(x, spatial, eps), weight, bias, x);
}

namespace {

// Training-mode batch norm as one recorded node over the channel ops (tensor/ops/norm.hpp, fused
// kernels where the backend has them): two passes forward (moments, then scale-shift) and two
// backward (per-channel sums, then one multiply-add), where the composite takes about fifteen.
// dims are every dim but 1.
DynTensor batch_norm_fused(const DynTensor& x, const DynTensor& weight, const DynTensor& bias,
                           double eps, const Dims& dims, DynTensor& mean_out, DynTensor& var_out) {
  // Contiguous, or channels-last where the backend's channel kernels read it: one copy at most.
  const DynTensor xd = channel_operand(x);
  const DynTensor wd = weight.defined() ? detach(weight) : DynTensor();
  const DynTensor moments = channel_moments(xd);
  const DynTensor mean_c = select(moments, 0, 0), var_c = select(moments, 0, 1);
  // invstd, scale, shift: one kernel where the backend has it, six small ops where not.
  const DynTensor coefficients =
      batch_norm_coefficients(moments, wd, bias.defined() ? detach(bias) : DynTensor(), eps);
  const DynTensor scale = select(coefficients, 0, 1);
  DynTensor y = channel_fma(xd, scale, DynTensor(), DynTensor(), select(coefficients, 0, 2));
  mean_out = mean_c;
  var_out = var_c;
  if (!autodiff::should_record({&x, &weight, &bias})) return y;
  const double count = static_cast<double>(x.numel() / x.size(1));
  autodiff::record(
      "batch_norm", {&x, &weight, &bias}, y,
      [x, xd, weight, moments, coefficients, mean_c, scale, eps, dims,
       count](autodiff::BackwardArgs& a) {
        if (a.options.create_graph) {
          // Recorded backward (second order): the composite formula over the tracked inputs,
          // 16-bit input computed in f32 as the first-order path's statistics are.
          const DynTensor x32 = is_16bit(x) ? cast(x, DType::f32) : x;
          const DynTensor mu = mean(x32, dims, true), xc = sub(x32, mu);
          const DynTensor inv = rsqrt(add(mean(square(xc), dims, true), eps));
          const DynTensor xhat = mul(xc, inv);
          const DynTensor& g = a.grad;
          if (a.needs(0)) {
            const DynTensor gxhat = weight.defined() ? mul(g, per_channel(weight, x)) : g;
            a.input_grads[0] = mul(inv, sub(sub(gxhat, mean(gxhat, dims, true)),
                                            mul(xhat, mean(mul(gxhat, xhat), dims, true))));
          }
          if (a.needs(1)) a.input_grads[1] = sum(mul(g, xhat), dims);
          if (a.needs(2)) a.input_grads[2] = sum(g, dims);
          return;
        }
        // d = [sum(g), sum(g * (x - mean))] per channel; with xhat = (x - mean) * invstd,
        // dx = scale * (g - sum(g) / n - xhat * sum(g * xhat) / n) = k1 g + k2 x + k3.
        const DynTensor& g = a.grad;
        const DynTensor d = channel_dot(g, xd, mean_c);
        // k2, k3, dweight, dbias in one kernel where the backend has it.
        const DynTensor k = batch_norm_backward_coefficients(d, coefficients, moments, count);
        if (a.needs(0)) {
          a.input_grads[0] = channel_fma(g, scale, xd, select(k, 0, 0), select(k, 0, 1));
        }
        if (a.needs(1)) a.input_grads[1] = select(k, 0, 2);
        if (a.needs(2)) a.input_grads[2] = select(k, 0, 3);
      });
  return y;
}

}  // namespace

BatchNormOutput batch_norm(const DynTensor& x, const DynTensor& running_mean,
                           const DynTensor& running_var, const DynTensor& weight,
                           const DynTensor& bias, bool training, double momentum, double eps) {
  // Not widened under autocast (as PyTorch): 16-bit input stays 16-bit, while the statistics,
  // scale and shift are f32 (the channel ops compute 16-bit data in f32).
  EMBER_CHECK(x.rank() >= 2, "[batch_norm] expects [N, C, *], got ", x.shape());
  check_channels(x, weight, "batch_norm", "weight");
  check_channels(x, bias, "batch_norm", "bias");
  check_channels(x, running_mean, "batch_norm", "running_mean");
  check_channels(x, running_var, "batch_norm", "running_var");
  Dims dims{0};
  for (int d = 2; d < x.rank(); ++d) dims.push_back(d);
  BatchNormOutput out;
  if (!training) {
    EMBER_CHECK(running_mean.defined() && running_var.defined(),
                "[batch_norm] evaluation mode needs running statistics");
    if (!autodiff::should_record({&x, &running_mean, &running_var, &weight, &bias})) {
      // Inference: one pass with per-channel scale and shift (channel_fma does not record).
      const DynTensor invstd = rsqrt(add(running_var, eps));
      const DynTensor scale = weight.defined() ? mul(weight, invstd) : invstd;
      DynTensor shift = neg(mul(running_mean, scale));
      if (bias.defined()) shift = add(shift, bias);
      out.y = channel_fma(x, scale, DynTensor(), DynTensor(), shift);
      return out;
    }
    const DynTensor scale = rsqrt(add(per_channel(running_var, x), eps));
    out.y = affine(mul(sub(x, per_channel(running_mean, x)), scale), weight, bias, x);
    if (is_16bit(x)) out.y = cast(out.y, x.dtype());  // as the unrecorded and training paths
    return out;
  }
  const int64_t n = x.numel() / x.size(1);
  EMBER_CHECK(n > 1, "[batch_norm] training needs more than one value per channel, got input ",
              x.shape());
  DynTensor batch_mean, batch_var;
  out.y = batch_norm_fused(x, weight, bias, eps, dims, batch_mean, batch_var);
  if (running_mean.defined()) {
    // The running statistics never carry gradients; the variance is the unbiased one.
    batch_var = mul(batch_var, static_cast<double>(n) / static_cast<double>(n - 1));
    // In the buffers' own dtype (f32 statistics of a 16-bit batch do not widen 16-bit buffers).
    out.running_mean = cast(add(mul(running_mean, 1.0 - momentum), mul(batch_mean, momentum)),
                            running_mean.dtype());
    out.running_var =
        cast(add(mul(running_var, 1.0 - momentum), mul(batch_var, momentum)), running_var.dtype());
  }
  return out;
}

std::string LayerNormConfig::to_json() const {
  return detail::JsonWriter()
      .field("normalized_shape", normalized_shape)
      .field("eps", eps)
      .field("elementwise_affine", elementwise_affine)
      .field("bias", has_bias)
      .field("dtype", dtype_name(dtype))
      .str();
}

LayerNormConfig LayerNormConfig::from_json(const std::string& json) {
  const detail::JsonReader r(json, "LayerNormConfig");
  LayerNormConfig c(r.integers("normalized_shape", {}));
  c.eps = r.number("eps", 1e-5);
  c.elementwise_affine = r.boolean("elementwise_affine", true);
  c.has_bias = r.boolean("bias", true);
  c.dtype = r.dtype("dtype", DType::f32);
  return c;
}

LayerNorm::LayerNorm(const LayerNormConfig& config, Device device)
    : normalized_shape(config.normalized_shape), eps(config.eps) {
  EMBER_CHECK(!normalized_shape.empty(), "[LayerNorm] normalized_shape is empty");
  if (config.elementwise_affine) {
    EMBER_CHECK(normalized_shape.size() == 1,
                "[LayerNorm] affine parameters over several dims are not supported yet; use "
                "LayerNormConfig(...).affine(false) for a normalized shape of ",
                normalized_shape.size(), " dims");
    const Shape s{normalized_shape[0]};
    weight = Param<1>(Tensor<1>(ones(s, config.dtype, device)));
    if (config.has_bias) bias = Param<1>(Tensor<1>(zeros(s, config.dtype, device)));
  }
}

DynTensor LayerNorm::forward(const DynTensor& x) const {
  return layer_norm(x, normalized_shape, weight ? weight->dyn() : DynTensor(),
                    bias ? bias->dyn() : DynTensor(), eps);
}

std::string RMSNormConfig::to_json() const {
  detail::JsonWriter w;
  w.field("normalized_shape", normalized_shape);
  if (eps) w.field("eps", *eps);
  return w.field("elementwise_affine", elementwise_affine).field("dtype", dtype_name(dtype)).str();
}

RMSNormConfig RMSNormConfig::from_json(const std::string& json) {
  const detail::JsonReader r(json, "RMSNormConfig");
  RMSNormConfig c(r.integers("normalized_shape", {}));
  const double e = r.number("eps", -1.0);
  if (e >= 0) c.eps = e;
  c.elementwise_affine = r.boolean("elementwise_affine", true);
  c.dtype = r.dtype("dtype", DType::f32);
  return c;
}

std::string GroupNormConfig::to_json() const {
  return detail::JsonWriter()
      .field("num_groups", num_groups)
      .field("num_channels", num_channels)
      .field("eps", eps)
      .field("affine", has_affine)
      .field("dtype", dtype_name(dtype))
      .str();
}

GroupNormConfig GroupNormConfig::from_json(const std::string& json) {
  const detail::JsonReader r(json, "GroupNormConfig");
  GroupNormConfig c(r.integer("num_groups"), r.integer("num_channels"));
  c.eps = r.number("eps", 1e-5);
  c.has_affine = r.boolean("affine", true);
  c.dtype = r.dtype("dtype", DType::f32);
  return c;
}

std::string InstanceNormConfig::to_json() const {
  return detail::JsonWriter()
      .field("num_features", num_features)
      .field("eps", eps)
      .field("affine", has_affine)
      .field("dtype", dtype_name(dtype))
      .str();
}

InstanceNormConfig InstanceNormConfig::from_json(const std::string& json) {
  const detail::JsonReader r(json, "InstanceNormConfig");
  InstanceNormConfig c(r.integer("num_features"));
  c.eps = r.number("eps", 1e-5);
  c.has_affine = r.boolean("affine", false);
  c.dtype = r.dtype("dtype", DType::f32);
  return c;
}

RMSNorm::RMSNorm(const RMSNormConfig& config, Device device)
    : normalized_shape(config.normalized_shape), eps(config.eps) {
  EMBER_CHECK(normalized_shape.size() == 1 || !config.elementwise_affine,
              "[RMSNorm] affine parameters over several dims are not supported yet; use "
              "RMSNormConfig(...).affine(false)");
  if (config.elementwise_affine) {
    weight = Param<1>(Tensor<1>(ones(Shape{normalized_shape[0]}, config.dtype, device)));
  }
}

GroupNorm::GroupNorm(const GroupNormConfig& c, Device device)
    : GroupNorm(c.num_groups, c.num_channels, c.eps, c.has_affine, device, c.dtype) {}

RMSNorm::RMSNorm(int64_t dim, std::optional<double> eps_in, bool affine, Device device, DType dtype)
    : normalized_shape{dim}, eps(eps_in) {
  if (affine) weight = Param<1>(Tensor<1>(ones(Shape{dim}, dtype, device)));
}

GroupNorm::GroupNorm(int64_t groups, int64_t num_channels, double eps_in, bool affine,
                     Device device, DType dtype)
    : num_groups(groups), eps(eps_in) {
  EMBER_CHECK(groups > 0 && num_channels % groups == 0, "[GroupNorm] ", num_channels,
              " channels do not split into ", groups, " groups");
  if (affine) {
    weight = Param<1>(Tensor<1>(ones(Shape{num_channels}, dtype, device)));
    bias = Param<1>(Tensor<1>(zeros(Shape{num_channels}, dtype, device)));
  }
}

std::string BatchNormConfig::to_json() const {
  return detail::JsonWriter()
      .field("num_features", num_features)
      .field("eps", eps)
      .field("momentum", momentum)
      .field("affine", has_affine)
      .field("track_running_stats", track_running_stats)
      .field("dtype", dtype_name(dtype))
      .str();
}

BatchNormConfig BatchNormConfig::from_json(const std::string& json) {
  const detail::JsonReader r(json, "BatchNormConfig");
  BatchNormConfig c(r.integer("num_features"));
  c.eps = r.number("eps", 1e-5);
  c.momentum = r.optional_number("momentum", 0.1);
  c.has_affine = r.boolean("affine", true);
  c.track_running_stats = r.boolean("track_running_stats", true);
  c.dtype = r.dtype("dtype", DType::f32);
  return c;
}

BatchNorm::BatchNorm(const BatchNormConfig& config, Device device, int min_rank_in, int max_rank_in,
                     const char* name_in)
    : eps(config.eps),
      momentum(config.momentum),
      min_rank(min_rank_in),
      max_rank(max_rank_in),
      name(name_in) {
  EMBER_CHECK(config.num_features > 0, "[", name, "] num_features must be positive, got ",
              config.num_features);
  const Shape s{config.num_features};
  if (config.has_affine) {
    weight = Param<1>(Tensor<1>(ones(s, config.dtype, device)));
    bias = Param<1>(Tensor<1>(zeros(s, config.dtype, device)));
  }
  if (config.track_running_stats) {
    running_mean = Buffer<1>(Tensor<1>(zeros(s, config.dtype, device)));
    running_var = Buffer<1>(Tensor<1>(ones(s, config.dtype, device)));
    num_batches_tracked = Buffer<0, Int>(Tensor<0, Int>::zeros({}, device));
  }
}

DynTensor BatchNorm::forward(const DynTensor& x) const {
  EMBER_CHECK(x.rank() >= min_rank && x.rank() <= max_rank, "[", name,
              "] expects an input of rank ", min_rank,
              min_rank == max_rank ? "" : " or " + std::to_string(max_rank), ", got ", x.shape());
  // Without running statistics the batch's are used in evaluation too (PyTorch).
  const bool use_batch = mode.training || !running_mean;
  BatchNormOutput out = batch_norm(
      x, running_mean ? running_mean->dyn() : DynTensor(),
      running_var ? running_var->dyn() : DynTensor(), weight ? weight->dyn() : DynTensor(),
      bias ? bias->dyn() : DynTensor(), use_batch, momentum.value_or(1.0), eps);
  if (mode.training && running_mean) {
    const DynTensor count = add(num_batches_tracked->dyn(), 1);
    // In place, as PyTorch updates them: a captured training step keeps working on them.
    if (momentum) {
      running_mean->assign(out.running_mean);
      running_var->assign(out.running_var);
    } else {
      // Cumulative moving average: factor 1 / num_batches_tracked (after this batch), as
      // PyTorch; a device tensor, so the step never waits for the count. With momentum 1
      // batch_norm returned the batch's own statistics.
      const DynTensor f = reciprocal(cast(count, out.running_mean.dtype()));
      const DynTensor keep = sub(1.0, f);
      running_mean->assign(add(mul(running_mean->dyn(), keep), mul(out.running_mean, f)));
      running_var->assign(add(mul(running_var->dyn(), keep), mul(out.running_var, f)));
    }
    num_batches_tracked->assign(count);
  }
  return out.y;
}

InstanceNorm::InstanceNorm(int64_t num_features, double eps_in, bool affine, Device device,
                           DType dtype)
    : eps(eps_in) {
  if (affine) {
    weight = Param<1>(Tensor<1>(ones(Shape{num_features}, dtype, device)));
    bias = Param<1>(Tensor<1>(zeros(Shape{num_features}, dtype, device)));
  }
}

DynTensor local_response_norm(const DynTensor& x, int64_t size, double alpha, double beta,
                              double k) {
  EMBER_CHECK(x.rank() >= 3, "[local_response_norm] expects [N, C, *] with at least 3 dims, got ",
              x.shape());
  EMBER_CHECK(size >= 1, "[local_response_norm] size must be positive, got ", size);
  // PyTorch's: zero-padded squares, averaged over a window of `size` channels (count including
  // the padding), then (k + alpha * avg)^beta.
  const int64_t c = x.size(1);
  std::vector<int64_t> pads(static_cast<size_t>(2 * (x.rank() - 1)), 0);
  pads[pads.size() - 2] = size / 2;
  pads[pads.size() - 1] = (size - 1) / 2;
  const DynTensor sq = pad(square(x), pads);  // only dim 1 is padded
  DynTensor window = narrow(sq, 1, 0, c);
  for (int64_t j = 1; j < size; ++j) window = add(window, narrow(sq, 1, j, c));
  const DynTensor div_ = pow(add(mul(div(window, static_cast<double>(size)), alpha), k), beta);
  return div(x, div_);
}

std::string LocalResponseNorm::to_json() const {
  return detail::JsonWriter()
      .field("size", size)
      .field("alpha", alpha)
      .field("beta", beta)
      .field("k", k)
      .str();
}

LocalResponseNorm LocalResponseNorm::from_json(const std::string& json) {
  const detail::JsonReader r(json, "LocalResponseNorm");
  return LocalResponseNorm{r.integer("size"), r.number("alpha", 1e-4), r.number("beta", 0.75),
                           r.number("k", 1.0)};
}

}  // namespace ember::nn
