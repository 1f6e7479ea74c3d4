// Helpers for the fuzz targets: a scratch directory per process and the input written to a file
// there, for entry points that take a path (read_idx, ImageFolder, the ember CLI).
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace ember::fuzz {

/// A directory of this process, made on first use and removed at exit.
inline const std::filesystem::path& scratch_dir() {
  struct Dir {
    std::filesystem::path path;
    Dir() {
      std::string pattern = (std::filesystem::temp_directory_path() / "ember_fuzz_XXXXXX").string();
      if (::mkdtemp(pattern.data()) == nullptr) std::abort();
      path = pattern;
    }
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static const Dir dir;
  return dir.path;
}

/// Writes the input to `relative` under the scratch directory (making its parents) and returns
/// the full path.
inline std::string write_input(const std::string& relative, const uint8_t* data, size_t size) {
  const std::filesystem::path path = scratch_dir() / relative;
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out.flush()) std::abort();
  return path.string();
}

}  // namespace ember::fuzz
