// CSV reading (RFC 4180 quoting, \n or \r\n line ends) into TabularItems, and TabularBatcher.
#include "ember/data/csv.hpp"

#include <charconv>
#include <cmath>

#include "ember/core/error.hpp"
#include "file_util.hpp"

namespace ember::data {

namespace {

// A field or column name from the file as errors show it: quoted, control and non-ASCII bytes as
// \xNN, cut after 40 bytes (a 100 MB field makes a short message).
std::string show(std::string_view text) {
  constexpr size_t kMax = 40;
  std::string out = "\"";
  for (size_t i = 0; i < text.size() && i < kMax; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else if (c == '"' || c == '\\') {
      out += {'\\', static_cast<char>(c)};
    } else {
      const char* hex = "0123456789abcdef";
      out += {'\\', 'x', hex[c >> 4], hex[c & 15]};
    }
  }
  out += "\"";
  if (text.size() > kMax) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

struct Record {
  size_t line = 0;  // where the record starts (1-based)
  std::vector<std::string> fields;
  bool blank = false;
};

class Reader {
 public:
  Reader(std::string_view text, char delim, const std::string& label)
      : text_(text), delim_(delim), label_(label) {}

  bool next(Record& rec) {
    if (pos_ >= text_.size()) return false;
    rec.line = line_;
    rec.fields.clear();
    std::string field;
    bool in_quotes = false, was_quoted = false;
    size_t quote_line = 0;
    for (;;) {
      if (pos_ >= text_.size()) {
        EMBER_CHECK(!in_quotes, "[CsvDataset] ", label_, ":", quote_line,
                    ": quoted field never closed");
        break;
      }
      const char c = text_[pos_++];
      EMBER_CHECK(c != '\0', "[CsvDataset] ", label_, ":", line_, ": NUL byte in field ",
                  rec.fields.size() + 1, " (not a text file?)");
      if (in_quotes) {
        if (c != '"') {
          if (c == '\n') ++line_;
          field.push_back(c);
        } else if (pos_ < text_.size() && text_[pos_] == '"') {
          field.push_back('"');
          ++pos_;
        } else {
          in_quotes = false;
        }
        continue;
      }
      if (c == delim_) {
        rec.fields.push_back(std::move(field));
        field.clear();
        was_quoted = false;
      } else if (c == '\n' || (c == '\r' && pos_ < text_.size() && text_[pos_] == '\n')) {
        if (c == '\r') ++pos_;
        ++line_;
        break;
      } else if (c == '"') {
        EMBER_CHECK(field.empty() && !was_quoted, "[CsvDataset] ", label_, ":", line_,
                    ": stray quote in field ", rec.fields.size() + 1,
                    " (quote the whole field and double inner quotes)");
        in_quotes = was_quoted = true;
        quote_line = line_;
      } else {
        EMBER_CHECK(!was_quoted || c == ' ' || c == '\t', "[CsvDataset] ", label_, ":", line_,
                    ": text after the closing quote of field ", rec.fields.size() + 1);
        if (!was_quoted) field.push_back(c);
      }
    }
    rec.blank = rec.fields.empty() && field.empty() && !was_quoted;
    rec.fields.push_back(std::move(field));
    return true;
  }

 private:
  std::string_view text_;
  char delim_;
  const std::string& label_;
  size_t pos_ = 0, line_ = 1;
};

double parse_number(const std::string& field, const std::string& label, size_t line,
                    const std::string& column) {
  size_t b = 0, e = field.size();
  while (b < e && (field[b] == ' ' || field[b] == '\t')) ++b;
  while (e > b && (field[e - 1] == ' ' || field[e - 1] == '\t')) --e;
  if (b < e && field[b] == '+') ++b;  // from_chars takes no '+'
  double v = 0;
  const auto [end, ec] = std::from_chars(field.data() + b, field.data() + e, v);
  EMBER_CHECK(b < e && ec == std::errc() && end == field.data() + e, "[CsvDataset] ", label, ":",
              line, ": column ", show(column), ": not a number: ", show(field));
  return v;
}

// A label is read as the batcher will use it: a class index must be a whole number in
// [0, 2^63) (an i64 label; converting anything else to an integer is undefined behaviour), a
// real value must be finite.
void check_label(double v, TabularTarget target, const std::string& field, const std::string& label,
                 size_t line, const std::string& column) {
  if (target == TabularTarget::values) {
    EMBER_CHECK(std::isfinite(v), "[CsvDataset] ", label, ":", line, ": column ", show(column),
                ": label ", show(field), " is not a finite number");
    return;
  }
  EMBER_CHECK(is_class_index(v), "[CsvDataset] ", label, ":", line, ": column ", show(column),
              ": label ", show(field),
              " is not a class index (a whole number in [0, 2^63); use "
              "CsvConfig().target(TabularTarget::values) for real values)");
}

}  // namespace

bool is_class_index(double v) {
  return std::isfinite(v) && v >= 0.0 && v < 0x1p63 && v == std::floor(v);
}

CsvDataset::CsvDataset(std::vector<TabularItem> rows, std::vector<std::string> feature_names,
                       std::string label_name)
    : rows_(std::move(rows)),
      feature_names_(std::move(feature_names)),
      label_name_(std::move(label_name)) {}

std::shared_ptr<const CsvDataset> CsvDataset::open(const std::string& path, CsvConfig config) {
  const std::vector<uint8_t> bytes = read_file(path, "CsvDataset");
  return parse(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
               std::move(config), path);
}

std::shared_ptr<const CsvDataset> CsvDataset::parse(std::string_view text, CsvConfig config,
                                                    const std::string& label) {
  EMBER_CHECK(config.delimiter_ != '"' && config.delimiter_ != '\n' && config.delimiter_ != '\r',
              "[CsvDataset] ", label, ": the delimiter cannot be a quote or a line end");
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // a UTF-8 byte order mark
  Reader reader(text, config.delimiter_, label);
  Record rec;
  std::vector<std::string> names;
  size_t columns = 0;
  bool have_columns = false;
  if (config.header_) {
    while (reader.next(rec) && rec.blank) {
    }
    EMBER_CHECK(!rec.fields.empty() && !rec.blank, "[CsvDataset] ", label,
                ": no header line (the file is empty)");
    names = rec.fields;
    columns = names.size();
    have_columns = true;
  }
  std::vector<TabularItem> rows;
  int64_t label_col = -1;
  const auto resolve_label = [&] {
    if (!config.label_.empty()) {
      EMBER_CHECK(config.header_, "[CsvDataset] ", label, ": label column \"", config.label_,
                  "\" given by name, but the file is read without a header");
      for (size_t i = 0; i < names.size(); ++i)
        if (names[i] == config.label_) label_col = static_cast<int64_t>(i);
      if (label_col >= 0) return;
      std::string all;
      for (size_t i = 0; i < names.size() && i < 20; ++i) all += (i ? ", " : "") + names[i];
      if (names.size() > 20) all += ", ... (" + std::to_string(names.size()) + " columns)";
      EMBER_FAIL("[CsvDataset] ", label, ": no column named \"", config.label_,
                 "\" (columns: ", all, ")");
    } else if (config.label_index_ >= 0) {
      EMBER_CHECK(config.label_index_ < static_cast<int64_t>(columns), "[CsvDataset] ", label,
                  ": label column ", config.label_index_, " is out of range for ", columns,
                  " columns");
      label_col = config.label_index_;
    } else {
      EMBER_CHECK(config.label_index_ == -1, "[CsvDataset] ", label,
                  ": label_index must be >= 0 (or -1 for none), got ", config.label_index_);
    }
  };
  if (have_columns) resolve_label();
  bool any = have_columns;
  while (reader.next(rec)) {
    if (rec.blank) continue;
    if (!have_columns) {
      columns = rec.fields.size();
      for (size_t i = 0; i < columns; ++i) names.push_back(std::to_string(i));
      have_columns = true;
      resolve_label();
    }
    any = true;
    EMBER_CHECK(rec.fields.size() >= columns, "[CsvDataset] ", label, ":", rec.line, ": ",
                rec.fields.size(), " fields, expected ", columns, " (column ",
                rec.fields.size() + 1, ", ", show(names[rec.fields.size()]), ", is missing)");
    EMBER_CHECK(rec.fields.size() <= columns, "[CsvDataset] ", label, ":", rec.line, ": ",
                rec.fields.size(), " fields, expected ", columns, " (field ", columns + 1,
                " is extra)");
    TabularItem item;
    item.features.reserve(columns - (label_col >= 0 ? 1 : 0));
    for (size_t i = 0; i < columns; ++i) {
      const double v = parse_number(rec.fields[i], label, rec.line, names[i]);
      if (static_cast<int64_t>(i) == label_col) {
        check_label(v, config.target_, rec.fields[i], label, rec.line, names[i]);
        item.target = v;
      } else {
        item.features.push_back(static_cast<float>(v));
      }
    }
    rows.push_back(std::move(item));
  }
  EMBER_CHECK(any, "[CsvDataset] ", label, ": no records (the file is empty)");
  std::vector<std::string> features;
  for (size_t i = 0; i < names.size(); ++i)
    if (static_cast<int64_t>(i) != label_col) features.push_back(names[i]);
  std::string label_name = label_col >= 0 ? names[static_cast<size_t>(label_col)] : "";
  return std::make_shared<CsvDataset>(std::move(rows), std::move(features), std::move(label_name));
}

std::optional<TabularItem> CsvDataset::get(size_t index) const {
  if (index >= rows_.size()) return std::nullopt;
  return rows_[index];
}

TabularBatch TabularBatcher::batch(std::vector<TabularItem> items, Device device) const {
  EMBER_CHECK(!items.empty(), "[TabularBatcher] empty batch");
  const size_t f = items[0].features.size();
  const auto n = static_cast<int64_t>(items.size());
  std::vector<float> features;
  features.reserve(items.size() * f);
  std::vector<float> targets;
  std::vector<int64_t> labels;
  for (size_t i = 0; i < items.size(); ++i) {
    const TabularItem& it = items[i];
    EMBER_CHECK(it.features.size() == f, "[TabularBatcher] item ", i, " has ", it.features.size(),
                " features, item 0 has ", f);
    features.insert(features.end(), it.features.begin(), it.features.end());
    if (target_ == Target::values) {
      targets.push_back(static_cast<float>(it.target));
    } else {
      // Checked before the conversion: a NaN, infinite or too large double converted to an
      // integer is undefined behaviour.
      EMBER_CHECK(is_class_index(it.target), "[TabularBatcher] item ", i, ": target ", it.target,
                  " is not a class index (a whole number in [0, 2^63); use Target::values)");
      labels.push_back(static_cast<int64_t>(it.target));
    }
  }
  TabularBatch b;
  b.features = Tensor<2>::from_vector(features, {n, static_cast<int64_t>(f)}, device);
  if (target_ == Target::values) {
    b.targets = Tensor<1>::from_vector(targets, device);
  } else {
    b.labels = Tensor<1, Int>::from_vector(labels, device);
  }
  return b;
}

}  // namespace ember::data
