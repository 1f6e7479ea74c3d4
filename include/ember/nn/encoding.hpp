// Position encodings and resampling: sinusoidal PositionalEncoding (Vaswani et al.), rotary
// position embeddings (RoPE, Su et al.), and interpolate (torch.nn.functional.interpolate).
#pragma once

#include <string>

#include <optional>
#include <vector>

#include "ember/nn/dropout.hpp"
#include "ember/tensor/ops/vision.hpp"

namespace ember::nn {

// interpolate and its modes live in the tensor layer (ember/tensor/ops/vision.hpp).
using ember::interpolate;
using ember::InterpolateMode;

/// pe[pos, 2i] = sin(pos / 10000^(2i / d)), pe[pos, 2i + 1] = cos(...), added to the input
/// ([L, N, d], or [N, L, d] when batch_first), then dropout — PyTorch's Transformer tutorial.
struct PositionalEncodingConfig {
  int64_t d_model = 0;
  int64_t max_len = 5000;
  double dropout_p = 0.1;
  bool is_batch_first = false;
  DType dtype = DType::f32;

  explicit PositionalEncodingConfig(int64_t d) : d_model(d) {}
  PositionalEncodingConfig& max_length(int64_t n) {
    max_len = n;
    return *this;
  }
  PositionalEncodingConfig& dropout(double p) {
    dropout_p = p;
    return *this;
  }
  PositionalEncodingConfig& batch_first(bool on) {
    is_batch_first = on;
    return *this;
  }
  PositionalEncodingConfig& with_dtype(DType d) {
    dtype = d;
    return *this;
  }
  std::string to_json() const;
  static PositionalEncodingConfig from_json(const std::string& json);
};

class PositionalEncoding {
 public:
  Buffer<2> pe;  // [max_len, d_model]
  Dropout dropout;
  bool batch_first = false;
  EMBER_MODULE(PositionalEncoding, pe, dropout)

  explicit PositionalEncoding(int64_t d_model, int64_t max_len = 5000, double dropout_p = 0.1,
                              bool batch_first = false, Device device = default_device(),
                              DType dtype = DType::f32);
  explicit PositionalEncoding(const PositionalEncodingConfig& c, Device device = default_device())
      : PositionalEncoding(c.d_model, c.max_len, c.dropout_p, c.is_batch_first, device, c.dtype) {}
  Tensor<3> operator()(const Tensor<3>& x) const { return Tensor<3>(forward(x.dyn())); }
  DynTensor forward(const DynTensor& x) const;
};

/// Rotary position embeddings for queries and keys [..., L, dim], in the rotate-half layout of
/// GPT-NeoX and Hugging Face's LLaMA: x * cos + rotate_half(x) * sin, the angle of position p
/// and pair i being p * theta^(-2i / dim). No parameters; cos and sin are computed per call.
struct RotaryEncoding {
  int64_t dim = 0;
  double theta = 10000.0;
  EMBER_MODULE(RotaryEncoding)
  std::string to_json() const;  // its own config, as the other option-only modules
  static RotaryEncoding from_json(const std::string& json);

  /// Positions start_pos, start_pos + 1, ... (start_pos > 0 for cached decoding).
  DynTensor forward(const DynTensor& x, int64_t start_pos = 0) const;
  template <int D>
  Tensor<D> operator()(const Tensor<D>& x, int64_t start_pos = 0) const {
    return Tensor<D>(forward(x.dyn(), start_pos));
  }
};

}  // namespace ember::nn
