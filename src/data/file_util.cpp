#include "file_util.hpp"

#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "ember/core/error.hpp"

namespace ember::data {

std::vector<uint8_t> read_file(const std::string& path, const char* what) {
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

std::vector<uint8_t> read_file_gunzip(const std::string& path, const char* what) {
  // gzread passes plain files through unchanged, so one path reads both.
  gzFile f = gzopen(path.c_str(), "rb");
  EMBER_CHECK(f != nullptr, "[", what, "] ", path, ": cannot open: ", std::strerror(errno));
  gzbuffer(f, 1 << 17);
  std::vector<uint8_t> bytes;
  size_t used = 0;
  for (;;) {
    if (bytes.size() - used < (1u << 20)) bytes.resize(used + (1u << 22));
    const int n = gzread(f, bytes.data() + used, static_cast<unsigned>(bytes.size() - used));
    if (n <= 0) {
      // A stream cut short reads as an end of file with Z_BUF_ERROR set.
      int code = Z_OK;
      const char* message = gzerror(f, &code);
      const std::string reason = message ? message : "";
      gzclose(f);
      EMBER_CHECK(n == 0 && code == Z_OK, "[", what, "] ", path, ": bad gzip data: ", reason);
      break;
    }
    used += static_cast<size_t>(n);
  }
  bytes.resize(used);
  return bytes;
}

}  // namespace ember::data
