// `ember onnx2cpp`: an ONNX model written out as a readable C++ module (codegen.cpp), and the
// one-node runner it shares with onnx::call (call.cpp). docs/ONNX.md ("Source path") describes
// what the generated code looks like and what is refused.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "registry.hpp"

namespace ember::onnx {

/// Runs `node` with the registry's function at `opset`, outside any graph, creating on `device`
/// what it creates: onnx::call, and the generator's evaluation of Constant nodes. Errors name
/// the node, as the executor's do.
std::vector<Value> run_node(const Node& node, int64_t opset, std::vector<Value> inputs,
                            Device device);

/// What onnx2cpp writes for one model.
struct GeneratedModule {
  std::string header, source;  // <name>.hpp, <name>.cpp
  /// <name>.safetensors: every Param and Buffer of the module by its path (`conv1.weight`).
  std::vector<std::pair<std::string, TensorData>> weights;
  // Nodes written as nn layers, Ember functions, onnx::call, C++ control flow (If, Loop).
  int layers = 0, functions = 0, calls = 0, control = 0;
  int fields = 0;  // of the struct (layers, Params, Buffers)
};

/// The module of `ir` as a struct called `name` (a C++ identifier). `source_name` (the model's
/// file name) is quoted in the files' opening comments. Raises an ember::Error starting with
/// "onnx2cpp: " for what it cannot write (subgraphs, sequences, unsupported operators).
GeneratedModule generate_cpp(const ModelIR& ir, const std::string& name,
                             const std::string& source_name);

/// Reads `model_path` and writes <out_dir>/<name>.hpp, .cpp and .safetensors (creating out_dir).
/// Returns what was written, with the generator's counts.
struct WrittenModule {
  std::vector<std::string> paths;
  int layers = 0, functions = 0, calls = 0, control = 0;
  int64_t tensors = 0;
};
WrittenModule write_cpp(const std::string& model_path, const std::string& out_dir,
                        const std::string& name);

}  // namespace ember::onnx
