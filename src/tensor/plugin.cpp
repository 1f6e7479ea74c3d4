// Loads backend plugins with dlopen. The plugin is looked for, in order, at $EMBER_LIBTORCH_PLUGIN,
// where the build put it, and where `cmake --install` puts it; it is never unloaded (its storages
// hold release callbacks into it).
#include "plugin.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <string>

#include "ember/core/error.hpp"

namespace ember::detail {
namespace {

struct Loaded {
  Backend* backend = nullptr;
  std::string why;  // what failed, for the error
};

Loaded load(const char* env, std::initializer_list<const char*> paths, const char* symbol) {
  Loaded r;
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
  };
  attempt(std::getenv(env));
  for (const char* p : paths) attempt(p);
  r.why = tried;
  return r;
}

const Loaded& libtorch_plugin() {
  static const Loaded loaded =
      load("EMBER_LIBTORCH_PLUGIN", {EMBER_LIBTORCH_PLUGIN_BUILD, EMBER_LIBTORCH_PLUGIN_INSTALL},
           "ember_libtorch_backend");
  return loaded;
}

}  // namespace

Backend* try_libtorch_backend() { return libtorch_plugin().backend; }

Backend& libtorch_backend() {
  const Loaded& l = libtorch_plugin();
  EMBER_CHECK(l.backend, "[device] libtorch: cannot load the LibTorch backend's plugin (", l.why,
              "); set EMBER_LIBTORCH_PLUGIN to the path of libember_libtorch.so");
  return *l.backend;
}

}  // namespace ember::detail
