#include "ember/core/error.hpp"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>

namespace ember {
namespace {

void default_panic(const char* message) {
  std::fputs("ember: ", stderr);
  std::fputs(message, stderr);
  std::fputs("\n", stderr);
  std::abort();
}

PanicHook g_panic_hook = default_panic;

}  // namespace

void set_panic_hook(PanicHook hook) { g_panic_hook = hook ? hook : default_panic; }

void raise_error(std::string message) {
#if EMBER_HAS_EXCEPTIONS
  throw Error(std::move(message));
#else
  g_panic_hook(message.c_str());
  std::abort();  // a hook that returns is a bug; never continue past a failed check
#endif
}

namespace detail {

void append(std::string& out, long long v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld", v);
  out.append(buf);
}

void append(std::string& out, unsigned long long v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%llu", v);
  out.append(buf);
}

void append(std::string& out, double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  out.append(buf);
}

void raise_as(const char* op, std::string_view message) {
  std::string out = cat("[", op, "] ");
  const size_t close = message.find("] ");
  if (!message.empty() && message[0] == '[' && close != std::string_view::npos) {
    const std::string_view inner = message.substr(1, close - 1);
    const std::string_view rest = message.substr(close + 2);
    if (inner == op) raise_error(std::string(message));
    out.append(rest);
    // Nested composites keep the innermost op, where the check failed.
    if (rest.find(" (in ") == std::string_view::npos) out.append(cat(" (in ", inner, ")"));
  } else {
    out.append(message);
  }
  raise_error(std::move(out));
}

}  // namespace detail
}  // namespace ember
