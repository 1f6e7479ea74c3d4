// LSTM and GRU against PyTorch (fixtures/make_rnn_fixtures.py): 2 layers, bidirectional or not,
// batch_first or not, with and without initial states, and unbatched; outputs, final states
// and the gradients w.r.t. the input, the initial states and every parameter, in float64, to
// 1e-9 relative. Then module paths, config JSON, dropout and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <ember/ember.hpp>
#include <ember/nn/nn.hpp>
#include <filesystem>

#include "autodiff/fixture.hpp"

using namespace ember;

namespace {

const test::Fixture& fixture() {
  static const test::Fixture f(EMBER_NN_FIXTURES "/rnn.txt");
  return f;
}
bool has(const std::string& name) { return fixture().has(name); }
DynTensor get(const std::string& name) { return fixture().get(name); }
void expect_close(const DynTensor& got, const std::string& name) {
  fixture().expect_close(got, name, 1e-9, 1e-12);
}

std::string case_name(const std::string& kind, bool bidir, bool batch_first, bool states,
                      bool batched = true) {
  return kind + (bidir ? "_bi" : "_uni") + (batch_first ? "_bf" : "_sf") + (states ? "_h0" : "") +
         (batched ? "" : "_unbatched");
}

// Runs one fixture case through LSTM or GRU and checks everything PyTorch recorded.
template <nn::RnnMode M>
void check_case(const std::string& c, bool bidir, bool batch_first) {
  SCOPED_TRACE(c);
  const bool lstm = M == nn::RnnMode::Lstm;
  nn::Rnn<M> rnn(nn::RnnConfig(3, 4)
                     .layers(2)
                     .bidirectional(bidir)
                     .batch_first_layout(batch_first)
                     .with_dtype(DType::f64));
  const auto params = nn::named_params(nn::module_tree(rnn));
  ASSERT_EQ(params.size(), bidir ? 16u : 8u);
  for (const auto& p : params) p.slot->set_dyn(get(c + ".p." + p.path));

  const DynTensor x = require_grad(get(c + ".in.x"));
  const bool states = has(c + ".in.h0");
  const DynTensor h0 = states ? require_grad(get(c + ".in.h0")) : DynTensor();
  const DynTensor c0 = states && lstm ? require_grad(get(c + ".in.c0")) : DynTensor();
  nn::RnnOutput out;
  if constexpr (M == nn::RnnMode::Lstm) {
    out = rnn.forward(x, h0, c0);
  } else {
    out = rnn.forward(x, h0);
  }
  expect_close(out.output, c + ".y");
  expect_close(out.h_n, c + ".h_n");
  DynTensor loss =
      add(sum(mul(out.output, get(c + ".seed.y"))), sum(mul(out.h_n, get(c + ".seed.h_n"))));
  if (lstm) {
    expect_close(out.c_n, c + ".c_n");
    loss = add(loss, sum(mul(out.c_n, get(c + ".seed.c_n"))));
  } else {
    EXPECT_FALSE(out.c_n.defined());
  }
  const Gradients g = backward(loss);
  expect_close(g.get(x), c + ".grad.x");
  if (states) expect_close(g.get(h0), c + ".grad.h0");
  if (states && lstm) expect_close(g.get(c0), c + ".grad.c0");
  for (const auto& p : params) expect_close(g.get(p.slot->dyn()), c + ".grad." + p.path);
}

struct RnnModel {
  nn::LSTM lstm;
  nn::GRU gru;
  EMBER_MODULE(RnnModel, lstm, gru)
};

}  // namespace

TEST(RnnParity, Lstm) {
  for (const bool bidir : {false, true})
    for (const bool bf : {false, true})
      for (const bool states : {false, true})
        check_case<nn::RnnMode::Lstm>(case_name("lstm", bidir, bf, states), bidir, bf);
}

TEST(RnnParity, Gru) {
  for (const bool bidir : {false, true})
    for (const bool bf : {false, true})
      for (const bool states : {false, true})
        check_case<nn::RnnMode::Gru>(case_name("gru", bidir, bf, states), bidir, bf);
}

