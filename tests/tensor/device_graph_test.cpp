// DeviceGraph on every device: a replay after new data is copied into the static input gives what
// the eager code gives on that data; a training loop of captured forward + backward with a
// fused (in-place) AdamW step between replays follows the eager loop; and the calls a replay
// cannot repeat raise errors that leave the device usable. On Cuda the work is a CUDA graph
// (recorded() is true); elsewhere replay() runs the function again.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include <ember/ember.hpp>
#include <ember/nn/nn.hpp>
#include <ember/optim/optim.hpp>
#include <ember/tensor/device_graph.hpp>

#include "tensor/test_util.hpp"

using namespace ember;
using namespace ember::test;

namespace {

DynTensor chain(const DynTensor& x, const DynTensor& w) {
  // Several kernels and intermediates freed mid-way, whose blocks the capture reuses.
  DynTensor h = relu(add(matmul(x, w), 0.25));
  h = mul(h, sigmoid(h));
  return sum(mul(h, h), {1});
}

TEST(DeviceGraph, ReplayOfNewInputsMatchesEagerResults) {
  const Device dev = default_device();
  const DynTensor w = make_input(Shape{16, 24}, DType::f32, Layout::Contiguous, -1, 1, 2);
  DynTensor x = make_input(Shape{8, 16}, DType::f32, Layout::Contiguous, -1, 1, 1);
  (void)chain(x, w);  // warm up
  DynTensor y;
  DeviceGraph g(dev);
  EXPECT_FALSE(g.captured());
  g.capture([&] { y = chain(x, w); });
  EXPECT_TRUE(g.captured());
  EXPECT_EQ(g.recorded(), dev.type == DeviceType::Cuda);
  for (uint64_t seed : {11, 12, 13}) {
    const DynTensor next = make_input(Shape{8, 16}, DType::f32, Layout::Contiguous, -2, 2, seed);
    copy_into(x, next);
    g.replay();
    EXPECT_LE(max_abs_diff(y, chain(next, w)), 1e-5) << "seed " << seed;
  }
}

struct Mlp {
  nn::Linear fc1, fc2;
  EMBER_MODULE(Mlp, fc1, fc2)
  DynTensor forward(const DynTensor& x) const { return fc2.forward(gelu(fc1.forward(x))); }
};

Mlp make_mlp() {
  Generator gen(7);
  return Mlp{nn::Linear(nn::LinearConfig(12, 32), default_device(), &gen),
             nn::Linear(nn::LinearConfig(32, 5), default_device(), &gen)};
}

TEST(DeviceGraph, CapturedTrainingStepsFollowTheEagerOnes) {
  const Device dev = default_device();
  Mlp eager = make_mlp(), graphed = make_mlp();
  optim::Optimizer opt_e = optim::AdamWConfig().lr(0.01).fused(true).init();
  optim::Optimizer opt_g = optim::AdamWConfig().lr(0.01).fused(true).init();
  auto batch = [](int k) {
    return make_input(Shape{10, 12}, DType::f32, Layout::Contiguous, -1, 1,
                      300 + static_cast<uint64_t>(k));
  };
  auto loss_of = [](const Mlp& m, const DynTensor& x) { return mean(mul(m.forward(x), 0.5)); };
  const int steps = 6;
  std::vector<double> eager_losses;
  for (int k = 0; k < steps; ++k) {
    const DynTensor loss = loss_of(eager, batch(k));
    eager_losses.push_back(loss.item<double>());
    opt_e.step(nn::module_tree(eager), backward(loss));
  }
  // Static input, then one eager step (the warm-up), then capture and replay the rest.
  DynTensor x = clone(batch(0));
  DynTensor loss;
  Gradients grads;
  auto step = [&] {
    loss = loss_of(graphed, x);
    grads = backward(loss);
  };
  step();
  EXPECT_NEAR(loss.item<double>(), eager_losses[0], 1e-6);
  opt_g.step(nn::module_tree(graphed), grads);
  DeviceGraph g(dev);
  copy_into(x, batch(1));
  g.capture(step);
  for (int k = 1; k < steps; ++k) {
    if (k > 1) copy_into(x, batch(k));
    g.replay();
    EXPECT_NEAR(loss.item<double>(), eager_losses[static_cast<size_t>(k)], 1e-6) << "step " << k;
    opt_g.step(nn::module_tree(graphed), grads);
  }
  EXPECT_LE(max_abs_diff(eager.fc1.weight.dyn(), graphed.fc1.weight.dyn()), 1e-6);
  EXPECT_LE(max_abs_diff(eager.fc2.bias->dyn(), graphed.fc2.bias->dyn()), 1e-6);
}

TEST(DeviceGraph, WorkAReplayCannotRepeatIsAnErrorAndTheDeviceCarriesOn) {
  const Device dev = default_device();
  DeviceGraph g(dev);
  expect_error_containing([&] { g.replay(); }, "nothing captured");
  const DynTensor x = make_input(Shape{4}, DType::f32, Layout::Contiguous, -1, 1, 1);
  // On every backend, so that a program fails alike on each.
  expect_error_containing(
      [&] {
        g.capture([&] {
          DeviceGraph inner(dev);
          inner.capture([] {});
        });
      },
      "do not nest");
  expect_error_containing([&] { g.capture([] { const BackgroundWork held; }); },
                          "inside a DeviceGraph capture on the same thread");
  expect_error_containing(
      [&] {
        const BackgroundWork held;
        g.capture([] {});
      },
      "capture inside a BackgroundWork scope");
  if (dev.type == DeviceType::Cuda) {
    Generator gen(3);
    expect_error_containing(
        [&] { g.capture([&] { (void)rand(Shape{4}, DType::f32, dev, &gen); }); },
        "DeviceGraph capture");
    // Refused before the generator moved on: the next draw is a fresh generator's first.
    Generator fresh(3);
    EXPECT_EQ(max_abs_diff(rand(Shape{4}, DType::f32, dev, &gen),
                           rand(Shape{4}, DType::f32, dev, &fresh)),
              0.0);
    expect_error_containing([&] { g.capture([&] { (void)sum(add(x, 1.0)).item<float>(); }); },
                            "DeviceGraph capture");
    // An optimizer step: its lr and step counts would be replayed as captured.
    Mlp m = make_mlp();
    optim::Optimizer opt = optim::AdamWConfig().fused(true).init();
    const Gradients grads = backward(mean(m.forward(ones(Shape{2, 12}, DType::f32, dev))));
    expect_error_containing([&] { g.capture([&] { opt.step(nn::module_tree(m), grads); }); },
                            "cannot step inside a DeviceGraph capture");
    EXPECT_TRUE(capture_under_way(dev) == false);
    // Waits, and a convolution's first use of a shape (cuDNN's algorithm search runs kernels and
    // waits); the eager convolution first makes cuDNN's handle, as a warm-up would.
    expect_error_containing([&] { g.capture([&] { (void)nonzero(x); }); }, "DeviceGraph capture");
    expect_error_containing([&] { g.capture([&] { empty_cache(dev); }); }, "DeviceGraph capture");
    const DynTensor img = make_input(Shape{1, 3, 7, 9}, DType::f32, Layout::Contiguous, -1, 1, 4);
    const DynTensor k1 = make_input(Shape{2, 3, 3, 3}, DType::f32, Layout::Contiguous, -1, 1, 5);
    const DynTensor k2 = make_input(Shape{2, 3, 3, 2}, DType::f32, Layout::Contiguous, -1, 1, 6);
    (void)sum(conv2d(img, k1)).item<float>();
    expect_error_containing([&] { g.capture([&] { (void)conv2d(img, k2); }); },
                            "DeviceGraph capture");
    EXPECT_FALSE(g.captured());
  }
  // Still usable, and a later capture works.
  EXPECT_NEAR(sum(add(x, 1.0)).item<double>(), sum(x).item<double>() + 4, 1e-5);
  DynTensor y;
  g.capture([&] { y = mul(x, 3.0); });
  g.replay();
  EXPECT_LE(max_abs_diff(y, mul(x, 3.0)), 0.0);
  expect_error_containing([&] { copy_into(y, zeros(Shape{5}, DType::f32, dev)); },
                          "[copy_into] shapes differ");
}

// Background work (a DataLoader worker uploading the next batch) never overlaps a capture on
// another thread, which would record its upload into the graph: the capture waits for a scope
// under way, and a scope opened during the capture waits for its end.
TEST(DeviceGraph, BackgroundWorkWaitsOutACapture) {
  using namespace std::chrono_literals;
  const Device dev = default_device();
  const DynTensor x = make_input(Shape{4, 8}, DType::f32, Layout::Contiguous, -1, 1, 3);
  std::atomic<int> phase{0};
  std::atomic<bool> capturing{false}, overlapped{false};
  std::string worker_error;
  std::thread worker([&] {
    try {
      {
        const BackgroundWork held;
        phase = 1;
        std::this_thread::sleep_for(50ms);
        if (capturing) overlapped = true;
      }
      while (phase < 2) std::this_thread::yield();
      const BackgroundWork held;
      if (capturing) overlapped = true;
      const DynTensor batch = make_input(Shape{4, 8}, DType::f32, Layout::Contiguous, -1, 1, 4);
      (void)batch.to_vector<double>();
    } catch (const Error& e) {
      worker_error = e.what();
    }
  });
  while (phase < 1) std::this_thread::yield();
  DynTensor y;
  DeviceGraph g(dev);
  g.capture([&] {
    capturing = true;
    phase = 2;
    std::this_thread::sleep_for(50ms);
    y = mul(x, 2.0);
    capturing = false;
  });
  worker.join();
  EXPECT_FALSE(overlapped);
  EXPECT_EQ(worker_error, "");
  g.replay();
  EXPECT_LE(max_abs_diff(y, mul(x, 2.0)), 0.0);
}

TEST(DeviceGraph, ItsMemoryReturnsWhenTheGraphGoes) {
  const Device dev = default_device();
  const DynTensor x = make_input(Shape{256, 256}, DType::f32, Layout::Contiguous, -1, 1, 5);
  (void)chain(x, x);
  const size_t before = memory_stats(dev).in_use;
  {
    DeviceGraph g(dev);
    DynTensor y;
    g.capture([&] { y = chain(x, x); });
    g.replay();
    (void)sum(y).item<float>();
  }
  EXPECT_EQ(memory_stats(dev).in_use, before);
}

}  // namespace
