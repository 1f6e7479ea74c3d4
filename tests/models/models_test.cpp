// Reference models: the Fashion-MNIST CNN, ResNet-18/50, GPT-2 and a BERT encoder build with
// the parameter names and counts of their PyTorch originals (torchvision, Hugging Face), and run
// forward and backward on the Cpu backend.
#include <gtest/gtest.h>

#include <ember/ember.hpp>
#include <ember/models/bert.hpp>
#include <ember/models/fashion_cnn.hpp>
#include <ember/models/gpt2.hpp>
#include <ember/models/resnet.hpp>

#include "models/tiny_gpt2.hpp"

using namespace ember;

namespace {

size_t count_tensors(const nn::ModuleTree& tree) { return nn::named_tensors(tree).size(); }

// Every parameter got a gradient of its own shape.
template <class M>
void expect_all_gradients(const M& model, const Gradients& grads) {
  for (const auto& p : nn::named_params(nn::module_tree(model))) {
    ASSERT_TRUE(grads.contains(p.slot->dyn())) << p.path;
    EXPECT_EQ(grads.get(p.slot->dyn()).shape(), p.slot->dyn().shape()) << p.path;
  }
}

}  // namespace

TEST(Models, FashionCnnForwardBackward) {
  Generator gen(1);
  models::FashionCnn cnn(default_device(), &gen);
  EXPECT_EQ(cnn.num_params(), 320 + 18496 + 204928 + 1290);
  auto x = Tensor<4>::randn({4, 1, 28, 28}, default_device(), &gen);
  auto logits = cnn(x);
  EXPECT_EQ(logits.shape(), Shape({4, 10}));
  auto target = Tensor<1, Int>::from_vector<int64_t>({3, 1, 4, 1});
  auto loss = -logits.log_softmax(1).gather(1, target.unsqueeze(1)).mean();
  expect_all_gradients(cnn, loss.backward());
}

TEST(Models, ResNet18NamesCountsForwardBackward) {
  Generator gen(2);
  models::ResNet net(models::ResNetConfig::resnet18(), default_device(), &gen);
  EXPECT_EQ(net.num_params(), 11689512);  // torchvision.models.resnet18()
  const nn::ModuleTree tree = nn::module_tree(net);
  EXPECT_EQ(count_tensors(tree), 122u);  // len(resnet18().state_dict())
  EXPECT_EQ(nn::named_params(tree).size(), 62u);
  std::vector<std::string> paths;
  for (const auto& t : nn::named_tensors(tree)) paths.push_back(t.path);
  for (const char* p :
       {"conv1.weight", "bn1.running_var", "layer1.0.conv1.weight", "layer2.0.downsample.0.weight",
        "layer2.0.downsample.1.num_batches_tracked", "layer4.1.bn2.bias", "fc.weight", "fc.bias"}) {
    EXPECT_NE(std::find(paths.begin(), paths.end(), p), paths.end()) << p;
  }
  EXPECT_EQ(net.layer3[0].downsample->get<0>().weight.shape(), Shape({256, 128, 1, 1}));

  models::ResNet small(models::ResNetConfig::resnet18().classes(10), default_device(), &gen);
  auto x = Tensor<4>::randn({2, 3, 64, 64}, default_device(), &gen);
  auto logits = small(x);
  EXPECT_EQ(logits.shape(), Shape({2, 10}));
  expect_all_gradients(small, logits.sum().backward());
  // Evaluation mode uses (and training updated) the running statistics.
  EXPECT_EQ(small.bn1.num_batches_tracked->value().item<int64_t>(), 1);
  small.eval();
  EXPECT_FALSE(small.valid()(x).requires_grad());
}

TEST(Models, ResNet50NamesCountsForwardBackward) {
  Generator gen(3);
  models::ResNet net(models::ResNetConfig::resnet50(), default_device(), &gen);
  EXPECT_EQ(net.num_params(), 25557032);  // torchvision.models.resnet50()
  EXPECT_EQ(count_tensors(nn::module_tree(net)), 320u);
  EXPECT_EQ(net.layer1[0].conv3->weight.shape(), Shape({256, 64, 1, 1}));
  auto x = Tensor<4>::randn({1, 3, 64, 64}, default_device(), &gen);
  auto logits = net(x);
  EXPECT_EQ(logits.shape(), Shape({1, 1000}));
  expect_all_gradients(net, logits.sum().backward());
}

namespace {

std::vector<std::string> all_paths(const nn::ModuleTree& tree) {
  std::vector<std::string> out;
  for (const auto& t : nn::named_tensors(tree)) out.push_back(t.path);
  return out;
}

bool has(const std::vector<std::string>& paths, const std::string& p) {
  return std::find(paths.begin(), paths.end(), p) != paths.end();
}

}  // namespace

