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

DynTensor hardsigmoid(const DynTensor& x) { return div(clamp(add(x, 3.0), 0.0, 6.0), 6.0); }

DynTensor hardswish(const DynTensor& x) { return mul(x, hardsigmoid(x)); }

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
SwiGLU SwiGLU::from_json(const std::string& json) {
  return SwiGLU{detail::JsonReader(json, "SwiGLU").integer("dim", -1)};
}

}  // namespace ember::nn
