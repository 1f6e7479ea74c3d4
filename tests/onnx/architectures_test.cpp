// Real architectures exported by tests/onnx/models/make_models.py (ResNet-18, MobileNetV3-Small,
// a MiniLM-shaped BERT encoder with a dynamic sequence length, a 2-layer LSTM, a model with If
// and Loop), through both of Ember's paths on the test device, against ONNX Runtime's outputs on
// the same inputs: the executor (onnx::load + run) and the C++ module `ember onnx2cpp` wrote from
// the same file at build time (tests/onnx/CMakeLists.txt), compiled into this binary. Prints each
// model's largest absolute difference. EMBER_ONNX_MODELS names the models' folder.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>

#include "ember/ember.hpp"
#include "ember/import/onnx.hpp"
#include "ir.hpp"
#include "shape_inference.hpp"
// The modules generated for the models this build had (all five unless EMBER_ONNX_MODELS_DIR
// held fewer).
#if __has_include("resnet18.hpp")
#include "resnet18.hpp"
#endif
#if __has_include("mobilenet_v3_small.hpp")
#include "mobilenet_v3_small.hpp"
#endif
#if __has_include("minilm.hpp")
#include "minilm.hpp"
#endif
#if __has_include("lstm2.hpp")
#include "lstm2.hpp"
#endif
#if __has_include("if_loop.hpp")
#include "if_loop.hpp"
#endif

namespace ember::test {
namespace {

namespace fs = std::filesystem;
using Tensors = std::vector<DynTensor>;
// One run of a model: its graph inputs in order, its graph outputs in order.
using ModelRun = std::function<Tensors(const Tensors&)>;

struct Result {
  double max_abs = 0, max_ref = 0;  // against ONNX Runtime
  double max_executor = 0;          // against the executor (generated source only)
};

fs::path model_dir(const std::string& name) {
  const char* root = std::getenv("EMBER_ONNX_MODELS");
  return root == nullptr ? fs::path() : fs::path(root) / name;
}

void track(const DynTensor& got, const TensorData& want, const std::string& what, double& worst,
           double* ref = nullptr) {
  EXPECT_EQ(to_string(got.shape()), to_string(want.shape)) << what;
  if (got.shape() != want.shape) return;
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    worst = std::max(worst, std::fabs(g[i] - w[i]));
    if (ref != nullptr) *ref = std::max(*ref, std::fabs(w[i]));
  }
}

// Runs `run` on every test_data_set_* of the model's folder (`m` is the model loaded by the
// executor: its inputs' and outputs' names); with `against_executor` it also compares `run`
// with m.run on the same inputs.
Result check(const std::string& name, const onnx::Model& m, const ModelRun& run,
             bool against_executor) {
  const fs::path dir = model_dir(name);
  Result r;
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_directory()) sets.push_back(e.path());
  }
  std::sort(sets.begin(), sets.end());
  EXPECT_FALSE(sets.empty()) << dir;
  for (const fs::path& set : sets) {
    Tensors inputs;
    std::map<std::string, DynTensor> named;
    for (size_t i = 0; i < m.inputs().size(); ++i) {
      const TensorData t =
          onnx::read_tensor_file((set / ("input_" + std::to_string(i) + ".pb")).string());
      inputs.push_back(to_device(from_data(t), default_device()));
      named[m.inputs()[i].name] = inputs.back();
    }
    const Tensors outs = run(inputs);
    EXPECT_EQ(outs.size(), m.outputs().size()) << name;
    const auto reference = against_executor ? m.run(named) : decltype(m.run(named)){};
    for (size_t o = 0; o < std::min(outs.size(), m.outputs().size()); ++o) {
      const std::string what =
          name + " " + set.filename().string() + " output " + std::to_string(o);
      track(outs[o],
            onnx::read_tensor_file((set / ("output_" + std::to_string(o) + ".pb")).string()), what,
            r.max_abs, &r.max_ref);
      if (against_executor) {
        track(outs[o], reference.at(m.outputs()[o].name).to_data(), what, r.max_executor);
      }
    }
  }
  return r;
}

// float32 through tens of layers, summed in other orders: 1e-4 of the outputs' scale.
void expect_matches_ort(const std::string& name, const char* path, const Result& r) {
  std::printf("%s (%s) on %s: max |Ember - ONNX Runtime| = %.3g (outputs up to %.3g)\n",
              name.c_str(), path, to_string(default_device()).c_str(), r.max_abs, r.max_ref);
  EXPECT_LE(r.max_abs, 1e-4 * std::max(1.0, r.max_ref)) << name << " " << path;
}

bool have_model(const std::string& name) { return fs::exists(model_dir(name) / "model.onnx"); }

class Architectures : public ::testing::TestWithParam<std::string> {};

