// Checked reads of a saved optimizer or schedule state (string -> string metadata of a
// checkpoint): every number is parsed whole and range-checked before it is cast, and errors name
// the key and the value (escaped, cut short). Internal to ember_optim.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ember::optim::detail {

using StateMap = std::map<std::string, std::string>;

/// Step and epoch counts are at most 2^53: exact as doubles (the rules compute with them), and
/// far from int64_t's overflow when incremented.
inline constexpr int64_t kMaxCount = int64_t{1} << 53;

std::string format_double(double v);

/// The value of `key`; `who` (the optimizer's or schedule's name) starts the error.
const std::string& state_text(const StateMap& state, const std::string& key, const char* who);

/// A decimal integer in [lo, hi] ("1e3", "1.5", "nan" and " 1" are not).
int64_t state_int(const StateMap& state, const std::string& key, const char* who, int64_t lo,
                  int64_t hi);

/// A number in [lo, hi], never NaN, and finite unless `infinite_ok`.
double state_double(const StateMap& state, const std::string& key, const char* who, double lo,
                    double hi, bool infinite_ok = false);

/// `count` comma-separated numbers, each finite and in [lo, hi] (a schedule's lrs per group).
std::vector<double> state_doubles(const StateMap& state, const std::string& key, const char* who,
                                  size_t count, double lo, double hi);

}  // namespace ember::optim::detail
