// Backends built as plugins (shared libraries loaded on first use): today the LibTorch backend,
// whose library takes about 0.8 s to load. Hosted builds only.
#pragma once

#include <initializer_list>
#include <string>

namespace ember {
class Backend;
}

namespace ember::detail {

/// A plugin looked for at $env, then at each path in turn: its backend, or why none loaded.
struct LoadedPlugin {
  Backend* backend = nullptr;
  void* handle = nullptr;  // the loaded library (for its optional symbols)
  std::string why;         // every path tried and what failed there
};
LoadedPlugin load_plugin(const char* env, std::initializer_list<const char*> paths,
                         const char* symbol);
/// The plugin's backend, or an error naming the device, what failed and the variable to set.
Backend& require_plugin(const LoadedPlugin& plugin, const char* device, const char* env);

/// The LibTorch backend, its plugin loaded on the first call; a clear error if it cannot be.
Backend& libtorch_backend();
/// The same, or null (no error) when the plugin cannot be loaded.
Backend* try_libtorch_backend();

}  // namespace ember::detail
