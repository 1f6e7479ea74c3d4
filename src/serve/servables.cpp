// The models `ember serve` knows: an ONNX file, the Fashion-MNIST CNN's safetensors (float32 or
// int8), and any function of one tensor (make_servable), for server binaries of one's own.
#include "ember/core/error.hpp"
#include "ember/import/onnx.hpp"
#include "ember/io/safetensors.hpp"
#include "ember/models/fashion_cnn.hpp"
#include "ember/nn/serialize.hpp"
#include "ember/serve/serve.hpp"

namespace ember::serve {
namespace {

class FunctionServable final : public Servable {
 public:
  FunctionServable(TensorSpec input, TensorSpec output, Device device,
                   std::function<DynTensor(const DynTensor&)> forward)
      : inputs_{std::move(input)},
        outputs_{std::move(output)},
        device_(device),
        forward_(std::move(forward)) {}
  const std::vector<TensorSpec>& inputs() const override { return inputs_; }
  const std::vector<TensorSpec>& outputs() const override { return outputs_; }
  Device device() const override { return device_; }
  std::map<std::string, DynTensor> run(const std::map<std::string, DynTensor>& batch) override {
    return {{outputs_[0].name, forward_(batch.at(inputs_[0].name))}};
  }

 private:
  std::vector<TensorSpec> inputs_, outputs_;
  Device device_;
  std::function<DynTensor(const DynTensor&)> forward_;
};

#ifdef EMBER_HAVE_ONNX
class OnnxServable final : public Servable {
 public:
  OnnxServable(const std::string& path, Device device) : model_(onnx::load(path, device)) {
    auto specs = [&](const std::vector<onnx::ValueInfo>& values, bool required) {
      std::vector<TensorSpec> out;
      for (const onnx::ValueInfo& v : values) {
        EMBER_CHECK(!required || (v.has_shape && !v.shape.empty()), "[serve] ", path, ": input '",
                    v.name, "' declares no batch dim (serving batches along the first)");
        EMBER_CHECK(v.known_dtype, "[serve] ", path, ": '", v.name, "' is ", v.dtype_name,
                    ", which Ember has no dtype for");
        TensorSpec s{v.name, v.dtype, {}};
        for (size_t d = 1; d < v.shape.size(); ++d) s.example_shape.push_back(v.shape[d].size);
        out.push_back(std::move(s));
      }
      return out;
    };
    inputs_ = specs(model_.inputs(), true);
    outputs_ = specs(model_.outputs(), false);
  }
  const std::vector<TensorSpec>& inputs() const override { return inputs_; }
  const std::vector<TensorSpec>& outputs() const override { return outputs_; }
  Device device() const override { return model_.device(); }
  std::map<std::string, DynTensor> run(const std::map<std::string, DynTensor>& batch) override {
    return model_.run(batch);
  }

 private:
  onnx::Model model_;
  std::vector<TensorSpec> inputs_, outputs_;
};
#endif

}  // namespace

std::shared_ptr<Servable> make_servable(TensorSpec input, TensorSpec output, Device device,
                                        std::function<DynTensor(const DynTensor&)> forward) {
  return std::make_shared<FunctionServable>(std::move(input), std::move(output), device,
                                            std::move(forward));
}

std::shared_ptr<Servable> onnx_servable(const std::string& path, Device device) {
#ifdef EMBER_HAVE_ONNX
  return std::make_shared<OnnxServable>(path, device);
#else
  (void)device;
  EMBER_FAIL(
      "[serve] this Ember was built without the ONNX importer (apt-get install libonnx-dev "
      "libprotobuf-dev, then configure again): cannot serve ",
      path);
#endif
}

std::shared_ptr<Servable> fashion_servable(const std::string& safetensors_path, Device device) {
  const io::SafetensorsFile file = io::load_safetensors(safetensors_path);
  const TensorSpec input{"input", DType::f32, {1, 28, 28}}, output{"logits", DType::f32, {10}};
  if (file.contains("fc1.weight_scale")) {  // int8 weights (ember quantize)
    auto model = std::make_shared<models::FashionCnnInt8>(device);
    load(*model, file);
    return make_servable(input, output, device, [model](const DynTensor& x) {
      return model->forward(Tensor<4>(x)).dyn();
    });
  }
  auto model = std::make_shared<models::FashionCnn>(device);
  load(*model, file);
  model->eval();
  return make_servable(input, output, device,
                       [model](const DynTensor& x) { return model->forward(Tensor<4>(x)).dyn(); });
}

}  // namespace ember::serve
