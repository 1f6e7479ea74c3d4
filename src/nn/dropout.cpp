#include "ember/nn/dropout.hpp"

#include "config_json.hpp"
#include "ember/core/error.hpp"

namespace ember::nn {

DynTensor dropout(const DynTensor& x, double p, bool training, Generator* gen) {
  EMBER_CHECK(p >= 0.0 && p <= 1.0, "[dropout] p must be in [0, 1], got ", p);
  EMBER_CHECK(is_floating(x.dtype()), "[dropout] needs a Float tensor, got ", x.dtype());
  if (!training || p == 0.0) return x;
  if (p == 1.0) return mul(x, 0.0);  // every element dropped (keeps the graph, as PyTorch)
  const DynTensor keep = bernoulli(x.shape(), 1.0 - p, x.dtype(), x.device(), gen);
  return mul(x, mul(keep, 1.0 / (1.0 - p)));
}

Dropout::Dropout(double p_in) : p(p_in) {
  EMBER_CHECK(p >= 0.0 && p <= 1.0, "[Dropout] p must be in [0, 1], got ", p);
}

std::string Dropout::to_json() const { return detail::JsonWriter().field("p", p).str(); }

Dropout Dropout::from_json(const std::string& json) {
  return Dropout(detail::JsonReader(json, "Dropout").number("p", 0.5));
}

DynTensor embedding(const DynTensor& indices, const DynTensor& weight, int64_t padding_idx) {
  EMBER_CHECK(indices.defined() && weight.defined(),
              "[embedding] indices and weight must be "
              "defined");
  EMBER_CHECK(kind_of(indices.dtype()) == KindId::Int, "[embedding] indices must be Int, got ",
              indices.dtype());
  EMBER_CHECK(weight.rank() == 2, "[embedding] weight must be [num_embeddings, dim], got ",
              weight.shape());
  const DynTensor flat = reshape(indices, Shape{indices.numel()});
  DynTensor rows = index_select(weight, 0, flat);
  if (padding_idx >= 0 && rows.requires_grad()) {
    // Rows read at padding_idx pass their value but not their gradient.
    rows = where(unsqueeze(ne(flat, padding_idx), 1), rows, detach(rows));
  }
  Shape shape = indices.shape();
  shape.push_back(weight.size(1));
  return reshape(rows, shape);
}

std::string EmbeddingConfig::to_json() const {
  return detail::JsonWriter()
      .field("num_embeddings", num_embeddings)
      .field("embedding_dim", embedding_dim)
      .field("padding_idx", padding ? *padding : int64_t{-1})
      .field("dtype", dtype_name(dtype))
      .str();
}

EmbeddingConfig EmbeddingConfig::from_json(const std::string& json) {
  const detail::JsonReader r(json, "EmbeddingConfig");
  EmbeddingConfig c(r.integer("num_embeddings"), r.integer("embedding_dim"));
  const int64_t pad = r.integer("padding_idx", -1);
  if (pad >= 0) c.padding = pad;
  c.dtype = r.dtype("dtype", DType::f32);
  return c;
}

Embedding::Embedding(const EmbeddingConfig& config, Device device, Generator* gen) {
  EMBER_CHECK(config.num_embeddings > 0 && config.embedding_dim > 0,
              "[Embedding] sizes must be positive, got ", config.num_embeddings, " x ",
              config.embedding_dim);
  DynTensor w =
      randn(Shape{config.num_embeddings, config.embedding_dim}, config.dtype, device, gen);
  if (config.padding) {
    int64_t p = *config.padding;
    EMBER_CHECK(p >= -config.num_embeddings && p < config.num_embeddings,
                "[Embedding] padding_idx ", p, " is out of range for ", config.num_embeddings,
                " embeddings");
    if (p < 0) p += config.num_embeddings;
    padding_idx = p;
    w = slice_assign(w, {Slice{p, p + 1}},
                     zeros(Shape{1, config.embedding_dim}, config.dtype, device));
  }
  weight = Param<2>(Tensor<2>(w));
}

}  // namespace ember::nn
