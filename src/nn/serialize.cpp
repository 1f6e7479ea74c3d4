#include "ember/nn/serialize.hpp"

#include <functional>
#include <map>
#include <set>

#include "ember/core/error.hpp"
#include "ember/io/safetensors.hpp"
#ifndef EMBER_BARE_METAL
#include <regex>

#include "ember/io/pytorch.hpp"
#endif

namespace ember::nn {
namespace {

// What load needs of a weights file, whichever format it is.
struct Source {
  std::vector<std::string> names;
  std::function<Shape(const std::string&)> shape;
  std::function<DynTensor(const std::string&, Device, DType)> tensor;
};

Source safetensors_source(io::SafetensorsFile opened) {
  auto file = std::make_shared<io::SafetensorsFile>(std::move(opened));
  return {file->names(), [file](const std::string& n) { return file->shape(n); },
          [file](const std::string& n, Device d, DType t) { return file->tensor(n, d, t); }};
}

#ifndef EMBER_BARE_METAL  // files
Source pytorch_source(const std::string& path, const std::string& key) {
  auto file = std::make_shared<io::PytorchFile>(io::load_pytorch(path, key));
  return {file->names(), [file](const std::string& n) { return file->shape(n); },
          [file](const std::string& n, Device d, DType t) { return file->tensor(n, d, t); }};
}
#endif

// options.rename as one function from a file's name to the module's.
std::function<std::string(const std::string&)> renamer(const KeyMap& rename) {
#ifdef EMBER_BARE_METAL  // std::regex there would cost flash, and reports bad patterns by throwing
  EMBER_CHECK(rename.empty(),
              "[load] rename patterns are regexes, which the embedded build leaves "
              "out: save the weights under the module's names");
  return [](const std::string& name) { return name; };
#else
  std::vector<std::pair<std::regex, std::string>> rules;
  for (const auto& [pattern, replacement] : rename) {
    try {
      rules.emplace_back(std::regex(pattern, std::regex::ECMAScript), replacement);
    } catch (const std::regex_error& e) {
      EMBER_FAIL("[load] the rename pattern '", pattern, "' is not a regex: ", e.what());
    }
  }
  return [rules = std::move(rules)](const std::string& name) {
    std::string renamed = name;
    for (const auto& [re, replacement] : rules)
      renamed = std::regex_replace(renamed, re, replacement);
    return renamed;
  };
#endif
}

LoadReport load_from(const ModuleTree& tree, const Source& file, const std::string& path,
                     const LoadOptions& options) {
  const auto rename = renamer(options.rename);
  LoadReport report;
  std::map<std::string, std::string> by_module_name;  // module's name -> the file's
  std::vector<std::string> renamed_order;
  for (const std::string& name : file.names) {
    const std::string renamed = rename(name);
    if (renamed.empty()) {
      report.ignored.push_back(name);
      continue;
    }
    const auto [it, fresh] = by_module_name.emplace(renamed, name);
    EMBER_CHECK(fresh, "[load] ", path, ": '", it->second, "' and '", name,
                "' are both renamed to '", renamed, "'");
    renamed_order.push_back(renamed);
  }

  std::set<std::string> in_module;
  std::vector<std::pair<const NamedTensor*, std::string>> matching;
  const std::vector<NamedTensor> named = named_tensors(tree);
  for (const NamedTensor& t : named) {
    in_module.insert(t.path);
    const auto it = by_module_name.find(t.path);
    if (it == by_module_name.end()) {
      report.missing.push_back(t.path);
    } else if (const Shape s = file.shape(it->second); !(s == t.slot->dyn().shape())) {
      report.mismatched.push_back({t.path, s, t.slot->dyn().shape()});
    } else {
      matching.emplace_back(&t, it->second);
    }
  }
  for (const std::string& name : renamed_order) {
    if (!in_module.count(name)) report.unexpected.push_back(name);
  }
  EMBER_CHECK(!options.strict || report.complete(), "[load] ", path, " does not match the ",
              tree.empty() ? "module" : tree[0].type, " (nothing was loaded):", report.describe());
  for (const auto& [t, file_name] : matching) {
    const DynTensor& current = t->slot->dyn();
    t->slot->set_dyn(file.tensor(file_name, current.device(), current.dtype()));
    report.loaded.push_back(t->path);
  }
  return report;
}

}  // namespace

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

LoadReport load_tree(const ModuleTree& tree, const io::SafetensorsFile& file,
                     const LoadOptions& options) {
  EMBER_CHECK(options.key.empty(), "[load] ", file.path(), ": options.key ('", options.key,
              "') picks an entry of a torch.save checkpoint, but this is a safetensors file");
  return load_from(tree, safetensors_source(file), file.path(), options);
}

#ifndef EMBER_BARE_METAL  // files
void save_tree(const ModuleTree& tree, const std::string& path,
               const std::map<std::string, std::string>& metadata) {
  std::vector<std::pair<std::string, DynTensor>> tensors;
  for (const NamedTensor& t : named_tensors(tree))
    tensors.emplace_back(t.path, detach(t.slot->dyn()));
  io::save_safetensors(tensors, path, metadata);
}

LoadReport load_tree(const ModuleTree& tree, const std::string& path, const LoadOptions& options) {
  if (io::is_pytorch_file(path)) return load_pytorch_tree(tree, path, options);
  EMBER_CHECK(options.key.empty(), "[load] ", path, ": options.key ('", options.key,
              "') picks an entry of a torch.save checkpoint, but this is not one");
  return load_from(tree, safetensors_source(io::load_safetensors(path)), path, options);
}

LoadReport load_pytorch_tree(const ModuleTree& tree, const std::string& path,
                             const LoadOptions& options) {
  return load_from(tree, pytorch_source(path, options.key), path, options);
}
#endif  // EMBER_BARE_METAL

}  // namespace ember::nn
