#include "ember/core/embedded.hpp"

#include <map>

#include "ember/core/error.hpp"

namespace ember {
namespace {

// A function-local static: registrations run from other files' static initialisers, in an
// order the language leaves open, so the map must exist before the first of them.
std::map<std::string, std::span<const unsigned char>, std::less<>>& registry() {
  static std::map<std::string, std::span<const unsigned char>, std::less<>> files;
  return files;
}

}  // namespace

namespace detail {

EmbeddedFile::EmbeddedFile(const char* name, const unsigned char* begin, const unsigned char* end) {
  const auto [it, fresh] = registry().emplace(
      name, std::span<const unsigned char>(begin, static_cast<size_t>(end - begin)));
  EMBER_CHECK(fresh, "[embedded_file] two files are embedded under the name '", name, "'");
}

}  // namespace detail

std::span<const unsigned char> embedded_file(std::string_view name) {
  const auto it = registry().find(name);
  if (it == registry().end()) {
    std::string known;
    for (const std::string& n : embedded_files()) known += (known.empty() ? "" : ", ") + n;
    EMBER_FAIL("[embedded_file] no file is embedded under the name '", name,
               "' (embedded: ", known.empty() ? "none; see ember_embed in docs/DEPLOY.md" : known,
               ")");
  }
  return it->second;
}

std::vector<std::string> embedded_files() {
  std::vector<std::string> names;
  for (const auto& entry : registry()) names.push_back(entry.first);
  return names;
}

}  // namespace ember
