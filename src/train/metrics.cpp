#include "ember/train/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "ember/core/error.hpp"
#include "ember/core/text.hpp"

namespace ember::train {
namespace {

// The fields of EpochMetrics in CSV order (after "epoch").
struct Field {
  const char* name;  // "top_k" columns are renamed "top<k>"
  double EpochMetrics::*member;
};
constexpr Field kFields[] = {
    {"train_loss", &EpochMetrics::train_loss},
    {"train_accuracy", &EpochMetrics::train_accuracy},
    {"train_top_k", &EpochMetrics::train_top_k},
    {"valid_loss", &EpochMetrics::valid_loss},
    {"valid_accuracy", &EpochMetrics::valid_accuracy},
    {"valid_top_k", &EpochMetrics::valid_top_k},
    {"lr", &EpochMetrics::lr},
    {"items_per_s", &EpochMetrics::items_per_s},
    {"peak_memory_mb", &EpochMetrics::peak_memory_mb},
    {"seconds", &EpochMetrics::seconds},
};

std::string column_name(const Field& f, int64_t top_k) {
  std::string name = f.name;
  const auto at = name.find("top_k");
  if (at != std::string::npos) name.replace(at, 5, "top" + std::to_string(top_k));
  return name;
}

std::string exact(double v) {
  if (std::isnan(v)) return "";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, sep)) out.push_back(cell);
  if (!line.empty() && line.back() == sep) out.emplace_back();
  return out;
}

}  // namespace

template <class T>
std::optional<T> parse_number(std::string_view text) {
  return ember::detail::parse_number<T>(text);
}
template std::optional<int64_t> parse_number<int64_t>(std::string_view);
template std::optional<uint64_t> parse_number<uint64_t>(std::string_view);
template std::optional<double> parse_number<double>(std::string_view);

double EpochMetrics::get(const std::string& name) const {
  if (name == "epoch") return static_cast<double>(epoch);
  for (const Field& f : kFields) {
    const std::string n = f.name;
    // "train_top_k" answers to any "train_top<k>" too.
    if (name == n || (n.ends_with("top_k") && name.starts_with(n.substr(0, n.size() - 2)) &&
                      name.size() > n.size() - 2 && std::isdigit(name[n.size() - 2]))) {
      return this->*f.member;
    }
  }
  std::string known = "epoch";
  for (const Field& f : kFields) known += std::string(", ") + f.name;
  EMBER_FAIL("[Learner] unknown metric '", name, "' (known: ", known, ")");
}

std::vector<std::string> metric_columns(int64_t top_k) {
  std::vector<std::string> cols{"epoch"};
  for (const Field& f : kFields) cols.push_back(column_name(f, top_k));
  return cols;
}

std::string history_to_csv(const std::vector<EpochMetrics>& history, int64_t top_k) {
  std::string csv;
  const auto cols = metric_columns(top_k);
  for (size_t i = 0; i < cols.size(); ++i) {
    if (i) csv += ',';
    csv += cols[i];
  }
  csv += "\n";
  for (const EpochMetrics& m : history) {
    csv += std::to_string(m.epoch);
    for (const Field& f : kFields) {
      csv += ',';
      csv += exact(m.*f.member);
    }
    csv += "\n";
  }
  return csv;
}

std::vector<EpochMetrics> history_from_csv(const std::string& csv, int64_t top_k) {
  std::istringstream in(csv);
  std::string line;
  std::vector<EpochMetrics> out;
  const auto cols = metric_columns(top_k);
  bool header = true;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto cells = split(line, ',');
    EMBER_CHECK(cells.size() == cols.size(), "[Learner] metrics row has ", cells.size(),
                " cells, expected ", cols.size(), ": '", ember::detail::shown(line, 80), "'");
    if (header) {
      EMBER_CHECK(cells == cols, "[Learner] metrics header '", ember::detail::shown(line, 200),
                  "' differs from this run's");
      header = false;
      continue;
    }
    EpochMetrics m;
    const auto epoch = parse_number<int64_t>(cells[0]);
    EMBER_CHECK(epoch && *epoch == static_cast<int64_t>(out.size()) + 1, "[Learner] metrics row ",
                out.size() + 1, ": epoch '", ember::detail::shown(cells[0]), "' is not ",
                out.size() + 1);
    m.epoch = *epoch;
    for (size_t i = 0; i < std::size(kFields); ++i) {
      const std::string& c = cells[i + 1];
      const auto v = c.empty() ? std::optional<double>(NAN) : parse_number<double>(c);
      EMBER_CHECK(v, "[Learner] metrics row ", out.size() + 1, ", column ", cols[i + 1], ": '",
                  ember::detail::shown(c), "' is not a number");
      m.*kFields[i].member = *v;
    }
    out.push_back(m);
  }
  return out;
}

