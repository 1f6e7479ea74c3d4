#include "ember/nn/serialize.hpp"

#include <set>

#include "ember/core/error.hpp"
#include "ember/io/safetensors.hpp"

namespace ember::nn {

std::string LoadReport::describe() const {
  std::string out;
  for (const std::string& n : missing) out += "\n  missing from the file: " + n;
  for (const std::string& n : unexpected) out += "\n  not in the module: " + n;
  for (const Mismatch& m : mismatched) {
    out += "\n  shape mismatch: " + m.name + " is " + to_string(m.in_file) + " in the file, " +
           to_string(m.in_module) + " in the module";
  }
  return out;
}

void save_tree(const ModuleTree& tree, const std::string& path,
               const std::map<std::string, std::string>& metadata) {
  std::vector<std::pair<std::string, DynTensor>> tensors;
  for (const NamedTensor& t : named_tensors(tree))
    tensors.emplace_back(t.path, detach(t.slot->dyn()));
  io::save_safetensors(tensors, path, metadata);
}

LoadReport load_tree(const ModuleTree& tree, const std::string& path, const LoadOptions& options) {
  const io::SafetensorsFile file = io::load_safetensors(path);
  const std::vector<NamedTensor> named = named_tensors(tree);
  LoadReport report;
  std::set<std::string> in_module;
  std::vector<const NamedTensor*> matching;
  for (const NamedTensor& t : named) {
    in_module.insert(t.path);
    if (!file.contains(t.path)) {
      report.missing.push_back(t.path);
    } else if (!(file.shape(t.path) == t.slot->dyn().shape())) {
      report.mismatched.push_back({t.path, file.shape(t.path), t.slot->dyn().shape()});
    } else {
      matching.push_back(&t);
    }
  }
  for (const std::string& name : file.names()) {
    if (!in_module.count(name)) report.unexpected.push_back(name);
  }
  EMBER_CHECK(!options.strict || report.complete(), "[load] ", path, " does not match the ",
              tree.empty() ? "module" : tree[0].type, " (nothing was loaded):", report.describe());
  for (const NamedTensor* t : matching) {
    const DynTensor& current = t->slot->dyn();
    t->slot->set_dyn(file.tensor(t->path, current.device(), current.dtype()));
    report.loaded.push_back(t->path);
  }
  return report;
}

}  // namespace ember::nn
