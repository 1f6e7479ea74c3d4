#include "executor.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <queue>
#include <set>

#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/sync.hpp"

namespace ember::onnx {
namespace {

int64_t opset_of(const ModelIR& ir, const std::string& domain) {
  const auto it = ir.opsets.find(domain);
  return it == ir.opsets.end() ? 0 : it->second;
}

// EMBER_ONNX_PROFILE=1: each node waits for its device and its time is added to its op type's
// total; the totals are printed to stderr when the process ends, slowest first. For finding
// where a model's time goes (docs/PERFORMANCE.md), not for production: it synchronises per node.
struct Profile {
  std::mutex mutex;
  std::map<std::string, std::pair<double, int64_t>> by_op;  // ms, nodes
  ~Profile() {
    if (by_op.empty()) return;
    std::vector<std::pair<std::string, std::pair<double, int64_t>>> rows(by_op.begin(),
                                                                         by_op.end());
    std::sort(rows.begin(), rows.end(),
              [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
    double total = 0;
    for (const auto& r : rows) total += r.second.first;
    std::fprintf(stderr, "EMBER_ONNX_PROFILE: %.1f ms in nodes\n", total);
    for (const auto& [op, v] : rows) {
      std::fprintf(stderr, "  %-28s %10.2f ms %5.1f%% %8lld nodes\n", op.c_str(), v.first,
                   100 * v.first / total, static_cast<long long>(v.second));
    }
  }
};

bool profile_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("EMBER_ONNX_PROFILE");
    return v != nullptr && std::string(v) == "1";
  }();
  return on;
}

void profile_add(const std::string& op, std::chrono::steady_clock::duration d) {
  static Profile profile;
  const std::lock_guard<std::mutex> lock(profile.mutex);
  auto& [ms, n] = profile.by_op[op];
  ms += std::chrono::duration<double, std::milli>(d).count();
  ++n;
}

}  // namespace

// Names a graph reads from its outer scopes: read by its nodes (or their subgraphs) or listed
// as its outputs, and defined by none of its inputs, initialisers or nodes.
std::set<std::string> free_names(const Graph& g) {
  std::set<std::string> defined, read;
  for (const ValueInfo& v : g.inputs) defined.insert(v.name);
  for (const auto& [name, t] : g.initializers) defined.insert(name);
  for (const Node& n : g.nodes) {
    for (const std::string& o : n.outputs) defined.insert(o);
    for (const std::string& i : n.inputs) read.insert(i);
    for_each_subgraph(n, [&](const Graph& sub) {
      for (const std::string& f : free_names(sub)) read.insert(f);
    });
  }
  for (const ValueInfo& v : g.outputs) read.insert(v.name);
  std::set<std::string> out;
  for (const std::string& r : read) {
    if (!r.empty() && !defined.count(r)) out.insert(r);
  }
  return out;
}

// What node n reads: its inputs and its subgraphs' free names.
std::vector<std::string> reads_of(const Node& n) {
  std::vector<std::string> r;
  for (const std::string& i : n.inputs) {
    if (!i.empty()) r.push_back(i);
  }
  for_each_subgraph(n, [&](const Graph& sub) {
    for (const std::string& f : free_names(sub)) r.push_back(f);
  });
  return r;
}

const Value* Scope::find(const std::string& name) const {
  for (const Scope* s = this; s != nullptr; s = s->parent) {
    const auto it = s->values.find(name);
    if (it != s->values.end()) return &it->second;
  }
  return nullptr;
}

std::vector<Value> OpContext::run_graph(const Graph& g, std::vector<Value> inputs) const {
  return exec_.run(g, std::move(inputs), &scope_);
}

Executor::Executor(const ModelIR& ir, Device device, const std::map<std::string, DynTensor>& params,
                   const std::string& path)
    : ir_(ir), device_(device), params_(params), path_(path) {
  plan(*ir.graph, {});
}

void Executor::plan(const Graph& g, const std::vector<std::string>& outer_names) {
  const bool main = &g == ir_.graph.get();
  std::set<std::string> defined(outer_names.begin(), outer_names.end());
  for (const ValueInfo& v : g.inputs) defined.insert(v.name);
  for (const auto& [name, t] : g.initializers) defined.insert(name);
  std::unordered_map<std::string, size_t> producer;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const std::string& o : g.nodes[i].outputs) {
      if (o.empty()) continue;
      EMBER_CHECK(producer.emplace(o, i).second, "[onnx] ", path_, ": value '", o,
                  "' is produced by two nodes: ", node_label(g.nodes[producer[o]]), " and ",
                  node_label(g.nodes[i]));
    }
  }
  // Kahn's algorithm, the file's order among ready nodes.
  std::vector<std::vector<std::string>> reads(g.nodes.size());
  std::vector<int64_t> waiting(g.nodes.size(), 0);
  std::vector<std::vector<size_t>> readers(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    reads[i] = reads_of(g.nodes[i]);
    for (const std::string& r : reads[i]) {
      const auto p = producer.find(r);
      if (p != producer.end()) {
        ++waiting[i];
        readers[p->second].push_back(i);
      } else {
        EMBER_CHECK(defined.count(r), "[onnx] ", path_, ": ", node_label(g.nodes[i]), " reads '", r,
                    "', which no node, graph input or initialiser defines");
      }
    }
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (waiting[i] == 0) ready.push(i);
  }
  std::vector<size_t> order;
  while (!ready.empty()) {
    const size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (size_t r : readers[i]) {
      if (--waiting[r] == 0) ready.push(r);
    }
  }
  if (order.size() != g.nodes.size()) {
    std::string stuck;
    int shown = 0;
    for (size_t i = 0; i < g.nodes.size() && shown < 4; ++i) {
      if (waiting[i] > 0) stuck += (shown++ ? ", " : "") + node_label(g.nodes[i]);
    }
    EMBER_FAIL("[onnx] ", path_, ": the graph '", g.name, "' has a cycle through ", stuck);
  }
  for (const ValueInfo& v : g.outputs) {
    EMBER_CHECK(producer.count(v.name) || defined.count(v.name), "[onnx] ", path_,
                ": graph output '", v.name, "' is defined by no node, input or initialiser");
  }

  // Lifetimes: a value made or bound here is dropped after the step that reads it last.
  Plan p;
  std::set<std::string> kept;
  for (const ValueInfo& v : g.outputs) kept.insert(v.name);
  for (const auto& [name, t] : g.initializers) kept.insert(name);
  std::unordered_map<std::string, size_t> last;
  for (size_t k = 0; k < order.size(); ++k) {
    for (const std::string& o : g.nodes[order[k]].outputs) last[o] = k;  // unread: drop at once
    for (const std::string& r : reads[order[k]]) last[r] = k;
  }
  p.steps.resize(order.size());
  for (size_t k = 0; k < order.size(); ++k) {
    const Node& n = g.nodes[order[k]];
    const int64_t opset = opset_of(ir_, n.domain);
    p.steps[k] = {&n, registry().find(n.domain, n.op_type, opset), opset, {}};
  }
  std::set<std::string> local;
  for (const ValueInfo& v : g.inputs) local.insert(v.name);
  for (const auto& [name, k] : producer) local.insert(name);
  for (const auto& [name, k] : last) {
    if (local.count(name) && !kept.count(name) && !name.empty()) p.steps[k].release.push_back(name);
  }
  if (!main) {
    for (const auto& [name, t] : g.initializers) {
      p.constants[name] = to_device(from_data(t), device_);
    }
  }
  fold_constants(g, p);
  fuse(g, p);
  plans_[&g] = std::move(p);

  // Subgraphs see everything defined here.
  std::vector<std::string> visible(outer_names);
  visible.insert(visible.end(), local.begin(), local.end());
  for (const auto& [name, t] : g.initializers) visible.push_back(name);
  for (const Node& n : g.nodes) {
    for_each_subgraph(n, [&](const Graph& sub) { plan(sub, visible); });
  }
}

