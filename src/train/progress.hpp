// Progress output of the Learner: a live bar with ETA on a terminal, plain periodic lines
// otherwise (logs, CI), and the per-epoch summary rows.
#pragma once

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <string>

#include "ember/train/learner.hpp"

namespace ember::train::detail {

/// Running sums of one pass over a loader. The loss and hit sums are added up on the device, as
/// tensors, and read to the host only by sync(): once per log line or epoch, not per batch.
struct Running {
  double loss_sum = 0;  // sum of batch loss * items (as of the last sync)
  double correct = 0;   // top-1 hits
  double top_k = 0;     // top-k hits
  int64_t items = 0;    // items seen
  int64_t scored = 0;   // items that came with logits and targets
  double seconds = 0;   // time spent in the pass
  DynTensor sums;       // [3] on the device (f64, or f32 without it): loss_sum, correct, top_k
  bool unread = false;  // sums holds batches that sync() has not read yet

  /// Adds one batch's [3] (loss * items, correct, top-k hits), in the order the host did.
  void add(const DynTensor& batch);
  /// Reads the device sums into loss_sum, correct and top_k (one host read; none if up to date).
  void sync();
  double loss() const;
  double accuracy() const;
  double top_k_accuracy() const;
};

class ProgressPrinter {
 public:
  ProgressPrinter(Progress mode, int64_t log_every, int64_t top_k, std::ostream& out);
  /// The start of a training epoch of `batches` batches, `done` of them already (a resume).
  void begin_epoch(int64_t epoch, int64_t epochs, size_t batches, size_t done);
  /// After each training batch: `done` batches of this epoch so far.
  /// Syncs `run` only when it prints a line.
  void batch(size_t done, Running& run, double lr);
  /// Clears the bar and prints the epoch's row (with the table's header before the first).
  void end_epoch(const EpochMetrics& m);
  void note(const std::string& line);
  bool live() const { return mode_ == Progress::bar; }

 private:
  void clear_bar();
  Progress mode_;
  int64_t log_every_, top_k_;
  std::ostream& out_;
  int64_t epoch_ = 0, epochs_ = 0;
  size_t batches_ = 0, start_done_ = 0;
  bool header_printed_ = false, bar_shown_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

std::string format_duration(double seconds);

}  // namespace ember::train::detail
