// Real architectures exported by tests/onnx/models/make_models.py (ResNet-18, MobileNetV3-Small,
// a MiniLM-shaped BERT encoder with a dynamic sequence length, a 2-layer LSTM, a model with If
// and Loop), run by Ember's executor on the test device and compared with ONNX Runtime's outputs
// on the same inputs. Prints each model's largest absolute difference. The models are made by
// the ctest fixture onnx.make_models into EMBER_ONNX_MODELS; without it the test is skipped.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "ember/ember.hpp"
#include "ember/import/onnx.hpp"
#include "ir.hpp"

namespace ember::test {
namespace {

namespace fs = std::filesystem;

struct Result {
  double max_abs = 0, max_ref = 0;
};

// Runs every test_data_set_* of one model folder; returns the worst difference over all outputs.
Result run_model(const fs::path& dir) {
  const onnx::Model m = onnx::load((dir / "model.onnx").string(), default_device());
  Result r;
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_directory()) sets.push_back(e.path());
  }
  std::sort(sets.begin(), sets.end());
  EXPECT_FALSE(sets.empty()) << dir;
  for (const fs::path& set : sets) {
    std::map<std::string, DynTensor> inputs;
    for (size_t i = 0; i < m.inputs().size(); ++i) {
      const TensorData t =
          onnx::read_tensor_file((set / ("input_" + std::to_string(i) + ".pb")).string());
      inputs[m.inputs()[i].name] = to_device(from_data(t), default_device());
    }
    const auto outs = m.run(inputs);
    for (size_t o = 0; o < m.outputs().size(); ++o) {
      const TensorData want =
          onnx::read_tensor_file((set / ("output_" + std::to_string(o) + ".pb")).string());
      const DynTensor& got = outs.at(m.outputs()[o].name);
      EXPECT_EQ(to_string(got.shape()), to_string(want.shape)) << dir << " " << set.filename();
      if (got.shape() != want.shape) continue;
      const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
      for (size_t i = 0; i < g.size(); ++i) {
        r.max_abs = std::max(r.max_abs, std::fabs(g[i] - w[i]));
        r.max_ref = std::max(r.max_ref, std::fabs(w[i]));
      }
    }
  }
  return r;
}

class Architectures : public ::testing::TestWithParam<std::string> {};

TEST_P(Architectures, MatchOnnxRuntime) {
  const char* root = std::getenv("EMBER_ONNX_MODELS");
  if (root == nullptr || !fs::exists(fs::path(root) / GetParam() / "model.onnx")) {
    GTEST_SKIP() << "no exported model (the ctest fixture onnx.make_models makes them)";
  }
  const Result r = run_model(fs::path(root) / GetParam());
  std::printf("%s on %s: max |Ember - ONNX Runtime| = %.3g (outputs up to %.3g)\n",
              GetParam().c_str(), to_string(default_device()).c_str(), r.max_abs, r.max_ref);
  // float32 through tens of layers, summed in other orders: 1e-4 of the outputs' scale.
  EXPECT_LE(r.max_abs, 1e-4 * std::max(1.0, r.max_ref)) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Onnx, Architectures,
                         ::testing::Values("resnet18", "mobilenet_v3_small", "minilm", "lstm2",
                                           "if_loop"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace ember::test
