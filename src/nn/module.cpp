// Operations on flattened modules: compiled once here, whatever the user's module types.
#include "ember/nn/module.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <optional>
#ifndef EMBER_BARE_METAL
#include <regex>
#endif

#include "ember/core/error.hpp"
#include "ember/tensor/device_graph.hpp"
#include "ember/tensor/print.hpp"

namespace ember::nn {

ParamId next_param_id() {
#if defined(EMBER_NO_THREADS)  // one thread, and Cortex-M has no 64-bit atomics
  static uint64_t next = 1;
  return next++;
#else
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
#endif
}

TensorSlot::TensorSlot(Kind kind, const DynTensor& value, bool trainable)
    : id_(next_param_id()), kind_(kind), trainable_(trainable && kind == Kind::Param) {
  EMBER_CHECK(value.defined(), "[nn] a ", kind == Kind::Param ? "Param" : "Buffer",
              " needs a defined tensor");
  if (kind == Kind::Param) {
    EMBER_CHECK(is_floating(value.dtype()), "[nn] a Param must be a Float tensor, got ",
                value.dtype());
  }
  set_dyn(value);
}

void TensorSlot::set_dyn(const DynTensor& value) {
  EMBER_CHECK(value.defined(), "[nn] cannot set a parameter to an undefined tensor");
  // A parameter is a leaf of every graph that uses it, never the result of the update that made it.
  value_ = trainable_ ? require_grad(detach(value)) : detach(value);
}

void TensorSlot::set_checked(const DynTensor& value, const char* op) {
  EMBER_CHECK(value.defined(), "[", op, "] the new value is an undefined tensor");
  EMBER_CHECK(!value_.defined() || value.shape() == value_.shape(), "[", op, "] the new value has ",
              "shape ", value.shape(), " but the ", kind_ == Kind::Param ? "parameter" : "buffer",
              " has shape ", value_.shape());
  set_dyn(value);
}

void TensorSlot::assign(const DynTensor& value) {
  EMBER_CHECK(value.defined(), "[nn] cannot set a parameter to an undefined tensor");
  // Contiguous: a broadcast view (stride 0) would have many elements written to one place.
  if (value_.defined() && !trainable_ && value_.is_contiguous() &&
      value.shape() == value_.shape() && value.dtype() == value_.dtype() &&
      value.device() == value_.device()) {
    copy_into(value_, detach(value));
    return;
  }
  set_dyn(value);
}

std::ostream& operator<<(std::ostream& os, const TensorSlot& p) { return os << p.dyn(); }

void TensorSlot::set_trainable(bool on) {
  if (kind_ == Kind::Buffer) return;
  trainable_ = on;
  set_dyn(value_);
}

int64_t num_params(const ModuleTree& tree) {
  int64_t n = 0;
  for (const ModuleEntry& e : tree) {
    if (e.kind == ModuleEntry::Kind::Tensor && e.slot->kind() == TensorSlot::Kind::Param) {
      n += e.slot->dyn().numel();
    }
  }
  return n;
}

void set_training(const ModuleTree& tree, bool training) {
  for (const ModuleEntry& e : tree) {
    if (e.kind == ModuleEntry::Kind::Mode) e.mode->training = training;
  }
}

void to_device(const ModuleTree& tree, Device device) {
  for (const ModuleEntry& e : tree) {
    if (e.kind == ModuleEntry::Kind::Tensor)
      e.slot->set_dyn(ember::to_device(e.slot->dyn(), device));
  }
}

void to_dtype(const ModuleTree& tree, DType dtype) {
  EMBER_CHECK(is_floating(dtype), "[nn] modules convert to floating dtypes only, got ", dtype);
  for (const ModuleEntry& e : tree) {
    if (e.kind == ModuleEntry::Kind::Tensor && is_floating(e.slot->dyn().dtype())) {
      e.slot->set_dyn(cast(e.slot->dyn(), dtype));
    }
  }
}

namespace {

// A freeze/unfreeze pattern: a path, a module prefix, or (on an OS) an ECMAScript regex.
class PathPattern {
 public:
  explicit PathPattern(std::string_view pattern) : pattern_(pattern) {
#ifndef EMBER_BARE_METAL  // std::regex reports bad patterns by throwing; not worth flash there
    if (pattern.empty()) return;
    try {
      re_.emplace(std::string(pattern), std::regex::ECMAScript);
    } catch (const std::regex_error&) {
      // Not a valid regex: it can still match as a path or a module prefix.
    }
#endif
  }

  bool matches(const std::string& path) const {
    if (pattern_.empty() || path == pattern_) return true;
    if (path.size() > pattern_.size() && path.compare(0, pattern_.size(), pattern_) == 0 &&
        path[pattern_.size()] == '.') {
      return true;  // a parameter inside the module the pattern names
    }
#ifndef EMBER_BARE_METAL
    return re_ && std::regex_match(path, *re_);
#else
    return false;
#endif
  }

