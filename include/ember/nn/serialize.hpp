// Saving and loading a module's parameters and buffers by path, in safetensors files (as
// PyTorch's state_dict: `fc1.weight`, `bn.running_mean`, ...), so weights move between Ember and
// PyTorch one to one.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ember/nn/module.hpp"

namespace ember::nn {

struct LoadOptions {
  /// Strict: any missing, unexpected or mis-shaped name is an error and nothing is loaded.
  /// Otherwise the matching tensors are loaded and the report lists the rest.
  bool strict = true;
};

/// What load() found. Tensors are converted to each parameter's dtype and device.
struct LoadReport {
  std::vector<std::string> loaded;
  std::vector<std::string> missing;     // in the module, not in the file
  std::vector<std::string> unexpected;  // in the file, not in the module
  struct Mismatch {
    std::string name;
    Shape in_file, in_module;
  };
  std::vector<Mismatch> mismatched;
  bool complete() const { return missing.empty() && unexpected.empty() && mismatched.empty(); }
  /// One line per problem, as the strict error prints them.
  std::string describe() const;
};

void save_tree(const ModuleTree& tree, const std::string& path,
               const std::map<std::string, std::string>& metadata = {});
LoadReport load_tree(const ModuleTree& tree, const std::string& path,
                     const LoadOptions& options = {});

}  // namespace ember::nn

namespace ember {

/// Writes every Param and Buffer of `model` to a safetensors file, atomically.
template <nn::detail::Module M>
void save(const M& model, const std::string& path,
          const std::map<std::string, std::string>& metadata = {}) {
  nn::save_tree(nn::module_tree(model), path, metadata);
}

/// Reads `model`'s Params and Buffers from a safetensors file by path (strict by default).
template <nn::detail::Module M>
nn::LoadReport load(M& model, const std::string& path, const nn::LoadOptions& options = {}) {
  return nn::load_tree(nn::module_tree(model), path, options);
}

}  // namespace ember
