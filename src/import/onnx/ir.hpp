// Ember's own form of an ONNX model (protobuf stays in proto.cpp): graphs of nodes with typed
// attributes, constant tensors as host TensorData, declared inputs and outputs with symbolic
// dimensions. Subgraphs (If, Loop, Scan bodies) are Graphs held by attributes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ember/import/onnx.hpp"
#include "ember/tensor/tensor_data.hpp"

namespace ember::onnx {

struct Graph;

struct Attribute {
  enum class Kind : uint8_t {
    Float,
    Int,
    String,
    Tensor,
    Graph,
    Floats,
    Ints,
    Strings,
    Tensors,
    Graphs,
    Type  // a TypeProto (Optional's `type`), kept as its description in `s`: "seq(tensor(FLOAT))"
  };
  Kind kind = Kind::Int;
  double f = 0;
  int64_t i = 0;
  std::string s;
  TensorData t;
  std::shared_ptr<const onnx::Graph> g;
  std::vector<double> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<TensorData> tensors;
  std::vector<std::shared_ptr<const onnx::Graph>> graphs;
};

const char* kind_name(Attribute::Kind kind);

struct Node {
  std::string name, op_type, domain;         // domain "" (or "ai.onnx") is ONNX's default
  std::vector<std::string> inputs, outputs;  // "" marks an omitted optional one
  std::map<std::string, Attribute> attributes;
};

/// "node 'conv1' (Conv)" (the first output's name when the node has none), for messages.
std::string node_label(const Node& n);

struct Graph {
  std::string name;
  std::vector<Node> nodes;
  std::vector<ValueInfo> inputs, outputs;
  // Values on the host; a loaded Model releases the main graph's bytes (its parameters hold them).
  std::map<std::string, TensorData> initializers;
};

struct ModelIR {
  int64_t ir_version = 0;
  std::map<std::string, int64_t> opsets;  // domain ("" for ONNX's default) -> version
  std::string producer;
  std::shared_ptr<Graph> graph;
};

/// Parses an ONNX file. External data is read from files beside `path` only (names without
/// "..", absolute paths, symbolic or hard links); every failure names the file.
ModelIR read_model(const std::string& path, const LoadOptions& options);
/// Parses ONNX's TensorProto serialisation (the conformance suite's input_0.pb files).
/// `uint16_as_bf16`: read UINT16 data as bfloat16 bit patterns (ONNX 1.12's test files).
TensorData read_tensor_file(const std::string& path, std::string* name = nullptr,
                            bool uint16_as_bf16 = false);
/// Parses ONNX's SequenceProto serialisation of a sequence of tensors.
std::vector<TensorData> read_sequence_file(const std::string& path);
/// ONNX's OptionalProto (the conformance suite's optional values): empty, a tensor or a sequence.
struct OptionalData {
  enum class Kind : uint8_t { None, Tensor, Sequence };
  Kind kind = Kind::None;
  TensorData tensor;
  std::vector<TensorData> sequence;
};
OptionalData read_optional_file(const std::string& path);

/// ONNX's TensorProto element type (1 FLOAT, 7 INT64, ...) as Ember's dtype; false when Ember
/// has none (uint16/32/64, int16, string, complex, float8, ...).
bool dtype_of(int64_t onnx_type, DType* out);
/// Its name ("FLOAT"), or "type N" for a number this schema does not know.
std::string type_name(int64_t onnx_type);

/// Calls f(graph) for each subgraph attribute of `n` (If's branches, Loop's and Scan's bodies).
template <class F>
void for_each_subgraph(const Node& n, F&& f) {
  for (const auto& [name, a] : n.attributes) {
    if (a.g) f(*a.g);
    for (const auto& g : a.graphs) f(*g);
  }
}
/// Names a graph reads from its outer scopes: read by its nodes (or their subgraphs) or listed
/// as its outputs, and defined by none of its inputs, initialisers or nodes.
std::set<std::string> free_names(const Graph& g);
/// What node n reads: its inputs and its subgraphs' free names.
std::vector<std::string> reads_of(const Node& n);

/// "" for ONNX's default domain, however the model spells it.
inline std::string normal_domain(const std::string& d) { return d == "ai.onnx" ? "" : d; }

}  // namespace ember::onnx
