// The modules `ember onnx2cpp` wrote at build time (tests/onnx/CMakeLists.txt) against the
// executor: the same .onnx file and test_data_set inputs give the same outputs (to 1e-6), on
// the test's device. Each module is used as a person would: constructed on the device, its
// weights loaded with ember::load, run in evaluation mode through forward().
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "BatchNorm.hpp"
#include "Conv2d.hpp"
#include "Embedding.hpp"
#include "Glu.hpp"
#include "IfBranches.hpp"
#include "Linear.hpp"
#include "LinearNoBias.hpp"
#include "LoopScan.hpp"
#include "NonFloatParams.hpp"
#include "OperatorParams.hpp"
#include "PixelShuffle.hpp"
#include "ReduceSum.hpp"
#include "ember/ember.hpp"
#include "ember/import/onnx.hpp"
#include "ir.hpp"  // read_tensor_file

namespace fs = std::filesystem;
using namespace ember;

namespace {

using Tensors = std::vector<DynTensor>;

// got == want to 1e-6 (absolute and relative); integers and bools exactly.
void expect_close(const std::string& what, const DynTensor& got, const TensorData& want,
                  double tol) {
  ASSERT_EQ(got.dtype(), want.dtype) << what;
  ASSERT_EQ(got.shape(), want.shape) << what;
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  const bool exact = !is_floating(want.dtype);
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(g[i]) && std::isnan(w[i])) continue;
    const double err = std::fabs(g[i] - w[i]) / (1 + std::fabs(w[i]));
    if (exact ? g[i] != w[i] : !(err <= tol)) {
      ADD_FAILURE() << what << ": element " << i << " is " << g[i] << ", expected " << w[i];
      return;
    }
  }
}

/// Runs `forward` (the generated module M's, on its inputs in the graph's order) and the
/// executor on every test_data_set of `test` (a folder of libonnx-testdata).
template <class M, class F>
void check(const std::string& test, F forward) {
  const fs::path dir = fs::path(EMBER_ONNX_TESTDATA) / test;
  const Device device = default_device();
  onnx::Model executor;
  try {
    executor = onnx::load((dir / "model.onnx").string(), device);
  } catch (const Error& e) {
    if (std::string(e.what()).find("unsupported operators") != std::string::npos)
      GTEST_SKIP() << "the executor cannot run it yet: " << e.what();
    throw;
  }
  M loaded(device);
  load(loaded, std::string(EMBER_CODEGEN_DIR) + "/" + M::ember_module_name() + ".safetensors");
  const M model = loaded.valid();

  std::vector<fs::path> sets;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().rfind("test_data_set_", 0) == 0)
      sets.push_back(entry.path());
  }
  ASSERT_FALSE(sets.empty()) << dir;
  for (const fs::path& set : sets) {
    std::map<std::string, DynTensor> named;
    Tensors inputs;
    for (size_t i = 0; i < executor.inputs().size(); ++i) {
      const fs::path file = set / ("input_" + std::to_string(i) + ".pb");
      ASSERT_TRUE(fs::exists(file)) << file;
      inputs.push_back(to_device(from_data(onnx::read_tensor_file(file.string())), device));
      named[executor.inputs()[i].name] = inputs.back();
    }
    const std::map<std::string, DynTensor> want = executor.run(named);
    const Tensors got = forward(model, inputs);
    ASSERT_EQ(got.size(), executor.outputs().size());
    for (size_t o = 0; o < got.size(); ++o) {
      const std::string& name = executor.outputs()[o].name;
      const std::string what = test + " " + set.filename().string() + " output '" + name + "'";
      expect_close(what + " (against the executor)", got[o], want.at(name).to_data(), 1e-6);
      // Both against the file's reference, with ONNX's tolerance (rtol 1e-3).
      const fs::path ref = set / ("output_" + std::to_string(o) + ".pb");
      if (fs::exists(ref)) {
        expect_close(what + " (against the reference)", got[o],
                     onnx::read_tensor_file(ref.string()), 1e-3);
      }
    }
  }
}

}  // namespace

