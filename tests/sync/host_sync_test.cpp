// The asynchronous contract (docs/ARCHITECTURE.md, "Asynchrony") on the default device: which
// calls wait for the device (host_sync_count), range errors that name the op and the index and
// leave the process working, raised at once or at the next synchronisation, and uploads.
#include <gtest/gtest.h>

#include <cmath>
#include <ember/ember.hpp>
#include <ember/nn/nn.hpp>
#include <ember/optim/grads.hpp>
#include <sstream>
#include <string>
#include <thread>

using namespace ember;

namespace {

Device dev() { return default_device(); }

// The number of host synchronisations `f` makes on the default device.
template <class F>
uint64_t syncs_of(F&& f) {
  const uint64_t before = host_sync_count(dev());
  f();
  return host_sync_count(dev()) - before;
}

// The message of the ember::Error that `f` raises ("" when none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
    synchronize(dev());  // a range error of a queued check is raised here
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Range errors of the synchronous backends are deferred, as an asynchronous backend defers them.
struct Deferred {
  Deferred() { detail::set_defer_range_errors(true); }
  ~Deferred() { detail::set_defer_range_errors(false); }
};

DynTensor bad_index() {
  return from_data(TensorData::from(std::vector<int64_t>{0, 5, 1}, {3}), dev());
}
DynTensor x3() { return from_data(TensorData::from(std::vector<float>{1, 2, 3}, {3}), dev()); }

}  // namespace

TEST(HostSync, EveryHostReadCountsOnce) {
  const auto a = Tensor<1>::from_vector<float>({1, 2, 3}, dev());
  EXPECT_EQ(syncs_of([&] { (void)a.sum().item<float>(); }), 1u);
  EXPECT_EQ(syncs_of([&] { (void)a.to_vector<float>(); }), 1u);
  EXPECT_EQ(syncs_of([&] { (void)a.to_data(); }), 1u);
  EXPECT_EQ(syncs_of([&] {
              std::ostringstream out;
              out << a;
            }),
            1u);
  EXPECT_EQ(syncs_of([&] { (void)nonzero(a.dyn()); }), 1u);
  EXPECT_EQ(syncs_of([&] { synchronize(dev()); }), 1u);
  EXPECT_EQ(syncs_of([&] { (void)allclose(a, a); }), 1u);
}

TEST(HostSync, ChecksOfIndicesAndTargetsDoNotSync) {
  const DynTensor x = x3(),
                  idx = from_data(TensorData::from(std::vector<int64_t>{2, 0}, {2}), dev());
  const DynTensor logits =
      from_data(TensorData::from(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3}), dev());
  const DynTensor probs = sigmoid(logits);
  EXPECT_EQ(syncs_of([&] {
              (void)gather(x, 0, idx);
              (void)index_select(x, 0, idx);
              (void)scatter(x, 0, idx, 0.5);
              (void)scatter_add(x, 0, idx, gather(x, 0, idx));
              (void)index_add(x, 0, idx, gather(x, 0, idx));
              (void)one_hot(idx, 3);
              (void)nn::cross_entropy(logits, idx);
              (void)nn::cross_entropy(logits, idx, {.label_smoothing = 0.1});
              (void)nn::nll_loss(log_softmax(logits, 1), idx);
              (void)nn::binary_cross_entropy(probs, probs);
            }),
            0u);
}

TEST(HostSync, ClipGradNormDoesNotSync) {
  Generator gen(7);
  nn::Linear fc(nn::LinearConfig(4, 3), dev(), &gen);
  const auto x = Tensor<2>::randn({5, 4}, dev(), &gen);
  optim::ParamGrads g = optim::ParamGrads::from(fc, (fc(x) * fc(x)).sum().backward());
  Tensor<0> total;
  EXPECT_EQ(syncs_of([&] { total = optim::clip_grad_norm(g, 0.5, 2.0, true); }), 0u);
  EXPECT_GT(total.item<double>(), 0.5);
  const auto w = g.find(fc.weight.id()), b = g.find(fc.bias->id());
  const double clipped = std::sqrt(sum(square(w)).item<double>() + sum(square(b)).item<double>());
  EXPECT_NEAR(clipped, 0.5, 1e-5);
}

TEST(RangeErrors, RaiseNamingTheOpAndTheIndexAndTheProcessCarriesOn) {
  const DynTensor x = x3();
  EXPECT_EQ(error_of([&] { (void)gather(x, 0, bad_index()); }),
            "[gather] index 5 is out of bounds for dimension 0 with size 3");
  EXPECT_EQ(error_of([&] { (void)index_select(x, 0, neg(bad_index())); }),
            "[index_select] index -5 is out of bounds for dimension 0 with size 3");
  // Nothing is left pending, and the next ops and reads work.
  EXPECT_EQ(error_of([&] { synchronize(dev()); }), "");
  EXPECT_EQ(add(x, 1.0).to_vector<float>(), (std::vector<float>{2, 3, 4}));
}

