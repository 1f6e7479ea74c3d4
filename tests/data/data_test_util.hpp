// Helpers shared by the data tests: a temporary directory removed at the end of a test, the
// message of an error.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

namespace ember::data::testing {

/// A fresh directory under the system's temp dir, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/// The message of the ember::Error that `fn` raises, or "<no error>".
std::string error_of(const std::function<void()>& fn);

/// Writes `text` to `path`.
void write_text(const std::string& path, const std::string& text);

}  // namespace ember::data::testing
