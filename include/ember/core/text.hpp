// Text read from a file (a checkpoint's metadata, a CSV cell), as code checks it and as error
// messages show it. Header-only and not included by the tensor core: from_chars and snprintf only.
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

namespace ember::detail {

/// `s` cut to `max` characters, and bytes outside printable ASCII as \xNN, so that a doctored
/// file cannot flood the terminal or send it escape sequences through a message.
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

/// The whole of `text` as a decimal number of type T (an integer type or double; "nan" and
/// "inf" are doubles too), or nothing: no sign for unsigned, no spaces, no trailing characters,
/// nothing out of T's range.
template <class T>
std::optional<T> parse_number(std::string_view text) {
  T v{};
  const char* end = text.data() + text.size();
  const auto [p, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || p != end) return std::nullopt;
  return v;
}

}  // namespace ember::detail
