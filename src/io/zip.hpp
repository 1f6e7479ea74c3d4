// Reading the entries of a zip archive already in memory (torch.save's container since PyTorch
// 1.6): unencrypted entries on one disk, with or without ZIP64; every offset and length is
// checked against the buffer. Entries are not inflated: torch.save stores them uncompressed, and
// the caller refuses a compressed entry it needs (by then it can say what the archive is).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ember::io::detail {

struct ZipEntry {
  std::string name;
  uint64_t offset = 0;  // of the entry's data, from the start of the buffer
  uint64_t size = 0;    // bytes in the archive (compressed size when method != 0)
  uint16_t method = 0;  // 0: stored; 8: deflated; ...
};

/// True when `data` starts as a zip archive does (a local file header, or an empty archive).
bool looks_like_zip(const unsigned char* data, size_t size);

/// The entries of the archive in `data`, in central-directory order. `what` and `label` (the
/// caller and the file) start every error.
std::vector<ZipEntry> read_zip(const unsigned char* data, size_t size, const char* what,
                               const std::string& label);

}  // namespace ember::io::detail
