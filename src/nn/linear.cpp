#include "ember/nn/linear.hpp"

#include <cmath>

#include "config_json.hpp"
#include "ember/core/error.hpp"
#include "ember/tensor/autocast.hpp"

namespace ember::nn {

DynTensor linear(const DynTensor& x, const DynTensor& weight, const DynTensor& bias) {
  EMBER_CHECK(x.defined() && weight.defined(), "[linear] input and weight must be defined");
  EMBER_CHECK(weight.rank() == 2, "[linear] weight must be [out, in], got ", weight.shape());
  EMBER_CHECK(x.rank() >= 1 && x.size(-1) == weight.size(1), "[linear] input ", x.shape(),
              " does not end in the weight's in_features ", weight.size(1), " (weight ",
              weight.shape(), ")");
  if (ember::detail::autocast_lowers(x, weight, bias)) {  // the bias too: the result stays 16-bit
    using ember::detail::autocast_lower;
    return linear(autocast_lower(x), autocast_lower(weight), autocast_lower(bias));
  }
  const DynTensor y = matmul(x, transpose(weight, 0, 1));
  if (!bias.defined()) return y;
  EMBER_CHECK(bias.rank() == 1 && bias.size(0) == weight.size(0), "[linear] bias ", bias.shape(),
              " does not match out_features ", weight.size(0));
  return add(y, bias);
}

std::string LinearConfig::to_json() const {
  return detail::JsonWriter()
      .field("in_features", in_features)
      .field("out_features", out_features)
      .field("bias", has_bias)
      .field("dtype", dtype_name(dtype))
      .str();
}

LinearConfig LinearConfig::from_json(const std::string& json) {
  const detail::JsonReader r(json, "LinearConfig");
  LinearConfig c(r.integer("in_features"), r.integer("out_features"));
  c.has_bias = r.boolean("bias", true);
  c.dtype = r.dtype("dtype", DType::f32);
  return c;
}

Linear::Linear(const LinearConfig& config, Device device, Generator* gen) {
  EMBER_CHECK(config.in_features > 0 && config.out_features > 0,
              "[Linear] in_features and out_features must be positive, got ", config.in_features,
              " and ", config.out_features);
  const double bound = 1.0 / std::sqrt(static_cast<double>(config.in_features));
  weight = Param<2>(Tensor<2>(rand(Shape{config.out_features, config.in_features}, config.dtype,
                                   device, gen, -bound, bound)));
  if (config.has_bias) {
    bias = Param<1>(
        Tensor<1>(rand(Shape{config.out_features}, config.dtype, device, gen, -bound, bound)));
  }
}

DynTensor Linear::forward(const DynTensor& x) const {
  return linear(x, weight.dyn(), bias ? bias->dyn() : DynTensor());
}

}  // namespace ember::nn