namespace {

// One panel of the SVG: series of (epoch, value) scaled into a box.
struct Series {
  std::string label, color;
  std::vector<std::pair<double, double>> points;
};

void panel(std::ostringstream& svg, double x0, double y0, double w, double h,
           const std::string& title, const std::vector<Series>& series, bool percent) {
  double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
  for (const Series& s : series) {
    for (auto [x, y] : s.points) {
      xmin = std::min(xmin, x);
      xmax = std::max(xmax, x);
      ymin = std::min(ymin, y);
      ymax = std::max(ymax, y);
    }
  }
  svg << "<text x='" << x0 + w / 2 << "' y='" << y0 - 8
      << "' text-anchor='middle' font-weight='bold'>" << title << "</text>\n";
  svg << "<rect x='" << x0 << "' y='" << y0 << "' width='" << w << "' height='" << h
      << "' fill='none' stroke='#999'/>\n";
  if (!std::isfinite(xmin)) return;
  if (xmax == xmin) xmax = xmin + 1;
  const double pad = (ymax - ymin) * 0.05 + 1e-12;
  ymin -= pad;
  ymax += pad;
  auto px = [&](double x) { return x0 + (x - xmin) / (xmax - xmin) * w; };
  auto py = [&](double y) { return y0 + h - (y - ymin) / (ymax - ymin) * h; };
  for (int i = 0; i <= 4; ++i) {  // y ticks
    const double v = ymin + (ymax - ymin) * i / 4;
    char label[32];
    std::snprintf(label, sizeof label, percent ? "%.1f%%" : "%.3g", percent ? 100 * v : v);
    svg << "<line x1='" << x0 << "' x2='" << x0 + w << "' y1='" << py(v) << "' y2='" << py(v)
        << "' stroke='#eee'/><text x='" << x0 - 4 << "' y='" << py(v) + 4 << "' text-anchor='end'>"
        << label << "</text>\n";
  }
  svg << "<text x='" << x0 + w / 2 << "' y='" << y0 + h + 28
      << "' text-anchor='middle'>epoch</text>\n";
  int row = 0;
  for (const Series& s : series) {
    if (s.points.empty()) continue;
    svg << "<polyline fill='none' stroke-width='2' stroke='" << s.color << "' points='";
    for (auto [x, y] : s.points) svg << px(x) << "," << py(y) << " ";
    svg << "'/>\n";
    for (auto [x, y] : s.points) {
      svg << "<circle cx='" << px(x) << "' cy='" << py(y) << "' r='3' fill='" << s.color << "'/>\n";
    }
    svg << "<text x='" << x0 + w - 6 << "' y='" << y0 + 16 + 16 * row++
        << "' text-anchor='end' fill='" << s.color << "'>" << s.label << "</text>\n";
  }
}

Series series(const std::vector<EpochMetrics>& history, const std::string& label,
              const std::string& color, double EpochMetrics::*member) {
  Series s{label, color, {}};
  for (const EpochMetrics& m : history) {
    if (std::isfinite(m.*member)) s.points.emplace_back(static_cast<double>(m.epoch), m.*member);
  }
  return s;
}

}  // namespace

std::string history_to_svg(const std::vector<EpochMetrics>& history, const std::string& title) {
  std::ostringstream svg;
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='900' height='380' "
         "font-family='sans-serif' font-size='12'>\n<rect width='900' height='380' "
         "fill='white'/>\n<text x='450' y='20' text-anchor='middle' font-size='15'>"
      << title << "</text>\n";
  panel(svg, 70, 60, 340, 260, "loss",
        {series(history, "train", "#1f77b4", &EpochMetrics::train_loss),
         series(history, "valid", "#d62728", &EpochMetrics::valid_loss)},
        false);
  panel(svg, 520, 60, 340, 260, "accuracy",
        {series(history, "train", "#1f77b4", &EpochMetrics::train_accuracy),
         series(history, "valid", "#d62728", &EpochMetrics::valid_accuracy)},
        true);
  svg << "</svg>\n";
  return svg.str();
}

std::string summary_header(int64_t top_k) {
  char buf[200];
  const std::string k = "top" + std::to_string(top_k);
  std::snprintf(buf, sizeof buf, "%5s | %10s %9s %9s | %10s %9s %9s | %9s %10s %8s %7s", "epoch",
                "train_loss", "train_acc", ("train_" + k).c_str(), "valid_loss", "valid_acc",
                ("valid_" + k).c_str(), "lr", "items/s", "peak_MB", "time");
  return buf;
}

std::string summary_row(const EpochMetrics& m) {
  auto pct = [](double v) {
    char b[16];
    if (std::isnan(v)) return std::string("-");
    std::snprintf(b, sizeof b, "%.2f%%", 100 * v);
    return std::string(b);
  };
  auto num = [](double v) {
    char b[16];
    if (std::isnan(v)) return std::string("-");
    std::snprintf(b, sizeof b, "%.4f", v);
    return std::string(b);
  };
  char buf[220];
  std::snprintf(buf, sizeof buf, "%5lld | %10s %9s %9s | %10s %9s %9s | %9.3g %10.0f %8.1f %6.1fs",
                static_cast<long long>(m.epoch), num(m.train_loss).c_str(),
                pct(m.train_accuracy).c_str(), pct(m.train_top_k).c_str(),
                num(m.valid_loss).c_str(), pct(m.valid_accuracy).c_str(),
                pct(m.valid_top_k).c_str(), m.lr, m.items_per_s, m.peak_memory_mb, m.seconds);
  return buf;
}

}  // namespace ember::train