TEST_P(Architectures, ExecutorMatchesOnnxRuntime) {
  if (!have_model(GetParam())) GTEST_SKIP() << "no exported model in EMBER_ONNX_MODELS";
  const onnx::Model m =
      onnx::load((model_dir(GetParam()) / "model.onnx").string(), default_device());
  const ModelRun run = [&](const Tensors& in) {
    std::map<std::string, DynTensor> named;
    for (size_t i = 0; i < in.size(); ++i) named[m.inputs()[i].name] = in[i];
    const auto outs = m.run(named);
    Tensors r;
    for (const auto& o : m.outputs()) r.push_back(outs.at(o.name));
    return r;
  };
  expect_matches_ort(GetParam(), "executor", check(GetParam(), m, run, false));
}

// The generated module M used as a person would: constructed on the device, its weights loaded
// from the safetensors file onnx2cpp wrote beside it, run in evaluation mode.
template <class M, class F>
ModelRun generated(F forward) {
  auto model = std::make_shared<M>(default_device());
  load(*model, std::string(EMBER_ARCH_CODEGEN_DIR) + "/" + M::ember_module_name() + ".safetensors");
  auto frozen = std::make_shared<const M>(model->valid());
  return [frozen, forward](const Tensors& in) { return forward(*frozen, in); };
}

// Empty when this build generated no module for `name`.
ModelRun generated_run(const std::string& name) {
#if __has_include("resnet18.hpp")
  if (name == "resnet18") {
    return generated<resnet18>(
        [](const resnet18& m, const Tensors& in) { return Tensors{m.forward(in[0]).logits}; });
  }
#endif
#if __has_include("mobilenet_v3_small.hpp")
  if (name == "mobilenet_v3_small") {
    return generated<mobilenet_v3_small>([](const mobilenet_v3_small& m, const Tensors& in) {
      return Tensors{m.forward(in[0]).logits};
    });
  }
#endif
#if __has_include("minilm.hpp")
  if (name == "minilm") {
    return generated<minilm>(
        [](const minilm& m, const Tensors& in) { return Tensors{m.forward(in[0], in[1]).hidden}; });
  }
#endif
#if __has_include("lstm2.hpp")
  if (name == "lstm2") {
    return generated<lstm2>(
        [](const lstm2& m, const Tensors& in) { return Tensors{m.forward(in[0]).y}; });
  }
#endif
#if __has_include("if_loop.hpp")
  if (name == "if_loop") {
    return generated<if_loop>(
        [](const if_loop& m, const Tensors& in) { return Tensors{m.forward(in[0], in[1]).y}; });
  }
#endif
  return {};
}

TEST_P(Architectures, GeneratedSourceMatchesOnnxRuntimeAndExecutor) {
  if (!have_model(GetParam())) GTEST_SKIP() << "no exported model in EMBER_ONNX_MODELS";
  const ModelRun run = generated_run(GetParam());
  if (!run) GTEST_SKIP() << "no module was generated for it in this build";
  const onnx::Model executor =
      onnx::load((model_dir(GetParam()) / "model.onnx").string(), default_device());
  const Result r = check(GetParam(), executor, run, true);
  expect_matches_ort(GetParam(), "onnx2cpp", r);
  // The same operators on the same inputs: only the order of a few float sums may differ.
  std::printf("%s: max |onnx2cpp - executor| = %.3g\n", GetParam().c_str(), r.max_executor);
  EXPECT_LE(r.max_executor, 1e-5 * std::max(1.0, r.max_ref)) << GetParam();
}

// Ember's shape inference keeps the exporter's symbols: from the inputs alone (the declared
// outputs are not read) it reaches the output types PyTorch declares, e.g. MiniLM's
// [batch, sequence, 384] through its Shape / Gather / Concat / Reshape chains.
TEST_P(Architectures, ShapeInferenceReachesTheDeclaredOutputs) {
  if (!have_model(GetParam())) GTEST_SKIP() << "no exported model in EMBER_ONNX_MODELS";
  const onnx::ModelIR ir = onnx::read_model((model_dir(GetParam()) / "model.onnx").string(), {});
  const auto types = onnx::infer_types(*ir.graph, ir.opsets.at(""));
  for (const onnx::ValueInfo& declared : ir.graph->outputs) {
    const onnx::ValueInfo& inferred = types.at(declared.name);
    std::printf("%s: output '%s' declared %s %s, inferred %s %s\n", GetParam().c_str(),
                declared.name.c_str(), declared.dtype_name.c_str(),
                onnx::shape_text(declared).c_str(), inferred.dtype_name.c_str(),
                onnx::shape_text(inferred).c_str());
    EXPECT_EQ(inferred.dtype_name, declared.dtype_name) << declared.name;
    // PyTorch names an If's output dims after the node (Ify_dim_0, Ify_dim_1); Ember follows
    // both branches and the Loop before them back to the input x: [batch, 8].
    const std::string want =
        GetParam() == "if_loop" ? std::string("[batch, 8]") : onnx::shape_text(declared);
    EXPECT_EQ(onnx::shape_text(inferred), want) << declared.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Onnx, Architectures,
                         ::testing::Values("resnet18", "mobilenet_v3_small", "minilm", "lstm2",
                                           "if_loop"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace ember::test