TEST(RnnParity, Unbatched) {
  check_case<nn::RnnMode::Lstm>(case_name("lstm", true, false, true, false), true, false);
  check_case<nn::RnnMode::Gru>(case_name("gru", true, false, true, false), true, false);
}

TEST(Rnn, PyTorchParameterPathsAndInit) {
  RnnModel m{nn::LSTM(nn::LSTMConfig(5, 8).layers(2).bidirectional()),
             nn::GRU(nn::GRUConfig(5, 8).bias(false))};
  std::vector<std::string> paths;
  for (const auto& p : nn::named_params(nn::module_tree(m))) paths.push_back(p.path);
  const std::vector<std::string> want = {
      "lstm.weight_ih_l0",         "lstm.weight_hh_l0",         "lstm.bias_ih_l0",
      "lstm.bias_hh_l0",           "lstm.weight_ih_l0_reverse", "lstm.weight_hh_l0_reverse",
      "lstm.bias_ih_l0_reverse",   "lstm.bias_hh_l0_reverse",   "lstm.weight_ih_l1",
      "lstm.weight_hh_l1",         "lstm.bias_ih_l1",           "lstm.bias_hh_l1",
      "lstm.weight_ih_l1_reverse", "lstm.weight_hh_l1_reverse", "lstm.bias_ih_l1_reverse",
      "lstm.bias_hh_l1_reverse",   "gru.weight_ih_l0",          "gru.weight_hh_l0"};
  EXPECT_EQ(paths, want);
  // PyTorch's counts: torch.nn.LSTM(5, 8, 2, bidirectional=True) has 2624 parameters, GRU(5, 8,
  // bias=False) 312.
  EXPECT_EQ(m.lstm.num_params(), 2624);
  EXPECT_EQ(m.gru.num_params(), 312);
  EXPECT_EQ(m.lstm.weights[2].weight_ih.shape(), Shape({32, 16}));
  const double bound = 1.0 / std::sqrt(8.0);
  for (const auto& p : nn::named_params(nn::module_tree(m))) {
    EXPECT_LE(amax(abs(p.slot->dyn())).item<double>(), bound) << p.path;
    EXPECT_GT(amax(abs(p.slot->dyn())).item<double>(), 0.5 * bound) << p.path;
  }
  EXPECT_NE(m.lstm.summary().find("weight_hh_l1_reverse"), std::string::npos);

  const auto y = m.lstm(Tensor<3>::randn({7, 2, 5}));
  EXPECT_EQ(y.shape(), Shape({7, 2, 16}));
  const nn::RnnOutput g = m.gru.forward(randn(Shape{7, 5}, DType::f32));
  EXPECT_EQ(g.output.shape(), Shape({7, 8}));
  EXPECT_EQ(g.h_n.shape(), Shape({1, 8}));
}

TEST(Rnn, LoadsPyTorchStateDictAndRoundTrips) {
  // PyTorch's state dicts, written by Python's safetensors, load by name and give its outputs.
  RnnModel m{
      nn::LSTM(nn::LSTMConfig(3, 4).layers(2).bidirectional().with_dtype(DType::f64)),
      nn::GRU(nn::GRUConfig(3, 4).layers(2).bidirectional().batch_first_layout(true).with_dtype(
          DType::f64))};
  const nn::LoadReport r = load(m, EMBER_NN_FIXTURES "/torch_rnn.safetensors");
  EXPECT_TRUE(r.complete());
  EXPECT_EQ(r.loaded.size(), 32u);
  const std::string lc = "lstm_bi_sf_h0";
  expect_close(m.lstm.forward(get(lc + ".in.x"), get(lc + ".in.h0"), get(lc + ".in.c0")).output,
               lc + ".y");
  expect_close(m.gru.forward(get("gru_bi_bf.in.x")).output, "gru_bi_bf.y");

  const std::string path =
      (std::filesystem::temp_directory_path() / "ember_rnn_roundtrip.safetensors").string();
  save(m, path);
  RnnModel b{nn::LSTM(nn::LSTMConfig(3, 4).layers(2).bidirectional().with_dtype(DType::f64)),
             nn::GRU(nn::GRUConfig(3, 4).layers(2).bidirectional().with_dtype(DType::f64))};
  EXPECT_TRUE(load(b, path).complete());
  EXPECT_TRUE(equal(b.gru.weights[3].bias_hh->dyn(), m.gru.weights[3].bias_hh->dyn()));
  std::filesystem::remove(path);
}

