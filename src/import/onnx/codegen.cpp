// `ember onnx2cpp`: an ONNX graph written out as a C++ module a person would write. The nodes
// become one line each in the executor's order: an nn layer where the node is one (Conv with a
// constant weight -> nn::Conv2d, Gemm -> nn::Linear, BatchNormalization -> nn::BatchNorm2d),
// Ember's own function where its semantics are ONNX's (Relu -> relu, Add on floats -> add), and
// onnx::call, the executor's own function for the op, for everything else. Initialisers no
// layer takes become Params (floating) or Buffers; Constant nodes become Buffers. Every Param and
// Buffer goes to <name>.safetensors under its module path, so ember::load restores the model.
#include "codegen.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <queue>
#include <set>

#include "codegen_text.hpp"
#include "ember/io/safetensors.hpp"
#include "ember/tensor/ops/creation.hpp"
#include "shape_inference.hpp"

namespace ember::onnx {
namespace {

// ---- Types ------------------------------------------------------------------------------------

// What the generator knows of a value before running anything: its dtype and rank, where the
// op's rule gives them (nn layers and Ember's functions are chosen only where they are known).
struct Type {
  std::optional<DType> dtype;
  int rank = -1;
};

// The type shape inference (shape_inference.hpp) gives a value.
Type type_from(const ValueInfo& v) {
  Type t;
  if (v.elem_type != 0 && v.known_dtype) t.dtype = v.dtype;
  if (v.has_shape) t.rank = static_cast<int>(v.shape.size());
  return t;
}

// The other way, for a scope's values shape inference starts from (a Loop body's inputs).
ValueInfo value_info(const Type& t) {
  ValueInfo v;
  v.known_dtype = t.dtype.has_value();
  if (t.dtype) {
    v.dtype = *t.dtype;
    v.elem_type = onnx_type_of(*t.dtype);
  }
  v.has_shape = t.rank >= 0;
  v.shape.resize(static_cast<size_t>(std::max(t.rank, 0)));
  return v;
}

bool floating(const Type& t) { return t.dtype && is_floating(*t.dtype); }

// ---- Graph walking ----------------------------------------------------------------------------

// The nodes in the executor's order: Kahn's algorithm, the file's order among ready nodes.
// `outer`: the names the graph's scope sees from outside (a subgraph's).
std::vector<const Node*> execution_order(const Graph& g, const std::set<std::string>& outer) {
  std::set<std::string> defined = outer;
  for (const ValueInfo& v : g.inputs) defined.insert(v.name);
  for (const auto& [name, t] : g.initializers) defined.insert(name);
  std::map<std::string, size_t> producer;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const std::string& o : g.nodes[i].outputs) {
      if (o.empty()) continue;
      EMBER_CHECK(producer.emplace(o, i).second, "onnx2cpp: value '", o,
                  "' is produced by two nodes");
    }
  }
  std::vector<int64_t> waiting(g.nodes.size(), 0);
  std::vector<std::vector<size_t>> readers(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const std::string& r : reads_of(g.nodes[i])) {
      const auto p = producer.find(r);
      if (p != producer.end()) {
        ++waiting[i];
        readers[p->second].push_back(i);
      } else {
        EMBER_CHECK(defined.count(r), "onnx2cpp: ", node_label(g.nodes[i]), " reads '", r,
                    "', which no node, graph input or initialiser defines");
      }
    }
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (waiting[i] == 0) ready.push(i);
  }
  std::vector<const Node*> order;
  while (!ready.empty()) {
    const size_t i = ready.top();
    ready.pop();
    order.push_back(&g.nodes[i]);
    for (const size_t r : readers[i]) {
      if (--waiting[r] == 0) ready.push(r);
    }
  }
  EMBER_CHECK(order.size() == g.nodes.size(), "onnx2cpp: the graph '", g.name, "' has a cycle");
  for (const ValueInfo& v : g.outputs) {
    EMBER_CHECK(producer.count(v.name) || defined.count(v.name), "onnx2cpp: graph output '", v.name,
                "' is defined by no node, input or initialiser");
  }
  return order;
}

// What the generated code cannot express yet, refused before anything is written: sequences and
// optionals, subgraphs other than If's branches and Loop's body.
void refuse_unsupported_kinds(const Graph& g, bool main) {
  static const std::set<std::string> sequence_ops = {
      "SequenceConstruct", "SequenceEmpty",  "SequenceInsert",     "SequenceErase",
      "SequenceAt",        "SequenceLength", "SplitToSequence",    "ConcatFromSequence",
      "SequenceMap",       "Optional",       "OptionalHasElement", "OptionalGetElement"};
  for (const ValueInfo& v : g.inputs) {
    if (main && g.initializers.count(v.name)) continue;
    EMBER_CHECK(v.dtype_name != "sequence" && v.dtype_name != "optional",
                "onnx2cpp: sequence and optional values are not supported yet (graph input '",
                v.name, "' is a ", v.dtype_name, ")");
    // A subgraph's inputs may leave their types to the node (Loop's body).
    EMBER_CHECK(!main || v.known_dtype, "onnx2cpp: graph input '", v.name, "' has type ",
                v.dtype_name, ", which Ember has no dtype for");
  }
  for (const ValueInfo& v : g.outputs) {
    EMBER_CHECK(v.dtype_name != "sequence" && v.dtype_name != "optional",
                "onnx2cpp: sequence and optional values are not supported yet (graph output '",
                v.name, "' is a ", v.dtype_name, ")");
  }
  for (const Node& n : g.nodes) {
    const bool onnx = normal_domain(n.domain).empty();
    EMBER_CHECK(!(onnx && sequence_ops.count(n.op_type)),
                "onnx2cpp: sequence and optional values are not supported yet (", node_label(n),
                ")");
    const bool control = onnx && (n.op_type == "If" || n.op_type == "Loop");
    for_each_subgraph(n, [&](const Graph& sub) {
      EMBER_CHECK(control, "onnx2cpp: ", n.op_type, " is not supported yet (", node_label(n),
                  " has a subgraph; If and Loop become C++ control flow)");
      refuse_unsupported_kinds(sub, false);
    });
  }
}

// ---- The generator ----------------------------------------------------------------------------

class Generator {
 public:
  /// `parted`: the fields go into nested structs of up to kPartSize fields each.
  Generator(const ModelIR& ir, const std::string& name, const std::string& source_name, bool parted)
      : ir_(ir), g_(*ir.graph), name_(name), source_(source_name), parted_(parted) {
    const auto it = ir.opsets.find("");
    opset_ = it == ir.opsets.end() ? 1 : it->second;
    for (const std::string& r : reserved_names()) names_.reserve(r);
    names_.reserve(name);
    for (int k = 0; parted && k < 256; ++k) {
      names_.reserve("part" + std::to_string(k));
      names_.reserve("Part" + std::to_string(k));
    }
  }

