// Activation composites, written as PyTorch defines them.
#include "ember/nn/activation.hpp"

#include "config_json.hpp"
#include "ember/core/error.hpp"

namespace ember::nn {

DynTensor leaky_relu(const DynTensor& x, double negative_slope) {
  return where(gt(x, 0), x, mul(x, negative_slope));
}

DynTensor elu(const DynTensor& x, double alpha) { return where(gt(x, 0), x, mul(expm1(x), alpha)); }

DynTensor selu(const DynTensor& x) {
  // The constants of Klambauer et al. (2017), as torch.nn.SELU.
  constexpr double alpha = 1.6732632423543772848170429916717;
  constexpr double scale = 1.0507009873554804934193349852946;
  return mul(elu(x, alpha), scale);
}

DynTensor mish(const DynTensor& x) { return mul(x, tanh(softplus(x, 1.0))); }

namespace {
// clamp(x, lo, hi) whose gradient is 1 strictly inside (lo, hi) and 0 on the bounds, as
// PyTorch's hardtanh_backward and hardsigmoid_backward (clamp's own passes at the bounds).
DynTensor clamp_open(const DynTensor& x, double lo, double hi) {
  return where(logical_and(gt(x, lo), lt(x, hi)), x, detach(clamp(x, lo, hi)));
}
}  // namespace

DynTensor hardsigmoid(const DynTensor& x) { return div(clamp_open(add(x, 3.0), 0.0, 6.0), 6.0); }

DynTensor hardsigmoid(const DynTensor& x, double alpha, double beta) {
  if (alpha == 1.0 / 6.0 && beta == 0.5) return hardsigmoid(x);
  return clamp_open(add(mul(x, alpha), beta), 0.0, 1.0);
}

// Not x * hardsigmoid(x): PyTorch's hardswish gradient at -3 and 3 is -0.5 and 1.5, which the
// bound-inclusive clamp gives.
DynTensor hardswish(const DynTensor& x) { return mul(x, div(clamp(add(x, 3.0), 0.0, 6.0), 6.0)); }

DynTensor softsign(const DynTensor& x) { return div(x, add(abs(x), 1.0)); }

DynTensor tanhshrink(const DynTensor& x) { return sub(x, tanh(x)); }

DynTensor hardtanh(const DynTensor& x, double min_val, double max_val) {
  EMBER_CHECK(max_val >= min_val, "[hardtanh] max_val must not be below min_val: min_val ", min_val,
              ", max_val ", max_val);
  return clamp_open(x, min_val, max_val);
}

DynTensor relu6(const DynTensor& x) { return hardtanh(x, 0.0, 6.0); }

DynTensor celu(const DynTensor& x, double alpha) {
  EMBER_CHECK(alpha != 0.0, "[celu] alpha must not be 0, got ", alpha);
  return where(gt(x, 0), x, mul(expm1(div(x, alpha)), alpha));
}

DynTensor threshold(const DynTensor& x, double threshold, double value) {
  // NaN fails x > threshold; PyTorch keeps it, so the NaN test is part of the condition.
  return where(logical_or(gt(x, threshold), isnan(x)), x, value);
}

DynTensor logsigmoid(const DynTensor& x) { return sub(minimum(x, 0.0), log1p(exp(neg(abs(x))))); }

DynTensor softshrink(const DynTensor& x, double lambd) {
  EMBER_CHECK(lambd >= 0.0, "[softshrink] lambd must be at least 0, got ", lambd);
  return shrink(x, lambd, lambd);
}

DynTensor hardshrink(const DynTensor& x, double lambd) {
  // NaN fails both comparisons and is kept, as in PyTorch.
  return where(logical_and(ge(x, -lambd), le(x, lambd)), 0.0, x);
}

DynTensor rrelu(const DynTensor& x, double lower, double upper, bool training, Generator* gen) {
  EMBER_CHECK(lower <= upper, "[rrelu] lower must not exceed upper: lower ", lower, ", upper ",
              upper);
  if (!training) return leaky_relu(x, (lower + upper) / 2.0);
  EMBER_CHECK(is_floating(x.dtype()), "[rrelu] needs a Float tensor, got ", x.dtype());
  const DynTensor slope = rand(x.shape(), x.dtype(), x.device(), gen, lower, upper);
  return where(gt(x, 0), x, mul(x, slope));  // x <= 0 gets the random slope, as PyTorch
}

DynTensor softmin(const DynTensor& x, int64_t dim) { return softmax(neg(x), dim); }

DynTensor thresholded_relu(const DynTensor& x, double alpha) { return threshold(x, alpha, 0.0); }

DynTensor shrink(const DynTensor& x, double lambd, double bias) {
  // mul(x, 0) rather than 0 in the middle keeps NaN, as PyTorch's softshrink.
  return where(gt(x, lambd), sub(x, bias), where(lt(x, -lambd), add(x, bias), mul(x, 0.0)));
}

DynTensor quiet_softmax(const DynTensor& x, int64_t dim) {
  EMBER_CHECK(x.rank() > 0, "[quiet_softmax] needs at least one dimension");
  const int d = wrap_dim(dim, x.rank(), "quiet_softmax");
  // Shifted by the max (at least 0, so that the added 1 becomes exp(-m) <= 1 and never overflows).
  const DynTensor m = detach(clamp_min(amax(x, {d}, true), 0.0));
  const DynTensor e = exp(sub(x, m));
  return div(e, add(sum(e, {d}, true), exp(neg(m))));
}

DynTensor Softmax2d::forward(const DynTensor& x) const {
  EMBER_CHECK(x.rank() == 3 || x.rank() == 4, "[Softmax2d] expects [C, H, W] or [N, C, H, W], got ",
              x.shape());
  return softmax(x, -3);
}

DynTensor prelu(const DynTensor& x, const DynTensor& weight) {
  EMBER_CHECK(weight.rank() == 1, "[prelu] weight must be 1-D, got ", weight.shape());
  DynTensor w = weight;
  if (weight.numel() != 1) {
    EMBER_CHECK(x.rank() >= 2 && x.size(1) == weight.numel(), "[prelu] weight has ", weight.numel(),
                " entries but the input ", x.shape(), " has ", x.rank() >= 2 ? x.size(1) : 1,
                " channels (dim 1)");
    // One slope per channel: [C] viewed as [C, 1, 1, ...] against [N, C, ...].
    Shape s = Shape::filled(x.rank() - 1, 1);
    s[0] = weight.numel();
    w = reshape(weight, s);
  }
  return where(ge(x, 0), x, mul(w, x));
}

namespace {
std::vector<DynTensor> halves(const DynTensor& x, int64_t dim, const char* op) {
  EMBER_CHECK(x.rank() > 0, "[", op, "] needs at least one dimension");
  const int d = wrap_dim(dim, x.rank(), op);
  EMBER_CHECK(x.size(d) % 2 == 0, "[", op, "] halves dimension ", dim, " of ", x.shape(),
              ", which must be even");
  return chunk(x, 2, d);
}
}  // namespace

DynTensor glu(const DynTensor& x, int64_t dim) {
  const auto h = halves(x, dim, "glu");
  return mul(h[0], sigmoid(h[1]));
}

DynTensor swiglu(const DynTensor& x, int64_t dim) {
  const auto h = halves(x, dim, "swiglu");
  return mul(silu(h[0]), h[1]);
}

PReLU::PReLU(int64_t num_parameters, double init, Device device, DType dtype) {
  EMBER_CHECK(num_parameters >= 1, "[PReLU] num_parameters must be positive, got ", num_parameters);
  weight = Param<1>(Tensor<1>(full(Shape{num_parameters}, init, dtype, device)));
}

std::string LeakyReLU::to_json() const {
  return detail::JsonWriter().field("negative_slope", negative_slope).str();
}
LeakyReLU LeakyReLU::from_json(const std::string& json) {
  return LeakyReLU{detail::JsonReader(json, "LeakyReLU").number("negative_slope", 0.01)};
}
std::string ELU::to_json() const { return detail::JsonWriter().field("alpha", alpha).str(); }
ELU ELU::from_json(const std::string& json) {
  return ELU{detail::JsonReader(json, "ELU").number("alpha", 1.0)};
}
std::string GELU::to_json() const {
  return detail::JsonWriter().field("approximate", tanh_approximation ? "tanh" : "none").str();
}
GELU GELU::from_json(const std::string& json) {
  const std::string a = detail::JsonReader(json, "GELU").string("approximate", "none");
  EMBER_CHECK(a == "none" || a == "tanh", "[GELU] approximate must be none or tanh, got ", a);
  return GELU{a == "tanh"};
}
std::string Softplus::to_json() const {
  return detail::JsonWriter().field("beta", beta).field("threshold", threshold).str();
}
Softplus Softplus::from_json(const std::string& json) {
  const detail::JsonReader r(json, "Softplus");
  return Softplus{r.number("beta", 1.0), r.number("threshold", 20.0)};
}
std::string GLU::to_json() const { return detail::JsonWriter().field("dim", dim).str(); }
GLU GLU::from_json(const std::string& json) {
  return GLU{detail::JsonReader(json, "GLU").integer("dim", -1)};
}
std::string SwiGLU::to_json() const { return detail::JsonWriter().field("dim", dim).str(); }
std::string Hardtanh::to_json() const {
  return detail::JsonWriter().field("min_val", min_val).field("max_val", max_val).str();
}
Hardtanh Hardtanh::from_json(const std::string& json) {
  const detail::JsonReader r(json, "Hardtanh");
  return Hardtanh{r.number("min_val", -1.0), r.number("max_val", 1.0)};
}
std::string Hardsigmoid::to_json() const {
  return detail::JsonWriter().field("alpha", alpha).field("beta", beta).str();
}
Hardsigmoid Hardsigmoid::from_json(const std::string& json) {
  const detail::JsonReader r(json, "Hardsigmoid");
  return Hardsigmoid{r.number("alpha", 1.0 / 6.0), r.number("beta", 0.5)};
}
std::string CELU::to_json() const { return detail::JsonWriter().field("alpha", alpha).str(); }
CELU CELU::from_json(const std::string& json) {
  return CELU{detail::JsonReader(json, "CELU").number("alpha", 1.0)};
}
std::string Threshold::to_json() const {
  return detail::JsonWriter().field("threshold", threshold).field("value", value).str();
}
Threshold Threshold::from_json(const std::string& json) {
  const detail::JsonReader r(json, "Threshold");
  return Threshold{r.number("threshold", 0.0), r.number("value", 0.0)};
}
std::string Softshrink::to_json() const { return detail::JsonWriter().field("lambd", lambd).str(); }
Softshrink Softshrink::from_json(const std::string& json) {
  return Softshrink{detail::JsonReader(json, "Softshrink").number("lambd", 0.5)};
}
std::string Hardshrink::to_json() const { return detail::JsonWriter().field("lambd", lambd).str(); }
Hardshrink Hardshrink::from_json(const std::string& json) {
  return Hardshrink{detail::JsonReader(json, "Hardshrink").number("lambd", 0.5)};
}
std::string ThresholdedReLU::to_json() const {
  return detail::JsonWriter().field("alpha", alpha).str();
}
ThresholdedReLU ThresholdedReLU::from_json(const std::string& json) {
  return ThresholdedReLU{detail::JsonReader(json, "ThresholdedReLU").number("alpha", 1.0)};
}
std::string Shrink::to_json() const {
  return detail::JsonWriter().field("lambd", lambd).field("bias", bias).str();
}
Shrink Shrink::from_json(const std::string& json) {
  const detail::JsonReader r(json, "Shrink");
  return Shrink{r.number("lambd", 0.5), r.number("bias", 0.0)};
}
std::string Softmax::to_json() const { return detail::JsonWriter().field("dim", dim).str(); }
Softmax Softmax::from_json(const std::string& json) {
  return Softmax{detail::JsonReader(json, "Softmax").integer("dim", -1)};
}
std::string LogSoftmax::to_json() const { return detail::JsonWriter().field("dim", dim).str(); }
LogSoftmax LogSoftmax::from_json(const std::string& json) {
  return LogSoftmax{detail::JsonReader(json, "LogSoftmax").integer("dim", -1)};
}
std::string Softmin::to_json() const { return detail::JsonWriter().field("dim", dim).str(); }
Softmin Softmin::from_json(const std::string& json) {
  return Softmin{detail::JsonReader(json, "Softmin").integer("dim", -1)};
}
std::string RReLU::to_json() const {
  return detail::JsonWriter().field("lower", lower).field("upper", upper).str();
}
RReLU RReLU::from_json(const std::string& json) {
  const detail::JsonReader r(json, "RReLU");
  return RReLU{r.number("lower", 1.0 / 8.0), r.number("upper", 1.0 / 3.0), {}};
}
SwiGLU SwiGLU::from_json(const std::string& json) {
  return SwiGLU{detail::JsonReader(json, "SwiGLU").integer("dim", -1)};
}

}  // namespace ember::nn
