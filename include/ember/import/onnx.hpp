// ONNX import: load a .onnx file and run it on any device, with dynamic input shapes.
//
//   auto m = ember::onnx::load("model.onnx", Device::cuda(0));
//   auto outs = m.run({{"input", x}});            // std::map<std::string, DynTensor>
//
// Loading parses the protobuf into Ember's own graph (protobuf stays out of this header), checks
// it (every op supported, no cycle, every value defined) and moves the initialisers to the
// device; a model with unsupported ops fails to load with one error listing all of them.
// docs/ONNX.md has the supported operators, versions and the deliberate differences.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ember/core/device.hpp"
#include "ember/tensor/dyn_tensor.hpp"

namespace ember::onnx {

struct Graph;
struct Value;

/// One dimension of a declared shape: a size, a symbol ("batch") or unknown (both empty).
struct Dim {
  int64_t size = -1;
  std::string symbol;
};

/// A graph input or output as the model declares it. `dtype_name` is ONNX's element type name
/// ("FLOAT", "INT64", ...); `known_dtype` is false when Ember has no dtype for it.
struct ValueInfo {
  std::string name;
  std::string dtype_name;
  DType dtype = DType::f32;
  bool known_dtype = true;
  int64_t elem_type = 0;  // ONNX's element type number (FLOAT 1, INT64 7); 0: unknown or none
  bool has_shape = false;
  std::vector<Dim> shape;
};

/// An op type of a model that Ember cannot run, with the domain ("" is ONNX's default) and the
/// opset version the model imports that domain at.
struct UnsupportedOp {
  std::string domain, op_type;
  int64_t opset = 0;
  int64_t count = 0;  // nodes of this type
};

/// What `ember inspect model.onnx` prints.
struct ModelSummary {
  int64_t ir_version = 0;
  std::map<std::string, int64_t> opsets;  // domain -> version
  std::string producer;
  std::vector<ValueInfo> inputs, outputs;  // outputs the file does not type: Ember's inference
  /// Every value the main graph's nodes compute, in node order, typed by Ember's shape
  /// inference from the declared inputs: symbolic dims ("batch") stay symbolic, "?" is unknown.
  std::vector<ValueInfo> values;
  std::map<std::string, int64_t> op_histogram;  // "Conv" or "domain:Op" -> nodes, subgraphs too
  int64_t num_initializers = 0, num_parameters = 0;  // tensors, elements
  std::vector<UnsupportedOp> unsupported;
};

struct LoadOptions {
  /// Refuse files larger than this (the protobuf and each external-data file).
  int64_t max_file_bytes = int64_t{1} << 36;
};

class Model {
 public:
  Model();
  ~Model();
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;

  const std::vector<ValueInfo>& inputs() const;
  const std::vector<ValueInfo>& outputs() const;
  Device device() const;
  /// The default domain's opset version.
  int64_t opset() const;

  /// Runs the graph: every required input by name (extra or missing names, wrong dtypes or
  /// ranks raise, naming the input). Returns every graph output by name.
  std::map<std::string, DynTensor> run(const std::map<std::string, DynTensor>& inputs) const;

  /// The initialisers, by name, as tensors on the model's device: mark them require_grad() (or
  /// hand them to an optimizer) to fine-tune; run() uses the current values.
  std::map<std::string, DynTensor>& parameters();
  const std::map<std::string, DynTensor>& parameters() const;

 private:
  friend Model load(const std::string& path, Device device, const LoadOptions& options);
  // Runs with sequence and optional values too (src/import/onnx/executor.hpp).
  friend std::vector<Value> run_values(const Model& model,
                                       const std::map<std::string, Value>& inputs);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Loads `path` onto `device`. Raises an ember::Error naming the file on a bad file (truncated,
/// corrupt, cyclic graph, missing initialiser, external data outside the model's folder) and
/// listing every unsupported op type at once.
Model load(const std::string& path, Device device = default_device(),
           const LoadOptions& options = {});

/// Reads the model's description without requiring its ops to be supported.
ModelSummary inspect(const std::string& path, const LoadOptions& options = {});

}  // namespace ember::onnx