  GeneratedModule run() {
    refuse_unsupported_kinds(g_, true);
    note_reads(g_);
    for (const ValueInfo& v : g_.inputs) {
      if (g_.initializers.count(v.name)) continue;
      const std::string param = names_.unique(v.name);
      expr_[v.name] = param;
      types_[v.name] = {v.dtype, v.has_shape ? static_cast<int>(v.shape.size()) : -1};
      inputs_.push_back({param, v});
    }
    emit_graph(g_);
    if (!unsupported_.empty()) {
      std::string list;
      for (const auto& [op, count] : unsupported_) {
        list += (list.empty() ? "" : ", ") + op + ", " + std::to_string(count) +
                (count == 1 ? " node)" : " nodes)");
      }
      EMBER_FAIL("onnx2cpp: unsupported operators: ", list);
    }
    std::vector<std::string> returned;
    for (const ValueInfo& v : g_.outputs) returned.push_back(value(v.name));
    out_.fields = static_cast<int>(fields_.size());
    out_.header = header();
    out_.source = source(returned);
    out_.weights = std::move(weights_);
    return std::move(out_);
  }

 private:
  struct Field {
    std::string type, name, init, comment;
    int part;  // -1: a field of the module itself
  };
  static constexpr size_t kPartSize = 256;
  struct Input {
    std::string param;
    ValueInfo info;
  };
  static constexpr const char* kUnsupported = "<unsupported>";

  // Every value some node of any graph reads (and which nodes), or some graph gives as an
  // output; the main graph's Identity nodes of initialisers, which become aliases.
  void note_reads(const Graph& g) {
    for (const ValueInfo& v : g.outputs) {
      read_.insert(v.name);
      graph_outputs_.insert(v.name);
    }
    for (const Node& n : g.nodes) {
      for (const std::string& i : n.inputs) {
        read_.insert(i);
        if (!i.empty()) consumers_[i].push_back(&n);
      }
      for_each_subgraph(n, [&](const Graph& sub) { note_reads(sub); });
    }
    if (&g != &g_) return;
    for (bool more = true; more;) {  // chains of Identity, in any order
      more = false;
      for (const Node& n : g.nodes) {
        if (n.op_type != "Identity" || !normal_domain(n.domain).empty() || n.inputs.size() != 1 ||
            n.outputs.size() != 1 || alias_.count(n.outputs[0]))
          continue;
        if (initializer(n.inputs[0]) != nullptr) {
          alias_[n.outputs[0]] = root(n.inputs[0]);
          more = true;
        }
      }
    }
  }

  /// The initialiser an Identity chain of the main graph reads, or `v` itself.
  const std::string& root(const std::string& v) const {
    const auto it = alias_.find(v);
    return it == alias_.end() ? v : it->second;
  }

  /// Emits `g`'s nodes in the executor's order; a subgraph's initialisers become Buffers first
  /// (the executor holds them as constants).
  void emit_graph(const Graph& g) {
    std::set<std::string> outer;
    if (&g != &g_) {
      for (const auto& [name, e] : expr_) outer.insert(name);
      for (const auto& [name, t] : g_.initializers) outer.insert(name);
      for (const auto& [name, t] : g.initializers) {
        expr_[name] = tensor_field(name, t, false, "subgraph initialiser") + ".dyn()";
        types_[name] = {t.dtype, t.shape.rank()};
      }
    }
    // The scope's types: the main graph's from its inputs, a subgraph's from what it sees.
    const auto outer_inferred = inferred_;
    std::map<std::string, ValueInfo> seen = inferred_;
    for (const auto& [name, t] : types_) seen.emplace(name, value_info(t));
    inferred_ = infer_types(g, opset_, seen);
    const Graph* outer_graph = graph_;
    graph_ = &g;
    for (const Node* n : execution_order(g, outer)) emit(*n);
    graph_ = outer_graph;
    inferred_ = outer_inferred;
  }

  /// Runs `f` with the values and types it defines forgotten afterwards (a branch or a body:
  /// ONNX lets sibling subgraphs reuse names), its lines indented one level more.
  template <class F>
  void scoped(F&& f) {
    const auto saved_expr = expr_;
    const auto saved_types = types_;
    indent_ += "  ";
    f();
    indent_.resize(indent_.size() - 2);
    expr_ = saved_expr;
    types_ = saved_types;
  }

  std::string opset_expr(const Node& n) const {
    const std::string domain = normal_domain(n.domain);
    if (domain.empty()) return "kOpset";
    const auto it = ir_.opsets.find(domain);
    return std::to_string(it == ir_.opsets.end() ? 1 : it->second);
  }
  int64_t opset_of(const Node& n) const {
    const auto it = ir_.opsets.find(normal_domain(n.domain));
    return it == ir_.opsets.end() ? 1 : it->second;
  }
  Type type_of(const std::string& v) const {
    const auto it = types_.find(v);
    if (it != types_.end()) return it->second;
    const TensorData* t = initializer(v);
    return t == nullptr ? Type{} : Type{t->dtype, t->shape.rank()};
  }
  /// The main graph's initialiser `v` (through Identity aliases), or null.
  const TensorData* initializer(const std::string& v) const {
    const auto it = g_.initializers.find(root(v));
    return it == g_.initializers.end() ? nullptr : &it->second;
  }
  static std::vector<std::string> used_outputs(const Node& n) {
    std::vector<std::string> o = n.outputs;
    while (!o.empty() && o.back().empty()) o.pop_back();
    return o;
  }

  /// The expression reading ONNX value `v`; an initialiser read for the first time becomes a
  /// Param (floating) or a Buffer of the module.
  std::string value(const std::string& name) {
    const std::string& v = root(name);
    const auto it = expr_.find(v);
    if (it != expr_.end()) return it->second;
    const auto init = init_expr_.find(v);
    if (init != init_expr_.end()) return init->second;
    const TensorData* t = initializer(v);
    EMBER_CHECK(t != nullptr, "onnx2cpp: value '", v, "' has no definition");
    const std::string field = tensor_field(v, *t, is_floating(t->dtype), "initialiser");
    return init_expr_[v] = field + ".dyn()";
  }

  /// A Param (trainable) or Buffer field holding `t`, named after `onnx_name`; its value goes to
  /// the weights file, and small non-trainable ones are also written in the constructor.
  std::string tensor_field(const std::string& onnx_name, const TensorData& t, bool trainable,
                           const std::string& what) {
    const int rank = t.shape.rank();
    EMBER_CHECK(rank <= kMaxRank, "onnx2cpp: '", onnx_name, "' has rank ", rank,
                ", more than Ember's ", kMaxRank);
    const std::string name = names_.unique(onnx_name);
    const std::string r = std::to_string(rank);
    const std::string kind = is_floating(t.dtype)        ? ""
                             : t.dtype == DType::boolean ? ", Bool"
                                                         : ", Int";
    const std::string tensor = "Tensor<" + r + kind + ">";
    const DType kind_default = is_floating(t.dtype)        ? DType::f32
                               : t.dtype == DType::boolean ? DType::boolean
                                                           : DType::i64;
    const std::string field_type =
        trainable
            ? "ember::nn::Param<" + r + ">"
            : "ember::nn::Buffer<" + r + (kind.empty() ? "" : ", ember::" + kind.substr(2)) + ">";
    const std::string dims = ints_list(dims_of(t.shape));
    const std::string type = element_type(t.dtype);
    const bool literal = !trainable && !type.empty() && t.numel() <= 16 &&
                         (t.dtype != DType::f32 || finite_values(t));
    const std::string init =
        literal ? tensor + "::from_vector<" + type + ">({" + element_literals(t) + "}, " + dims +
                      ", device)"
                : tensor + "::zeros(" + dims + ", device" +
                      (t.dtype == kind_default ? "" : ", " + dtype_expr(t.dtype)) + ")";
    const std::string path =
        add_field(field_type, name, init,
                  what + " '" + onnx_name + "', " + std::string(dtype_name(t.dtype)) + " " +
                      to_string(t.shape));
    weights_.emplace_back(path, t);
    return path;
  }

