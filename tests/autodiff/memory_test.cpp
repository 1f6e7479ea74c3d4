// Memory: backward frees the graph's saved tensors as it goes, and everything returns to the
// allocator once the outputs are dropped; checkpointing lowers the peak. Measured on the Cpu
// backend's allocator counters (bytes handed out, not bytes cached).
#include <gtest/gtest.h>

#include <cstdio>
#include <ember/ember.hpp>

using namespace ember;

namespace {

// The default device's allocator: these tests run on every backend.
size_t allocated() { return memory_stats(default_device()).in_use; }
// The most one small tensor holds: the Cuda allocator rounds requests up to 512 bytes.
constexpr size_t kOneBlock = 512;

struct Chain {
  std::vector<DynTensor> weights;
  DynTensor x;

  Chain(int depth, int64_t width, int64_t batch) {
    Generator gen(5);
    for (int i = 0; i < depth; ++i) {
      weights.push_back(require_grad(
          mul(randn(Shape{width, width}, DType::f32, default_device(), &gen), 1.0 / 16)));
    }
    x = require_grad(randn(Shape{batch, width}, DType::f32, default_device(), &gen));
  }
  DynTensor layers(const DynTensor& h, size_t from, size_t to) const {
    DynTensor out = h;
    for (size_t i = from; i < to; ++i) out = tanh(matmul(out, weights[i]));
    return out;
  }
};

}  // namespace

TEST(AutodiffMemory, BackwardFreesTheGraphAndDroppingOutputsReturnsEverything) {
  const Chain chain(8, 128, 64);
  const size_t baseline = allocated();
  {
    DynTensor loss = sum(chain.layers(chain.x, 0, 8));
    const size_t with_graph = allocated();
    // 8 layers keep their matmul inputs and tanh outputs: at least 8 activations of 32 KiB.
    EXPECT_GT(with_graph - baseline, 8u * 64 * 128 * 4);
    {
      Gradients grads = backward(loss);
      EXPECT_EQ(grads.size(), 9u);
    }
    // Saved tensors went as backward walked; only the 4-byte loss is left (in one block of the
    // allocator: 512 bytes on Cuda, as PyTorch's).
    EXPECT_LE(allocated() - baseline, kOneBlock) << "bytes still held after backward";
  }
  EXPECT_EQ(allocated(), baseline);
}

TEST(AutodiffMemory, RetainGraphKeepsSavedTensors) {
  const Chain chain(4, 64, 32);
  const size_t baseline = allocated();
  {
    DynTensor loss = sum(chain.layers(chain.x, 0, 4));
    const size_t with_graph = allocated();
    { Gradients grads = backward(loss, {.retain_graph = true}); }
    EXPECT_EQ(allocated(), with_graph);
    { Gradients grads = backward(loss); }
    EXPECT_LE(allocated() - baseline, kOneBlock);
  }
  EXPECT_EQ(allocated(), baseline);
}

TEST(AutodiffMemory, SecondOrderGraphIsFreedToo) {
  const size_t baseline = allocated();
  {
    const DynTensor x = require_grad(randn(Shape{256}, DType::f64));
    const DynTensor g = grad(sum(tanh(x)), {x}, {}, {.create_graph = true})[0];
    const DynTensor gg = grad(sum(g), {x})[0];
    EXPECT_EQ(gg.shape(), x.shape());
  }
  EXPECT_EQ(allocated(), baseline);
}

TEST(Checkpoint, SameGradientsLowerPeak) {
  // Activations (2048 x 64) dwarf the weights (64 x 64), as in a deep narrow network.
  const int depth = 32;
  const Chain chain(depth, 64, 2048);
  auto run = [&](bool use_checkpoint) {
    reset_peak_memory(default_device());
    const size_t before = allocated();
    DynTensor h = chain.x;
    for (size_t s = 0; s < static_cast<size_t>(depth); s += 4) {
      if (use_checkpoint) {
        h = checkpoint(
            [&chain, s](const std::vector<DynTensor>& in) { return chain.layers(in[0], s, s + 4); },
            {h});
      } else {
        h = chain.layers(h, s, s + 4);
      }
    }
    Gradients grads = backward(sum(h));
    const size_t peak = memory_stats(default_device()).peak - before;
    std::vector<DynTensor> g;
    g.push_back(grads.get(chain.x));
    for (const DynTensor& w : chain.weights) g.push_back(grads.get(w));
    return std::make_pair(g, peak);
  };
  const auto [plain, plain_peak] = run(false);
  const auto [ckpt, ckpt_peak] = run(true);
  ASSERT_EQ(plain.size(), ckpt.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    EXPECT_TRUE(allclose(plain[i], ckpt[i], 1e-5, 1e-6)) << "gradient " << i;
  }
  // Without checkpoints 32 activations of 512 KiB are kept; with them, the 8 segment inputs
  // plus one segment's 4 activations at a time during backward.
  std::printf("peak allocated during forward + backward: %zu bytes plain, %zu checkpointed\n",
              plain_peak, ckpt_peak);
  EXPECT_LT(ckpt_peak * 2, plain_peak) << "checkpoint peak " << ckpt_peak << " vs " << plain_peak;
}

TEST(Checkpoint, RandomOpsReplayTheSameDraws) {
  const DynTensor x = require_grad(randn(Shape{64}, DType::f64));
  auto segment = [](const std::vector<DynTensor>& in) {
    // A dropout-like mask drawn from the default generator.
    const DynTensor keep = cast(bernoulli(in[0].shape(), 0.5, DType::f64), DType::f64);
    return mul(exp(in[0]), keep);
  };
  manual_seed(3);
  const DynTensor y = checkpoint(segment, {x});
  const DynTensor g = grad(sum(y), {x})[0];
  // exp(x) * keep has gradient y itself when the recomputation drew the same mask.
  EXPECT_TRUE(allclose(g, detach(y)));
}

TEST(Checkpoint, SecondOrderThroughCheckpoint) {
  const DynTensor x = require_grad(randn(Shape{5}, DType::f64));
  auto segment = [](const std::vector<DynTensor>& in) { return tanh(in[0]); };
  const DynTensor g = grad(sum(checkpoint(segment, {x})), {x}, {}, {.create_graph = true})[0];
  const DynTensor gg = grad(sum(g), {x})[0];
  const DynTensor t = tanh(detach(x));
  EXPECT_TRUE(allclose(gg, mul(mul(t, sub(1.0, square(t))), -2.0), 1e-10, 1e-12));
}
