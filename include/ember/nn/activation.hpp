// Activation functions (torch.nn.functional names) and their modules (torch.nn names). The
// functions are composites of primitive ops, so their gradients come from autodiff.
#pragma once

#include <string>

#include "ember/nn/module.hpp"

namespace ember::nn {

DynTensor leaky_relu(const DynTensor& x, double negative_slope = 0.01);
DynTensor elu(const DynTensor& x, double alpha = 1.0);
DynTensor selu(const DynTensor& x);
DynTensor mish(const DynTensor& x);
DynTensor hardsigmoid(const DynTensor& x);
/// clamp(alpha * x + beta, 0, 1): Burn's and ONNX's HardSigmoid (their defaults are 0.2, 0.5;
/// alpha 1/6 and beta 1/2 is PyTorch's hardsigmoid above, computed as PyTorch does).
DynTensor hardsigmoid(const DynTensor& x, double alpha, double beta);
DynTensor hardswish(const DynTensor& x);
/// PReLU: x where x >= 0, else weight * x; weight has 1 or C (= x.size(1)) entries.
DynTensor prelu(const DynTensor& x, const DynTensor& weight);
/// GLU: a * sigmoid(b), where a and b are the two halves of x along dim.
DynTensor glu(const DynTensor& x, int64_t dim = -1);
/// SwiGLU: silu(a) * b, the halves as in glu (the gated unit of LLaMA-style MLPs).
DynTensor swiglu(const DynTensor& x, int64_t dim = -1);

// The rest of torch.nn.functional's activations, with PyTorch's defaults and its gradients at
// the kinks (hardtanh, relu6 and hardsigmoid pass no gradient at their bounds, as PyTorch).
/// x / (1 + |x|).
DynTensor softsign(const DynTensor& x);
/// x - tanh(x).
DynTensor tanhshrink(const DynTensor& x);
/// clamp(x, min_val, max_val); gradient 1 strictly inside the bounds, 0 on and outside them.
DynTensor hardtanh(const DynTensor& x, double min_val = -1.0, double max_val = 1.0);
/// hardtanh(x, 0, 6).
DynTensor relu6(const DynTensor& x);
/// max(0, x) + min(0, alpha * (exp(x / alpha) - 1)); alpha must not be 0.
DynTensor celu(const DynTensor& x, double alpha = 1.0);
/// x where x > threshold, else value (torch.nn.functional.threshold).
DynTensor threshold(const DynTensor& x, double threshold, double value);
/// log(sigmoid(x)), computed as min(x, 0) - log1p(exp(-|x|)) so that it never overflows.
DynTensor logsigmoid(const DynTensor& x);
/// x - lambd where x > lambd, x + lambd where x < -lambd, else 0 (lambd >= 0).
DynTensor softshrink(const DynTensor& x, double lambd = 0.5);
/// x where |x| > lambd, else 0.
DynTensor hardshrink(const DynTensor& x, double lambd = 0.5);
/// Randomized leaky ReLU: when training, x <= 0 is multiplied by a slope drawn per element from
/// U(lower, upper) (from `gen`, default the global generator); otherwise by (lower + upper) / 2.
DynTensor rrelu(const DynTensor& x, double lower = 1.0 / 8.0, double upper = 1.0 / 3.0,
                bool training = false, Generator* gen = nullptr);
/// softmax(-x, dim).
DynTensor softmin(const DynTensor& x, int64_t dim);
// Burn's and ONNX's activations that PyTorch has no name for.
/// x where x > alpha, else 0 (ONNX ThresholdedRelu, Burn's thresholded_relu).
DynTensor thresholded_relu(const DynTensor& x, double alpha = 1.0);
/// x - bias where x > lambd, x + bias where x < -lambd, else 0 (ONNX Shrink, Burn's shrink).
DynTensor shrink(const DynTensor& x, double lambd = 0.5, double bias = 0.0);
/// exp(x_i) / (1 + sum_j exp(x_j)) along dim ("softmax_1", Burn's quiet_softmax): the weights
/// may sum to less than one, so an attention head can attend to nothing.
DynTensor quiet_softmax(const DynTensor& x, int64_t dim);

// Modules: callable on Tensor<D> of any rank; GLU and SwiGLU halve `dim`.
#define EMBER_ACTIVATION_MODULE(Type, expr)                      \
  struct Type {                                                  \
    EMBER_MODULE(Type)                                           \
    template <int D>                                             \
    Tensor<D> operator()(const Tensor<D>& x) const {             \
      return Tensor<D>(forward(x.dyn()));                        \
    }                                                            \
    DynTensor forward(const DynTensor& x) const { return expr; } \
  };
EMBER_ACTIVATION_MODULE(ReLU, relu(x))
EMBER_ACTIVATION_MODULE(SELU, selu(x))
EMBER_ACTIVATION_MODULE(SiLU, silu(x))
EMBER_ACTIVATION_MODULE(Mish, mish(x))
EMBER_ACTIVATION_MODULE(Sigmoid, sigmoid(x))
EMBER_ACTIVATION_MODULE(Tanh, tanh(x))
EMBER_ACTIVATION_MODULE(Hardswish, hardswish(x))
EMBER_ACTIVATION_MODULE(Softsign, softsign(x))
EMBER_ACTIVATION_MODULE(Tanhshrink, tanhshrink(x))
EMBER_ACTIVATION_MODULE(ReLU6, relu6(x))
EMBER_ACTIVATION_MODULE(LogSigmoid, logsigmoid(x))
EMBER_ACTIVATION_MODULE(Identity, x)
#undef EMBER_ACTIVATION_MODULE

// Modules with options: each is its own config (to_json / from_json), like LeakyReLU below.
#define EMBER_OPTION_ACTIVATION(Type, fields, expr)              \
  struct Type {                                                  \
    fields EMBER_MODULE(Type) std::string to_json() const;       \
    static Type from_json(const std::string& json);              \
    template <int D>                                             \
    Tensor<D> operator()(const Tensor<D>& x) const {             \
      return Tensor<D>(forward(x.dyn()));                        \
    }                                                            \
    DynTensor forward(const DynTensor& x) const { return expr; } \
  };
EMBER_OPTION_ACTIVATION(Hardtanh, double min_val = -1.0; double max_val = 1.0;
                        , hardtanh(x, min_val, max_val))
EMBER_OPTION_ACTIVATION(CELU, double alpha = 1.0;, celu(x, alpha))
// PyTorch's Hardsigmoid by default; Burn's slopes as options.
EMBER_OPTION_ACTIVATION(Hardsigmoid, double alpha = 1.0 / 6.0; double beta = 0.5;
                        , hardsigmoid(x, alpha, beta))
// Threshold has no defaults in PyTorch; here 0 and 0 (relu).
EMBER_OPTION_ACTIVATION(Threshold, double threshold = 0.0; double value = 0.0;
                        , nn::threshold(x, threshold, value))
EMBER_OPTION_ACTIVATION(Softshrink, double lambd = 0.5;, softshrink(x, lambd))
EMBER_OPTION_ACTIVATION(Hardshrink, double lambd = 0.5;, hardshrink(x, lambd))
EMBER_OPTION_ACTIVATION(ThresholdedReLU, double alpha = 1.0;, thresholded_relu(x, alpha))
EMBER_OPTION_ACTIVATION(Shrink, double lambd = 0.5; double bias = 0.0;, shrink(x, lambd, bias))
// The softmax family along `dim`. PyTorch's dim=None picks a dim from the rank (deprecated
// there); here dim is required to be given or is the last one.
EMBER_OPTION_ACTIVATION(Softmax, int64_t dim = -1;, softmax(x, dim))
EMBER_OPTION_ACTIVATION(LogSoftmax, int64_t dim = -1;, log_softmax(x, dim))
EMBER_OPTION_ACTIVATION(Softmin, int64_t dim = -1;, softmin(x, dim))
#undef EMBER_OPTION_ACTIVATION

/// Softmax over the channels of [C, H, W] or [N, C, H, W] (dim -3), as torch.nn.Softmax2d.
struct Softmax2d {
  EMBER_MODULE(Softmax2d)
  template <int D>
  Tensor<D> operator()(const Tensor<D>& x) const {
    return Tensor<D>(forward(x.dyn()));
  }
  DynTensor forward(const DynTensor& x) const;
};

/// RReLU: random slopes in U(lower, upper) for x <= 0 when training, their mean in evaluation.
struct RReLU {
  double lower = 1.0 / 8.0, upper = 1.0 / 3.0;
  ModeFlag mode;
  EMBER_MODULE(RReLU, mode)
  std::string to_json() const;
  static RReLU from_json(const std::string& json);
  template <int D>
  Tensor<D> operator()(const Tensor<D>& x) const {
    return Tensor<D>(forward(x.dyn()));
  }
  DynTensor forward(const DynTensor& x) const { return rrelu(x, lower, upper, mode.training); }
};

struct LeakyReLU {
  double negative_slope = 0.01;
  EMBER_MODULE(LeakyReLU)
  /// The options as JSON (the module is its own config).
  std::string to_json() const;
  static LeakyReLU from_json(const std::string& json);
  template <int D>
  Tensor<D> operator()(const Tensor<D>& x) const {
    return Tensor<D>(forward(x.dyn()));
  }
  DynTensor forward(const DynTensor& x) const { return leaky_relu(x, negative_slope); }
};

struct ELU {
  double alpha = 1.0;
  EMBER_MODULE(ELU)
  /// The options as JSON (the module is its own config).
  std::string to_json() const;
  static ELU from_json(const std::string& json);
  template <int D>
  Tensor<D> operator()(const Tensor<D>& x) const {
    return Tensor<D>(forward(x.dyn()));
  }
  DynTensor forward(const DynTensor& x) const { return elu(x, alpha); }
};

struct GELU {
  bool tanh_approximation = false;  // torch's approximate="tanh"
  EMBER_MODULE(GELU)
  /// The options as JSON (the module is its own config).
  std::string to_json() const;
  static GELU from_json(const std::string& json);
  template <int D>
  Tensor<D> operator()(const Tensor<D>& x) const {
    return Tensor<D>(forward(x.dyn()));
  }
  DynTensor forward(const DynTensor& x) const { return gelu(x, tanh_approximation); }
};

struct Softplus {
  double beta = 1.0;
  double threshold = 20.0;
  EMBER_MODULE(Softplus)
  /// The options as JSON (the module is its own config).
  std::string to_json() const;
  static Softplus from_json(const std::string& json);
  template <int D>
  Tensor<D> operator()(const Tensor<D>& x) const {
    return Tensor<D>(forward(x.dyn()));
  }
  DynTensor forward(const DynTensor& x) const { return softplus(x, beta, threshold); }
};

/// PReLU with a learned slope: one shared (num_parameters = 1) or one per channel, init 0.25.
class PReLU {
 public:
  Param<1> weight;
  EMBER_MODULE(PReLU, weight)

