// Whole-file reads for the data sources (private to src/data).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ember::data {

/// The bytes of `path`; errors read "[<what>] <path>: cannot open: <reason>".
std::vector<uint8_t> read_file(const std::string& path, const char* what);

}  // namespace ember::data
