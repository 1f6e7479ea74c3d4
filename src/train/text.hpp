// Values read from a file, as error messages show them: cut to `max` characters, and bytes
// outside printable ASCII as \xNN, so that a doctored checkpoint cannot flood the terminal or
// send it escape sequences through a message.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

namespace ember::train::detail {

inline std::string shown(std::string_view s, size_t max = 40) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i == max) return out + "... (" + std::to_string(s.size()) + " bytes)";
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

}  // namespace ember::train::detail
