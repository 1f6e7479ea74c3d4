// What the Learner measures: one row per epoch (losses, accuracies, learning rate, speed, memory),
// kept as a history that is written to CSV, drawn to SVG and saved inside checkpoints.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ember::train {

/// The metrics of one epoch. Values that were not measured (no validation loader, no logits) are
/// NaN and stay empty in the CSV.
struct EpochMetrics {
  int64_t epoch = 0;  // 1-based
  double train_loss = 0, train_accuracy = 0, train_top_k = 0;
  double valid_loss = 0, valid_accuracy = 0, valid_top_k = 0;
  double lr = 0;              // group 0's learning rate at the end of the epoch
  double items_per_s = 0;     // training items per second
  double peak_memory_mb = 0;  // peak MB in use on the model's device during the epoch
  double seconds = 0;         // wall time of the epoch (training and validation)

  /// A metric by its CSV column name ("valid_loss", "train_accuracy", ...); fails on others.
  double get(const std::string& name) const;
};

/// The CSV column names, in order ("train_top5" for the top-k columns with k = 5).
std::vector<std::string> metric_columns(int64_t top_k);

/// The history as CSV text (a header, then one row per epoch), and back. Doubles are written with
/// 17 significant digits, so a history read back is identical.
std::string history_to_csv(const std::vector<EpochMetrics>& history, int64_t top_k);
std::vector<EpochMetrics> history_from_csv(const std::string& csv, int64_t top_k);

/// The whole of `text` as a decimal number (int64_t, uint64_t or double; "nan" and "inf" are
/// doubles too), or nothing: no sign for unsigned, no spaces, no trailing characters.
template <class T>
std::optional<T> parse_number(std::string_view text);

/// Training curves as a self-contained SVG: loss (train and valid) and accuracy by epoch.
std::string history_to_svg(const std::vector<EpochMetrics>& history, const std::string& title);

/// A fixed-width table: one row per epoch, for the end-of-epoch summary.
std::string summary_header(int64_t top_k);
std::string summary_row(const EpochMetrics& m);

}  // namespace ember::train
