// Linear: the composite y = x w^T + b, or the backend's fused GEMM with the bias in its epilogue.
#include "ember/nn/linear.hpp"

#include <cmath>

#include "config_json.hpp"
#include "ember/autodiff/node.hpp"
#include "ember/core/error.hpp"
#include "ember/tensor/autocast.hpp"
#include "ember/tensor/ops/linear_fused.hpp"

namespace ember::nn {

namespace {

// y = x w^T + b on the backend's fused kernels (OpFamily::Linear: on Cuda one cuBLASLt GEMM with
// the bias in its epilogue) and one node: dx = g w by matmul, dw and db in one GEMM whose epilogue
// sums g's rows. Under create_graph the backward is the composite's formula, so it records.
DynTensor linear_fused(const DynTensor& x, const DynTensor& weight, const DynTensor& bias) {
  const int64_t n = weight.size(0), k = weight.size(1), m = x.numel() / k;
  DynTensor y = fused_linear(reshape(detach(x), Shape{m, k}), detach(weight), detach(bias));
  Shape out_shape = x.shape();
  out_shape[out_shape.rank() - 1] = n;
  y = reshape(y, out_shape);                              // contiguous: a view
  const DynTensor* b = bias.defined() ? &bias : nullptr;  // null: a constant
  if (!autodiff::should_record({&x, &weight, b})) return y;
  // Only what the wanted gradients read stays alive: x for dw, the weight for dx.
  const DynTensor saved_x = weight.requires_grad() ? x : DynTensor();
  const DynTensor saved_w = x.requires_grad() ? weight : DynTensor();
  autodiff::record(
      "linear", {&x, &weight, b}, y,
      [x = saved_x, w = saved_w, w_column_major = fused_linear_column_major(weight),
       x_shape = x.shape(), has_bias = b != nullptr, m, n, k](autodiff::BackwardArgs& a) {
        constexpr size_t ix = 0, iw = 1, ib = 2;
        const bool want_db = has_bias && a.needs(ib);
        if (a.options.create_graph) {
          const DynTensor g = reshape(a.grad, Shape{m, n});
          if (a.needs(ix)) a.input_grads[ix] = reshape(matmul(g, w), x_shape);
          if (a.needs(iw)) a.input_grads[iw] = matmul(transpose(g, 0, 1), reshape(x, Shape{m, k}));
          if (want_db) a.input_grads[ib] = sum(g, {0});
          return;
        }
        const DynTensor g = reshape(detach(a.grad), Shape{m, n});
        if (a.needs(ix)) a.input_grads[ix] = reshape(matmul(g, detach(w)), x_shape);
        if (a.needs(iw)) {
          auto [dw, db] =
              fused_linear_weight_grad(g, reshape(detach(x), Shape{m, k}), want_db, w_column_major);
          a.input_grads[iw] = dw;
          if (want_db) a.input_grads[ib] = db;
        } else if (want_db) {
          a.input_grads[ib] = sum(g, {0});
        }
      });
  return y;
}

}  // namespace

DynTensor linear(const DynTensor& x, const DynTensor& weight, const DynTensor& bias) {
  EMBER_CHECK(x.defined() && weight.defined(), "[linear] input and weight must be defined");
  EMBER_CHECK(weight.rank() == 2, "[linear] weight must be [out, in], got ", weight.shape());
  EMBER_CHECK(x.rank() >= 1 && x.size(-1) == weight.size(1), "[linear] input ", x.shape(),
              " does not end in the weight's in_features ", weight.size(1), " (weight ",
              weight.shape(), ")");
  EMBER_CHECK(!bias.defined() || (bias.rank() == 1 && bias.size(0) == weight.size(0)),
              "[linear] bias ", bias.shape(), " does not match out_features ", weight.size(0));
  if (ember::detail::autocast_lowers(x, weight, bias)) {  // the bias too: the result stays 16-bit
    using ember::detail::autocast_lower;
    return linear(autocast_lower(x), autocast_lower(weight), autocast_lower(bias));
  }
  if (fused_linear_supported(x, weight, bias)) return linear_fused(x, weight, bias);
  const DynTensor y = matmul(x, transpose(weight, 0, 1));
  return bias.defined() ? add(y, bias) : y;
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
