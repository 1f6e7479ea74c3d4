// LSTM and GRU as composites of tensor ops, so autodiff differentiates them. Per layer and
// direction the input projection of the whole sequence is one matmul; only the recurrent product
// runs step by step.
#include "ember/nn/rnn.hpp"

#include <algorithm>
#include <cmath>

#include "config_json.hpp"
#include "ember/core/error.hpp"
#include "ember/nn/dropout.hpp"
#include "ember/nn/linear.hpp"

namespace ember::nn {
namespace {

const char* layer_name(RnnMode mode) { return mode == RnnMode::Lstm ? "LSTM" : "GRU"; }
int64_t gate_count(RnnMode mode) { return mode == RnnMode::Lstm ? 4 : 3; }

DynTensor bias_of(const std::optional<Param<1>>& b) { return b ? b->dyn() : DynTensor(); }

// One LSTM step: gates = x W_ih^T + b_ih + b_hh (precomputed) + h W_hh^T, in PyTorch's order.
void lstm_step(const DynTensor& gi_t, const DynTensor& w_hh_t, DynTensor& h, DynTensor& c) {
  const DynTensor gates = add(gi_t, matmul(h, w_hh_t));
  // One sigmoid over all four gates (g's quarter is unused): cheaper, forward and backward,
  // than three on strided [N, H] views.
  const std::vector<DynTensor> s = chunk(sigmoid(gates), 4, 1);
  const DynTensor g = tanh(narrow(gates, 1, 2 * h.size(1), h.size(1)));
  c = add(mul(s[1], c), mul(s[0], g));
  h = mul(s[3], tanh(c));
}

// One GRU step: b_hh stays inside r * (W_hn h + b_hn), so it cannot be folded into gi.
void gru_step(const DynTensor& gi_t, const DynTensor& w_hh_t, const DynTensor& b_hh, DynTensor& h) {
  DynTensor gh = matmul(h, w_hh_t);
  if (b_hh.defined()) gh = add(gh, b_hh);
  const std::vector<DynTensor> a = chunk(gi_t, 3, 1), b = chunk(gh, 3, 1);
  const DynTensor r = sigmoid(add(a[0], b[0]));
  const DynTensor z = sigmoid(add(a[1], b[1]));
  const DynTensor n = tanh(add(a[2], mul(r, b[2])));
  h = add(n, mul(z, sub(h, n)));  // (1 - z) n + z h
}

// The time steps of seq [L, ...] as views. Their gradients reach seq as pieces that the
// backward engine adds into one buffer (BackwardArgs::add_piece), so L steps cost O(L) there.
std::vector<DynTensor> time_steps(const DynTensor& seq) {
  std::vector<DynTensor> steps;
  steps.reserve(static_cast<size_t>(seq.size(0)));
  for (int64_t t = 0; t < seq.size(0); ++t) steps.push_back(select(seq, 0, t));
  return steps;
}

}  // namespace

std::string RnnConfig::to_json() const {
  return detail::JsonWriter()
      .field("input_size", input_size)
      .field("hidden_size", hidden_size)
      .field("num_layers", num_layers)
      .field("bias", has_bias)
      .field("batch_first", batch_first)
      .field("dropout", dropout_p)
      .field("bidirectional", is_bidirectional)
      .field("dtype", dtype_name(dtype))
      .str();
}

RnnConfig RnnConfig::from_json(const std::string& json) {
  const detail::JsonReader r(json, "RnnConfig");
  RnnConfig c(r.integer("input_size"), r.integer("hidden_size"));
  c.num_layers = r.integer("num_layers", 1);
  c.has_bias = r.boolean("bias", true);
  c.batch_first = r.boolean("batch_first", false);
  c.dropout_p = r.number("dropout", 0.0);
  c.is_bidirectional = r.boolean("bidirectional", false);
  c.dtype = r.dtype("dtype", DType::f32);
  return c;
}

namespace detail {

std::string rnn_suffix(int64_t layer, bool reverse) {
  return "_l" + std::to_string(layer) + (reverse ? "_reverse" : "");
}

std::vector<RnnWeights> make_rnn_weights(RnnMode mode, const RnnConfig& c, Device device,
                                         Generator* gen) {
  const char* op = layer_name(mode);
  EMBER_CHECK(c.input_size > 0 && c.hidden_size > 0, "[", op,
              "] input_size and hidden_size must be positive, got ", c.input_size, " and ",
              c.hidden_size);
  EMBER_CHECK(c.num_layers >= 1, "[", op, "] num_layers must be at least 1, got ", c.num_layers);
  EMBER_CHECK(c.dropout_p >= 0.0 && c.dropout_p <= 1.0, "[", op,
              "] dropout must be in [0, 1], got ", c.dropout_p);
  const int64_t dirs = c.is_bidirectional ? 2 : 1, h = c.hidden_size, g = gate_count(mode) * h;
  const double bound = 1.0 / std::sqrt(static_cast<double>(h));
  auto uniform = [&](Shape shape) { return rand(shape, c.dtype, device, gen, -bound, bound); };
  std::vector<RnnWeights> weights;
  for (int64_t layer = 0; layer < c.num_layers; ++layer) {
    const int64_t in = layer == 0 ? c.input_size : dirs * h;
    for (int64_t d = 0; d < dirs; ++d) {
      RnnWeights w;
      w.weight_ih = Param<2>(Tensor<2>(uniform(Shape{g, in})));
      w.weight_hh = Param<2>(Tensor<2>(uniform(Shape{g, h})));
      if (c.has_bias) {
        w.bias_ih = Param<1>(Tensor<1>(uniform(Shape{g})));
        w.bias_hh = Param<1>(Tensor<1>(uniform(Shape{g})));
      }
      weights.push_back(std::move(w));
    }
  }
  return weights;
}

RnnOutput rnn_forward(RnnMode mode, const RnnConfig& c, const std::vector<RnnWeights>& weights,
                      bool training, const DynTensor& x, const DynTensor& h0, const DynTensor& c0) {
  const char* op = layer_name(mode);
  const bool lstm = mode == RnnMode::Lstm;
  const int64_t dirs = c.is_bidirectional ? 2 : 1, hidden = c.hidden_size;
  const int64_t states = c.num_layers * dirs;
  EMBER_CHECK(!weights.empty() && static_cast<int64_t>(weights.size()) == states, "[", op, "] has ",
              weights.size(), " weight sets for ", states,
              " layers and directions (a default-constructed layer?)");
  EMBER_CHECK(x.defined() && (x.rank() == 3 || x.rank() == 2), "[", op, "] expects input [",
              c.batch_first ? "N, L, " : "L, N, ", c.input_size, "] or unbatched [L, ",
              c.input_size, "], got ", x.defined() ? x.shape() : Shape{});
  EMBER_CHECK(x.size(-1) == c.input_size, "[", op, "] input ", x.shape(), " has ", x.size(-1),
              " features but input_size is ", c.input_size);
  const DType dtype = weights[0].weight_ih.dyn().dtype();
  EMBER_CHECK(x.dtype() == dtype, "[", op, "] input dtype ", dtype_name(x.dtype()),
              " differs from the parameters' ", dtype_name(dtype));

  // Sequence first inside, with a batch dim: [L, N, input_size].
  const bool batched = x.rank() == 3;
  const DynTensor seq = batched ? (c.batch_first ? transpose(x, 0, 1) : x) : unsqueeze(x, 1);
  const int64_t len = seq.size(0), n = seq.size(1);
  EMBER_CHECK(len > 0, "[", op, "] needs a sequence length above 0, got input ", x.shape());

  auto initial = [&](const DynTensor& s, const char* name) {
    if (!s.defined()) return zeros(Shape{states, n, hidden}, dtype, seq.device());
    const Shape want = batched ? Shape{states, n, hidden} : Shape{states, hidden};
    EMBER_CHECK(s.shape() == want, "[", op, "] ", name, " must be ", want,
                " (num_layers * directions, ", batched ? "batch, " : "", "hidden_size) for input ",
                x.shape(), ", got ", s.shape());
    EMBER_CHECK(s.dtype() == dtype, "[", op, "] ", name, " dtype ", dtype_name(s.dtype()),
                " differs from the parameters' ", dtype_name(dtype));
    return batched ? s : unsqueeze(s, 1);
  };
  const DynTensor h_init = initial(h0, "h0");
  const DynTensor c_init = lstm ? initial(c0, "c0") : DynTensor();

  DynTensor layer_in = seq;
  std::vector<DynTensor> h_last, c_last;
  for (int64_t layer = 0; layer < c.num_layers; ++layer) {
    if (layer > 0 && training && c.dropout_p > 0.0) {
      layer_in = dropout(layer_in, c.dropout_p, true);
    }
    std::vector<DynTensor> dir_out;
    for (int64_t d = 0; d < dirs; ++d) {
      const int64_t k = layer * dirs + d;
      const RnnWeights& w = weights[static_cast<size_t>(k)];
      const DynTensor b_hh = bias_of(w.bias_hh);
      DynTensor gi = linear(layer_in, w.weight_ih.dyn(), bias_of(w.bias_ih));  // [L, N, G * H]
      if (lstm && b_hh.defined()) gi = add(gi, b_hh);
      const DynTensor w_hh_t = transpose(w.weight_hh.dyn(), 0, 1);
      DynTensor h = select(h_init, 0, k);
      DynTensor cell = lstm ? select(c_init, 0, k) : DynTensor();
      const std::vector<DynTensor> gi_steps = time_steps(gi);
      std::vector<DynTensor> out(static_cast<size_t>(len));
      for (int64_t step = 0; step < len; ++step) {
        const int64_t t = d == 0 ? step : len - 1 - step;
        const DynTensor& gi_t = gi_steps[static_cast<size_t>(t)];
        if (lstm) {
          lstm_step(gi_t, w_hh_t, h, cell);
        } else {
          gru_step(gi_t, w_hh_t, b_hh, h);
        }
        out[static_cast<size_t>(t)] = h;
      }
      dir_out.push_back(stack(out, 0));
      h_last.push_back(h);
      if (lstm) c_last.push_back(cell);
    }
    layer_in = dirs == 2 ? cat(dir_out, 2) : dir_out[0];
  }

  RnnOutput result;
  result.output =
      batched ? (c.batch_first ? transpose(layer_in, 0, 1) : layer_in) : squeeze(layer_in, 1);
  result.h_n = stack(h_last, 0);
  if (lstm) result.c_n = stack(c_last, 0);
  if (!batched) {
    result.h_n = squeeze(result.h_n, 1);
    if (lstm) result.c_n = squeeze(result.c_n, 1);
  }
  return result;
}

}  // namespace detail
}  // namespace ember::nn
