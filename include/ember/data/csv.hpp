// CSV files of numbers as a dataset of feature vectors with an optional label column, and the
// batcher that makes [B, F] feature tensors from them.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ember/data/dataloader.hpp"
#include "ember/data/dataset.hpp"
#include "ember/tensor/tensor.hpp"

namespace ember::data {

/// One row: its feature columns in file order, and the label column's value (0 without one).
struct TabularItem {
  std::vector<float> features;
  double target = 0.0;
};

/// What a label is: a class index (an i64 label for cross_entropy) or a real value (regression).
enum class TabularTarget { classes, values };

/// True for a double that is a valid i64 class index: a whole number in [0, 2^63).
bool is_class_index(double v);

/// How a CSV file is read (chained setters). Fields may be quoted ("a, b", "say ""hi"""); every
/// field other than the header must be a number (inf and nan included in features).
struct CsvConfig {
  char delimiter_ = ',';
  bool header_ = true;
  std::string label_;         // label column by header name
  int64_t label_index_ = -1;  // or by position; -1 with no name: no label column
  TabularTarget target_ = TabularTarget::classes;

  CsvConfig& delimiter(char c) {
    delimiter_ = c;
    return *this;
  }
  CsvConfig& header(bool on) {
    header_ = on;
    return *this;
  }
  CsvConfig& label(std::string column) {
    label_ = std::move(column);
    return *this;
  }
  CsvConfig& label_index(int64_t column) {
    label_index_ = column;
    return *this;
  }
  /// How labels are checked while reading: classes (the default, like TabularBatcher's) must be
  /// whole numbers in [0, 2^63); values must be finite. Errors name file:line and the column.
  CsvConfig& target(TabularTarget t) {
    target_ = t;
    return *this;
  }
};

/// A CSV file read into memory. Errors name file:line and the column (or the field number).
class CsvDataset : public Dataset<TabularItem> {
 public:
  static std::shared_ptr<const CsvDataset> open(const std::string& path, CsvConfig config = {});
  /// The same on text in memory; `label` stands for the file name in errors.
  static std::shared_ptr<const CsvDataset> parse(std::string_view text, CsvConfig config = {},
                                                 const std::string& label = "<csv>");

  std::optional<TabularItem> get(size_t index) const override;
  size_t size() const override { return rows_.size(); }
  /// Names of the feature columns (column numbers "0", "1", ... without a header).
  const std::vector<std::string>& feature_names() const { return feature_names_; }
  /// The label column's name, empty without one.
  const std::string& label_name() const { return label_name_; }

  CsvDataset(std::vector<TabularItem> rows, std::vector<std::string> feature_names,
             std::string label_name);

 private:
  std::vector<TabularItem> rows_;
  std::vector<std::string> feature_names_;
  std::string label_name_;
};

/// Features [B, F] (f32) and the targets, as class indices (labels, i64; targets left undefined)
/// or as values (targets, f32; labels left undefined).
struct TabularBatch {
  Tensor<2> features;
  Tensor<1> targets;
  Tensor<1, Int> labels;
};

class TabularBatcher : public Batcher<TabularItem, TabularBatch> {
 public:
  using Target = TabularTarget;
  explicit TabularBatcher(Target target = Target::classes) : target_(target) {}
  TabularBatch batch(std::vector<TabularItem> items, Device device) const override;

 private:
  Target target_;
};

}  // namespace ember::data