TEST(Models, Gpt2NamesCountsCausality) {
  EXPECT_EQ(models::Gpt2Config::small().num_params(), 124439808);  // GPT2Model, gpt2
  const models::Gpt2Config cfg = test::tiny_gpt2_config();
  Generator gen(4);
  models::Gpt2 gpt(cfg, default_device(), &gen);
  EXPECT_EQ(gpt.num_params(), cfg.num_params());
  const auto paths = all_paths(nn::module_tree(gpt));
  for (const char* p :
       {"wte", "wpe", "h.0.ln_1.weight", "h.0.attn.c_attn.weight", "h.0.attn.c_proj.bias",
        "h.1.mlp.c_fc.weight", "h.1.mlp.c_proj.bias", "ln_f.bias"}) {
    EXPECT_TRUE(has(paths, p)) << p;
  }
  EXPECT_EQ(gpt.h[0].attn.c_attn.weight.shape(), Shape({16, 48}));  // Conv1D: [in, out]
  auto ids = Tensor<2, Int>::randint(0, 50, {2, 7}, default_device(), &gen);
  auto logits = gpt(ids);
  EXPECT_EQ(logits.shape(), Shape({2, 7, 50}));
  expect_all_gradients(gpt, logits.sum().backward());
  // Causal: changing the last token leaves the logits of earlier positions unchanged.
  const auto inference = gpt.valid();
  auto other = ids.slice_assign({Slice{0, 2}, Slice{6, 7}}, Tensor<2, Int>::zeros({2, 1}));
  auto a = inference(ids).slice(1, 0, 6), b = inference(other).slice(1, 0, 6);
  EXPECT_TRUE(allclose(a, b, 1e-5, 1e-6));
  EXPECT_FALSE(allclose(inference(ids).slice(1, 6, 7), inference(other).slice(1, 6, 7)));
}

TEST(Models, BertNamesCountsPadding) {
  EXPECT_EQ(models::BertConfig::minilm_l6().num_params(), 22713216);  // all-MiniLM-L6-v2
  EXPECT_EQ(models::BertConfig::base().num_params(), 109482240);      // bert-base-uncased
  models::BertConfig cfg;
  cfg.vocab_size = 40;
  cfg.hidden_size = 16;
  cfg.num_hidden_layers = 2;
  cfg.num_attention_heads = 4;
  cfg.intermediate_size = 32;
  cfg.max_position_embeddings = 20;
  Generator gen(5);
  models::Bert bert(cfg, default_device(), &gen);
  EXPECT_EQ(bert.num_params(), cfg.num_params());
  const auto paths = all_paths(nn::module_tree(bert));
  for (const char* p :
       {"embeddings.word_embeddings.weight", "embeddings.token_type_embeddings.weight",
        "embeddings.LayerNorm.weight", "encoder.layer.1.attention.self.query.weight",
        "encoder.layer.0.attention.output.dense.bias",
        "encoder.layer.0.attention.output.LayerNorm.bias",
        "encoder.layer.0.intermediate.dense.weight", "encoder.layer.1.output.LayerNorm.weight",
        "pooler.dense.bias"}) {
    EXPECT_TRUE(has(paths, p)) << p;
  }
  auto ids = Tensor<2, Int>::randint(1, 40, {2, 6}, default_device(), &gen);
  auto mask = Tensor<2, Int>::from_vector<int64_t>({1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1}, {2, 6});
  auto out = bert.forward(ids, mask);
  EXPECT_EQ(out.last_hidden_state.shape(), Shape({2, 6, 16}));
  EXPECT_EQ(out.pooler_output.shape(), Shape({2, 16}));
  expect_all_gradients(bert, (out.last_hidden_state.sum() + out.pooler_output.sum()).backward());
  // Padded tokens do not change the real ones (evaluation mode: no dropout).
  const auto inference = bert.valid();
  auto padded = ids.slice_assign({Slice{0, 1}, Slice{4, 6}}, Tensor<2, Int>::full({1, 2}, 3));
  auto a = inference.forward(ids, mask).last_hidden_state.slice(1, 0, 4).select(0, 0);
  auto b = inference.forward(padded, mask).last_hidden_state.slice(1, 0, 4).select(0, 0);
  EXPECT_TRUE(allclose(a, b, 1e-5, 1e-6));
  auto pooled = models::mean_pooling(inference.forward(ids, mask).last_hidden_state, mask);
  EXPECT_EQ(pooled.shape(), Shape({2, 16}));
}