TEST(Rnn, ConfigJsonRoundTrip) {
  const auto c = nn::LSTMConfig(5, 8)
                     .layers(3)
                     .bias(false)
                     .batch_first_layout(true)
                     .dropout(0.25)
                     .bidirectional();
  const auto back = nn::LSTMConfig::from_json(c.to_json());
  EXPECT_EQ(back.to_json(), c.to_json());
  EXPECT_EQ(back.num_layers, 3);
  EXPECT_TRUE(back.is_bidirectional && back.batch_first && !back.has_bias);
  EXPECT_EQ(back.dropout_p, 0.25);
}

TEST(Rnn, DropoutBetweenLayersOnlyWhenTraining) {
  nn::GRU gru(nn::GRUConfig(3, 4).layers(2).dropout(0.5));
  const DynTensor x = randn(Shape{6, 2, 3}, DType::f32);
  gru.eval();
  EXPECT_TRUE(equal(gru.forward(x).output, gru.forward(x).output));
  gru.train();
  EXPECT_FALSE(equal(gru.forward(x).output, gru.forward(x).output));
  // One layer: nothing to drop between layers.
  nn::GRU one(nn::GRUConfig(3, 4).dropout(0.5));
  EXPECT_TRUE(equal(one.forward(x).output, one.forward(x).output));
}

TEST(Rnn, ErrorsNameTheLayerAndShapes) {
  nn::LSTM lstm(nn::LSTMConfig(5, 8).layers(2));
  auto message = [](auto&& fn) {
    try {
      fn();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const DynTensor x = randn(Shape{7, 2, 5}, DType::f32);
  EXPECT_EQ(message([&] {
              lstm.forward(randn(Shape{7, 2, 4}, DType::f32));
            }),
            "[LSTM] input [7, 2, 4] has 4 features but input_size is 5");
  EXPECT_EQ(message([&] {
              lstm.forward(x, randn(Shape{1, 2, 8}, DType::f32));
            }),
            "[LSTM] h0 must be [2, 2, 8] (num_layers * directions, batch, hidden_size) for input "
            "[7, 2, 5], got [1, 2, 8]");
  EXPECT_EQ(message([&] {
              lstm.forward(x, randn(Shape{2, 2, 8}, DType::f32), randn(Shape{2, 3, 8}, DType::f32));
            }),
            "[LSTM] c0 must be [2, 2, 8] (num_layers * directions, batch, hidden_size) for input "
            "[7, 2, 5], got [2, 3, 8]");
  nn::GRU gru(nn::GRUConfig(5, 8).batch_first_layout(true));
  EXPECT_EQ(message([&] {
              gru.forward(randn(Shape{7, 2, 5, 1}, DType::f32));
            }),
            "[GRU] expects input [N, L, 5] or unbatched [L, 5], got [7, 2, 5, 1]");
  EXPECT_EQ(message([&] {
              gru.forward(randn(Shape{7, 5}, DType::f32), randn(Shape{1, 2, 8}, DType::f32));
            }),
            "[GRU] h0 must be [1, 8] (num_layers * directions, hidden_size) for input [7, 5], got "
            "[1, 2, 8]");
  EXPECT_EQ(message([&] {
              gru.forward(randn(Shape{2, 7, 5}, DType::f64));
            }),
            "[GRU] input dtype float64 differs from the parameters' float32");
  EXPECT_THROW(nn::GRU(nn::GRUConfig(5, 0)), Error);
  EXPECT_THROW(nn::LSTM(nn::LSTMConfig(5, 8).layers(0)), Error);
  EXPECT_THROW(nn::LSTM(nn::LSTMConfig(5, 8).dropout(1.5)), Error);
}