// Constant folding: a node whose inputs are all constants runs once, here, and its outputs join
// the plan's constants. Constants are Constant nodes' outputs, folded values and initialisers,
// except the main graph's floating ones: those are the parameters, which fine-tuning changes.
// Random and control-flow nodes are never folded; a node that fails here is left to fail (with
// its message) when the graph runs.
void Executor::fold_constants(const Graph& g, Plan& p) {
  const bool main = &g == ir_.graph.get();
  Scope scope;
  std::set<std::string> constant;
  for (const auto& [name, t] : g.initializers) {
    if (main && is_floating(t.dtype)) continue;
    constant.insert(name);
    scope.values[name] = Value::of(main ? params_.at(name) : p.constants.at(name));
  }
  std::vector<Step> kept;
  for (Step& step : p.steps) {
    const Node& n = *step.node;
    bool foldable = step.fn != nullptr && !n.outputs.empty() && n.op_type.rfind("Random", 0) != 0 &&
                    n.op_type != "Bernoulli" && n.op_type != "Multinomial" &&
                    n.op_type != "Dropout";
    for (const auto& [name, a] : n.attributes) foldable = foldable && !a.g && a.graphs.empty();
    for (const std::string& i : n.inputs) foldable = foldable && (i.empty() || constant.count(i));
    if (foldable) {
      std::vector<Value> in;
      for (const std::string& i : n.inputs) in.push_back(i.empty() ? Value{} : scope.values.at(i));
      try {
        OpContext ctx(n, step.opset, device_, std::move(in), *this, scope);
        std::vector<Value> out = (*step.fn)(ctx);
        bool tensors = out.size() >= n.outputs.size();  // sequences and optionals stay steps
        for (size_t j = 0; tensors && j < n.outputs.size(); ++j) {
          tensors = n.outputs[j].empty() || out[j].kind == Value::Kind::Tensor;
        }
        if (tensors) {
          for (size_t j = 0; j < n.outputs.size(); ++j) {
            if (n.outputs[j].empty()) continue;
            constant.insert(n.outputs[j]);
            scope.values[n.outputs[j]] = out[j];
            p.constants[n.outputs[j]] = out[j].tensor;
          }
          continue;
        }
      } catch (const Error&) {
        // Not folded: run() raises the same error with the inputs it is given.
      }
    }
    kept.push_back(std::move(step));
  }
  p.steps = std::move(kept);
}

