#include "config_json.hpp"

#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>

#include "ember/core/error.hpp"
#include "ember/core/text.hpp"

namespace ember::nn::detail {

void JsonWriter::key(const char* name) {
  if (!body_.empty()) body_ += ", ";
  body_ += nlohmann::json(name).dump() + ": ";
}

JsonWriter& JsonWriter::field(const char* name, int64_t value) {
  key(name);
  body_ += std::to_string(value);
  return *this;
}

JsonWriter& JsonWriter::field(const char* name, double value) {
  key(name);
  body_ += nlohmann::json(value).dump();  // shortest form that reads back exactly
  return *this;
}

JsonWriter& JsonWriter::field(const char* name, std::optional<double> value) {
  if (value) return field(name, *value);
  key(name);
  body_ += "null";
  return *this;
}

JsonWriter& JsonWriter::field(const char* name, bool value) {
  key(name);
  body_ += value ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::field(const char* name, std::string_view value) {
  key(name);
  body_ += nlohmann::json(std::string(value)).dump();
  return *this;
}

JsonWriter& JsonWriter::field(const char* name, const std::vector<int64_t>& values) {
  key(name);
  body_ += nlohmann::json(values).dump();
  return *this;
}

JsonWriter& JsonWriter::field(const char* name, const std::vector<double>& values) {
  key(name);
  body_ += nlohmann::json(values).dump();
  return *this;
}

struct JsonReader::Impl {
  nlohmann::json j;
  std::string what;

  const nlohmann::json* find(const char* key) const {
    auto it = j.find(key);
    return it == j.end() ? nullptr : &*it;
  }
  [[noreturn]] void bad(const char* key, const char* expected) const {
    EMBER_FAIL("[", what, "] key \"", key, "\" must be ", expected, ", got ", brief(find(key)));
  }
  // A value as an error shows it: a scalar escaped and cut short, an array or object by its size
  // (dump() of a deeply nested one would recurse, and a long one would flood the message).
  static std::string brief(const nlohmann::json* v) {
    if (!v) return "nothing";
    if (v->is_array()) return "an array of " + std::to_string(v->size()) + " values";
    if (v->is_object()) return "an object of " + std::to_string(v->size()) + " keys";
    return ember::detail::shown(v->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  // An integer that fits int64_t: nlohmann keeps 2^63 .. 2^64-1 as unsigned, and get<int64_t>()
  // would wrap it to a negative number.
  static bool is_int64(const nlohmann::json& v) {
    return v.is_number_integer() &&
           (!v.is_number_unsigned() ||
            v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));
  }
};

JsonReader::JsonReader(const std::string& json, const char* what) : impl_(new Impl) {
  impl_->what = what;
  impl_->j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  EMBER_CHECK(impl_->j.is_object(), "[", what, "] expected a JSON object, got: '",
              ember::detail::shown(json, 80), "'");
}

JsonReader::~JsonReader() = default;

int64_t JsonReader::integer(const char* key) const {
  const nlohmann::json* v = impl_->find(key);
  if (!v || !Impl::is_int64(*v)) impl_->bad(key, "an integer of 64 bits");
  return v->get<int64_t>();
}

int64_t JsonReader::integer(const char* key, int64_t fallback) const {
  return impl_->find(key) ? integer(key) : fallback;
}

double JsonReader::number(const char* key, double fallback) const {
  const nlohmann::json* v = impl_->find(key);
  if (!v) return fallback;
  if (!v->is_number()) impl_->bad(key, "a number");
  return v->get<double>();
}

std::optional<double> JsonReader::optional_number(const char* key,
                                                  std::optional<double> fallback) const {
  const nlohmann::json* v = impl_->find(key);
  if (!v) return fallback;
  if (v->is_null()) return std::nullopt;
  if (!v->is_number()) impl_->bad(key, "a number or null");
  return v->get<double>();
}

bool JsonReader::boolean(const char* key, bool fallback) const {
  const nlohmann::json* v = impl_->find(key);
  if (!v) return fallback;
  if (!v->is_boolean()) impl_->bad(key, "true or false");
  return v->get<bool>();
}

std::string JsonReader::string(const char* key, const std::string& fallback) const {
  const nlohmann::json* v = impl_->find(key);
  if (!v) return fallback;
  if (!v->is_string()) impl_->bad(key, "a string");
  return v->get<std::string>();
}

bool JsonReader::is_string(const char* key) const {
  const nlohmann::json* v = impl_->find(key);
  return v && v->is_string();
}

DType JsonReader::dtype(const char* key, DType fallback) const {
  const std::string name = string(key, std::string(dtype_name(fallback)));
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i64, DType::i32,
                  DType::i8, DType::u8, DType::boolean}) {
    if (dtype_name(t) == name) return t;
  }
  impl_->bad(key, "a dtype name (float32, float64, ...)");
}

std::vector<int64_t> JsonReader::integers(const char* key,
                                          const std::vector<int64_t>& fallback) const {
  const nlohmann::json* v = impl_->find(key);
  if (!v) return fallback;
  if (Impl::is_int64(*v)) return {v->get<int64_t>()};  // `3` for `[3, 3]`-style options
  if (!v->is_array()) impl_->bad(key, "an integer or a list of integers");
  std::vector<int64_t> out;
  for (const auto& e : *v) {
    if (!Impl::is_int64(e)) impl_->bad(key, "a list of integers of 64 bits");
    out.push_back(e.get<int64_t>());
  }
  return out;
}

std::vector<double> JsonReader::numbers(const char* key,
                                        const std::vector<double>& fallback) const {
  const nlohmann::json* v = impl_->find(key);
  if (!v) return fallback;
  if (v->is_number()) return {v->get<double>()};
  if (!v->is_array()) impl_->bad(key, "a number or a list of numbers");
  std::vector<double> out;
  for (const auto& e : *v) {
    if (!e.is_number()) impl_->bad(key, "a list of numbers");
    out.push_back(e.get<double>());
  }
  return out;
}

}  // namespace ember::nn::detail