  explicit PReLU(int64_t num_parameters = 1, double init = 0.25, Device device = default_device(),
                 DType dtype = DType::f32);
  template <int D>
  Tensor<D> operator()(const Tensor<D>& x) const {
    return Tensor<D>(forward(x.dyn()));
  }
  DynTensor forward(const DynTensor& x) const { return prelu(x, weight.dyn()); }
};

struct GLU {
  int64_t dim = -1;
  EMBER_MODULE(GLU)
  /// The options as JSON (the module is its own config).
  std::string to_json() const;
  static GLU from_json(const std::string& json);
  template <int D>
  Tensor<D> operator()(const Tensor<D>& x) const {
    return Tensor<D>(forward(x.dyn()));
  }
  DynTensor forward(const DynTensor& x) const { return glu(x, dim); }
};

struct SwiGLU {
  int64_t dim = -1;
  EMBER_MODULE(SwiGLU)
  /// The options as JSON (the module is its own config).
  std::string to_json() const;
  static SwiGLU from_json(const std::string& json);
  template <int D>
  Tensor<D> operator()(const Tensor<D>& x) const {
    return Tensor<D>(forward(x.dyn()));
  }
  DynTensor forward(const DynTensor& x) const { return swiglu(x, dim); }
};

}  // namespace ember::nn