  /// A field of the module, in part N / kPartSize when the module is parted (EMBER_MODULE lists
  /// up to 256 fields); returns its path from the module ("conv1", "part1.conv1").
  std::string add_field(const std::string& type, const std::string& name, const std::string& init,
                        const std::string& comment) {
    Field f{type, name, init, comment, -1};
    if (parted_) f.part = static_cast<int>(fields_.size() / kPartSize);
    fields_.push_back(f);
    uses_device_ = true;
    return f.part < 0 ? name : "part" + std::to_string(f.part) + "." + name;
  }
  static bool finite_values(const TensorData& t) {
    for (const float v : t.to_vector<float>()) {
      if (!std::isfinite(v)) return false;
    }
    return true;
  }

  void line(const std::string& text) { body_.push_back("  " + indent_ + text); }

  /// `const DynTensor name = expr;` for a node's only output.
  void bind(const std::string& onnx_name, const std::string& expr,
            const std::string& comment = "") {
    const std::string local = names_.unique(onnx_name);
    const std::string head = "const DynTensor " + local + " =";
    const std::string end = ";" + (comment.empty() ? "" : "  // " + comment);
    const bool fits = 2 + indent_.size() + head.size() + 1 + expr.size() + end.size() <= 100;
    line(head + (fits ? " " : "\n" + std::string(6 + indent_.size(), ' ')) + expr + end);
    expr_[onnx_name] = local;
  }

  void emit(const Node& n) {
    std::vector<Type> in;
    for (const std::string& i : n.inputs) in.push_back(i.empty() ? Type{} : type_of(i));
    std::vector<Type> out;
    for (const std::string& o : n.outputs) {
      const auto it = inferred_.find(o);
      out.push_back(o.empty() || it == inferred_.end() ? Type{} : type_from(it->second));
    }
    const bool onnx = normal_domain(n.domain).empty();
    if (fused_.count(&n)) return;  // written with the layer before it (MatMul + Add)
    if (n.outputs.size() == 1 && alias_.count(n.outputs[0])) return;  // Identity of a constant
    if (onnx && n.op_type == "Constant") {
      emit_constant(n);
      return;
    }
    if (onnx && (n.op_type == "If" || n.op_type == "Loop")) {
      n.op_type == "If" ? emit_if(n) : emit_loop(n);
      ++out_.control;
      return;
    }
    if (emit_layer(n, in)) {
      ++out_.layers;
    } else if (emit_function(n, in)) {
      ++out_.functions;
    } else {
      emit_call(n);
      ++out_.calls;
    }
    for (size_t j = 0; j < n.outputs.size() && j < out.size(); ++j) types_[n.outputs[j]] = out[j];
  }

  // Constant: run once here by the registry's own function; the value becomes a Buffer.
  void emit_constant(const Node& n) {
    std::vector<Value> v;
    try {
      v = run_node(n, opset_of(n), {}, Device::cpu());
    } catch (const Error& e) {
      EMBER_FAIL("onnx2cpp: ", e.what());
    }
    EMBER_CHECK(!v.empty() && v[0].kind == Value::Kind::Tensor && !n.outputs.empty(),
                "onnx2cpp: ", node_label(n), " gives no tensor");
    const TensorData t = v[0].tensor.to_data();
    const std::string field = tensor_field(n.outputs[0], t, false, "Constant");
    expr_[n.outputs[0]] = field + ".dyn()";
    types_[n.outputs[0]] = {t.dtype, t.shape.rank()};
  }

  bool emit_function(const Node& n, const std::vector<Type>& in) {
    static const std::map<std::string, std::string> unary = {{"Relu", "relu"},
                                                             {"Sigmoid", "sigmoid"},
                                                             {"Tanh", "tanh"},
                                                             {"Exp", "exp"},
                                                             {"Log", "log"},
                                                             {"Abs", "abs"},
                                                             {"Neg", "neg"},
                                                             {"Sqrt", "sqrt"},
                                                             {"Floor", "floor"},
                                                             {"Ceil", "ceil"},
                                                             {"Reciprocal", "reciprocal"},
                                                             {"Sin", "sin"},
                                                             {"Cos", "cos"},
                                                             {"Erf", "erf"}};
    static const std::map<std::string, std::string> binary = {{"Add", "add"}, {"Sub", "sub"},
                                                              {"Mul", "mul"}, {"Div", "div"},
                                                              {"Pow", "pow"}, {"MatMul", "matmul"}};
    if (!normal_domain(n.domain).empty() || used_outputs(n).size() != 1) return false;
    for (const std::string& i : n.inputs) {
      if (i.empty()) return false;
    }
    const std::string& out = n.outputs[0];
    if (n.op_type == "Identity" && n.inputs.size() == 1) {
      bind(out, value(n.inputs[0]));
      return true;
    }
    if (const auto u = unary.find(n.op_type);
        u != unary.end() && n.inputs.size() == 1 && floating(in[0]) && n.attributes.empty()) {
      bind(out, u->second + "(" + value(n.inputs[0]) + ")");
      return true;
    }
    // Before opset 7, a `broadcast` with an `axis` aligns B at that axis: not numpy's rule.
    const bool legacy = opset_of(n) < 7 && n.attributes.count("axis");
    if (const auto b = binary.find(n.op_type); b != binary.end() && n.inputs.size() == 2 &&
                                               !legacy && floating(in[0]) && floating(in[1]) &&
                                               *in[0].dtype == *in[1].dtype) {
      bind(out, b->second + "(" + value(n.inputs[0]) + ", " + value(n.inputs[1]) + ")");
      return true;
    }
    return false;
  }

