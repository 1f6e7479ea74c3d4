// Adam, AdamW and SGD with fused(true): the in-place multi-tensor step against the per-parameter
// one on every device, with enough parameters to span several launches, two groups, amsgrad,
// SGD's momentum variants, a 16-bit parameter (no multi-tensor kernel: updated and written back)
// and the storage kept.
#include <gtest/gtest.h>

#include <ember/ember.hpp>
#include <ember/nn/nn.hpp>
#include <ember/optim/optim.hpp>
#include <vector>

#include <ember/tensor/ops/optim.hpp>

#include "tensor/test_util.hpp"

using namespace ember;
using namespace ember::test;

namespace {

// 32 Linear layers: 64 parameters, more than one launch's 24, of assorted sizes.
struct Stack {
  std::vector<nn::Linear> layers;
  EMBER_MODULE(Stack, layers)
};

Stack make_stack(DType last_dtype) {
  Stack s;
  const Device dev = default_device();
  for (int i = 0; i < 32; ++i) {
    const int64_t in = 3 + i % 5, out = 2 + (i * 7) % 11;
    Generator gen(1000 + static_cast<uint64_t>(i));
    s.layers.emplace_back(nn::LinearConfig(in, out).with_dtype(i == 31 ? last_dtype : DType::f32),
                          dev, &gen);
  }
  return s;
}

// The same gradients for both copies at step k: random values, never zeros.
optim::ParamGrads grads_for(Stack& s, int k) {
  optim::ParamGrads g;
  uint64_t seed = 50 + static_cast<uint64_t>(k) * 1000;
  for (const nn::NamedTensor& p : nn::named_params(nn::module_tree(s))) {
    g.set(p.slot->id(), make_input(p.slot->dyn().shape(), p.slot->dyn().dtype(), Layout::Contiguous,
                                   -1, 1, seed++));
  }
  return g;
}

template <class Config>
void expect_fused_matches(Config config, DType last_dtype) {
  Stack a = make_stack(last_dtype), b = make_stack(last_dtype);
  optim::Optimizer plain = Config(config).fused(false).init();
  optim::Optimizer fused = Config(config).fused(true).init();
  plain.add_group("layers.3", optim::GroupOptions().lr(0.003));  // a second group, own lr
  fused.add_group("layers.3", optim::GroupOptions().lr(0.003));
  const DynTensor w0 = b.layers[0].weight.dyn();  // a handle: in place, it sees the updates
  const void* storage = w0.raw().data();
  for (int k = 0; k < 4; ++k) {
    plain.step(nn::module_tree(a), grads_for(a, k));
    fused.step(nn::module_tree(b), grads_for(b, k));
  }
  EXPECT_EQ(b.layers[0].weight.dyn().raw().data(), storage);
  EXPECT_EQ(max_abs_diff(w0, a.layers[0].weight.dyn()), 0.0);
  const auto pa = nn::named_params(nn::module_tree(a)), pb = nn::named_params(nn::module_tree(b));
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    SCOPED_TRACE(pa[i].path);
    // The same element formula and constants: the same bits.
    EXPECT_EQ(max_abs_diff(pa[i].slot->dyn(), pb[i].slot->dyn()), 0.0);
  }
}

TEST(FusedAdam, AdamWInPlaceMatchesThePerParameterStep) {
  expect_fused_matches(optim::AdamWConfig().lr(0.01).weight_decay(0.1), DType::f32);
}

TEST(FusedAdam, AdamWithAmsgradAndL2MatchesThePerParameterStep) {
  expect_fused_matches(optim::AdamConfig().lr(0.01).weight_decay(0.01).amsgrad(true), DType::f32);
}

TEST(FusedAdam, A16BitParameterIsUpdatedInPlaceToo) {
  expect_fused_matches(optim::AdamWConfig().lr(0.01), DType::bf16);
}

// SGD's multi-tensor kernel rounds each product and sum as the tensor ops do: the same bits.
TEST(FusedSgd, MomentumAndWeightDecayMatchThePerParameterStep) {
  expect_fused_matches(optim::SgdConfig().lr(0.05).momentum(0.9).weight_decay(1e-2), DType::f32);
}

TEST(FusedSgd, NesterovMatchesThePerParameterStep) {
  expect_fused_matches(optim::SgdConfig().lr(0.05).momentum(0.9).nesterov(true), DType::f32);
}

TEST(FusedSgd, DampeningAndA16BitParameterMatchThePerParameterStep) {
  expect_fused_matches(optim::SgdConfig().lr(0.05).momentum(0.5).dampening(0.3), DType::bf16);
}

TEST(FusedSgd, PlainSgdMatchesThePerParameterStep) {
  expect_fused_matches(optim::SgdConfig().lr(0.05).weight_decay(1e-2), DType::f32);
}

