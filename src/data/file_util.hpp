// Whole-file reads for the data sources (private to src/data).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ember::data {

/// Refuses a path that exists but is not a regular file (a FIFO would block the reader, a device
/// such as /dev/zero never end): "[<what>] <path>: not a regular file (a FIFO)".
void check_regular_file(const std::string& path, const char* what);
/// The bytes of `path` (a regular file); errors read "[<what>] <path>: cannot open: <reason>".
std::vector<uint8_t> read_file(const std::string& path, const char* what);

}  // namespace ember::data
