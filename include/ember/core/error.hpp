// Errors: every user-facing failure is an ember::Error whose message names the op and the values
// involved. Builds without exceptions (-fno-exceptions) route through a panic hook instead.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
#define EMBER_HAS_EXCEPTIONS 1
#include <exception>
#include <new>
#else
#define EMBER_HAS_EXCEPTIONS 0
#endif

namespace ember {

#if EMBER_HAS_EXCEPTIONS
/// The one exception type Ember throws. what() reads like "[matmul] inner dimensions differ: ...".
class Error : public std::exception {
 public:
  explicit Error(std::string message) : message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};
#endif

/// Called with the message when exceptions are disabled; must not return. The default writes the
/// message to stderr and aborts. Embedded users install their own (reset the board, log, ...).
using PanicHook = void (*)(const char* message);
void set_panic_hook(PanicHook hook);

/// Throws ember::Error(message), or calls the panic hook where exceptions are off.
[[noreturn]] void raise_error(std::string message);

namespace detail {

inline void append(std::string& out, std::string_view s) { out.append(s); }
inline void append(std::string& out, const char* s) { out.append(s); }
inline void append(std::string& out, const std::string& s) { out.append(s); }
inline void append(std::string& out, char c) { out.push_back(c); }
inline void append(std::string& out, bool b) { out.append(b ? "true" : "false"); }
void append(std::string& out, long long v);
void append(std::string& out, unsigned long long v);
void append(std::string& out, double v);
template <class T>
requires(std::is_integral_v<T> && !std::is_same_v<T, bool> &&
         !std::is_same_v<T, char>) void append(std::string& out, T v) {
  if constexpr (std::is_signed_v<T>) {
    append(out, static_cast<long long>(v));
  } else {
    append(out, static_cast<unsigned long long>(v));
  }
}
inline void append(std::string& out, float v) { append(out, static_cast<double>(v)); }

/// Concatenates its arguments into a message; each type supplies an append() overload.
template <class... Args>
std::string cat(const Args&... args) {
  std::string out;
  (append(out, args), ...);
  return out;
}

/// Raises `message`, an inner op's error, as the error of `op`: "[amax] what" becomes
/// "[softmax] what (in amax)"; a message that already names `op` is raised unchanged.
[[noreturn]] void raise_as(const char* op, std::string_view message);

}  // namespace detail

/// Runs f() as the op `op` that the user called (a composite, or an op whose kernel allocates
/// workspace): an ember::Error from an inner op names `op`, and a std::bad_alloc becomes an
/// ember::Error naming `op`. Costs nothing unless something throws.
template <class F>
decltype(auto) as_op(const char* op, F&& f) {
#if EMBER_HAS_EXCEPTIONS
  try {
    return f();
  } catch (const Error& e) {
    detail::raise_as(op, e.what());
  } catch (const std::bad_alloc&) {
    detail::raise_as(op, "out of memory (std::bad_alloc)");
  }
#else
  (void)op;
  return f();
#endif
}

}  // namespace ember

/// EMBER_CHECK(cond, "[op] what went wrong: ", value, ...) raises ember::Error when cond is false.
#define EMBER_CHECK(cond, ...)                                 \
  do {                                                         \
    if (!(cond)) [[unlikely]]                                  \
      ::ember::raise_error(::ember::detail::cat(__VA_ARGS__)); \
  } while (0)

#define EMBER_FAIL(...) ::ember::raise_error(::ember::detail::cat(__VA_ARGS__))