TEST(FusedSgd, MismatchedInputsAreErrors) {
  const DynTensor p = make_input(Shape{3}, DType::f32, Layout::Contiguous, -1, 1, 1);
  SgdParams with_momentum;
  with_momentum.momentum = 0.9;
  expect_error_containing(
      [&] {
        sgd_step_in_place({{p, DynTensor()}}, {}, {SgdParams{}});
      },
      "1 parameters, 0 gradients");
  expect_error_containing(
      [&] {
        sgd_step_in_place({{p, DynTensor()}}, {zeros_like(p)}, {with_momentum});
      },
      "[sgd_step_in_place] momentum_buffer");
  // Nothing is written when a later parameter is bad.
  const DynTensor before = clone(p);
  expect_error_containing(
      [&] {
        sgd_step_in_place({{p, DynTensor()}, {p, DynTensor()}},
                          {ones_like(p), zeros(Shape{4}, DType::f32, p.device())},
                          {SgdParams{}, SgdParams{}});
      },
      "[sgd_step_in_place]");
  EXPECT_EQ(max_abs_diff(before, p), 0.0);
}

TEST(FusedAdam, MismatchedInputsAreErrors) {
  DynTensor p = make_input(Shape{3}, DType::f32, Layout::Contiguous, -1, 1, 1);
  const DynTensor m = zeros_like(p), v = zeros_like(p);
  expect_error_containing(
      [&] {
        adam_step_in_place({{p, m, v, DynTensor()}}, {}, {AdamParams{}});
      },
      "1 parameters, 0 gradients");
  expect_error_containing(
      [&] {
        adam_step_in_place({{p, m, v, DynTensor()}}, {zeros(Shape{4}, DType::f32, p.device())},
                           {AdamParams{}});
      },
      "[adam_step_in_place]");
}

}  // namespace

namespace {

// One Param in two places whose copies hold their own storage (to_dtype casts each slot): the
// fused step writes the new value into both, as the plain step makes them share it.
struct Tied {
  nn::Param<2> a, b;
  EMBER_MODULE(Tied, a, b)
};

TEST(FusedAdam, CopiesOfASharedParamWithTheirOwnStorageGetTheUpdate) {
  Tied t;
  t.a = nn::Param<2>(Tensor<2>(make_input(Shape{3, 4}, DType::f32, Layout::Contiguous, -1, 1, 9)));
  t.b = t.a;
  nn::to_dtype(nn::module_tree(t), DType::f64);
  ASSERT_NE(t.a.dyn().raw().storage, t.b.dyn().raw().storage);
  optim::Optimizer opt = optim::AdamWConfig().lr(0.1).fused(true).init();
  optim::ParamGrads g;
  g.set(t.a.id(), make_input(Shape{3, 4}, DType::f64, Layout::Contiguous, -1, 1, 10));
  const DynTensor before = clone(t.a.dyn());
  opt.step(nn::module_tree(t), g);
  EXPECT_GT(max_abs_diff(before, t.a.dyn()), 0.01);
  EXPECT_EQ(max_abs_diff(t.a.dyn(), t.b.dyn()), 0.0);
}

}  // namespace

// Parameters loaded from a safetensors file share its mapping (zero-copy on the Cpu): a fused
// step writes into them (the mapping is private: copy-on-write) and the file keeps its values.
TEST(FusedOptim, StepsParametersLoadedFromAFile) {
  const std::string path = ::testing::TempDir() + "fused_optim_loaded.safetensors";
  Stack src = make_stack(DType::f32);
  save(src, path);
  for (bool adam : {true, false}) {
    Stack a = make_stack(DType::f32), b = make_stack(DType::f32);
    load(a, path);
    load(b, path);
    optim::Optimizer plain = adam ? optim::AdamConfig().lr(0.01).init()
                                  : optim::SgdConfig().lr(0.01).momentum(0.9).init();
    optim::Optimizer fused = adam ? optim::AdamConfig().lr(0.01).fused(true).init()
                                  : optim::SgdConfig().lr(0.01).momentum(0.9).fused(true).init();
    for (int k = 0; k < 2; ++k) {
      plain.step(a, grads_for(a, k));
      fused.step(b, grads_for(b, k));
    }
    const auto pa = nn::named_params(nn::module_tree(a)), pb = nn::named_params(nn::module_tree(b));
    for (size_t i = 0; i < pa.size(); ++i) {
      EXPECT_EQ(max_abs_diff(pb[i].slot->dyn(), pa[i].slot->dyn()), 0.0) << pa[i].path;
    }
  }
  // The file still holds the saved values.
  Stack again = make_stack(DType::f32);
  load(again, path);
  const auto ps = nn::named_params(nn::module_tree(src)),
             pg = nn::named_params(nn::module_tree(again));
  for (size_t i = 0; i < ps.size(); ++i)
    EXPECT_EQ(max_abs_diff(pg[i].slot->dyn(), ps[i].slot->dyn()), 0.0);
}