std::vector<Value> Executor::run(const Graph& g, std::vector<Value> inputs,
                                 const Scope* outer) const {
  const Plan& p = plans_.at(&g);
  const bool main = &g == ir_.graph.get();
  Scope scope;
  scope.parent = outer;
  if (main) {
    for (const auto& [name, t] : params_) scope.values[name] = Value::of(t);
  }
  for (const auto& [name, t] : p.constants) scope.values[name] = Value::of(t);
  for (size_t i = 0; i < g.inputs.size() && i < inputs.size(); ++i) {
    scope.values[g.inputs[i].name] = std::move(inputs[i]);
  }
  for (size_t i = inputs.size(); i < g.inputs.size(); ++i) {
    EMBER_CHECK(scope.values.count(g.inputs[i].name), "[onnx] ", path_, ": graph '", g.name,
                "' needs input '", g.inputs[i].name, "'");
  }
  for (const Step& step : p.steps) {
    const Node& n = *step.node;
    EMBER_CHECK(step.fn != nullptr, "[onnx] ", path_, ": unsupported operator ", node_label(n));
    std::vector<Value> in;
    in.reserve(n.inputs.size());
    for (const std::string& name : n.inputs) {
      if (name.empty()) {
        in.emplace_back();
        continue;
      }
      const Value* v = scope.find(name);
      EMBER_CHECK(v != nullptr, "[onnx] ", path_, ": ", node_label(n), " reads '", name,
                  "', which has no value");
      in.push_back(*v);
    }
    OpContext ctx(n, step.opset, device_, std::move(in), *this, scope);
    std::vector<Value> out;
    try {
      if (profile_enabled()) {
        const auto t0 = std::chrono::steady_clock::now();
        out = (*step.fn)(ctx);
        synchronize(device_);  // the node's own time, not the queue's
        profile_add(n.op_type, std::chrono::steady_clock::now() - t0);
      } else {
        out = (*step.fn)(ctx);
      }
    } catch (const Error& e) {
      const std::string what = e.what();
      if (what.rfind("[onnx]", 0) == 0) throw;  // already names its node
      EMBER_FAIL("[onnx] ", ctx.label(), ": ", what);
    }
    for (size_t j = 0; j < n.outputs.size(); ++j) {
      if (n.outputs[j].empty()) continue;
      EMBER_CHECK(j < out.size(), "[onnx] ", ctx.label(), ": output ", j, " ('", n.outputs[j],
                  "') is not computed by Ember's ", n.op_type);
      scope.values[n.outputs[j]] = std::move(out[j]);
    }
    for (const std::string& r : step.release) scope.values.erase(r);
  }
  std::vector<Value> outs;
  for (const ValueInfo& v : g.outputs) {
    const Value* val = scope.find(v.name);
    EMBER_CHECK(val != nullptr, "[onnx] ", path_, ": graph output '", v.name, "' has no value");
    outs.push_back(*val);
  }
  return outs;
}

void scan_ops(const ModelIR& ir, const Graph& g, std::map<std::string, int64_t>* histogram,
              std::vector<UnsupportedOp>* unsupported) {
  for (const Node& n : g.nodes) {
    const std::string key = n.domain.empty() ? n.op_type : n.domain + ":" + n.op_type;
    ++(*histogram)[key];
    const int64_t opset = opset_of(ir, n.domain);
    if (registry().find(n.domain, n.op_type, opset) == nullptr) {
      auto it = std::find_if(unsupported->begin(), unsupported->end(), [&](const UnsupportedOp& u) {
        return u.domain == n.domain && u.op_type == n.op_type;
      });
      if (it == unsupported->end()) {
        unsupported->push_back({n.domain, n.op_type, opset, 0});
        it = unsupported->end() - 1;
      }
      ++it->count;
    }
    for_each_subgraph(n, [&](const Graph& sub) { scan_ops(ir, sub, histogram, unsupported); });
  }
}

}  // namespace ember::onnx
