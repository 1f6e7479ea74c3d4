#include "state_text.hpp"

#include <cmath>
#include <cstdio>

#include "ember/core/error.hpp"
#include "ember/core/text.hpp"

namespace ember::optim::detail {

namespace {

std::string bound(int64_t v) {
  return v == kMaxCount ? "2^53" : v == -kMaxCount ? "-2^53" : std::to_string(v);
}

std::string range(double lo, double hi) {
  if (std::isinf(hi) && std::isinf(lo)) return "";
  if (std::isinf(hi)) return " >= " + format_double(lo);
  return " in [" + format_double(lo) + ", " + format_double(hi) + "]";
}

}  // namespace

std::string format_double(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

const std::string& state_text(const StateMap& state, const std::string& key, const char* who) {
  auto it = state.find(key);
  EMBER_CHECK(it != state.end(), "[", who, "] the saved state has no \"",
              ember::detail::shown(key, 80), "\"");
  return it->second;
}

int64_t state_int(const StateMap& state, const std::string& key, const char* who, int64_t lo,
                  int64_t hi) {
  const std::string& text = state_text(state, key, who);
  const auto v = ember::detail::parse_number<int64_t>(text);
  EMBER_CHECK(v && *v >= lo && *v <= hi, "[", who, "] the saved state's \"",
              ember::detail::shown(key, 80), "\" is \"", ember::detail::shown(text),
              "\", not an integer in [", bound(lo), ", ", bound(hi), "]");
  return *v;
}

double state_double(const StateMap& state, const std::string& key, const char* who, double lo,
                    double hi, bool infinite_ok) {
  const std::string& text = state_text(state, key, who);
  const auto v = ember::detail::parse_number<double>(text);
  EMBER_CHECK(v && !std::isnan(*v) && (infinite_ok || std::isfinite(*v)) && *v >= lo && *v <= hi,
              "[", who, "] the saved state's \"", ember::detail::shown(key, 80), "\" is \"",
              ember::detail::shown(text), "\", not a ", infinite_ok ? "number" : "finite number",
              range(lo, hi));
  return *v;
}

std::vector<double> state_doubles(const StateMap& state, const std::string& key, const char* who,
                                  size_t count, double lo, double hi) {
  const std::string& text = state_text(state, key, who);
  std::vector<double> out;
  bool ok = true;
  for (size_t start = 0; ok && out.size() <= count && !text.empty() && start <= text.size();) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const auto v =
        ember::detail::parse_number<double>(std::string_view(text).substr(start, comma - start));
    ok = v && std::isfinite(*v) && *v >= lo && *v <= hi;
    if (ok) out.push_back(*v);
    start = comma + 1;
  }
  EMBER_CHECK(ok && out.size() == count, "[", who, "] the saved state's \"",
              ember::detail::shown(key, 80), "\" is \"", ember::detail::shown(text), "\", not ",
              count, " comma-separated finite number(s)", range(lo, hi),
              " (one per parameter group)");
  return out;
}

}  // namespace ember::optim::detail
