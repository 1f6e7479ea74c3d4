// Embedding and EmbeddingBag as composites of indexing ops: they run on every backend and get
// their gradients from autodiff. Options follow torch.nn.functional.embedding / embedding_bag.
#include "ember/nn/embedding.hpp"

#include <cmath>
#include <limits>
#include <vector>

#include "config_json.hpp"
#include "ember/autodiff/autodiff.hpp"
#include "ember/core/error.hpp"

namespace ember::nn {
namespace {

void check_table(const DynTensor& indices, const DynTensor& weight, const char* op) {
  EMBER_CHECK(indices.defined() && weight.defined(), "[", op,
              "] indices and weight must be defined");
  EMBER_CHECK(kind_of(indices.dtype()) == KindId::Int, "[", op, "] indices must be Int, got ",
              indices.dtype());
  EMBER_CHECK(weight.rank() == 2, "[", op, "] weight must be [num_embeddings, dim], got ",
              weight.shape());
}

// PyTorch's padding_idx: negative counts from the end; out of range is an error.
std::optional<int64_t> wrap_padding(std::optional<int64_t> padding_idx, int64_t num,
                                    const char* op) {
  if (!padding_idx) return std::nullopt;
  const int64_t p = *padding_idx;
  EMBER_CHECK(p >= -num && p < num, "[", op, "] padding_idx ", p, " is out of range for ", num,
              " embeddings");
  return p < 0 ? p + num : p;
}

// How often each entry's index occurs among `flat` (PyTorch's scale_grad_by_freq counts).
DynTensor frequencies(const DynTensor& flat, int64_t num, DType dtype) {
  const DynTensor ones_n = ones(Shape{flat.numel()}, dtype, flat.device());
  const DynTensor counts = index_add(zeros(Shape{num}, dtype, flat.device()), 0, flat, ones_n);
  return index_select(counts, 0, flat);
}

// Rows of `weight` at `flat` [n] -> [n, dim], with the options of embedding().
DynTensor lookup(const DynTensor& flat, const DynTensor& weight, std::optional<int64_t> padding,
                 std::optional<double> max_norm, double norm_type, bool scale_grad_by_freq) {
  DynTensor rows;
  if (max_norm) {
    const DynTensor renormed =
        index_select(embedding_renorm(weight, flat, *max_norm, norm_type), 0, flat);
    if (!weight.requires_grad()) return renormed;
    // The renormalised values with the gradient of a plain lookup (PyTorch renormalises in
    // place under no_grad): rows - detach(rows) is exactly 0 and carries the gradient.
    const DynTensor raw = index_select(weight, 0, flat);
    rows = add(renormed, sub(raw, detach(raw)));
  } else {
    rows = index_select(weight, 0, flat);
  }
  if (!rows.requires_grad()) return rows;
  if (scale_grad_by_freq) {
    // Value unchanged (adds exactly 0), gradient divided by the index's count.
    const DynTensor freq = unsqueeze(frequencies(flat, weight.size(0), rows.dtype()), 1);
    rows = add(detach(rows), div(sub(rows, detach(rows)), freq));
  }
  if (padding) {
    // Rows read at padding_idx pass their value but not their gradient.
    rows = where(unsqueeze(ne(flat, *padding), 1), rows, detach(rows));
  }
  return rows;
}

// Writes the renormalised rows back into a module's weight, as PyTorch's in-place renorm.
void renorm_in_module(Param<2>& weight, const DynTensor& indices, double max_norm,
                      double norm_type) {
  auto guard = no_grad();
  weight.set_dyn(embedding_renorm(weight.dyn(), indices, max_norm, norm_type));
}

DynTensor init_table(const EmbeddingConfig& config, Device device, Generator* gen,
                     int64_t& padding_idx, const char* op) {
  EMBER_CHECK(config.num_embeddings > 0 && config.embedding_dim > 0, "[", op,
              "] sizes must be positive, got ", config.num_embeddings, " x ", config.embedding_dim);
  DynTensor w =
      randn(Shape{config.num_embeddings, config.embedding_dim}, config.dtype, device, gen);
  if (const auto p = wrap_padding(config.padding, config.num_embeddings, op)) {
    padding_idx = *p;
    w = slice_assign(w, {Slice{*p, *p + 1}},
                     zeros(Shape{1, config.embedding_dim}, config.dtype, device));
  }
  return w;
}

}  // namespace

DynTensor embedding_renorm(const DynTensor& weight, const DynTensor& indices, double max_norm,
                           double norm_type) {
  check_table(indices, weight, "embedding_renorm");
  auto guard = no_grad();
  const DynTensor w = detach(weight);
  const int64_t num = w.size(0);
  const DynTensor flat = reshape(indices, Shape{indices.numel()});
  const DynTensor used = gt(index_add(zeros(Shape{num}, w.dtype(), w.device()), 0, flat,
                                      ones(Shape{flat.numel()}, w.dtype(), w.device())),
                            0.0);
  const DynTensor norms = norm(w, norm_type, {1}, true);  // [num, 1]
  const DynTensor too_long = logical_and(unsqueeze(used, 1), gt(norms, max_norm));
  // Rows within max_norm are multiplied by exactly 1, so they keep their bits.
  const DynTensor scale = where(too_long, div(max_norm, add(norms, 1e-7)), 1.0);
  return mul(w, scale);
}

DynTensor embedding(const DynTensor& indices, const DynTensor& weight,
                    std::optional<int64_t> padding_idx, std::optional<double> max_norm,
                    double norm_type, bool scale_grad_by_freq) {
  check_table(indices, weight, "embedding");
  const auto padding = wrap_padding(padding_idx, weight.size(0), "embedding");
  const DynTensor flat = reshape(indices, Shape{indices.numel()});
  const DynTensor rows = lookup(flat, weight, padding, max_norm, norm_type, scale_grad_by_freq);
  Shape shape = indices.shape();
  shape.push_back(weight.size(1));
  return reshape(rows, shape);
}

DynTensor embedding_bag(const DynTensor& input, const DynTensor& weight, const DynTensor& offsets,
                        EmbeddingBagMode mode, const DynTensor& per_sample_weights,
                        std::optional<int64_t> padding_idx, std::optional<double> max_norm,
                        double norm_type, bool scale_grad_by_freq, bool include_last_offset) {
  const char* op = "embedding_bag";
  check_table(input, weight, op);
  const auto padding = wrap_padding(padding_idx, weight.size(0), op);
  const int64_t dim = weight.size(1);
  const Device device = weight.device();
  EMBER_CHECK(input.rank() == 1 || input.rank() == 2, "[", op,
              "] input must be 1-D (with offsets) or 2-D (one bag per row), got ", input.shape());
  EMBER_CHECK(!(scale_grad_by_freq && mode == EmbeddingBagMode::Max), "[", op,
              "] scale_grad_by_freq is not supported with mode max");
  if (per_sample_weights.defined()) {
    EMBER_CHECK(mode == EmbeddingBagMode::Sum, "[", op,
                "] per_sample_weights are only supported with mode sum");
    EMBER_CHECK(per_sample_weights.shape() == input.shape(), "[", op,
                "] per_sample_weights must have the input's shape ", input.shape(), ", got ",
                per_sample_weights.shape());
  }
  const int64_t n = input.numel();
  const DynTensor flat = reshape(input, Shape{n});
  DynTensor rows = lookup(flat, weight, padding, max_norm, norm_type, scale_grad_by_freq);
  if (per_sample_weights.defined()) {
    rows = mul(rows, unsqueeze(reshape(per_sample_weights, Shape{n}), 1));
  }
  // Entries at padding_idx are left out of the bag.
  const DynTensor keep = padding ? ne(flat, *padding) : ones(Shape{n}, DType::boolean, device);

  int64_t bags = 0;
  DynTensor bag_of;  // [n]: the bag of each entry
  if (input.rank() == 2) {
    EMBER_CHECK(!offsets.defined(), "[", op, "] offsets must be undefined with a 2-D input ",
                input.shape());
    bags = input.size(0);
    bag_of = reshape(
        expand(reshape(arange(0, bags, 1, DType::i64, device), Shape{bags, 1}), input.shape()),
        Shape{n});
  } else {
    EMBER_CHECK(offsets.defined() && offsets.rank() == 1 && kind_of(offsets.dtype()) == KindId::Int,
                "[", op, "] a 1-D input needs 1-D Int offsets, got ",
                offsets.defined() ? offsets.shape() : Shape{});
    bags = offsets.numel() - (include_last_offset ? 1 : 0);
    EMBER_CHECK(bags >= 1, "[", op, "] offsets ", offsets.shape(), " give no bag",
                include_last_offset ? " (include_last_offset)" : "");
    // bag_of[j] = (number of starts <= j) - 1, by a cumulative count of the starts. With
    // include_last_offset the end counts as a start too: entries past it fall in a slot that is
    // dropped. Offsets outside [0, n] are index errors of index_add (at the next sync).
    const int64_t starts = offsets.numel();
    const DynTensor marks =
        index_add(zeros(Shape{n + 1}, DType::i64, device), 0, cast(offsets, DType::i64),
                  ones(Shape{starts}, DType::i64, device));
    bag_of = sub(slice(cumsum(marks, 0), {Slice{0, n}}), 1);
  }

  const DType dt = rows.dtype();
  if (mode != EmbeddingBagMode::Max) {
    const int64_t slots = input.rank() == 1 ? offsets.numel() : bags;
    const DynTensor kept = where(unsqueeze(keep, 1), rows, 0.0);
    DynTensor sums = index_add(zeros(Shape{slots, dim}, dt, device), 0, bag_of, kept);
    DynTensor counts = index_add(zeros(Shape{slots}, dt, device), 0, bag_of, cast(keep, dt));
    if (slots != bags) {
      sums = slice(sums, {Slice{0, bags}});
      counts = slice(counts, {Slice{0, bags}});
    }
    if (mode == EmbeddingBagMode::Sum) return sums;
    return div(sums, unsqueeze(clamp_min(counts, 1.0), 1));  // an empty bag's mean is 0
  }

  // Max: the bags padded to one length L ([bags, L] positions, -1 for none), then amax.
  int64_t len = 0;
  DynTensor pos;
  if (input.rank() == 2) {
    len = input.size(1);
    pos = reshape(arange(0, n, 1, DType::i64, device), Shape{bags, len});
  } else {
    const std::vector<int64_t> off = cast(offsets, DType::i64).to_vector<int64_t>();
    EMBER_CHECK(off[0] == 0, "[", op, "] offsets[0] must be 0, got ", off[0]);
    std::vector<int64_t> start(off.begin(), off.begin() + bags), end(bags);
    for (int64_t b = 0; b < bags; ++b) {
      end[b] = b + 1 < static_cast<int64_t>(off.size()) ? off[b + 1] : n;
      if (!include_last_offset && b + 1 == bags) end[b] = n;
      EMBER_CHECK(start[b] >= 0 && start[b] <= end[b] && end[b] <= n, "[", op,
                  "] offsets must be non-decreasing within [0, ", n, "], got ", offsets.shape());
      len = std::max(len, end[b] - start[b]);
    }
    std::vector<int64_t> p(static_cast<size_t>(bags * std::max<int64_t>(len, 1)), -1);
    for (int64_t b = 0; b < bags; ++b) {
      for (int64_t j = start[b]; j < end[b]; ++j) p[b * len + (j - start[b])] = j;
    }
    len = std::max<int64_t>(len, 1);
    pos = from_data(TensorData::from(p, Shape{bags, len}), device);
  }
  const DynTensor valid = ge(pos, 0);
  const DynTensor safe = reshape(where(valid, pos, 0), Shape{bags * len});
  const DynTensor picked = reshape(index_select(rows, 0, safe), Shape{bags, len, dim});
  const DynTensor in_bag =
      logical_and(valid, reshape(index_select(keep, 0, safe), Shape{bags, len}));
  const double inf = std::numeric_limits<double>::infinity();
  const DynTensor best = amax(where(unsqueeze(in_bag, 2), picked, -inf), {1});
  return where(unsqueeze(any(in_bag, {1}), 1), best, 0.0);  // an empty bag gives zeros
}

std::string EmbeddingConfig::to_json() const {
  return detail::JsonWriter()
      .field("num_embeddings", num_embeddings)
      .field("embedding_dim", embedding_dim)
      .field("padding_idx", padding ? *padding : int64_t{-1})
      .field("max_norm", max_norm_value)
      .field("norm_type", norm_type_value)
      .field("scale_grad_by_freq", scale_grad_by_frequency)
      .field("dtype", dtype_name(dtype))
      .str();
}

EmbeddingConfig EmbeddingConfig::from_json(const std::string& json) {
  const detail::JsonReader r(json, "EmbeddingConfig");
  EmbeddingConfig c(r.integer("num_embeddings"), r.integer("embedding_dim"));
  // -1 here means none (the form this writes); a negative index is given as num - k.
  const int64_t pad = r.integer("padding_idx", -1);
  if (pad >= 0) c.padding = pad;
  c.max_norm_value = r.optional_number("max_norm", std::nullopt);
  c.norm_type_value = r.number("norm_type", 2.0);
  c.scale_grad_by_frequency = r.boolean("scale_grad_by_freq", false);
  c.dtype = r.dtype("dtype", DType::f32);
  return c;
}

Embedding::Embedding(const EmbeddingConfig& config, Device device, Generator* gen)
    : max_norm(config.max_norm_value),
      norm_type(config.norm_type_value),
      scale_grad_by_freq(config.scale_grad_by_frequency) {
  weight = Param<2>(Tensor<2>(init_table(config, device, gen, padding_idx, "Embedding")));
}

DynTensor Embedding::forward(const DynTensor& indices) const {
  if (max_norm) renorm_in_module(weight, indices, *max_norm, norm_type);
  return embedding(indices, weight.dyn(),
                   padding_idx >= 0 ? std::optional<int64_t>(padding_idx) : std::nullopt,
                   std::nullopt, norm_type, scale_grad_by_freq);
}

std::string EmbeddingBagConfig::to_json() const {
  std::string t = table.to_json();
  const char* m = bag_mode == EmbeddingBagMode::Sum    ? "sum"
                  : bag_mode == EmbeddingBagMode::Mean ? "mean"
                                                       : "max";
  t.pop_back();  // the table's fields, then the bag's
  return t + ", \"mode\": \"" + m +
         "\", \"include_last_offset\": " + (include_last ? "true" : "false") + "}";
}

EmbeddingBagConfig EmbeddingBagConfig::from_json(const std::string& json) {
  const detail::JsonReader r(json, "EmbeddingBagConfig");
  EmbeddingBagConfig c(1, 1);
  c.table = EmbeddingConfig::from_json(json);
  const std::string m = r.string("mode", "mean");
  EMBER_CHECK(m == "sum" || m == "mean" || m == "max",
              "[EmbeddingBagConfig] mode must be sum, mean or max, got ", m);
  c.bag_mode = m == "sum"    ? EmbeddingBagMode::Sum
               : m == "mean" ? EmbeddingBagMode::Mean
                             : EmbeddingBagMode::Max;
  c.include_last = r.boolean("include_last_offset", false);
  return c;
}

EmbeddingBag::EmbeddingBag(const EmbeddingBagConfig& config, Device device, Generator* gen)
    : max_norm(config.table.max_norm_value),
      norm_type(config.table.norm_type_value),
      scale_grad_by_freq(config.table.scale_grad_by_frequency),
      mode(config.bag_mode),
      include_last_offset(config.include_last) {
  weight = Param<2>(Tensor<2>(init_table(config.table, device, gen, padding_idx, "EmbeddingBag")));
}

DynTensor EmbeddingBag::forward(const DynTensor& input, const DynTensor& offsets,
                                const DynTensor& per_sample_weights) const {
  if (max_norm) renorm_in_module(weight, input, *max_norm, norm_type);
  return embedding_bag(input, weight.dyn(), offsets, mode, per_sample_weights,
                       padding_idx >= 0 ? std::optional<int64_t>(padding_idx) : std::nullopt,
                       std::nullopt, norm_type, scale_grad_by_freq, include_last_offset);
}

}  // namespace ember::nn
