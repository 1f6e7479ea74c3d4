// ember::onnx::load, Model::run and inspect: the public face of the importer.
#include <memory>

#include "ember/tensor/ops/creation.hpp"
#include "executor.hpp"
#include "shape_inference.hpp"

namespace ember::onnx {

struct Model::Impl {
  std::string path;
  ModelIR ir;
  Device device;
  std::map<std::string, DynTensor> params;
  std::vector<ValueInfo> inputs;  // the ones run() needs: graph inputs without an initialiser
  std::unique_ptr<Executor> executor;
};

Model::Model() = default;
Model::~Model() = default;
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;

const std::vector<ValueInfo>& Model::inputs() const { return impl_->inputs; }
const std::vector<ValueInfo>& Model::outputs() const { return impl_->ir.graph->outputs; }
Device Model::device() const { return impl_->device; }
int64_t Model::opset() const {
  const auto it = impl_->ir.opsets.find("");
  return it == impl_->ir.opsets.end() ? 0 : it->second;
}
std::map<std::string, DynTensor>& Model::parameters() { return impl_->params; }
const std::map<std::string, DynTensor>& Model::parameters() const { return impl_->params; }

namespace {

std::string names_of(const std::vector<ValueInfo>& vs) {
  std::string s;
  for (const ValueInfo& v : vs) s += (s.empty() ? "'" : ", '") + v.name + "'";
  return s.empty() ? "none" : s;
}

std::string describe(const std::vector<UnsupportedOp>& ops) {
  std::string s;
  for (const UnsupportedOp& u : ops) {
    if (!s.empty()) s += ", ";
    s += u.op_type + " (" + (u.domain.empty() ? "ai.onnx" : u.domain) + " opset " +
         std::to_string(u.opset) + ", " + std::to_string(u.count) +
         (u.count == 1 ? " node)" : " nodes)");
  }
  return s;
}

// A symbolic dim's size, as the first input that has it gave it: symbol -> (size, where).
using Symbols = std::map<std::string, std::pair<int64_t, std::string>>;

// An input against its declaration: dtype, rank, the fixed sizes, and one size per symbol
// across all inputs (ONNX: one dim_param names one size within a graph).
void check_input(const std::string& path, const ValueInfo& want, const DynTensor& x, Device device,
                 Symbols& symbols) {
  EMBER_CHECK(x.defined(), "[onnx] ", path, ": input '", want.name, "' is an undefined tensor");
  EMBER_CHECK(!want.known_dtype || x.dtype() == want.dtype, "[onnx] ", path, ": input '", want.name,
              "' must be ", want.dtype, " (", want.dtype_name, "), got ", x.dtype());
  EMBER_CHECK(x.device() == device, "[onnx] ", path, ": input '", want.name, "' is on ", x.device(),
              ", the model on ", device, " (move it with to_device)");
  if (!want.has_shape) return;
  EMBER_CHECK(x.rank() == static_cast<int>(want.shape.size()), "[onnx] ", path, ": input '",
              want.name, "' must have rank ", want.shape.size(), ", got shape ", x.shape());
  for (size_t d = 0; d < want.shape.size(); ++d) {
    const Dim& dim = want.shape[d];
    const int64_t size = x.size(static_cast<int>(d));
    EMBER_CHECK(dim.size < 0 || dim.size == size, "[onnx] ", path, ": input '", want.name,
                "' must have size ", dim.size, " in dim ", d, ", got shape ", x.shape());
    if (dim.size >= 0 || dim.symbol.empty()) continue;
    const std::string where = "input '" + want.name + "' dim " + std::to_string(d);
    const auto [it, first] = symbols.emplace(dim.symbol, std::pair{size, where});
    EMBER_CHECK(first || it->second.first == size, "[onnx] ", path, ": ", where, " (", dim.symbol,
                ") is ", size, ", but ", it->second.second, " gave ", dim.symbol, " = ",
                it->second.first, " (got shape ", x.shape(), ")");
  }
}

}  // namespace

Model load(const std::string& path, Device device, const LoadOptions& options) {
  auto impl = std::make_unique<Model::Impl>();
  impl->path = path;
  impl->device = device;
  impl->ir = read_model(path, options);
  std::map<std::string, int64_t> histogram;
  std::vector<UnsupportedOp> unsupported;
  scan_ops(impl->ir, *impl->ir.graph, &histogram, &unsupported);
  EMBER_CHECK(unsupported.empty(), "[onnx] ", path,
              ": unsupported operators: ", describe(unsupported));
  const Graph& g = *impl->ir.graph;
  for (const ValueInfo& v : g.inputs) {
    if (g.initializers.count(v.name)) continue;
    // Sequences and optionals are bound through run_values (run() takes tensors only).
    const bool container = v.dtype_name == "sequence" || v.dtype_name == "optional";
    EMBER_CHECK(v.known_dtype || container, "[onnx] ", path, ": unsupported: input '", v.name,
                "' of type ", v.dtype_name);
    impl->inputs.push_back(v);
  }
  // The parameters take the main graph's initialisers, whose host bytes are released one by one
  // (the executor reads only their names; params_ holds the values): keeping both would double
  // the model's memory, and releasing them at the end would double its peak.
  for (auto& [name, t] : impl->ir.graph->initializers) {
    impl->params[name] = to_device(from_data(t), device);
    std::vector<unsigned char>().swap(t.bytes);
  }
  impl->executor = std::make_unique<Executor>(impl->ir, device, impl->params, path);
  Model m;
  m.impl_ = std::move(impl);
  return m;
}

std::vector<Value> run_values(const Model& model, const std::map<std::string, Value>& inputs) {
  const Model::Impl& m = *model.impl_;
  const Graph& g = *m.ir.graph;
  std::vector<Value> bound;
  for (const ValueInfo& v : g.inputs) {
    const auto it = inputs.find(v.name);
    if (it != inputs.end()) {
      bound.push_back(it->second);
    } else {
      const auto p = m.params.find(v.name);
      EMBER_CHECK(p != m.params.end(), "[onnx] ", m.path, ": input '", v.name, "' is missing");
      bound.push_back(Value::of(p->second));
    }
  }
  return m.executor->run(g, std::move(bound), nullptr);
}

std::map<std::string, DynTensor> Model::run(const std::map<std::string, DynTensor>& inputs) const {
  const Impl& m = *impl_;
  const Graph& g = *m.ir.graph;
  for (const auto& [name, t] : inputs) {
    bool known = false;
    for (const ValueInfo& v : g.inputs) known = known || v.name == name;
    EMBER_CHECK(known, "[onnx] ", m.path, ": the model has no input '", name,
                "' (its inputs: ", names_of(m.inputs), ")");
  }
  std::vector<Value> bound;
  Symbols symbols;
  for (const ValueInfo& v : g.inputs) {
    const auto it = inputs.find(v.name);
    if (it == inputs.end()) {
      const auto p = m.params.find(v.name);
      EMBER_CHECK(p != m.params.end(), "[onnx] ", m.path, ": input '", v.name,
                  "' is missing (the model's inputs: ", names_of(m.inputs), ")");
      bound.push_back(Value::of(p->second));
      continue;
    }
    check_input(m.path, v, it->second, m.device, symbols);
    bound.push_back(Value::of(it->second));
  }
  std::vector<Value> outs = m.executor->run(g, std::move(bound), nullptr);
  std::map<std::string, DynTensor> result;
  for (size_t i = 0; i < outs.size(); ++i) {
    EMBER_CHECK(outs[i].kind == Value::Kind::Tensor, "[onnx] ", m.path, ": output '",
                g.outputs[i].name,
                "' is a sequence or an empty optional, which run() cannot return");
    result[g.outputs[i].name] = outs[i].tensor;
  }
  return result;
}

ModelSummary inspect(const std::string& path, const LoadOptions& options) {
  const ModelIR ir = read_model(path, options);
  ModelSummary s;
  s.ir_version = ir.ir_version;
  s.opsets = ir.opsets;
  s.producer = ir.producer;
  s.inputs = ir.graph->inputs;
  s.outputs = ir.graph->outputs;
  const auto opset = ir.opsets.find("");
  const auto types = infer_types(*ir.graph, opset == ir.opsets.end() ? 1 : opset->second);
  for (const Node& n : ir.graph->nodes) {
    for (const std::string& o : n.outputs) {
      if (!o.empty()) s.values.push_back(types.at(o));
    }
  }
  for (ValueInfo& out : s.outputs) {
    const auto it = types.find(out.name);
    if (it == types.end()) continue;
    if (out.dtype_name == "unknown") out = it->second;
    if (!out.has_shape && it->second.has_shape) {
      out.has_shape = true;
      out.shape = it->second.shape;
    }
  }
  scan_ops(ir, *ir.graph, &s.op_histogram, &s.unsupported);
  for (const auto& [name, t] : ir.graph->initializers) {
    ++s.num_initializers;
    s.num_parameters += t.numel();
  }
  return s;
}

}  // namespace ember::onnx