  void emit_call(const Node& n) {
    const int64_t opset = opset_of(n);
    if (registry().find(normal_domain(n.domain), n.op_type, opset) == nullptr) {
      const std::string domain = normal_domain(n.domain);
      ++unsupported_[n.op_type + " (" + (domain.empty() ? "ai.onnx" : domain) + " opset " +
                     std::to_string(opset)];
      for (const std::string& o : n.outputs) expr_[o] = kUnsupported;  // listed at the end
      return;
    }
    uses_call_ = true;
    std::vector<std::string> args;
    for (const std::string& i : n.inputs) args.push_back(i.empty() ? "DynTensor()" : value(i));
    std::vector<std::string> attrs;
    for (const auto& [name, a] : n.attributes) {
      attrs.push_back("{" + string_literal(name) + ", " + attribute_literal(n, name, a) + "}");
    }
    const std::vector<std::string> outs = used_outputs(n);
    const size_t column = 2 + indent_.size() + 4;  // of an argument on a line of its own
    std::vector<std::string> call_args = {string_literal(n.op_type), braced(args, column),
                                          braced(attrs, column), opset_expr(n)};
    const std::string domain = normal_domain(n.domain);
    if (outs.size() != 1 || !domain.empty()) call_args.push_back(std::to_string(outs.size()));
    if (!domain.empty()) call_args.push_back(string_literal(domain));
    if (outs.empty()) {
      line(wrap("onnx::call(", call_args, ");"));
      return;
    }
    if (outs.size() == 1) {
      const std::string local = names_.unique(outs[0]);
      line(wrap("const DynTensor " + local + " = onnx::call(", call_args, ")[0];"));
      expr_[outs[0]] = local;
      return;
    }
    std::string base = n.name;
    if (std::none_of(base.begin(), base.end(),
                     [](char c) { return std::isalpha(static_cast<unsigned char>(c)); })) {
      base = n.op_type;
      base[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(base[0])));
    }
    const std::string all = names_.unique(base);
    line(wrap("const std::vector<DynTensor> " + all + " = onnx::call(", call_args, ");"));
    for (size_t j = 0; j < outs.size(); ++j) {
      if (outs[j].empty() || !read_.count(outs[j])) continue;
      const std::string local = names_.unique(outs[j]);
      line("const DynTensor& " + local + " = " + all + "[" + std::to_string(j) + "];");
      expr_[outs[j]] = local;
    }
  }

  /// `head args tail` on one line when it fits in 100 columns at the current indentation, else
  /// the arguments on continuation lines 4 columns further in, as many to a line as fit.
  std::string wrap(const std::string& head, const std::vector<std::string>& args,
                   const std::string& tail) const {
    const size_t margin = 2 + indent_.size();
    const std::string flat = head + join(args) + tail;
    if (margin + flat.size() <= 100) return flat;
    const std::string next = "\n" + std::string(margin + 4, ' ');
    std::string s = head, cur;
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string piece = args[i] + (i + 1 < args.size() ? "," : tail);
      if (piece.find('\n') != std::string::npos) {  // a list broken already: lines of its own
        if (!cur.empty()) s += next + cur;
        s += next + piece;
        cur.clear();
        continue;
      }
      if (!cur.empty() && margin + 4 + cur.size() + 1 + piece.size() > 100) {
        s += next + cur;
        cur.clear();
      }
      cur += (cur.empty() ? "" : " ") + piece;
    }
    return s + next + cur;
  }

  /// "{a, b}", broken into lines of up to 100 columns when it starts at `column` and is longer,
  /// the items of later lines under the first.
  static std::string braced(const std::vector<std::string>& items, size_t column) {
    std::string s = "{";
    size_t at = column + 1;
    for (size_t i = 0; i < items.size(); ++i) {
      const std::string piece = items[i] + (i + 1 < items.size() ? "," : "");
      if (i > 0 && at + 1 + piece.size() + (i + 1 == items.size() ? 1 : 0) > 100) {
        s += "\n" + std::string(column + 1, ' ');
        at = column + 1;
      } else if (i > 0) {
        s += " ";
        ++at;
      }
      s += piece;
      at += piece.size();
    }
    return s + "}";
  }

  // ---- Control flow ---------------------------------------------------------------------------

  const Graph& graph_attr(const Node& n, const std::string& name) const {
    const auto it = n.attributes.find(name);
    EMBER_CHECK(it != n.attributes.end() && it->second.kind == Attribute::Kind::Graph &&
                    it->second.g != nullptr,
                "onnx2cpp: ", node_label(n), ": attribute '", name, "' must be a graph");
    return *it->second.g;
  }

  static Type declared(const ValueInfo& v) {
    if (!v.known_dtype) return {};
    return {v.dtype, v.has_shape ? static_cast<int>(v.shape.size()) : -1};
  }

  // If: a C++ if over the condition's one element, each branch's nodes inline (they read the
  // outer values by name, as C++ scopes do), its outputs assigned to variables declared before.
  void emit_if(const Node& n) {
    const Graph& then_g = graph_attr(n, "then_branch");
    const Graph& else_g = graph_attr(n, "else_branch");
    EMBER_CHECK(n.inputs.size() == 1 && !n.inputs[0].empty(), "onnx2cpp: ", node_label(n),
                " needs its condition");
    EMBER_CHECK(
        then_g.outputs.size() == n.outputs.size() && else_g.outputs.size() == n.outputs.size(),
        "onnx2cpp: ", node_label(n), ": the branches give ", then_g.outputs.size(), " and ",
        else_g.outputs.size(), " outputs, the node has ", n.outputs.size());
    const std::string cond = value(n.inputs[0]);
    std::vector<std::string> results(n.outputs.size());
    for (size_t j = 0; j < n.outputs.size(); ++j) {
      if (n.outputs[j].empty()) continue;
      results[j] = names_.unique(n.outputs[j]);
      line("DynTensor " + results[j] + ";");
    }
    auto branch = [&](const Graph& g) {
      scoped([&] {
        emit_graph(g);
        for (size_t j = 0; j < results.size(); ++j) {
          if (!results[j].empty()) line(results[j] + " = " + value(g.outputs[j].name) + ";");
        }
      });
    };
    line("if (" + cond + ".item<bool>()) {  // " + node_label(n));
    branch(then_g);
    line("} else {");
    branch(else_g);
    line("}");
    for (size_t j = 0; j < results.size(); ++j) {
      if (results[j].empty()) continue;
      expr_[n.outputs[j]] = results[j];
      types_[n.outputs[j]] = declared(then_g.outputs[j]);
    }
  }

  // Loop: a C++ for over the trip count M while the condition holds (ONNX's four cases: the
  // body's condition counts only when the node has one), the loop-carried values in variables
  // the body reassigns, the scan outputs collected and stacked along a new first axis.
  void emit_loop(const Node& n) {
    const Graph& body = graph_attr(n, "body");
    EMBER_CHECK(n.inputs.size() >= 2, "onnx2cpp: ", node_label(n),
                " needs its M and cond inputs (either may be empty)");
    const size_t n_carried = n.inputs.size() - 2;
    EMBER_CHECK(body.inputs.size() == 2 + n_carried && body.outputs.size() >= 1 + n_carried,
                "onnx2cpp: ", node_label(n), ": the body takes ", body.inputs.size(),
                " inputs and gives ", body.outputs.size(), " outputs, for ", n_carried,
                " loop-carried values");
    const size_t n_scan = body.outputs.size() - 1 - n_carried;
    const bool has_m = !n.inputs[0].empty(), has_cond = !n.inputs[1].empty();
    auto output_name = [&](size_t j, const std::string& fallback) {
      return j < n.outputs.size() && !n.outputs[j].empty() ? n.outputs[j] : fallback;
    };
    // Where the iteration number and the condition are made: the executor's device.
    std::string device = "default_device()";
    for (const std::string& i : n.inputs) {
      if (!i.empty()) {
        device = value(i) + ".device()";
        break;
      }
    }
    line("// " + node_label(n));
    std::vector<std::string> carried, scans;
    for (size_t k = 0; k < n_carried; ++k) {
      carried.push_back(names_.unique(output_name(k, body.outputs[1 + k].name)));
      const std::string init = n.inputs[2 + k].empty() ? "DynTensor()" : value(n.inputs[2 + k]);
      line("DynTensor " + carried[k] + " = " + init + ";");
    }
    for (size_t k = 0; k < n_scan; ++k) {
      scans.push_back(names_.unique(body.outputs[1 + n_carried + k].name + "_steps"));
      line("std::vector<DynTensor> " + scans[k] + ";");
    }
    const std::string trips = names_.unique("trips"), go = names_.unique("go"),
                      i = names_.unique("i");
    line("const int64_t " + trips + " = " +
         (has_m ? value(n.inputs[0]) + ".item<int64_t>()" : "INT64_MAX") + ";");
    line("bool " + go + " = " + (has_cond ? value(n.inputs[1]) + ".item<bool>()" : "true") + ";");
    line("for (int64_t " + i + " = 0; " + i + " < " + trips + " && " + go + "; ++" + i + ") {");
    scoped([&] {
      const std::vector<std::string> first = {
          "full(Shape{}, " + i + ", DType::i64, " + device + ")",
          "full(Shape{}, " + go + ", DType::boolean, " + device + ")"};
      for (size_t k = 0; k < body.inputs.size(); ++k) {
        const std::string& name = body.inputs[k].name;
        bind(name, k < 2 ? first[k] : carried[k - 2]);
        types_[name] = k == 0   ? Type{DType::i64, 0}
                       : k == 1 ? Type{DType::boolean, 0}
                                : type_of(n.inputs[k]);
      }
      emit_graph(body);
      if (has_cond) line(go + " = " + value(body.outputs[0].name) + ".item<bool>();");
      for (size_t k = 0; k < n_carried; ++k)
        line(carried[k] + " = " + value(body.outputs[1 + k].name) + ";");
      for (size_t k = 0; k < n_scan; ++k)
        line(scans[k] + ".push_back(" + value(body.outputs[1 + n_carried + k].name) + ");");
    });
    line("}");
    for (size_t k = 0; k < n_carried; ++k) {
      const std::string out = output_name(k, "");
      if (out.empty()) continue;
      expr_[out] = carried[k];
      types_[out] = declared(body.outputs[1 + k]);
    }
    for (size_t k = 0; k < n_scan; ++k) {
      const std::string out = output_name(n_carried + k, "");
      if (out.empty()) continue;
      // No iteration: empty along the new axis, the other dims as the body declares them.
      const ValueInfo& v = body.outputs[1 + n_carried + k];
      std::vector<int64_t> dims = {0};
      for (const Dim& d : v.shape) dims.push_back(std::max<int64_t>(d.size, 0));
      const std::string none = "zeros(Shape" + ints_list(dims) + ", " +
                               dtype_expr(v.known_dtype ? v.dtype : DType::f32) + ", " + device +
                               ")";
      bind(out, scans[k] + ".empty() ? " + none + " : stack(" + scans[k] + ", 0)");
      const Type t = declared(v);
      types_[out] = {t.dtype, t.rank < 0 ? -1 : t.rank + 1};
    }
  }

  // ---- Layers ---------------------------------------------------------------------------------

  /// A layer's field name, most telling first: its weight's (or bias's) name without
  /// ".weight" (PyTorch's module path), the node's scope ("/layer1/layer1.0/conv1/Conv" ->
  /// layer1_0_conv1), the node's name, else `fallback`.
  std::string layer_name(const Node& n, const std::vector<std::string>& params,
                         const std::string& fallback) {
    auto has_letter = [](const std::string& s) {
      return std::any_of(s.begin(), s.end(),
                         [](char c) { return std::isalpha(static_cast<unsigned char>(c)); });
    };
    for (const std::string& p : params) {
      for (const char* suffix : {".weight", "_weight", ".bias", "_bias"}) {
        const size_t len = std::strlen(suffix);
        if (p.size() > len && p.compare(p.size() - len, len, suffix) == 0 &&
            p.find("::") == std::string::npos) {
          return names_.unique(p.substr(0, p.size() - len));
        }
      }
    }
    const size_t slash = n.name.rfind('/');
    if (slash != std::string::npos && slash > 0 && has_letter(n.name.substr(0, slash)))
      return names_.unique(n.name.substr(0, slash));
    if (has_letter(n.name)) return names_.unique(n.name);
    return names_.unique(fallback);
  }

  int64_t attr_int(const Node& n, const std::string& name, int64_t fallback) const {
    const auto it = n.attributes.find(name);
    return it == n.attributes.end() || it->second.kind != Attribute::Kind::Int ? fallback
                                                                               : it->second.i;
  }
  std::optional<double> attr_float(const Node& n, const std::string& name) const {
    const auto it = n.attributes.find(name);
    if (it == n.attributes.end() || it->second.kind != Attribute::Kind::Float) return std::nullopt;
    return it->second.f;
  }
  std::optional<std::vector<int64_t>> attr_ints(const Node& n, const std::string& name) const {
    const auto it = n.attributes.find(name);
    if (it == n.attributes.end() || it->second.kind != Attribute::Kind::Ints) return std::nullopt;
    return it->second.ints;
  }
  /// Attributes other than `known` make the node a call (the layer could not honour them).
  static bool only_attributes(const Node& n, const std::set<std::string>& known) {
    for (const auto& [name, a] : n.attributes) {
      if (!known.count(name)) return false;
    }
    return true;
  }

  bool emit_layer(const Node& n, const std::vector<Type>& in) {
    if (!normal_domain(n.domain).empty() || used_outputs(n).size() != 1 || n.inputs.empty() ||
        n.inputs[0].empty()) {
      return false;
    }
    if (n.op_type == "Conv") return conv_layer(n, in);
    if (n.op_type == "Gemm") return gemm_linear(n, in);
    if (n.op_type == "MatMul") return matmul_add_linear(n, in);
    if (n.op_type == "BatchNormalization") return batch_norm_layer(n, in);
    return false;
  }

  /// A main-graph initialiser a layer may take as input i: floating, of `rank`, read by no
  /// non-layer node before (that one made it a Param: the layer would untie them).
  const TensorData* layer_initializer(const Node& n, size_t i, int rank) const {
    if (i >= n.inputs.size() || n.inputs[i].empty()) return nullptr;
    const std::string& name = root(n.inputs[i]);
    if (init_expr_.count(name) && !layer_owned_.count(name)) return nullptr;
    const TensorData* t = initializer(name);
    if (t == nullptr || !is_floating(t->dtype) || t->shape.rank() != rank) return nullptr;
    return t;
  }

  // An initialiser given to a layer: later non-layer readers read it through that layer. Another
  // layer given it gets its own copy: PyTorch's exporter shares equal tensors (the zero biases
  // of folded BatchNorms), which the PyTorch model held apart.
  void give(const std::string& onnx_name, const std::string& expr, const std::string& path,
            const TensorData& t) {
    const std::string& name = root(onnx_name);
    if (!layer_owned_.count(name)) {
      layer_owned_.insert(name);
      init_expr_[name] = expr;
    }
    weights_.emplace_back(path, t);
  }

  /// The layer's field; returns its path from the module (partN. when parted).
  std::string layer_field(const Node& n, const std::string& type, const std::string& name,
                          const std::string& config, const std::string& header) {
    headers_.insert(header);
    return add_field(type, name, config + ", device",
                     n.op_type + (n.name.empty() ? "" : " '" + n.name + "'"));
  }

  // Conv with a constant weight (and bias) and symmetric explicit padding: nn::Conv1d/2d/3d,
  // which runs the same convolution as the executor's Conv.
  bool conv_layer(const Node& n, const std::vector<Type>& in) {
    if (n.inputs.size() < 2 || n.inputs.size() > 3) return false;
    const TensorData* w = nullptr;
    int spatial = 0;
    for (int s = 1; s <= 3 && w == nullptr; ++s) {
      w = layer_initializer(n, 1, s + 2);
      spatial = s;
    }
    if (w == nullptr) return false;
    const bool has_bias = n.inputs.size() == 3 && !n.inputs[2].empty();
    const TensorData* b = has_bias ? layer_initializer(n, 2, 1) : nullptr;
    if (has_bias && (b == nullptr || b->dtype != w->dtype || b->shape[0] != w->shape[0]))
      return false;
    if (in[0].dtype && *in[0].dtype != w->dtype) return false;
    if (in[0].rank >= 0 && in[0].rank != spatial + 2) return false;
    if (!only_attributes(n, {"auto_pad", "pads", "strides", "dilations", "group", "kernel_shape"}))
      return false;
    const auto it = n.attributes.find("auto_pad");
    const std::string auto_pad =
        it == n.attributes.end() || it->second.kind != Attribute::Kind::String ? "NOTSET"
                                                                               : it->second.s;
    if (auto_pad != "NOTSET" && auto_pad != "VALID") return false;
    std::vector<int64_t> kernel;
    for (int i = 0; i < spatial; ++i) kernel.push_back(w->shape[2 + i]);
    if (attr_ints(n, "kernel_shape").value_or(kernel) != kernel) return false;
    const auto ones = std::vector<int64_t>(spatial, 1);
    const std::vector<int64_t> stride = attr_ints(n, "strides").value_or(ones);
    const std::vector<int64_t> dilation = attr_ints(n, "dilations").value_or(ones);
    std::vector<int64_t> pads = attr_ints(n, "pads").value_or(std::vector<int64_t>(2 * spatial, 0));
    if (auto_pad == "VALID") pads.assign(2 * spatial, 0);
    const int64_t groups = attr_int(n, "group", 1);
    if (static_cast<int>(stride.size()) != spatial ||
        static_cast<int>(dilation.size()) != spatial ||
        static_cast<int>(pads.size()) != 2 * spatial || groups < 1 || w->shape[0] % groups != 0) {
      return false;
    }
    std::vector<int64_t> padding(pads.begin(), pads.begin() + spatial);
    for (int i = 0; i < spatial; ++i) {
      if (pads[i] != pads[spatial + i] || pads[i] < 0 || stride[i] < 1 || dilation[i] < 1)
        return false;
    }
    const std::string d = std::to_string(spatial);
    std::string config = "nn::Conv" + d + "dConfig(" + std::to_string(w->shape[1] * groups) + ", " +
                         std::to_string(w->shape[0]) + ", " + ints_list(kernel) + ")";
    if (stride != ones) config += ".stride(" + ints_list(stride) + ")";
    if (padding != std::vector<int64_t>(spatial, 0))
      config += ".padding(" + ints_list(padding) + ")";
    if (dilation != ones) config += ".dilation(" + ints_list(dilation) + ")";
    if (groups != 1) config += ".groups(" + std::to_string(groups) + ")";
    if (!has_bias) config += ".bias(false)";
    if (w->dtype != DType::f32) config += ".with_dtype(" + dtype_expr(w->dtype) + ")";
    const std::string name =
        layer_name(n, {n.inputs[1], has_bias ? n.inputs[2] : std::string()}, "conv");
    const std::string path =
        layer_field(n, "ember::nn::Conv" + d + "d", name, config, "ember/nn/conv.hpp");
    give(n.inputs[1], path + ".weight.dyn()", path + ".weight", *w);
    if (has_bias) give(n.inputs[2], path + ".bias->dyn()", path + ".bias", *b);
    bind(n.outputs[0], path + ".forward(" + value(n.inputs[0]) + ")");
    return true;
  }

  /// nn::Linear(in, out) with weight `w` [out, in] and bias `b` (or none), whose forward
  /// computes `output` from `x`.
  void linear(const Node& n, const std::string& x, const std::string& w_name, const TensorData& w,
              const std::string& b_name, const TensorData* b, const std::string& output) {
    std::string config =
        "nn::LinearConfig(" + std::to_string(w.shape[1]) + ", " + std::to_string(w.shape[0]) + ")";
    if (b == nullptr) config += ".bias(false)";
    if (w.dtype != DType::f32) config += ".with_dtype(" + dtype_expr(w.dtype) + ")";
    const std::string name = layer_name(n, {w_name, b_name}, "linear");
    const std::string path =
        layer_field(n, "ember::nn::Linear", name, config, "ember/nn/linear.hpp");
    give(w_name, path + ".weight.dyn()", path + ".weight", w);
    if (b != nullptr) give(b_name, path + ".bias->dyn()", path + ".bias", *b);
    bind(output, path + ".forward(" + value(x) + ")");
  }

  // Gemm computing x W^T + b (transB = 1, alpha = beta = 1) with a constant W [out, in] and b
  // [out]: nn::Linear, whose linear() is the same matmul and add.
  bool gemm_linear(const Node& n, const std::vector<Type>& in) {
    if (n.inputs.size() < 2 || n.inputs.size() > 3) return false;
    if (!only_attributes(n, {"transA", "transB", "alpha", "beta", "broadcast"})) return false;
    if (attr_int(n, "transA", 0) != 0 || attr_int(n, "transB", 0) != 1) return false;
    if (attr_float(n, "alpha").value_or(1.0) != 1.0) return false;
    const TensorData* w = layer_initializer(n, 1, 2);
    if (w == nullptr || (in[0].dtype && *in[0].dtype != w->dtype)) return false;
    const bool has_bias = n.inputs.size() == 3 && !n.inputs[2].empty();
    if (has_bias && attr_float(n, "beta").value_or(1.0) != 1.0) return false;
    const TensorData* b = has_bias ? layer_initializer(n, 2, 1) : nullptr;
    if (has_bias && (b == nullptr || b->dtype != w->dtype || b->shape[0] != w->shape[0]))
      return false;
    linear(n, n.inputs[0], n.inputs[1], *w, has_bias ? n.inputs[2] : "", b, n.outputs[0]);
    return true;
  }

  // MatMul by a constant W [in, out] whose only reader adds a constant b [out]: PyTorch's
  // export of nn.Linear on inputs of rank 3 and more. The layer holds W transposed ([out, in],
  // PyTorch's layout) and computes x (W^T)^T + b: the same values, the operand read through a
  // transposed view.
  bool matmul_add_linear(const Node& n, const std::vector<Type>& in) {
    if (n.inputs.size() != 2 || !floating(in[0])) return false;
    const TensorData* w = layer_initializer(n, 1, 2);
    if (w == nullptr || *in[0].dtype != w->dtype) return false;
    const auto readers = consumers_.find(n.outputs[0]);
    if (readers == consumers_.end() || readers->second.size() != 1 ||
        graph_outputs_.count(n.outputs[0])) {
      return false;
    }
    const Node& add = *readers->second[0];
    const bool same_graph =
        &add >= graph_->nodes.data() && &add < graph_->nodes.data() + graph_->nodes.size();
    if (!same_graph || !normal_domain(add.domain).empty() || add.op_type != "Add" ||
        add.inputs.size() != 2 || used_outputs(add).size() != 1 || !add.attributes.empty()) {
      return false;
    }
    const size_t bias_at = add.inputs[0] == n.outputs[0] ? 1 : 0;
    if (add.inputs[1 - bias_at] != n.outputs[0]) return false;
    const TensorData* b = layer_initializer(add, bias_at, 1);
    if (b == nullptr || b->dtype != w->dtype || b->shape[0] != w->shape[1]) return false;
    // W^T, contiguous.
    const int64_t rows = w->shape[0], cols = w->shape[1];
    const size_t item = w->bytes.size() / static_cast<size_t>(std::max<int64_t>(rows * cols, 1));
    std::vector<unsigned char> bytes(w->bytes.size());
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        std::memcpy(&bytes[static_cast<size_t>(c * rows + r) * item],
                    &w->bytes[static_cast<size_t>(r * cols + c) * item], item);
      }
    }
    const TensorData wt(std::move(bytes), Shape{cols, rows}, w->dtype);
    fused_.insert(&add);
    const bool first_owner = !layer_owned_.count(root(n.inputs[1]));
    linear(n, n.inputs[0], n.inputs[1], wt, add.inputs[bias_at], b, add.outputs[0]);
    types_[add.outputs[0]] = {w->dtype, in[0].rank};  // the Add is written here, not typed later
    // Other readers of W see it through the layer's weight, transposed back.
    std::string& w_expr = init_expr_[root(n.inputs[1])];
    if (first_owner) w_expr = "transpose(" + w_expr + ", 0, 1)";
    return true;
  }

  // BatchNormalization in inference (the given statistics) with constant scale, bias, mean and
  // variance of one dtype: nn::BatchNorm1d/2d in evaluation mode.
  bool batch_norm_layer(const Node& n, const std::vector<Type>& in) {
    if (n.inputs.size() != 5) return false;
    const int rank = in[0].rank;
    if (rank < 2 || rank > 4) return false;
    const int64_t opset = opset_of(n);
    if (opset >= 14 && attr_int(n, "training_mode", 0) != 0) return false;
    if (opset < 9 && attr_int(n, "spatial", 1) != 1) return false;
    if (!only_attributes(
            n, {"epsilon", "momentum", "training_mode", "spatial", "is_test", "consumed_inputs"})) {
      return false;
    }
    const TensorData* t[4];
    for (int i = 0; i < 4; ++i) {
      t[i] = layer_initializer(n, static_cast<size_t>(i + 1), 1);
      if (t[i] == nullptr || t[i]->dtype != t[0]->dtype || t[i]->shape != t[0]->shape) return false;
    }
    const DType dtype = t[0]->dtype;
    if ((dtype != DType::f32 && dtype != DType::f64) || (in[0].dtype && *in[0].dtype != dtype))
      return false;
    std::string config = "nn::BatchNormConfig(" + std::to_string(t[0]->shape[0]) + ")";
    if (const auto eps = attr_float(n, "epsilon"))
      config += ".epsilon(" + float_literal(*eps) + ")";
    // ONNX's momentum weighs the running value, PyTorch's the batch's (used when fine-tuning).
    if (const auto m = attr_float(n, "momentum"))
      config += ".with_momentum(1 - " + float_literal(*m) + ")";
    if (dtype != DType::f32) config += ".with_dtype(" + dtype_expr(dtype) + ")";
    const std::string name = layer_name(n, {n.inputs[1], n.inputs[2]}, "batch_norm");
    const std::string path =
        layer_field(n, rank == 4 ? "ember::nn::BatchNorm2d" : "ember::nn::BatchNorm1d", name,
                    config, "ember/nn/norm.hpp");
    const char* paths[4] = {".weight", ".bias", ".running_mean", ".running_var"};
    const char* exprs[4] = {".weight->dyn()", ".bias->dyn()", ".running_mean->dyn()",
                            ".running_var->dyn()"};
    for (int i = 0; i < 4; ++i) give(n.inputs[i + 1], path + exprs[i], path + paths[i], *t[i]);
    weights_.emplace_back(path + ".num_batches_tracked",
                          TensorData::from(std::vector<int64_t>{0}, Shape{}));
    has_batch_norm_ = true;
    bind(n.outputs[0], path + ".forward(" + value(n.inputs[0]) + ")");
    return true;
  }

  // ---- Files ----------------------------------------------------------------------------------

  std::string opening(const std::string& what) const {
    const std::string producer = ir_.producer.empty() ? "" : ", producer '" + ir_.producer + "'";
    std::string s = "Generated by `ember onnx2cpp` from " + source_ + producer +
                    ", ai.onnx opset " + std::to_string(opset_) + ".";
    for (char& c : s) {
      if (static_cast<unsigned char>(c) < 32) c = ' ';  // names from the file stay on one line
    }
    return "// " + what + "\n// " + s + "\n";
  }

  static std::string shape_text(const ValueInfo& v) {
    std::string s = v.dtype_name;
    if (!v.has_shape) return s;
    std::vector<std::string> dims;
    for (const Dim& d : v.shape) {
      dims.push_back(d.size >= 0 ? std::to_string(d.size) : d.symbol.empty() ? "?" : d.symbol);
    }
    return s + " [" + join(dims) + "]";
  }

  std::string header() const {
    std::string h = opening("The model as a module.");
    h += "// Edit freely: it is ordinary Ember code. Its weights are in " + name_ +
         ".safetensors:\n//\n//   " + name_ + " model(device);\n//   ember::load(model, \"" +
         name_ + ".safetensors\");\n//   " + name_ + "::Outputs out = model.forward(" +
         (inputs_.empty() ? "" : "...") + ");\n#pragma once\n\n";
    h += "#include \"ember/nn/module.hpp\"\n";
    for (const std::string& inc : headers_) h += "#include \"" + inc + "\"\n";
    h += "#include \"ember/nn/serialize.hpp\"\n\n";
    h += "struct " + name_ + " {\n";
    if (!fields_.empty())
      h += "  // Layers, parameters and buffers, by their path in the weights file.\n";
    std::vector<std::string> names;
    if (parted_) {
      h += "  // (in parts: one EMBER_MODULE lists up to 256 fields)\n";
      for (int k = 0; k < parts(); ++k) {
        const std::string part = "Part" + std::to_string(k);
        h += "  struct " + part + " {\n";
        std::vector<std::string> members;
        for (const Field& f : fields_) {
          if (f.part != k) continue;
          h += "    " + f.type + " " + f.name + ";  // " + f.comment + "\n";
          members.push_back(f.name);
        }
        h += "    EMBER_MODULE(" + part + ", " + join(members) + ")\n";
        h += "    explicit " + part + "(ember::Device device);\n  };\n";
        names.push_back("part" + std::to_string(k));
      }
      for (int k = 0; k < parts(); ++k)
        h += "  Part" + std::to_string(k) + " " + names[static_cast<size_t>(k)] + ";\n";
    } else {
      for (const Field& f : fields_) {
        h += "  " + f.type + " " + f.name + ";  // " + f.comment + "\n";
        names.push_back(f.name);
      }
    }
    h += "  EMBER_MODULE(" + name_ + (names.empty() ? "" : ", " + join(names)) + ")\n\n";
    h += "  /// The default domain's opset the graph was written for (onnx::call's semantics).\n";
    h += "  static constexpr int64_t kOpset = " + std::to_string(opset_) + ";\n\n";
    h += "  /// The graph's outputs.\n  struct Outputs {\n";
    Names out_names;
    for (const ValueInfo& v : g_.outputs) {
      h += "    ember::DynTensor " + output_field(out_names, v) + ";  // " + shape_text(v) + "\n";
    }
    h += "  };\n\n";
    h += "  /// Placeholder values until ember::load reads the weights";
    h += has_batch_norm_ ? "; evaluation mode (BatchNorm uses its running statistics).\n" : ".\n";
    h += "  explicit " + name_ + "(ember::Device device = ember::default_device());\n";
    std::vector<std::string> params;
    for (const Input& i : inputs_) {
      h += "  /// " + i.param + ": '" + i.info.name + "', " + shape_text(i.info) + "\n";
      params.push_back("const ember::DynTensor& " + i.param);
    }
    h += "  Outputs forward(" + parameter_list(params, 18) + ") const;\n};\n";
    return h;
  }

  static std::string output_field(Names& names, const ValueInfo& v) { return names.unique(v.name); }

  int parts() const { return fields_.empty() ? 0 : fields_.back().part + 1; }

  std::string source(const std::vector<std::string>& returned) const {
    std::string body;
    for (int k = 0; parted_ && k < parts(); ++k) {
      const std::string part = "Part" + std::to_string(k);
      body += name_ + "::" + part + "::" + part + "(Device device)";
      bool first = true;
      for (const Field& f : fields_) {
        if (f.part != k) continue;
        body += (first ? "\n    : " : ",\n      ") + f.name + "(" + f.init + ")";
        first = false;
      }
      body += " {}\n\n";
    }
    body += name_ + "::" + name_ + "(Device " + (uses_device_ ? "device" : "/*device*/") + ")";
    if (parted_) {
      for (int k = 0; k < parts(); ++k)
        body += (k == 0 ? "\n    : " : ",\n      ") + ("part" + std::to_string(k)) + "(device)";
    } else {
      for (size_t i = 0; i < fields_.size(); ++i) {
        body += (i == 0 ? "\n    : " : ",\n      ") + fields_[i].name + "(" + fields_[i].init + ")";
      }
    }
    body += has_batch_norm_ ? " {\n  eval();  // ONNX graphs infer: train() to fine-tune\n}\n\n"
                            : " {}\n\n";
    std::vector<std::string> params;
    for (const Input& i : inputs_) {
      bool used = false;
      for (const std::string& b : body_) used = used || mentions(b, i.param);
      for (const std::string& r : returned) used = used || r == i.param;
      params.push_back(std::string(used ? "" : "[[maybe_unused]] ") + "const DynTensor& " +
                       i.param);
    }
    const std::string head = name_ + "::Outputs " + name_ + "::forward(";
    body += head + parameter_list(params, head.size()) + ") const {\n";
    for (const std::string& b : body_) body += b + "\n";
    body += "  return {" + join(returned) + "};\n}\n";

    std::string s = opening("The model's layers and forward pass.");
    s += "// forward() runs the graph's nodes in the executor's order: nn layers, Ember's\n"
         "// functions, and onnx::call (the importer's own operator) where Ember has no function\n"
         "// with ONNX's semantics.\n";
    s += "#include \"" + name_ + ".hpp\"\n\n";
    if (body.find("std::numeric_limits") != std::string::npos) s += "#include <limits>\n\n";
    if (uses_call_) s += "#include \"ember/import/onnx_ops.hpp\"\n";
    s += "#include \"ember/tensor/tensor.hpp\"\n\nusing namespace ember;\n\n";
    return s + body;
  }

  /// "a, b" when the declaration fits in 100 columns, else one parameter a line, aligned.
  static std::string parameter_list(const std::vector<std::string>& params, size_t column) {
    const std::string flat = join(params);
    if (column + flat.size() + 10 <= 100) return flat;
    return join(params, (",\n" + std::string(column, ' ')).c_str());
  }

  static bool mentions(const std::string& text, const std::string& id) {
    for (size_t at = text.find(id); at != std::string::npos; at = text.find(id, at + 1)) {
      const auto word = [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
      };
      const bool before = at > 0 && word(text[at - 1]);
      const bool after = at + id.size() < text.size() && word(text[at + id.size()]);
      if (!before && !after) return true;
    }
    return false;
  }

  const ModelIR& ir_;
  const Graph& g_;
  std::string name_, source_;
  int64_t opset_ = 1;
  Names names_;
  std::vector<Field> fields_;
  std::vector<Input> inputs_;
  std::vector<std::pair<std::string, TensorData>> weights_;
  std::map<std::string, std::string> expr_;       // ONNX value -> the C++ expression reading it
  std::map<std::string, std::string> init_expr_;  // the same for the main graph's initialisers
  std::map<std::string, std::string> alias_;      // Identity of an initialiser -> the initialiser
  std::set<std::string> layer_owned_;             // initialisers given to a layer
  std::map<std::string, Type> types_;
  std::map<std::string, ValueInfo> inferred_;  // shape inference over the current scope
  std::set<std::string> read_, graph_outputs_;
  std::map<std::string, std::vector<const Node*>> consumers_;
  std::set<const Node*> fused_;
  const Graph* graph_ = nullptr;  // the graph being written
  bool parted_ = false;
  std::string indent_;
  std::set<std::string> headers_;
  std::vector<std::string> body_;
  std::map<std::string, int64_t> unsupported_;
  GeneratedModule out_;
  bool has_batch_norm_ = false, uses_call_ = false, uses_device_ = false;
};

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (std::isalnum(static_cast<unsigned char>(c)) && static_cast<unsigned char>(c) < 128) ||
           c == '_';
  });
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  EMBER_CHECK(f.good(), "onnx2cpp: cannot write ", path, ": ", std::strerror(errno));
}

}  // namespace

