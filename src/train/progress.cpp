#include "progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>

namespace ember::train::detail {

void Running::add(const DynTensor& batch) {
  if (!sums.defined()) {  // starts from the host values (a resumed epoch's partial sums)
    const TensorData start = TensorData::from(std::vector<double>{loss_sum, correct, top_k}, {3});
    sums = to_device(cast(from_data(start, Device::cpu()), batch.dtype()), batch.device());
  }
  sums = ember::add(sums, batch);
  unread = true;
}

void Running::sync() {
  if (!unread) return;
  const std::vector<double> v = sums.to_vector<double>();
  loss_sum = v[0];
  correct = v[1];
  top_k = v[2];
  unread = false;
}

double Running::loss() const { return items ? loss_sum / static_cast<double>(items) : NAN; }
double Running::accuracy() const { return scored ? correct / static_cast<double>(scored) : NAN; }
double Running::top_k_accuracy() const {
  return scored ? top_k / static_cast<double>(scored) : NAN;
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--";
  const auto s = static_cast<int64_t>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof buf, "%lld:%02lld", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  }
  return buf;
}

ProgressPrinter::ProgressPrinter(Progress mode, int64_t log_every, int64_t top_k, std::ostream& out)
    : mode_(mode), log_every_(log_every), top_k_(top_k), out_(out) {
  if (mode_ == Progress::automatic) {
    // A bar only where someone watches: stdout is a terminal that understands "\r".
    const char* term = std::getenv("TERM");
    const bool dumb = term && std::string(term) == "dumb";
    mode_ =
        (&out_ == &std::cout && isatty(STDOUT_FILENO) && !dumb) ? Progress::bar : Progress::lines;
  }
}

void ProgressPrinter::begin_epoch(int64_t epoch, int64_t epochs, size_t batches, size_t done) {
  epoch_ = epoch;
  epochs_ = epochs;
  batches_ = batches;
  start_done_ = done;
  start_ = last_draw_ = std::chrono::steady_clock::now();
  if (mode_ == Progress::lines && done > 0) {
    out_ << "epoch " << epoch << "/" << epochs << ": resuming after batch " << done << "\n";
  }
}

void ProgressPrinter::batch(size_t done, Running& run, double lr) {
  if (mode_ == Progress::none) return;
  const auto now = std::chrono::steady_clock::now();
  const auto every = static_cast<size_t>(
      log_every_ > 0 ? log_every_ : std::max<int64_t>(1, static_cast<int64_t>(batches_) / 10));
  if (mode_ == Progress::bar) {
    if (done < batches_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  } else if (done % every != 0 && done != batches_) {
    return;
  }
  run.sync();  // the one host read of this line
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double per_batch =
      done > start_done_ ? elapsed / static_cast<double>(done - start_done_) : NAN;
  const double eta = per_batch * static_cast<double>(batches_ - done);
  const double rate = run.seconds > 0 ? static_cast<double>(run.items) / run.seconds : 0;
  char stats[160];
  std::snprintf(stats, sizeof stats, "loss %.4f  acc %5.2f%%  lr %.3g  %.0f items/s  eta %s",
                run.loss(), 100 * run.accuracy(), lr, rate, format_duration(eta).c_str());
  if (mode_ == Progress::bar) {
    last_draw_ = now;
    constexpr int kWidth = 28;
    const auto fill = static_cast<int>(kWidth * static_cast<double>(done) /
                                       static_cast<double>(batches_ ? batches_ : 1));
    std::string bar(static_cast<size_t>(fill), '#');
    bar.resize(kWidth, '.');
    out_ << "\r\033[Kepoch " << epoch_ << "/" << epochs_ << " [" << bar << "] " << done << "/"
         << batches_ << "  " << stats << std::flush;
    bar_shown_ = true;
    return;
  }
  out_ << "epoch " << epoch_ << "/" << epochs_ << "  batch " << done << "/" << batches_ << "  "
       << stats << "\n"
       << std::flush;
}

void ProgressPrinter::clear_bar() {
  if (bar_shown_) out_ << "\r\033[K";
  bar_shown_ = false;
}

void ProgressPrinter::end_epoch(const EpochMetrics& m) {
  if (mode_ == Progress::none) return;
  clear_bar();
  if (!header_printed_) out_ << summary_header(top_k_) << "\n";
  header_printed_ = true;
  out_ << summary_row(m) << "\n" << std::flush;
}

void ProgressPrinter::note(const std::string& line) {
  if (mode_ == Progress::none) return;
  clear_bar();
  out_ << line << "\n" << std::flush;
}

}  // namespace ember::train::detail
