// Position encodings: composites of sin and cos tables and arithmetic, so that their gradients
// come from autodiff. (interpolate moved to src/tensor/vision_interpolate.cpp.)
#include "ember/nn/encoding.hpp"

#include <cmath>

#include "config_json.hpp"
#include "ember/core/error.hpp"

namespace ember::nn {

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