GeneratedModule generate_cpp(const ModelIR& ir, const std::string& name,
                             const std::string& source_name) {
  EMBER_CHECK(is_identifier(name), "onnx2cpp: the name '", name, "' is not a C++ identifier");
  EMBER_CHECK(!reserved_names().count(name), "onnx2cpp: the name '", name,
              "' is a C++ keyword or a name the generated code uses");
  EMBER_CHECK(ir.graph != nullptr, "onnx2cpp: the model has no graph");
  GeneratedModule m = Generator(ir, name, source_name, false).run();
  // Too many fields for one EMBER_MODULE: again, in parts.
  if (m.fields > 256) m = Generator(ir, name, source_name, true).run();
  return m;
}

WrittenModule write_cpp(const std::string& model_path, const std::string& out_dir,
                        const std::string& name) {
  namespace fs = std::filesystem;
  const ModelIR ir = read_model(model_path, LoadOptions{});
  GeneratedModule m = generate_cpp(ir, name, fs::path(model_path).filename().string());
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  EMBER_CHECK(!ec, "onnx2cpp: cannot create ", out_dir, ": ", ec.message());
  WrittenModule w;
  const fs::path dir(out_dir);
  w.paths = {(dir / (name + ".hpp")).string(), (dir / (name + ".cpp")).string(),
             (dir / (name + ".safetensors")).string()};
  std::vector<std::pair<std::string, DynTensor>> tensors;
  for (const auto& [path, data] : m.weights)
    tensors.emplace_back(path, from_data(data, Device::cpu()));
  io::save_safetensors(tensors, w.paths[2], {{"source", "ember onnx2cpp"}});
  write_text(w.paths[0], m.header);
  write_text(w.paths[1], m.source);
  w.layers = m.layers;
  w.functions = m.functions;
  w.calls = m.calls;
  w.control = m.control;
  w.tensors = static_cast<int64_t>(m.weights.size());
  return w;
}

}  // namespace ember::onnx
