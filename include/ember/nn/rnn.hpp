// Recurrent layers: LSTM and GRU (torch.nn.LSTM, torch.nn.GRU) with PyTorch's parameter names
// (weight_ih_l0, weight_hh_l1_reverse, ...), layouts, gate order and initialisation. Multi-layer,
// bidirectional, batch_first, dropout between layers; proj_size is not supported.
#pragma once

#include <string>
#include <vector>

#include "ember/nn/module.hpp"

namespace ember::nn {

enum class RnnMode : uint8_t { Lstm, Gru };

struct RnnConfig {
  int64_t input_size;
  int64_t hidden_size;
  int64_t num_layers = 1;
  bool has_bias = true;
  bool batch_first = false;
  double dropout_p = 0.0;  // on the outputs of every layer but the last, when training
  bool is_bidirectional = false;
  DType dtype = DType::f32;

  RnnConfig(int64_t input, int64_t hidden) : input_size(input), hidden_size(hidden) {}
  RnnConfig& layers(int64_t n) {
    num_layers = n;
    return *this;
  }
  RnnConfig& bias(bool on) {
    has_bias = on;
    return *this;
  }
  RnnConfig& batch_first_layout(bool on) {
    batch_first = on;
    return *this;
  }
  RnnConfig& dropout(double p) {
    dropout_p = p;
    return *this;
  }
  RnnConfig& bidirectional(bool on = true) {
    is_bidirectional = on;
    return *this;
  }
  RnnConfig& with_dtype(DType t) {
    dtype = t;
    return *this;
  }
  std::string to_json() const;
  static RnnConfig from_json(const std::string& json);
};
using LSTMConfig = RnnConfig;
using GRUConfig = RnnConfig;

/// The parameters of one layer and direction, named in PyTorch as `weight_ih_l{k}[_reverse]`
/// ([gates * hidden, input]), `weight_hh_l{k}[_reverse]` ([gates * hidden, hidden]),
/// `bias_ih_l{k}[_reverse]`, `bias_hh_l{k}[_reverse]`. Gates: i, f, g, o (LSTM); r, z, n (GRU).
struct RnnWeights {
  Param<2> weight_ih, weight_hh;
  std::optional<Param<1>> bias_ih, bias_hh;
};

/// output [L, N, directions * hidden] ([N, L, ...] when batch_first, [L, ...] unbatched); h_n
/// (and the LSTM's c_n) [num_layers * directions, N, hidden] ([num_layers * directions, hidden]
/// unbatched), the last layer's state last and the reverse direction after the forward one.
struct RnnOutput {
  DynTensor output;
  DynTensor h_n;
  DynTensor c_n;  // undefined for GRU
};

namespace detail {
/// `_l{layer}` or `_l{layer}_reverse`.
std::string rnn_suffix(int64_t layer, bool reverse);
/// Every weight uniform on [-1/sqrt(hidden), 1/sqrt(hidden)], layer-major, forward first.
std::vector<RnnWeights> make_rnn_weights(RnnMode mode, const RnnConfig& config, Device device,
                                         Generator* gen);
RnnOutput rnn_forward(RnnMode mode, const RnnConfig& config, const std::vector<RnnWeights>& weights,
                      bool training, const DynTensor& x, const DynTensor& h0, const DynTensor& c0);
}  // namespace detail

/// LSTM (RnnMode::Lstm) or GRU (RnnMode::Gru); use the aliases below.
template <RnnMode M>
class Rnn {
 public:
  RnnConfig config{0, 0};
  std::vector<RnnWeights> weights;  // [layer * directions + direction]
  ModeFlag mode;

  Rnn() = default;
  explicit Rnn(const RnnConfig& c, Device device = default_device(), Generator* gen = nullptr)
      : config(c), weights(detail::make_rnn_weights(M, c, device, gen)) {}
  Rnn(int64_t input_size, int64_t hidden_size, Device device = default_device())
      : Rnn(RnnConfig(input_size, hidden_size), device) {}

  /// x [L, N, input_size] ([N, L, input_size] when batch_first, or unbatched [L, input_size]);
  /// h0 and c0 as h_n and c_n, zeros when undefined.
  RnnOutput forward(const DynTensor& x, const DynTensor& h0 = {}, const DynTensor& c0 = {}) const
      requires(M == RnnMode::Lstm) {
    return detail::rnn_forward(M, config, weights, mode.training, x, h0, c0);
  }
  RnnOutput forward(const DynTensor& x, const DynTensor& h0 = {}) const
      requires(M == RnnMode::Gru) {
    return detail::rnn_forward(M, config, weights, mode.training, x, h0, {});
  }
  /// The output sequence only.
  Tensor<3> operator()(const Tensor<3>& x) const { return Tensor<3>(forward(x.dyn()).output); }

  // The module machinery, by hand (as Sequential): the parameter names depend on the layer
  // count, so they are visited from `weights` rather than listed with EMBER_MODULE.
  static constexpr const char* ember_module_name() { return M == RnnMode::Lstm ? "LSTM" : "GRU"; }
  template <class V>
  void ember_visit(V& visitor) {
    const int64_t dirs = config.is_bidirectional ? 2 : 1;
    for (size_t i = 0; i < weights.size(); ++i) {
      const std::string s = detail::rnn_suffix(static_cast<int64_t>(i) / dirs, i % dirs == 1);
      RnnWeights& w = weights[i];
      visitor("weight_ih" + s, w.weight_ih);
      visitor("weight_hh" + s, w.weight_hh);
      if (w.bias_ih) visitor("bias_ih" + s, *w.bias_ih);
      if (w.bias_hh) visitor("bias_hh" + s, *w.bias_hh);
    }
    visitor("mode", mode);
  }
  int64_t num_params() const { return ::ember::nn::num_params(module_tree(*this)); }
  Rnn& train(bool on = true) {
    set_training(module_tree(*this), on);
    return *this;
  }
  Rnn& eval() { return train(false); }
  Rnn& to(Device device) {
    to_device(module_tree(*this), device);
    return *this;
  }
  Rnn& to(DType dtype) {
    to_dtype(module_tree(*this), dtype);
    config.dtype = dtype;
    return *this;
  }
  Rnn& freeze(std::string_view pattern = "") {
    set_trainable(module_tree(*this), pattern, false);
    return *this;
  }
  Rnn& unfreeze(std::string_view pattern = "") {
    set_trainable(module_tree(*this), pattern, true);
    return *this;
  }
  Rnn valid() const {
    Rnn copy = *this;
    make_valid(module_tree(copy));
    return copy;
  }
  Rnn deep_copy() const {
    Rnn copy = *this;
    make_independent(module_tree(copy));
    return copy;
  }
  std::string summary() const { return ::ember::nn::summary(module_tree(*this)); }
};

using LSTM = Rnn<RnnMode::Lstm>;
using GRU = Rnn<RnnMode::Gru>;

}  // namespace ember::nn