// Several Ember functions in a row, on a trainable parameter.
TEST(OnnxCodegen, OperatorParams) {
  check<OperatorParams>(
      "pytorch-operator/test_operator_params",
      [](const OperatorParams& m, const Tensors& in) { return Tensors{m.forward(in[0]).v6}; });
}

// A call with two outputs (Split), then sigmoid and mul.
TEST(OnnxCodegen, Glu) {
  check<Glu>("pytorch-converted/test_GLU",
             [](const Glu& m, const Tensors& in) { return Tensors{m.forward(in[0]).v4}; });
}

// Integer initialisers become Int buffers; integer Add and Mul stay calls.
TEST(OnnxCodegen, NonFloatParams) {
  check<NonFloatParams>(
      "pytorch-operator/test_operator_non_float_params",
      [](const NonFloatParams& m, const Tensors& in) { return Tensors{m.forward(in[0]).v3}; });
}

// Constant nodes become buffers written in the constructor; Reshape and Transpose are calls.
TEST(OnnxCodegen, PixelShuffle) {
  check<PixelShuffle>(
      "pytorch-converted/test_PixelShuffle",
      [](const PixelShuffle& m, const Tensors& in) { return Tensors{m.forward(in[0]).v5}; });
}

// An int64 input indexing a float parameter.
TEST(OnnxCodegen, Embedding) {
  check<Embedding>("pytorch-converted/test_Embedding", [](const Embedding& m, const Tensors& in) {
    return Tensors{m.forward(in[0]).v2};
  });
}

// Transpose of a parameter, then matmul.
TEST(OnnxCodegen, LinearNoBias) {
  check<LinearNoBias>(
      "pytorch-converted/test_Linear_no_bias",
      [](const LinearNoBias& m, const Tensors& in) { return Tensors{m.forward(in[0]).v3}; });
}

// Two graph inputs, one of them shape-like (the axes), at opset 13.
TEST(OnnxCodegen, ReduceSum) {
  check<ReduceSum>("node/test_reduce_sum_keepdims_random",
                   [](const ReduceSum& m, const Tensors& in) {
                     return Tensors{m.forward(in[0], in[1]).reduced};
                   });
}

// If as a C++ if, its branches' Constant nodes as buffers.
TEST(OnnxCodegen, IfBranches) {
  check<IfBranches>("node/test_if", [](const IfBranches& m, const Tensors& in) {
    return Tensors{m.forward(in[0]).res};
  });
}

// Loop as a C++ for: a loop-carried value, a scan output, calls and functions in the body.
TEST(OnnxCodegen, LoopScan) {
  check<LoopScan>("node/test_loop11", [](const LoopScan& m, const Tensors& in) {
    const LoopScan::Outputs out = m.forward(in[0], in[1], in[2]);
    return Tensors{out.res_y, out.res_scan};
  });
}

// The nn layers: Conv -> nn::Conv2d, Gemm -> nn::Linear, BatchNormalization -> nn::BatchNorm2d.
TEST(OnnxCodegen, Conv2dLayer) {
  check<Conv2d>("pytorch-converted/test_Conv2d",
                [](const Conv2d& m, const Tensors& in) { return Tensors{m.forward(in[0]).v3}; });
}

TEST(OnnxCodegen, LinearLayer) {
  check<Linear>("pytorch-converted/test_Linear",
                [](const Linear& m, const Tensors& in) { return Tensors{m.forward(in[0]).v3}; });
}

TEST(OnnxCodegen, BatchNormLayer) {
  check<BatchNorm>(
      "pytorch-converted/test_BatchNorm2d_eval",
      [](const BatchNorm& m, const Tensors& in) { return Tensors{m.forward(in[0]).v5}; });
}
