// Linear (torch.nn.Linear): y = x W^T + b, weight [out, in], PyTorch's default initialisation.
#pragma once

#include <string>

#include "ember/nn/module.hpp"

namespace ember::nn {

/// y = x w^T + b over the last dim of x (torch.nn.functional.linear); b may be undefined.
DynTensor linear(const DynTensor& x, const DynTensor& weight, const DynTensor& bias = {});
template <int D>
Tensor<D> linear(const Tensor<D>& x, const Tensor<2>& weight, const Tensor<1>& bias = {}) {
  return Tensor<D>(linear(x.dyn(), weight.dyn(), bias.dyn()));
}

struct LinearConfig {
  int64_t in_features;
  int64_t out_features;
  bool has_bias = true;
  DType dtype = DType::f32;

  LinearConfig(int64_t in, int64_t out) : in_features(in), out_features(out) {}
  LinearConfig& bias(bool on) {
    has_bias = on;
    return *this;
  }
  LinearConfig& with_dtype(DType t) {
    dtype = t;
    return *this;
  }
  std::string to_json() const;
  static LinearConfig from_json(const std::string& json);
};

class Linear {
 public:
  Param<2> weight;
  std::optional<Param<1>> bias;
  EMBER_MODULE(Linear, weight, bias)

  Linear() = default;
  /// Weight and bias uniform on [-1/sqrt(in), 1/sqrt(in)], as PyTorch's reset_parameters.
  explicit Linear(const LinearConfig& config, Device device = default_device(),
                  Generator* gen = nullptr);
  Linear(int64_t in_features, int64_t out_features, Device device = default_device())
      : Linear(LinearConfig(in_features, out_features), device) {}

  template <int D>
  Tensor<D> operator()(const Tensor<D>& x) const {
    return Tensor<D>(forward(x.dyn()));
  }
  DynTensor forward(const DynTensor& x) const;
};

}  // namespace ember::nn
