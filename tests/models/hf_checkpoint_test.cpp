// Checkpoints written by PyTorch and Hugging Face transformers, loaded by name into Ember models:
// a small BertModel and GPT2LMHeadModel (fixtures/make_hf_fixtures.py) from pytorch_model.bin
// and model.safetensors give transformers' outputs; a torch.save checkpoint loads with a key,
// renames, a report, strict and partial modes and dtype conversion. Runs on every device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "ember/io/pytorch.hpp"
#include "ember/io/safetensors.hpp"
#include "ember/models/bert.hpp"
#include "ember/models/gpt2.hpp"
#include "ember/nn/linear.hpp"
#include "ember/nn/norm.hpp"
#include "ember/nn/serialize.hpp"
#include "ember/tensor/tensor.hpp"

namespace ember {
namespace {

const std::string kModels = std::string(EMBER_MODELS_FIXTURES) + "/";
const std::string kIo = std::string(EMBER_IO_FIXTURES) + "/pytorch/";

double max_abs_diff(const DynTensor& a, const DynTensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  const std::vector<double> x = cast(a, DType::f64).to_vector<double>();
  const std::vector<double> y = cast(b, DType::f64).to_vector<double>();
  double m = 0;
  for (size_t i = 0; i < std::min(x.size(), y.size()); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

TEST(HfCheckpoints, BertLoadsFromBothFormatsAndGivesTransformersOutputs) {
  models::BertConfig cfg;
  cfg.vocab_size = 99;
  cfg.hidden_size = 32;
  cfg.num_hidden_layers = 2;
  cfg.num_attention_heads = 4;
  cfg.intermediate_size = 37;
  cfg.max_position_embeddings = 64;
  const io::SafetensorsFile expected =
      io::load_safetensors(kModels + "bert_tiny_expected.safetensors");
  const Tensor<2, Int> ids(expected.tensor("input_ids")), mask(expected.tensor("attention_mask")),
      types(expected.tensor("token_type_ids"));
  for (const char* file : {"bert_tiny.bin", "bert_tiny.safetensors"}) {
    SCOPED_TRACE(file);
    models::Bert bert(cfg);
    nn::LoadOptions options;
    options.rename = models::bert_hf_key_map();
    const nn::LoadReport report = load(bert, kModels + file, options);
    EXPECT_EQ(report.loaded.size(), 39u);
    EXPECT_TRUE(report.complete());
    const models::BertOutputs out = bert.valid().forward(ids, mask, types);
    EXPECT_LT(max_abs_diff(out.last_hidden_state.dyn(), expected.tensor("last_hidden_state")),
              2e-5);
    EXPECT_LT(max_abs_diff(out.pooler_output.dyn(), expected.tensor("pooler_output")), 2e-5);
  }
}

TEST(HfCheckpoints, Gpt2LmHeadLoadsFromBothFormatsAndGivesTransformersLogits) {
  models::Gpt2Config cfg;
  cfg.vocab_size = 101;
  cfg.n_positions = 32;
  cfg.n_embd = 32;
  cfg.n_layer = 2;
  cfg.n_head = 4;
  const io::SafetensorsFile expected =
      io::load_safetensors(kModels + "gpt2_tiny_expected.safetensors");
  const Tensor<2, Int> ids(expected.tensor("input_ids"));
  for (const char* file : {"gpt2_tiny.bin", "gpt2_tiny.safetensors"}) {
    SCOPED_TRACE(file);
    models::Gpt2 gpt(cfg);
    nn::LoadOptions options;
    options.rename = models::gpt2_hf_key_map();
    const bool bin = std::string(file).ends_with(".bin");
    const nn::LoadReport report =
        bin ? load_pytorch(gpt, kModels + file, options) : load(gpt, kModels + file, options);
    EXPECT_EQ(report.loaded.size(), 28u);
    EXPECT_TRUE(report.complete());
    const auto inference = gpt.valid();
    EXPECT_LT(
        max_abs_diff(inference.hidden_states(ids).dyn(), expected.tensor("last_hidden_state")),
        2e-5);
    EXPECT_LT(max_abs_diff(inference(ids).dyn(), expected.tensor("logits")), 2e-5);
  }
}

// The fixture net of tests/io/fixtures/make_pytorch_fixtures.py: Sequential(Linear(4, 3),
// BatchNorm1d(3), Linear(3, 2)), whose names are "0.weight", "1.running_mean", ...
struct Mlp {
  nn::Linear fc1;
  nn::BatchNorm1d bn;
  nn::Linear fc2;
  EMBER_MODULE(Mlp, fc1, bn, fc2)
  explicit Mlp(int64_t hidden = 3) : fc1(4, hidden), bn(hidden), fc2(hidden, 2) {}
};

nn::LoadOptions sequential_names() {
  nn::LoadOptions o;
  o.key = "model";
  o.rename = {{R"(^0\.)", "fc1."}, {R"(^1\.)", "bn."}, {R"(^2\.)", "fc2."}};
  return o;
}

TEST(PytorchLoad, ACheckpointLoadsByKeyWithRenamesAndConvertsDtypes) {
  const io::PytorchFile file = io::load_pytorch(kIo + "nested.pt", "model");
  Mlp mlp;
  const nn::LoadReport report = load_pytorch(mlp, kIo + "nested.pt", sequential_names());
  EXPECT_EQ(report.loaded.size(), 9u);
  EXPECT_TRUE(report.complete());
  EXPECT_EQ(max_abs_diff(mlp.fc1.weight.dyn(), file.tensor("0.weight")), 0.0);
  EXPECT_EQ(mlp.bn.running_var->to_vector<float>(),
            file.tensor("1.running_var").to_vector<float>());
  EXPECT_EQ(mlp.bn.num_batches_tracked->item<int64_t>(), 1);
  EXPECT_EQ(mlp.fc1.weight.device(), default_device());

  // Into a float64 model: each tensor takes the parameter's dtype, as load_state_dict copies.
  Mlp wide;
  wide.to(DType::f64);
  load_pytorch(wide, kIo + "nested.pt", sequential_names());
  EXPECT_EQ(wide.fc2.bias->dtype(), DType::f64);
  EXPECT_EQ(max_abs_diff(wide.fc2.bias->dyn(), file.tensor("2.bias")), 0.0);

  // A rename to "" drops a name: listed as ignored, neither loaded nor unexpected.
  nn::LoadOptions skip = sequential_names();
  skip.rename.insert(skip.rename.begin(), {R"(^1\.num_batches_tracked$)", ""});
  skip.strict = false;
  const nn::LoadReport partial = load_pytorch(mlp, kIo + "nested.pt", skip);
  EXPECT_EQ(partial.ignored, std::vector<std::string>{"1.num_batches_tracked"});
  EXPECT_EQ(partial.missing, std::vector<std::string>{"bn.num_batches_tracked"});
  EXPECT_TRUE(partial.unexpected.empty());
}

TEST(PytorchLoad, StrictModeListsEveryProblemAndLoadsNothing) {
  Mlp narrow(5);  // fc1 [5, 4], bn [5], fc2 [2, 5]: 7 mismatches, 2 tensors fit
  const DynTensor before = narrow.fc2.bias->dyn();
  nn::LoadOptions o;
  o.key = "model";
  try {
    load_pytorch(narrow, kIo + "nested.pt", o);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("[load] " + kIo + "nested.pt does not match the Mlp (nothing was loaded)"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("missing from the file: fc1.weight"), std::string::npos) << msg;
    EXPECT_NE(msg.find("not in the module: 0.weight"), std::string::npos) << msg;
  }
  EXPECT_EQ(narrow.fc2.bias->dyn().raw().storage, before.raw().storage);

  o = sequential_names();
  o.strict = false;
  const nn::LoadReport r = load_pytorch(narrow, kIo + "nested.pt", o);
  EXPECT_EQ(r.loaded, (std::vector<std::string>{"bn.num_batches_tracked", "fc2.bias"}));
  ASSERT_EQ(r.mismatched.size(), 7u);
  EXPECT_EQ(r.mismatched[0].name, "fc1.weight");
  EXPECT_EQ(r.mismatched[0].in_file, Shape({3, 4}));
  EXPECT_EQ(r.mismatched[0].in_module, Shape({5, 4}));
  EXPECT_TRUE(r.missing.empty());

  // A key picks an entry of a torch.save checkpoint; a safetensors file has none.
  nn::LoadOptions keyed;
  keyed.key = "model";
  models::Bert bert(models::BertConfig{99, 32, 2, 4, 37, 64, 2, 0.1, 0.1, 1e-12});
  try {
    load(bert, kModels + "bert_tiny.safetensors", keyed);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("options.key ('model') picks an entry of a torch.save "
                                         "checkpoint, but this is not one"),
              std::string::npos)
        << e.what();
  }

  o.rename.push_back({"(", "x"});
  EXPECT_THROW(load_pytorch(narrow, kIo + "nested.pt", o), Error);
  o.rename = {{".*", "same"}};
  EXPECT_THROW(load_pytorch(narrow, kIo + "nested.pt", o), Error);
}

}  // namespace
}  // namespace ember
