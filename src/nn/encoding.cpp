// Position encodings and interpolate: composites of index_select, lerp-style arithmetic, sin and
// cos, so that their gradients come from autodiff.
#include "ember/nn/encoding.hpp"

#include <cmath>

#include "config_json.hpp"
#include "ember/core/error.hpp"

namespace ember::nn {
namespace {

DynTensor index_tensor(const std::vector<int64_t>& v, Device device) {
  return from_data(TensorData::from(v, Shape{static_cast<int64_t>(v.size())}), device);
}

// One spatial dim resized: `scale` is input/output as PyTorch's source-index formula uses it.
DynTensor resize_dim(const DynTensor& x, int dim, int64_t out, double scale, bool linear,
                     bool align_corners) {
  const int64_t in = x.size(dim);
  if (!linear) {
    std::vector<int64_t> src(static_cast<size_t>(out));
    for (int64_t i = 0; i < out; ++i) {
      src[static_cast<size_t>(i)] = std::min<int64_t>(
          static_cast<int64_t>(std::floor(static_cast<double>(i) * scale)), in - 1);
    }
    return index_select(x, dim, index_tensor(src, x.device()));
  }
  std::vector<int64_t> lo(static_cast<size_t>(out)), hi(static_cast<size_t>(out));
  std::vector<double> w(static_cast<size_t>(out));
  for (int64_t i = 0; i < out; ++i) {
    double s = 0.0;
    if (align_corners) {
      s = out > 1
              ? static_cast<double>(i) * static_cast<double>(in - 1) / static_cast<double>(out - 1)
              : 0.0;
    } else {
      s = std::max((static_cast<double>(i) + 0.5) * scale - 0.5, 0.0);
    }
    const int64_t i0 = std::min<int64_t>(static_cast<int64_t>(std::floor(s)), in - 1);
    const size_t k = static_cast<size_t>(i);
    lo[k] = i0;
    hi[k] = std::min<int64_t>(i0 + 1, in - 1);
    w[k] = s - static_cast<double>(i0);
  }
  Shape wshape = Shape::filled(x.rank(), 1);
  wshape[dim] = out;
  const DynTensor weight =
      cast(reshape(from_data(TensorData::from(w, Shape{out}), x.device()), wshape), x.dtype());
  const DynTensor a = index_select(x, dim, index_tensor(lo, x.device()));
  const DynTensor b = index_select(x, dim, index_tensor(hi, x.device()));
  return add(a, mul(sub(b, a), weight));
}

DynTensor interpolate_impl(const DynTensor& x, const std::vector<int64_t>& size,
                           const std::vector<double>& scales, InterpolateMode mode,
                           bool align_corners) {
  const int spatial = x.rank() - 2;
  EMBER_CHECK(spatial == 1 || spatial == 2, "[interpolate] expects [N, C, L] or [N, C, H, W], got ",
              x.shape());
  EMBER_CHECK(
      mode == InterpolateMode::Nearest || (mode == InterpolateMode::Linear) == (spatial == 1),
      "[interpolate] ", mode == InterpolateMode::Linear ? "linear" : "bilinear", " mode needs a ",
      mode == InterpolateMode::Linear ? "3-D" : "4-D", " input, got ", x.shape());
  EMBER_CHECK(!(align_corners && mode == InterpolateMode::Nearest),
              "[interpolate] align_corners applies to the linear modes only");
  EMBER_CHECK(is_floating(x.dtype()), "[interpolate] needs a Float tensor, got ", x.dtype());
  DynTensor y = x;
  for (int i = 0; i < spatial; ++i) {
    const int64_t out = size[static_cast<size_t>(i)];
    EMBER_CHECK(out > 0, "[interpolate] output sizes must be positive, got ", out);
    y = resize_dim(y, 2 + i, out, scales[static_cast<size_t>(i)], mode != InterpolateMode::Nearest,
                   align_corners);
  }
  return y;
}

}  // namespace

DynTensor interpolate(const DynTensor& x, const std::vector<int64_t>& size, InterpolateMode mode,
                      bool align_corners) {
  const int spatial = x.rank() - 2;
  EMBER_CHECK(spatial >= 1 && (size.size() == 1 || static_cast<int>(size.size()) == spatial),
              "[interpolate] needs one size per spatial dim of ", x.shape(), ", got ", size.size());
  std::vector<int64_t> sizes;
  std::vector<double> scales;
  for (int i = 0; i < spatial; ++i) {
    sizes.push_back(size[size.size() == 1 ? 0 : static_cast<size_t>(i)]);
    scales.push_back(static_cast<double>(x.size(2 + i)) / static_cast<double>(sizes.back()));
  }
  return interpolate_impl(x, sizes, scales, mode, align_corners);
}

DynTensor interpolate(const DynTensor& x, const std::vector<double>& scale_factor,
                      InterpolateMode mode, bool align_corners) {
  const int spatial = x.rank() - 2;
  EMBER_CHECK(spatial >= 1 &&
                  (scale_factor.size() == 1 || static_cast<int>(scale_factor.size()) == spatial),
              "[interpolate] needs one scale factor per spatial dim of ", x.shape(), ", got ",
              scale_factor.size());
  std::vector<int64_t> sizes;
  std::vector<double> scales;
  for (int i = 0; i < spatial; ++i) {
    const double f = scale_factor[scale_factor.size() == 1 ? 0 : static_cast<size_t>(i)];
    EMBER_CHECK(f > 0, "[interpolate] scale factors must be positive, got ", f);
    sizes.push_back(static_cast<int64_t>(std::floor(static_cast<double>(x.size(2 + i)) * f)));
    scales.push_back(1.0 / f);  // PyTorch uses the given factor, not in/out, for source indices
  }
  return interpolate_impl(x, sizes, scales, mode, align_corners);
}

PositionalEncoding::PositionalEncoding(int64_t d_model, int64_t max_len, double dropout_p,
                                       bool batch_first_in, Device device, DType dtype)
    : dropout(dropout_p), batch_first(batch_first_in) {
  EMBER_CHECK(d_model > 0 && max_len > 0,
              "[PositionalEncoding] d_model and max_len must be "
              "positive, got ",
              d_model, " and ", max_len);
  std::vector<double> table(static_cast<size_t>(max_len * d_model));
  for (int64_t pos = 0; pos < max_len; ++pos) {
    for (int64_t i = 0; i < d_model; i += 2) {
      const double angle =
          static_cast<double>(pos) *
          std::exp(static_cast<double>(i) * (-std::log(10000.0) / static_cast<double>(d_model)));
      table[static_cast<size_t>(pos * d_model + i)] = std::sin(angle);
      if (i + 1 < d_model) table[static_cast<size_t>(pos * d_model + i + 1)] = std::cos(angle);
    }
  }
  pe = Buffer<2>(
      Tensor<2>(cast(from_data(TensorData::from(table, Shape{max_len, d_model}), device), dtype)));
}

DynTensor PositionalEncoding::forward(const DynTensor& x) const {
  EMBER_CHECK(x.rank() == 3 && x.size(2) == pe.dyn().size(1), "[PositionalEncoding] expects [",
              batch_first ? "N, L, " : "L, N, ", pe.dyn().size(1), "], got ", x.shape());
  const int64_t len = x.size(batch_first ? 1 : 0);
  EMBER_CHECK(len <= pe.dyn().size(0), "[PositionalEncoding] sequence of ", len,
              " exceeds max_len ", pe.dyn().size(0));
  DynTensor table = narrow(pe.dyn(), 0, 0, len);  // [L, d]
  if (!batch_first) table = unsqueeze(table, 1);  // [L, 1, d]
  return dropout.forward(add(x, cast(table, x.dtype())));
}

DynTensor RotaryEncoding::forward(const DynTensor& x, int64_t start_pos) const {
  EMBER_CHECK(dim > 0 && dim % 2 == 0, "[RotaryEncoding] dim must be positive and even, got ", dim);
  EMBER_CHECK(x.rank() >= 2 && x.size(-1) == dim, "[RotaryEncoding] expects [..., L, ", dim,
              "], got ", x.shape());
  const int64_t len = x.size(-2), half = dim / 2;
  std::vector<double> c(static_cast<size_t>(len * dim)), s(c.size());
  for (int64_t p = 0; p < len; ++p) {
    for (int64_t i = 0; i < half; ++i) {
      const double angle =
          static_cast<double>(p + start_pos) *
          std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(dim));
      for (int64_t k : {i, i + half}) {
        c[static_cast<size_t>(p * dim + k)] = std::cos(angle);
        s[static_cast<size_t>(p * dim + k)] = std::sin(angle);
      }
    }
  }
  const DynTensor cos_t =
      cast(from_data(TensorData::from(c, Shape{len, dim}), x.device()), x.dtype());
  const DynTensor sin_t =
      cast(from_data(TensorData::from(s, Shape{len, dim}), x.device()), x.dtype());
  const std::vector<DynTensor> halves = chunk(x, 2, -1);
  const DynTensor rotated = cat({neg(halves[1]), halves[0]}, -1);
  return add(mul(x, cos_t), mul(rotated, sin_t));
}

std::string PositionalEncodingConfig::to_json() const {
  return detail::JsonWriter()
      .field("d_model", d_model)
      .field("max_len", max_len)
      .field("dropout", dropout_p)
      .field("batch_first", is_batch_first)
      .field("dtype", dtype_name(dtype))
      .str();
}

PositionalEncodingConfig PositionalEncodingConfig::from_json(const std::string& json) {
  const detail::JsonReader r(json, "PositionalEncodingConfig");
  PositionalEncodingConfig c(r.integer("d_model"));
  c.max_len = r.integer("max_len", 5000);
  c.dropout_p = r.number("dropout", 0.1);
  c.is_batch_first = r.boolean("batch_first", false);
  c.dtype = r.dtype("dtype", DType::f32);
  return c;
}

std::string RotaryEncoding::to_json() const {
  return detail::JsonWriter().field("dim", dim).field("theta", theta).str();
}

RotaryEncoding RotaryEncoding::from_json(const std::string& json) {
  const detail::JsonReader r(json, "RotaryEncoding");
  return RotaryEncoding{r.integer("dim"), r.number("theta", 10000.0)};
}

}  // namespace ember::nn
