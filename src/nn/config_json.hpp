// Layer configs as flat JSON objects (not installed): a writer, and a reader that names the
// config and the key in its errors. nlohmann::json stays inside config_json.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ember/core/dtype.hpp"

namespace ember::nn::detail {

class JsonWriter {
 public:
  JsonWriter& field(const char* name, int64_t value);
  JsonWriter& field(const char* name, double value);
  JsonWriter& field(const char* name, bool value);
  JsonWriter& field(const char* name, std::string_view value);
  JsonWriter& field(const char* name, const char* value) {
    return field(name, std::string_view(value));
  }
  JsonWriter& field(const char* name, const std::vector<int64_t>& values);
  /// A number, or null when absent (PyTorch's None: BatchNorm's momentum, Embedding's max_norm).
  JsonWriter& field(const char* name, std::optional<double> value);
  JsonWriter& field(const char* name, const std::vector<double>& values);
  std::string str() const { return "{" + body_ + "}"; }

 private:
  void key(const char* name);
  std::string body_;
};

class JsonReader {
 public:
  /// Parses `json`; `what` (the config's type) names it in errors.
  JsonReader(const std::string& json, const char* what);
  ~JsonReader();
  int64_t integer(const char* key) const;
  int64_t integer(const char* key, int64_t fallback) const;
  double number(const char* key, double fallback) const;
  /// A number, or nullopt where the key holds null; `fallback` where it is missing.
  std::optional<double> optional_number(const char* key, std::optional<double> fallback) const;
  bool boolean(const char* key, bool fallback) const;
  std::string string(const char* key, const std::string& fallback) const;
  /// True when `key` is present and holds a string (options that take a word or numbers).
  bool is_string(const char* key) const;
  DType dtype(const char* key, DType fallback) const;
  std::vector<int64_t> integers(const char* key, const std::vector<int64_t>& fallback) const;
  /// A number or a list of numbers (Upsample's scale_factor).
  std::vector<double> numbers(const char* key, const std::vector<double>& fallback) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ember::nn::detail
