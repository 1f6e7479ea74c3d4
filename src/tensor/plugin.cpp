// Loads backend plugins with dlopen. The plugin is looked for, in order, at $EMBER_LIBTORCH_PLUGIN,
// where the build put it, and where `cmake --install` puts it; it is never unloaded (its storages
// hold release callbacks into it).
#include "plugin.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <string>

#include "../backends/cpu/threads.hpp"
#include "ember/core/error.hpp"

namespace ember::detail {

LoadedPlugin load_plugin(const char* env, std::initializer_list<const char*> paths,
                         const char* symbol) {
  LoadedPlugin r;
  std::string tried;
  auto attempt = [&](const char* path) {
    if (!path || !*path || r.backend) return;
    void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* err = dlerror();
      tried += std::string(tried.empty() ? "" : "; ") + (err ? err : path);
      return;
    }
    using Entry = Backend* (*)();
    auto entry = reinterpret_cast<Entry>(dlsym(handle, symbol));
    if (!entry) {
      tried += std::string(tried.empty() ? "" : "; ") + path + " has no " + symbol;
      return;
    }
    r.backend = entry();
    r.handle = handle;
  };
  attempt(std::getenv(env));
  for (const char* p : paths) attempt(p);
  r.why = tried;
  return r;
}

Backend& require_plugin(const LoadedPlugin& plugin, const char* device, const char* env) {
  EMBER_CHECK(plugin.backend, "[device] ", device, ": cannot load its backend's plugin (",
              plugin.why, "); set ", env, " to the path of the plugin library");
  return *plugin.backend;
}

#if EMBER_HAVE_LIBTORCH
namespace {

const LoadedPlugin& libtorch_plugin() {
  static const LoadedPlugin loaded = [] {
    LoadedPlugin l = load_plugin("EMBER_LIBTORCH_PLUGIN",
                                 {EMBER_LIBTORCH_PLUGIN_BUILD, EMBER_LIBTORCH_PLUGIN_INSTALL},
                                 "ember_libtorch_backend");
    // LibTorch's thread pools follow cpu::set_num_threads from now on (one setting).
    if (l.handle) {
      if (auto setter = reinterpret_cast<cpu::detail::ThreadListener>(
              dlsym(l.handle, "ember_libtorch_set_num_threads"))) {
        cpu::detail::set_thread_listener(setter);
      }
    }
    return l;
  }();
  return loaded;
}

}  // namespace

Backend* try_libtorch_backend() { return libtorch_plugin().backend; }

Backend& libtorch_backend() {
  return require_plugin(libtorch_plugin(), "libtorch", "EMBER_LIBTORCH_PLUGIN");
}

#endif  // EMBER_HAVE_LIBTORCH

}  // namespace ember::detail