 private:
  std::string_view pattern_;
#ifndef EMBER_BARE_METAL
  std::optional<std::regex> re_;
#endif
};

}  // namespace

int set_trainable(const ModuleTree& tree, std::string_view pattern, bool trainable) {
  const PathPattern matcher(pattern);
  int count = 0;
  for (const ModuleEntry& e : tree) {
    if (e.kind != ModuleEntry::Kind::Tensor || e.slot->kind() != TensorSlot::Kind::Param) continue;
    if (!matcher.matches(e.path)) continue;
    e.slot->set_trainable(trainable);
    ++count;
  }
  EMBER_CHECK(count > 0, "[", trainable ? "unfreeze" : "freeze", "] no parameter of ",
              tree.empty() ? "the module" : tree[0].type, " matches \"", pattern, "\"");
  return count;
}

void make_valid(const ModuleTree& tree) {
  for (const ModuleEntry& e : tree) {
    if (e.kind == ModuleEntry::Kind::Tensor) e.slot->set_trainable(false);
    if (e.kind == ModuleEntry::Kind::Mode) e.mode->training = false;
  }
}

void make_independent(const ModuleTree& tree) {
  for (const ModuleEntry& e : tree) {
    if (e.kind != ModuleEntry::Kind::Tensor) continue;
    e.slot->set_dyn(clone(detach(e.slot->dyn())));
    e.slot->renew_id();
  }
}

std::vector<NamedTensor> named_tensors(const ModuleTree& tree) {
  std::vector<NamedTensor> out;
  for (const ModuleEntry& e : tree) {
    if (e.kind == ModuleEntry::Kind::Tensor) out.push_back({e.path, e.slot});
  }
  return out;
}

std::vector<NamedTensor> named_params(const ModuleTree& tree) {
  std::vector<NamedTensor> out;
  for (const ModuleEntry& e : tree) {
    if (e.kind == ModuleEntry::Kind::Tensor && e.slot->kind() == TensorSlot::Kind::Param) {
      out.push_back({e.path, e.slot});
    }
  }
  return out;
}

namespace {

std::string with_commas(int64_t n) {
  const std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

// Parameters of the module at `index` and below (entries after it with a deeper level).
int64_t params_below(const ModuleTree& tree, size_t index) {
  int64_t n = 0;
  for (size_t i = index + 1; i < tree.size() && tree[i].depth > tree[index].depth; ++i) {
    const ModuleEntry& e = tree[i];
    if (e.kind == ModuleEntry::Kind::Tensor && e.slot->kind() == TensorSlot::Kind::Param) {
      n += e.slot->dyn().numel();
    }
  }
  return n;
}

}  // namespace

std::string summary(const ModuleTree& tree) {
  struct Row {
    std::string name, type, shape, count;
  };
  std::vector<Row> rows;
  int64_t total = 0, trainable = 0, buffers = 0;
  for (size_t i = 0; i < tree.size(); ++i) {
    const ModuleEntry& e = tree[i];
    const std::string indent(static_cast<size_t>(2 * std::max(e.depth - 1, 0)), ' ');
    const std::string name = e.path.empty() ? "(root)" : indent + e.path;
    if (e.kind == ModuleEntry::Kind::Module) {
      rows.push_back({name, e.type, "", with_commas(params_below(tree, i))});
    } else if (e.kind == ModuleEntry::Kind::Tensor) {
      const DynTensor& t = e.slot->dyn();
      const bool param = e.slot->kind() == TensorSlot::Kind::Param;
      std::string type = param ? (e.slot->trainable() ? "Param" : "Param (frozen)") : "Buffer";
      type += std::string(" ") + std::string(dtype_name(t.dtype()));
      rows.push_back({name, type, to_string(t.shape()), with_commas(t.numel())});
      if (param) {
        total += t.numel();
        if (e.slot->trainable()) trainable += t.numel();
      } else {
        buffers += t.numel();
      }
    }
  }
  size_t w[4] = {4, 4, 5, 6};
  for (const Row& r : rows) {
    w[0] = std::max(w[0], r.name.size());
    w[1] = std::max(w[1], r.type.size());
    w[2] = std::max(w[2], r.shape.size());
    w[3] = std::max(w[3], r.count.size());
  }
  auto pad = [](const std::string& s, size_t n, bool right) {
    const std::string fill(n - std::min(n, s.size()), ' ');
    return right ? fill + s : s + fill;
  };
  std::string out;
  auto line = [&](const std::string& a, const std::string& b, const std::string& c,
                  const std::string& d) {
    out += pad(a, w[0], false) + "  " + pad(b, w[1], false) + "  " + pad(c, w[2], false) + "  " +
           pad(d, w[3], true) + "\n";
  };
  line("name", "type", "shape", "params");
  out += std::string(w[0] + w[1] + w[2] + w[3] + 6, '-') + "\n";
  for (const Row& r : rows) line(r.name, r.type, r.shape, r.count);
  out += "total parameters: " + with_commas(total) + " (trainable " + with_commas(trainable) +
         ", frozen " + with_commas(total - trainable) + ")";
  if (buffers > 0) out += "; buffer elements: " + with_commas(buffers);
  out += "\n";
  return out;
}

}  // namespace ember::nn
