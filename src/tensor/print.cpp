// Tensor printing, a line-by-line port of PyTorch's torch/_tensor_str.py (_Formatter, _vector_str,
// _tensor_str_with_formatter, get_summarized_data, _add_suffixes) so the text matches exactly.
#include "ember/tensor/print.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

namespace ember {
namespace {

PrintOptions g_options;

// printf with a run-time precision; C's %f/%e round exactly like Python's format() does.
std::string printf_double(const char* spec, int precision, double v) {
  char buf[512];  // %.{p}f of 1e308 needs ~310 digits plus the precision
  const int n = std::snprintf(buf, sizeof buf, spec, precision, v);
  if (n < 0) return "?";  // only on an encoding error, which %e and %f cannot hit
  if (n < static_cast<int>(sizeof buf)) return std::string(buf, static_cast<size_t>(n));
  std::string big(static_cast<size_t>(n) + 1, '\0');
  std::snprintf(big.data(), big.size(), spec, precision, v);
  big.resize(static_cast<size_t>(n));
  return big;
}

// Python prints non-finite floats as nan/inf/-inf whatever the format (never "-nan" as glibc may).
std::string nonfinite(double v) { return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf"); }

std::string pad_left(std::string s, int width) {
  if (static_cast<int>(s.size()) < width) s.insert(0, static_cast<size_t>(width) - s.size(), ' ');
  return s;
}

// str(tuple(shape)): "(0, 3)", with Python's trailing comma for one element: "(0,)".
std::string shape_tuple(const Shape& shape) {
  std::string s = "(";
  for (int i = 0; i < shape.rank(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + (shape.rank() == 1 ? ",)" : ")");
}

class Printer {
 public:
  Printer(const TensorData& data, const PrintOptions& options)
      : shape_(data.shape),
        opt_(options),
        floating_(is_floating(data.dtype)),
        boolean_(data.dtype == DType::boolean) {
    // Decode once: doubles hold every float dtype exactly, int64 every integer dtype and bool.
    visit_dtype(data.dtype, [&](auto tag) {
      using T = decltype(tag);
      for (T v : data.as<T>()) {
        if constexpr (is_floating(dtype_of<T>())) {
          doubles_.push_back(static_cast<double>(v));
        } else {
          ints_.push_back(static_cast<int64_t>(v));
        }
      }
    });
    strides_.assign(static_cast<size_t>(shape_.rank()), 1);
    for (int d = shape_.rank() - 2; d >= 0; --d) strides_[d] = strides_[d + 1] * shape_[d + 1];
    summarize_ = data.numel() > opt_.threshold;
  }

  // _tensor_str: the bracketed body, for a tensor with at least one element.
  std::string body(int indent) {
    std::vector<int64_t> shown;
    if (shape_.rank() == 0) {
      shown.push_back(0);
    } else {
      collect(0, 0, shown);
    }
    fit(shown);
    return shape_.rank() == 0 ? format(0) : tensor_str(0, 0, indent);
  }

 private:
  int64_t edge() const { return opt_.edgeitems; }
  // True when dim `d` shows only its edge items around a "...".
  bool cut(int d) const { return summarize_ && shape_[d] > 2 * edge(); }

  // get_summarized_data: the elements a summarised print shows, which alone set the format.
  void collect(int d, int64_t offset, std::vector<int64_t>& out) const {
    const int64_t n = shape_[d];
    if (d == shape_.rank() - 1) {
      // With edgeitems 0 torch keeps the whole row here (self[-0:] is all of it); so do we.
      const bool c = cut(d) && edge() > 0;
      for (int64_t i = 0; i < n; ++i) {
        if (!c || i < edge() || i >= n - edge()) out.push_back(offset + i);
      }
      return;
    }
    if (summarize_ && edge() == 0) return;
    for (int64_t i = 0; i < n; ++i) {
      if (!cut(d) || i < edge() || i >= n - edge()) collect(d + 1, offset + i * strides_[d], out);
    }
  }

  // _Formatter.__init__: picks int / fixed / scientific mode and one width for every element.
  void fit(const std::vector<int64_t>& shown) {
    width_ = 1;
    if (!floating_) {
      for (int64_t i : shown) width_ = std::max(width_, static_cast<int>(format_raw(i).size()));
      return;
    }
    std::vector<double> vals;  // nonzero finite values: zeros, nan and inf never set the format
    for (int64_t i : shown) {
      const double v = doubles_[i];
      if (std::isfinite(v) && v != 0) vals.push_back(v);
    }
    if (vals.empty()) return;
    double lo = std::fabs(vals[0]), hi = lo;
    for (double v : vals) {
      lo = std::min(lo, std::fabs(v));
      hi = std::max(hi, std::fabs(v));
      if (v != std::ceil(v)) int_mode_ = false;
    }
    sci_mode_ =
        opt_.sci_mode_auto ? (hi / lo > 1000.0 || hi > 1.0e8 || lo < 1.0e-4) : opt_.sci_mode;
    // int mode's "." is added after formatting, so it counts one extra character.
    const int extra = (int_mode_ && !sci_mode_) ? 1 : 0;
    for (double v : vals) {
      width_ = std::max(width_, static_cast<int>(format_float(v).size()) + extra);
    }
  }

  std::string format_float(double v) const {
    if (sci_mode_) return printf_double("%.*e", opt_.precision, v);
    return printf_double("%.*f", int_mode_ ? 0 : opt_.precision, v);
  }

  // _Formatter.format before padding.
  std::string format_raw(int64_t i) const {
    if (!floating_) return boolean_ ? (ints_[i] ? "True" : "False") : std::to_string(ints_[i]);
    const double v = doubles_[i];
    if (!std::isfinite(v)) return nonfinite(v);
    return format_float(v) + (int_mode_ && !sci_mode_ ? "." : "");
  }
  std::string format(int64_t i) const { return pad_left(format_raw(i), width_); }

  // _vector_str: one row, wrapped so each line holds as many elements as fit in linewidth.
  std::string vector_str(int64_t offset, int indent) const {
    const int d = shape_.rank() - 1;
    const int64_t n = shape_[d];
    std::vector<std::string> items;
    if (summarize_ && edge() == 0) {
      items.push_back("...");
    } else {
      for (int64_t i = 0; i < n; ++i) {
        if (cut(d) && i == edge()) items.push_back(" ...");
        if (!cut(d) || i < edge() || i >= n - edge()) items.push_back(format(offset + i));
      }
    }
    const int element_length = width_ + 2;  // the element plus ", "
    const auto per_line = std::max<int64_t>(
        1, static_cast<int64_t>(
               std::floor(static_cast<double>(opt_.linewidth - indent) / element_length)));
    std::string s = "[";
    for (size_t k = 0; k < items.size(); ++k) {
      if (k > 0) {
        s +=
            (static_cast<int64_t>(k) % per_line == 0) ? ",\n" + std::string(indent + 1, ' ') : ", ";
      }
      s += items[k];
    }
    return s + "]";
  }

  // _tensor_str_with_formatter: sub-tensors joined by ",", one newline per remaining dim (so rank
  // >= 3 gets blank lines between blocks) and an indent that lines up under the opening bracket.
  std::string tensor_str(int d, int64_t offset, int indent) const {
    if (d == shape_.rank() - 1) return vector_str(offset, indent);
    const int64_t n = shape_[d];
    std::string sep = ",";
    sep.append(static_cast<size_t>(shape_.rank() - d - 1), '\n');
    sep.append(static_cast<size_t>(indent + 1), ' ');
    std::vector<std::string> parts;
    for (int64_t i = 0; i < n; ++i) {
      if (cut(d) && i == edge()) parts.push_back("...");
      if (!cut(d) || i < edge() || i >= n - edge()) {
        parts.push_back(tensor_str(d + 1, offset + i * strides_[d], indent + 1));
      }
    }
    std::string s = "[";
    for (size_t k = 0; k < parts.size(); ++k) s += (k > 0 ? sep : "") + parts[k];
    return s + "]";
  }

  Shape shape_;
  std::vector<int64_t> strides_;
  PrintOptions opt_;
  bool floating_, boolean_;
  bool summarize_ = false;
  std::vector<double> doubles_;
  std::vector<int64_t> ints_;
  // Formatter state, as _Formatter's defaults when no nonzero finite value exists.
  bool int_mode_ = true, sci_mode_ = false;
  int width_ = 1;
};

// _add_suffixes: ", dtype=..." stays on the last line unless it would pass linewidth.
std::string add_suffixes(std::string s, const std::vector<std::string>& suffixes, int indent,
                         int linewidth) {
  const size_t nl = s.rfind('\n');
  // Python's len(s) - s.rfind("\n") + 1, where rfind gives -1 when there is no newline.
  int64_t last_line = static_cast<int64_t>(s.size()) -
                      (nl == std::string::npos ? -1 : static_cast<int64_t>(nl)) + 1;
  for (const std::string& suffix : suffixes) {
    const auto len = static_cast<int64_t>(suffix.size());
    if (last_line + len + 2 > linewidth) {
      s += ",\n" + std::string(static_cast<size_t>(indent), ' ') + suffix;
      last_line = indent + len;
    } else {
      s += ", " + suffix;
      last_line += len + 2;
    }
  }
  return s + ")";
}

}  // namespace

void set_print_options(const PrintOptions& options) { g_options = options; }
PrintOptions print_options() { return g_options; }

namespace detail {

std::string format_tensor_data(const TensorData& data, Device device, const PrintOptions& options) {
  const std::string prefix = "tensor(";
  const int indent = static_cast<int>(prefix.size());
  const std::string dtype_suffix = "dtype=torch." + std::string(dtype_name(data.dtype));
  const DType default_float = default_dtype(KindId::Float);

  std::vector<std::string> suffixes;
  if (!device.is_cpu()) suffixes.push_back("device='" + to_string(device) + "'");
  std::string body;
  if (data.numel() == 0) {
    // NumPy's rule: the shape is shown unless it is (0,). With no elements to show, every dtype
    // but the default float one is named, int64 and bool included.
    if (data.shape.rank() != 1) suffixes.push_back("size=" + shape_tuple(data.shape));
    if (data.dtype != default_float) suffixes.push_back(dtype_suffix);
    body = "[]";
  } else {
    if (options.edgeitems == 0) suffixes.push_back("size=" + shape_tuple(data.shape));
    const bool default_dtype_of_kind =
        data.dtype == default_float || data.dtype == DType::i64 || data.dtype == DType::boolean;
    if (!default_dtype_of_kind) suffixes.push_back(dtype_suffix);
    body = Printer(data, options).body(indent);
  }
  return add_suffixes(prefix + body, suffixes, indent, options.linewidth);
}

}  // namespace detail

std::string to_string(const DynTensor& t) {
  if (!t.defined()) return "tensor(undefined)";
  return detail::format_tensor_data(t.to_data(), t.device(), g_options);
}

std::ostream& operator<<(std::ostream& os, const DynTensor& t) { return os << to_string(t); }
std::ostream& operator<<(std::ostream& os, const Shape& shape) { return os << to_string(shape); }

}  // namespace ember
