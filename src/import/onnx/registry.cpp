#include "registry.hpp"

#include <algorithm>

#include "ember/tensor/ops/creation.hpp"

namespace ember::onnx {

void Registry::add(const std::string& domain, const std::string& op_type, OpFn fn, int64_t since) {
  auto& entries = table_[{normal_domain(domain), op_type}];
  entries.push_back({since, std::move(fn)});
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.since < b.since; });
}

const OpFn* Registry::find(const std::string& domain, const std::string& op_type,
                           int64_t opset) const {
  const auto it = table_.find({normal_domain(domain), op_type});
  if (it == table_.end()) return nullptr;
  const OpFn* found = nullptr;
  for (const Entry& e : it->second) {
    if (e.since <= opset) found = &e.fn;
  }
  return found;
}

const Registry& registry() {
  static const Registry r = [] {
    Registry t;
    register_elementwise_ops(t);
    register_shape_ops(t);
    register_nn_ops(t);
    register_reduce_ops(t);
    register_control_ops(t);
    register_text_ops(t);
    register_attention_ops(t);
    return t;
  }();
  return r;
}

const Value& OpContext::value(size_t i) const {
  if (i >= inputs_.size()) fail("input ", i, " is missing (the node has ", inputs_.size(), ")");
  return inputs_[i];
}

const DynTensor& OpContext::in(size_t i) const {
  const Value& v = value(i);
  if (v.kind == Value::Kind::None) fail("input ", i, " is required but omitted");
  if (v.kind != Value::Kind::Tensor)
    fail("input ", i, " ('", node_.inputs[i], "') is a sequence, a tensor was expected");
  return v.tensor;
}

std::vector<int64_t> OpContext::ints(size_t i) const {
  const DynTensor& t = in(i);
  if (is_floating(t.dtype()))
    fail("input ", i, " ('", node_.inputs[i], "') must be an integer tensor, got ", t.dtype());
  return t.to_vector<int64_t>();
}

double OpContext::scalar(size_t i) const {
  const DynTensor& t = in(i);
  if (t.numel() != 1)
    fail("input ", i, " ('", node_.inputs[i], "') must hold one value, got shape ", t.shape());
  return t.to_vector<double>()[0];
}

bool OpContext::has_attr(const std::string& name) const { return node_.attributes.count(name) > 0; }

const Attribute& OpContext::attr(const std::string& name) const {
  const auto it = node_.attributes.find(name);
  if (it == node_.attributes.end()) fail("attribute '", name, "' is required");
  return it->second;
}

namespace {
void expect_kind(const OpContext& ctx, const std::string& name, const Attribute& a,
                 Attribute::Kind kind) {
  if (a.kind != kind) {
    ctx.fail("attribute '", name, "' must be ", kind_name(kind), ", got ", kind_name(a.kind));
  }
}
}  // namespace

int64_t OpContext::attr_int(const std::string& name, int64_t fallback) const {
  if (!has_attr(name)) return fallback;
  const Attribute& a = attr(name);
  expect_kind(*this, name, a, Attribute::Kind::Int);
  return a.i;
}

double OpContext::attr_float(const std::string& name, double fallback) const {
  if (!has_attr(name)) return fallback;
  const Attribute& a = attr(name);
  expect_kind(*this, name, a, Attribute::Kind::Float);
  return a.f;
}

std::string OpContext::attr_string(const std::string& name, const std::string& fallback) const {
  if (!has_attr(name)) return fallback;
  const Attribute& a = attr(name);
  expect_kind(*this, name, a, Attribute::Kind::String);
  return a.s;
}

std::vector<int64_t> OpContext::attr_ints(const std::string& name,
                                          const std::vector<int64_t>& fallback) const {
  if (!has_attr(name)) return fallback;
  const Attribute& a = attr(name);
  expect_kind(*this, name, a, Attribute::Kind::Ints);
  return a.ints;
}

std::vector<double> OpContext::attr_floats(const std::string& name,
                                           const std::vector<double>& fallback) const {
  if (!has_attr(name)) return fallback;
  const Attribute& a = attr(name);
  expect_kind(*this, name, a, Attribute::Kind::Floats);
  return a.floats;
}

std::string node_label(const Node& n) {
  const std::string name = !n.name.empty() ? n.name : n.outputs.empty() ? "?" : n.outputs[0];
  return "node '" + name + "' (" + (n.domain.empty() ? "" : n.domain + ":") + n.op_type + ")";
}

DType dtype_from_onnx(const OpContext& c, int64_t onnx_type, const char* what) {
  DType d{};
  if (!dtype_of(onnx_type, &d)) {
    c.fail("unsupported: ", what, " element type ", type_name(onnx_type),
           " (Ember has f32, f64, f16, bf16, i64, i32, i8, u8 and bool)");
  }
  return d;
}

std::string OpContext::label() const { return node_label(node_); }

}  // namespace ember::onnx
