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
DynTensor hardswish(const DynTensor& x);
/// PReLU: x where x >= 0, else weight * x; weight has 1 or C (= x.size(1)) entries.
DynTensor prelu(const DynTensor& x, const DynTensor& weight);
/// GLU: a * sigmoid(b), where a and b are the two halves of x along dim.
DynTensor glu(const DynTensor& x, int64_t dim = -1);
/// SwiGLU: silu(a) * b, the halves as in glu (the gated unit of LLaMA-style MLPs).
DynTensor swiglu(const DynTensor& x, int64_t dim = -1);

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
EMBER_ACTIVATION_MODULE(Hardsigmoid, hardsigmoid(x))
EMBER_ACTIVATION_MODULE(Hardswish, hardswish(x))
#undef EMBER_ACTIVATION_MODULE

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