TEST(RangeErrors, DeferredToTheNextSynchronisationOnce) {
  const DynTensor x = x3();
  {
    Deferred deferred;
    DynTensor picked, selected, scattered;
    EXPECT_EQ(syncs_of([&] {
                picked = gather(x, 0, bad_index());  // no error yet, and no read out of bounds
                selected = index_select(x, 0, bad_index());
                scattered = scatter(x, 0, bad_index(), 9.0);
              }),
              0u);
    const DynTensor next = add(x, 1.0);  // the process carries on
    // The first error is the one raised, at the next synchronisation, and only once.
    EXPECT_EQ(error_of([&] { synchronize(dev()); }),
              "[gather] index 5 is out of bounds for dimension 0 with size 3");
    EXPECT_EQ(error_of([&] { synchronize(dev()); }), "");
    // A failed op touches nothing out of bounds. A backend that checks before the op (Cpu,
    // LibTorch) skips it whole: zeros (gather, index_select) or its input (scatter); one that
    // checks where the data lives (Cuda) skips the bad elements only.
    const bool whole = picked.to_vector<float>()[0] == 0;
    const std::vector<float> picked_want =
        whole ? std::vector<float>{0, 0, 0} : std::vector<float>{1, 0, 2};
    const std::vector<float> scattered_want =
        whole ? std::vector<float>{1, 2, 3} : std::vector<float>{9, 9, 3};
    EXPECT_EQ(picked.to_vector<float>(), picked_want);
    EXPECT_EQ(selected.to_vector<float>(), picked_want);
    EXPECT_EQ(scattered.to_vector<float>(), scattered_want);
    EXPECT_EQ(next.to_vector<float>(), (std::vector<float>{2, 3, 4}));
    // Any host read raises it too, as item() does here for a loss with a bad target.
    const DynTensor logits =
        from_data(TensorData::from(std::vector<float>{1, 2, 3, 4}, {2, 2}), dev());
    const DynTensor target = from_data(TensorData::from(std::vector<int64_t>{1, 7}, {2}), dev());
    const DynTensor loss = nn::cross_entropy(logits, target);
    EXPECT_EQ(error_of([&] { (void)loss.item<float>(); }),
              "[cross_entropy] target class 7 is out of range for 2 classes (ignore_index is "
              "-100)");
    EXPECT_EQ(error_of([&] { (void)loss.item<float>(); }), "");
  }
  EXPECT_EQ(error_of([&] { (void)gather(x, 0, bad_index()); }),
            "[gather] index 5 is out of bounds for dimension 0 with size 3");
}

TEST(RangeErrors, ProbabilitiesAndNonFiniteNorms) {
  const DynTensor p = from_data(TensorData::from(std::vector<float>{0.5f, 1.5f}, {2}), dev());
  const std::string e = error_of([&] { (void)nn::binary_cross_entropy(p, mul(p, 0.5)); });
  EXPECT_EQ(e, "[binary_cross_entropy] input values must be probabilities in [0, 1], got 1.5");
  // Large operands are checked in pieces on the threads: the bad value may be in any of them.
  std::vector<float> large(300000, 0.5f);
  large[250000] = 1.25f;
  const DynTensor q = from_data(TensorData::from(large, {300000}), dev());
  EXPECT_EQ(error_of([&] { (void)nn::binary_cross_entropy(sigmoid(q), q); }),
            "[binary_cross_entropy] target values must be in [0, 1], got 1.25");
  large[7] = NAN;
  const DynTensor with_nan = from_data(TensorData::from(large, {300000}), dev());
  EXPECT_EQ(error_of([&] { (void)nn::binary_cross_entropy(sigmoid(q), with_nan); }),
            "[binary_cross_entropy] target values must be in [0, 1], got nan");
  EXPECT_EQ(error_of([&] { (void)one_hot(bad_index(), 3); }),
            "[one_hot] class values must be in [0, 3), got 5");
  nn::Linear fc(nn::LinearConfig(2, 1), dev());
  optim::ParamGrads g;
  g.set(fc.weight.id(),
        from_data(TensorData::from(std::vector<float>{1, INFINITY}, {1, 2}), dev()));
  EXPECT_EQ(error_of([&] { (void)optim::clip_grad_norm(g, 1.0, 2.0, true); }),
            "[clip_grad_norm] the total norm of order 2 of the gradients is inf, so they cannot be "
            "clipped");
}

TEST(Asynchrony, WriteFromHostConsumesTheBufferBeforeItReturns) {
  TensorData data = TensorData::from(std::vector<float>{1, 2, 3, 4}, {4});
  const DynTensor t = from_data(data, dev());
  std::fill(data.bytes.begin(), data.bytes.end(), 0xff);  // the caller reuses its buffer at once
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1, 2, 3, 4}));
}

TEST(Asynchrony, UploadsAndReadsFromWorkerThreads) {
  // As the DataLoader's workers do: each thread uploads batches to the device and computes.
  constexpr int kThreads = 4, kBatches = 50;
  const uint64_t before = host_sync_count(dev());
  std::vector<int> wrong(kThreads, 0);
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([t, &wrong] {
      for (int b = 0; b < kBatches; ++b) {
        std::vector<float> v(1000, static_cast<float>(t * 1000 + b));
        const auto x = Tensor<1>::from_vector(v, dev());
        if ((x * 2.0f).sum().item<float>() != 2000.0f * v[0]) ++wrong[static_cast<size_t>(t)];
      }
    });
  }
  for (auto& w : workers) w.join();
  EXPECT_EQ(wrong, std::vector<int>(kThreads, 0));
  EXPECT_EQ(host_sync_count(dev()) - before, static_cast<uint64_t>(kThreads * kBatches));
}
