// Saving and loading a module's parameters and buffers by path, in safetensors files (as
// PyTorch's state_dict: `fc1.weight`, `bn.running_mean`, ...), so weights move between Ember and
// PyTorch one to one; torch.save checkpoints load the same way.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ember/nn/module.hpp"

namespace ember::io {
class SafetensorsFile;
}

namespace ember::nn {

/// A renaming of checkpoint names before they are matched with a module's: each rule is an
/// ECMAScript regex and its replacement ($1, $2 ... for groups), applied in order to the whole
/// name, as std::regex_replace does. A name rewritten to "" is dropped: ignored, not reported as
/// unexpected (a tied head, a buffer the module computes).
using KeyMap = std::vector<std::pair<std::string, std::string>>;

struct LoadOptions {
  /// Strict: any missing, unexpected or mis-shaped name is an error and nothing is loaded.
  /// Otherwise the matching tensors are loaded and the report lists the rest.
  bool strict = true;
  /// Renames applied to the file's names (see KeyMap); models/ ship maps for Hugging Face files.
  KeyMap rename{};
  /// torch.save files: the entry of a checkpoint dict that holds the weights ("model",
  /// "state_dict"); empty for a file that is the state dict itself.
  std::string key{};
};

/// What load() found. Tensors are converted to each parameter's dtype and device.
struct LoadReport {
  std::vector<std::string> loaded;
  std::vector<std::string> missing;     // in the module, not in the file
  std::vector<std::string> unexpected;  // in the file, not in the module (after renaming)
  std::vector<std::string> ignored;     // in the file, dropped by the renames
  struct Mismatch {
    std::string name;
    Shape in_file, in_module;
  };
  std::vector<Mismatch> mismatched;
  bool complete() const { return missing.empty() && unexpected.empty() && mismatched.empty(); }
  /// One line per problem, as the strict error prints them.
  std::string describe() const;
};

/// Reads an opened safetensors file (io::embedded_safetensors, io::view_safetensors).
LoadReport load_tree(const ModuleTree& tree, const io::SafetensorsFile& file,
                     const LoadOptions& options = {});
#ifndef EMBER_BARE_METAL  // files: not on a microcontroller
void save_tree(const ModuleTree& tree, const std::string& path,
               const std::map<std::string, std::string>& metadata = {});
/// Reads a safetensors file or a torch.save archive (told apart by their first bytes).
LoadReport load_tree(const ModuleTree& tree, const std::string& path,
                     const LoadOptions& options = {});
/// Reads a torch.save archive (.pt, .pth, .bin) whatever its first bytes.
LoadReport load_pytorch_tree(const ModuleTree& tree, const std::string& path,
                             const LoadOptions& options = {});
#endif

}  // namespace ember::nn

namespace ember {

#ifndef EMBER_BARE_METAL
/// Writes every Param and Buffer of `model` to a safetensors file, atomically.
template <nn::detail::Module M>
void save(const M& model, const std::string& path,
          const std::map<std::string, std::string>& metadata = {}) {
  nn::save_tree(nn::module_tree(model), path, metadata);
}

/// Reads `model`'s Params and Buffers by path (strict by default) from a safetensors file, or
/// from a torch.save archive: PyTorch's load_state_dict, without running the file.
template <nn::detail::Module M>
nn::LoadReport load(M& model, const std::string& path, const nn::LoadOptions& options = {}) {
  return nn::load_tree(nn::module_tree(model), path, options);
}

#endif  // EMBER_BARE_METAL

/// The same from an opened safetensors file: weights embedded in the program
/// (`load(model, io::embedded_safetensors("model"))`) or in memory; Cpu parameters then use the
/// file's bytes in place where aligned.
template <nn::detail::Module M>
nn::LoadReport load(M& model, const io::SafetensorsFile& file,
                    const nn::LoadOptions& options = {}) {
  return nn::load_tree(nn::module_tree(model), file, options);
}

#ifndef EMBER_BARE_METAL
/// The same for a file written by torch.save (.pt, .pth, pytorch_model.bin); options.key picks
/// the state dict out of a checkpoint ({"model": ..., "optimizer": ...}).
template <nn::detail::Module M>
nn::LoadReport load_pytorch(M& model, const std::string& path,
                            const nn::LoadOptions& options = {}) {
  return nn::load_pytorch_tree(nn::module_tree(model), path, options);
}

#endif  // EMBER_BARE_METAL

}  // namespace ember
