#include "file_util.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "ember/core/error.hpp"

namespace ember::data {

void check_regular_file(const std::string& path, const char* what) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_type type = fs::status(path, ec).type();
  if (ec || type == fs::file_type::regular) return;  // a missing file fails at open, with errno
  const char* kind = type == fs::file_type::directory   ? "a directory"
                     : type == fs::file_type::fifo      ? "a FIFO"
                     : type == fs::file_type::character ? "a character device"
                     : type == fs::file_type::block     ? "a block device"
                     : type == fs::file_type::socket    ? "a socket"
                                                        : "not a file";
  EMBER_FAIL("[", what, "] ", path, ": not a regular file (", kind, ")");
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
