#include "file_util.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "ember/core/error.hpp"
#include "ember/io/file.hpp"

namespace ember::data {

void check_regular_file(const std::string& path, const char* what) {
  const std::string kind = io::non_regular_kind(path);  // a missing file fails at open, with errno
  EMBER_CHECK(kind.empty(), "[", what, "] ", path, ": not a regular file (", kind, ")");
}

std::vector<uint8_t> read_file(const std::string& path, const char* what) {
  check_regular_file(path, what);
  std::FILE* f = std::fopen(path.c_str(), "rb");
  EMBER_CHECK(f != nullptr, "[", what, "] ", path, ": cannot open: ", std::strerror(errno));
  std::vector<uint8_t> bytes;
  uint8_t chunk[1 << 16];
  size_t n = 0;
  while ((n = std::fread(chunk, 1, sizeof chunk, f)) > 0)
    bytes.insert(bytes.end(), chunk, chunk + n);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  EMBER_CHECK(!failed, "[", what, "] ", path, ": read error");
  return bytes;
}

}  // namespace ember::data
