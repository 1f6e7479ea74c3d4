// ember::dist under `mpirun -np 2` (ctest's dist.mpi2.*) and alone (a group of one): every
// collective against the value each rank can compute for itself (each rank's input comes from a
// generator seeded by its rank), DistributedDataParallel's gradients against one process's on the
// whole batch, and a rank that does not arrive as an error naming the collective and the rank.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include <ember/ember.hpp>

#include <filesystem>

#include "train_test_util.hpp"  // tests/train: TinyNet, quadrant images

namespace ember {
namespace {

Device dev() { return default_device(); }
int rank() { return dist::rank(); }
int world() { return dist::world_size(); }

// Rank r's input for a collective: random, never zeros, the same wherever it is computed.
DynTensor input_of(int r, const Shape& shape, DType dtype = DType::f32) {
  Generator gen(1000 + static_cast<uint64_t>(r));
  return cast(randn(shape, DType::f64, dev(), &gen), dtype);
}

void expect_close(const DynTensor& got, const DynTensor& want, double tol) {
  ASSERT_EQ(got.shape(), want.shape());
  ASSERT_EQ(got.dtype(), want.dtype());
  EXPECT_EQ(got.device(), want.device());
  const std::vector<double> g = cast(got, DType::f64).to_vector<double>();
  const std::vector<double> w = cast(want, DType::f64).to_vector<double>();
  double worst = 0;
  for (size_t i = 0; i < g.size(); ++i)
    worst = std::max(worst, std::abs(g[i] - w[i]) / (1 + std::abs(w[i])));
  EXPECT_LE(worst, tol) << "rank " << rank();
}

TEST(Dist, EnvironmentMatchesTheGroup) {
  const dist::Environment env = dist::environment();
  EXPECT_EQ(env.world_size, world());
  EXPECT_EQ(env.rank, rank());
  EXPECT_EQ(env.launcher, world() > 1 ? "mpi" : env.launcher);
  EXPECT_TRUE(dist::is_initialized());
  try {
    dist::init();
    ADD_FAILURE() << "a second init() was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[dist::init] called twice"), std::string::npos);
  }
}

// The launcher's variables as environment() reads them (alone only: under mpiexec OpenMPI's
// own variables come first), and the errors of inconsistent ones.
TEST(Dist, EnvironmentReadsTorchrunStyleVariablesAndRefusesInconsistentOnes) {
  if (world() > 1) GTEST_SKIP() << "OpenMPI's variables take precedence under mpiexec";
  setenv("RANK", "1", 1);
  setenv("WORLD_SIZE", "4", 1);
  setenv("LOCAL_RANK", "1", 1);
  setenv("LOCAL_WORLD_SIZE", "2", 1);
  const dist::Environment env = dist::environment();
  EXPECT_EQ(env.launcher, "torchrun");
  EXPECT_EQ(env.rank, 1);
  EXPECT_EQ(env.world_size, 4);
  EXPECT_EQ(env.local_rank, 1);
  EXPECT_EQ(env.local_world_size, 2);
  auto error = [] {
    try {
      dist::environment();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  setenv("RANK", "4", 1);
  EXPECT_EQ(error(), "[dist::environment] RANK=4 is outside WORLD_SIZE=4");
  setenv("RANK", "one", 1);
  EXPECT_EQ(error(), "[dist::environment] RANK='one' is not a rank or a count");
  for (const char* v : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"}) unsetenv(v);
  EXPECT_EQ(dist::environment().launcher, "none");
}

TEST(Dist, AllReduceSumsAverageMaxMinAndProductOverRanks) {
  const Shape shape{3, 5};
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    DynTensor sum, mx, mn, prod;
    for (int r = 0; r < world(); ++r) {
      const DynTensor x = cast(input_of(r, shape, dtype), DType::f64);
      sum = r == 0 ? x : add(sum, x);
      mx = r == 0 ? x : maximum(mx, x);
      mn = r == 0 ? x : minimum(mn, x);
      prod = r == 0 ? x : mul(prod, x);
    }
    const DynTensor mine = input_of(rank(), shape, dtype);
    const double tol = dtype == DType::f16 || dtype == DType::bf16 ? 2e-2 : 1e-6;
    expect_close(dist::all_reduce(mine), cast(sum, dtype), tol);
    expect_close(dist::all_reduce(mine, dist::ReduceOp::avg),
                 cast(div(sum, Scalar(world())), dtype), tol);
    expect_close(dist::all_reduce(mine, dist::ReduceOp::max), cast(mx, dtype), tol);
    expect_close(dist::all_reduce(mine, dist::ReduceOp::min), cast(mn, dtype), tol);
    expect_close(dist::all_reduce(mine, dist::ReduceOp::product), cast(prod, dtype), tol);
  }
  // Integers exactly; a strided view (a transpose) is reduced as its values.
  const DynTensor ints = cast(mul(input_of(rank(), {4, 6}), Scalar(100)), DType::i64);
  DynTensor want = zeros({6, 4}, DType::i64, dev());
  for (int r = 0; r < world(); ++r) {
    want = add(want, transpose(cast(mul(input_of(r, {4, 6}), Scalar(100)), DType::i64), 0, 1));
  }
  const DynTensor got = dist::all_reduce(transpose(ints, 0, 1));
  EXPECT_EQ(got.to_vector<int64_t>(), want.to_vector<int64_t>());
  // The input is not written.
  EXPECT_EQ(ints.to_vector<int64_t>(),
            cast(mul(input_of(rank(), {4, 6}), Scalar(100)), DType::i64).to_vector<int64_t>());
}

TEST(Dist, BroadcastAllGatherAndReduceScatter) {
  const int root = world() - 1;
  expect_close(dist::broadcast(input_of(rank(), {7}), root), input_of(root, {7}), 0);
  // all_gather: rank order along dim 0.
  std::vector<DynTensor> parts;
  for (int r = 0; r < world(); ++r) parts.push_back(input_of(r, {2, 3}, DType::bf16));
  expect_close(dist::all_gather(input_of(rank(), {2, 3}, DType::bf16)), cat(parts, 0), 0);
  // reduce_scatter: rank r gets the sum of part r.
  const Shape shape{static_cast<int64_t>(2 * world()), 3};
  DynTensor sum = zeros(shape, DType::f32, dev());
  for (int r = 0; r < world(); ++r) sum = add(sum, input_of(r, shape));
  expect_close(dist::reduce_scatter(input_of(rank(), shape)), narrow(sum, 0, 2 * rank(), 2), 1e-6);
  dist::barrier();
}

TEST(Dist, BadArgumentsAreErrorsNamingTheRank) {
  const std::string me = "rank " + std::to_string(rank()) + " of " + std::to_string(world());
  auto expect = [&](const std::function<void()>& f, const std::string& part) {
    try {
      f();
      ADD_FAILURE() << "no error; expected " << part;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(me), std::string::npos) << e.what();
    }
  };
  expect([] { dist::broadcast(input_of(0, {2}), world()); }, "[broadcast]");
  expect([] { dist::all_reduce(zeros({2}, DType::i32, dev()), dist::ReduceOp::avg); },
         "avg needs a floating tensor");
  expect([] { dist::all_gather(zeros({}, DType::f32, dev())); }, "[all_gather]");
  if (world() > 1) {
    expect([] { dist::reduce_scatter(zeros({2 * world() + 1}, DType::f32, dev())); },
           "equal parts");
  }
}

// A small classifier with a layer used on rank 0 only and one used nowhere.
struct Net {
  nn::Linear fc1, fc2, rank0_only, unused;
  EMBER_MODULE(Net, fc1, fc2, rank0_only, unused)
  Tensor<2> forward(const Tensor<2>& x, bool extra) const {
    Tensor<2> h = tanh(fc1(x));
    if (extra) h = h + rank0_only(h);
    return fc2(h);
  }
};
Net make_net(uint64_t seed) {
  manual_seed(seed);
  return Net{nn::Linear(6, 16, dev()), nn::Linear(16, 4, dev()), nn::Linear(16, 16, dev()),
             nn::Linear(3, 3, dev())};
}

struct Batch {
  Tensor<2> x;
  Tensor<1, Int> y;
};
// The whole batch of 4 * world() rows; rank r trains on rows [4r, 4r + 4).
Batch whole_batch() {
  Generator gen(7);
  const int64_t n = 4 * world();
  return {Tensor<2>(randn({n, 6}, DType::f32, dev(), &gen)),
          Tensor<1, Int>(randint(0, 4, {n}, DType::i64, dev(), &gen))};
}
Batch my_rows(const Batch& b) {
  return {Tensor<2>(narrow(b.x.dyn(), 0, 4 * rank(), 4)),
          Tensor<1, Int>(narrow(b.y.dyn(), 0, 4 * rank(), 4))};
}

TEST(Ddp, ABucketSizeThatIsNotPositiveIsAnError) {
  Net net = make_net(1);
  try {
    dist::DistributedDataParallel ddp(net, dist::DdpConfig().bucket_mb(0));
    ADD_FAILURE() << "bucket_mb 0 was accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "[DistributedDataParallel] bucket_mb must be positive, got 0");
  }
}

TEST(Ddp, ParametersStartAsRankZeros) {
  Net net = make_net(100 + rank());  // a different initialisation on every rank
  const Net rank0 = make_net(100);
  dist::DistributedDataParallel ddp(net);
  expect_close(net.fc1.weight.dyn(), rank0.fc1.weight.dyn(), 0);
  expect_close(net.unused.bias->dyn(), rank0.unused.bias->dyn(), 0);
}

TEST(Ddp, GradientsEqualOneProcessOnTheWholeBatchInEveryBucketing) {
  const Batch all = whole_batch(), mine = my_rows(all);
  for (double bucket_mb : {25.0, 1e-6}) {  // one bucket; one per parameter
    SCOPED_TRACE(bucket_mb);
    Net net = make_net(3);
    dist::DistributedDataParallel ddp(net, dist::DdpConfig().bucket_mb(bucket_mb));
    const Gradients g = ddp.backward(nn::cross_entropy(net.forward(mine.x, false), mine.y));
    if (world() > 1) {
      EXPECT_EQ(ddp.num_buckets(), bucket_mb > 1 ? 1 : 8);  // 4 layers: weight and bias each
    }
    Net ref = make_net(3);
    const Gradients want = nn::cross_entropy(ref.forward(all.x, false), all.y).backward();
    expect_close(g.get(net.fc1.weight.dyn()), want.get(ref.fc1.weight.dyn()), 1e-5);
    expect_close(g.get(net.fc2.bias->dyn()), want.get(ref.fc2.bias->dyn()), 1e-5);
    EXPECT_FALSE(g.contains(net.unused.weight.dyn()));
    EXPECT_FALSE(g.contains(net.rank0_only.weight.dyn()));
  }
}

TEST(Ddp, AParameterUsedOnSomeRanksGetsTheOthersZerosInTheMean) {
  const Batch mine = my_rows(whole_batch());
  Net net = make_net(4);
  dist::DistributedDataParallel ddp(net, dist::DdpConfig().bucket_mb(0.0005));
  const Gradients g = ddp.backward(nn::cross_entropy(net.forward(mine.x, rank() == 0), mine.y));
  // Rank 0's gradient of rank0_only, divided by the world size, everywhere.
  Net ref = make_net(4);
  const Batch r0 = {Tensor<2>(narrow(whole_batch().x.dyn(), 0, 0, 4)),
                    Tensor<1, Int>(narrow(whole_batch().y.dyn(), 0, 0, 4))};
  const Gradients want = nn::cross_entropy(ref.forward(r0.x, true), r0.y).backward();
  expect_close(g.get(net.rank0_only.weight.dyn()),
               div(want.get(ref.rank0_only.weight.dyn()), Scalar(world())), 1e-5);
  EXPECT_FALSE(g.contains(net.unused.weight.dyn()));
}

TEST(Ddp, NoSyncThenAllReduceOfTheSumsEqualsTheWholeBatch) {
  const Batch all = whole_batch(), mine = my_rows(all);
  Net net = make_net(5);
  dist::DistributedDataParallel ddp(net);
  optim::GradientsAccumulator acc;
  for (int half = 0; half < 2; ++half) {  // two micro-batches of 2 rows each
    const auto guard = ddp.no_sync();
    const Tensor<2> x(narrow(mine.x.dyn(), 0, 2 * half, 2));
    const Tensor<1, Int> y(narrow(mine.y.dyn(), 0, 2 * half, 2));
    acc.accumulate(net, ddp.backward(nn::cross_entropy(net.forward(x, false), y) * 0.5f));
  }
  optim::ParamGrads g = acc.take();
  ddp.all_reduce(g);
  Net ref = make_net(5);
  const Gradients want = nn::cross_entropy(ref.forward(all.x, false), all.y).backward();
  expect_close(g.find(net.fc1.weight), want.get(ref.fc1.weight.dyn()), 1e-5);
  expect_close(g.find(net.fc2.weight), want.get(ref.fc2.weight.dyn()), 1e-5);
}

// A model with buffers: every parameter still has its gradient where the optimizer looks for it
// (the buffers' broadcast after backward leaves the parameters' leaves alone), and the running
// statistics are rank 0's everywhere.
struct NormNet {
  nn::Linear fc;
  nn::BatchNorm1d norm;
  EMBER_MODULE(NormNet, fc, norm)
  Tensor<2> forward(const Tensor<2>& x) const { return norm(fc(x)); }
};

TEST(Ddp, BuffersAreRankZerosAndParametersKeepTheirGradients) {
  const Batch mine = my_rows(whole_batch());
  manual_seed(8);
  NormNet net{nn::Linear(6, 4, dev()), nn::BatchNorm1d(4, dev())};
  dist::DistributedDataParallel ddp(net);
  const Gradients g = ddp.backward(nn::cross_entropy(net.forward(mine.x), mine.y));
  EXPECT_EQ(optim::ParamGrads::from(net, g).size(), 4u);  // fc and norm: weight and bias each
  const DynTensor mean = reshape(net.norm.running_mean->dyn(), Shape{1, 4});
  const DynTensor all = dist::all_gather(mean);
  for (int r = 1; r < world(); ++r) expect_close(narrow(all, 0, r, 1), narrow(all, 0, 0, 1), 0);
  optim::Optimizer opt = optim::SgdConfig().lr(0.1).init();
  const std::vector<float> before = net.fc.weight.to_vector<float>();
  opt.step(net, g);
  EXPECT_NE(net.fc.weight.to_vector<float>(), before);
}

// A parameter used inside a checkpoint() segment and outside it is reported twice by backward,
// the second time after its bucket left (backward reaches the outer use first): that bucket is
// reduced again from the whole gradient.
struct OneLayer {
  nn::Linear fc;
  EMBER_MODULE(OneLayer, fc)
};

TEST(Ddp, AParameterReportedAgainAfterItsBucketLeftIsReducedWhole) {
  const Batch all = whole_batch(), mine = my_rows(all);
  auto loss_of = [](const OneLayer& n, const Tensor<2>& x) {
    const DynTensor inner =
        checkpoint([&n](const std::vector<DynTensor>& in) { return tanh(n.fc.forward(in[0])); },
                   {require_grad(x.dyn())});
    return add(mean(inner), mean(n.fc.forward(mul(x.dyn(), Scalar(0.5)))));
  };
  auto make = [] {
    manual_seed(9);
    return OneLayer{nn::Linear(6, 5, dev())};
  };
  for (double bucket_mb : {25.0, 1e-6}) {
    SCOPED_TRACE(bucket_mb);
    OneLayer net = make();
    dist::DistributedDataParallel ddp(net, dist::DdpConfig().bucket_mb(bucket_mb));
    const Gradients g = ddp.backward(loss_of(net, mine.x));
    if (world() > 1) {
      EXPECT_GE(ddp.buckets_reduced_again(), 1);
    }
    OneLayer ref = make();
    const Gradients want = backward(loss_of(ref, all.x));
    expect_close(g.get(net.fc.weight.dyn()), want.get(ref.fc.weight.dyn()), 1e-5);
    expect_close(g.get(net.fc.bias->dyn()), want.get(ref.fc.bias->dyn()), 1e-5);
  }
}

TEST(Ddp, StepsKeepTheReplicasEqual) {
  const Batch mine = my_rows(whole_batch());
  Net net = make_net(6 + rank());
  dist::DistributedDataParallel ddp(net);
  optim::Optimizer opt = optim::AdamConfig().lr(1e-2).init();
  for (int step = 0; step < 3; ++step) {
    opt.step(net, ddp.backward(nn::cross_entropy(net.forward(mine.x, false), mine.y)));
  }
  const DynTensor w = reshape(net.fc1.weight.dyn(), Shape{-1});
  const DynTensor all = dist::all_gather(reshape(w, Shape{1, w.numel()}));
  for (int r = 1; r < world(); ++r) expect_close(narrow(all, 0, r, 1), narrow(all, 0, 0, 1), 0);
}

// ---- The Learner over the ranks ----

using train::testing::TinyNet;

// One out_dir for every rank: rank 0 makes it and sends its name.
std::string shared_dir(const std::string& name) {
  std::string dir = rank() == 0 ? train::testing::fresh_dir(name) : std::string(255, ' ');
  dir.resize(255, ' ');
  std::vector<uint8_t> bytes(dir.begin(), dir.end());
  const DynTensor got =
      dist::broadcast(from_data(TensorData::from(bytes, Shape{255}), Device::cpu()), 0);
  const std::vector<uint8_t> back = got.to_vector<uint8_t>();
  std::string out(back.begin(), back.end());
  return out.substr(0, out.find_last_not_of(' ') + 1);
}

struct DpRun {
  TinyNet model;
  train::Learner<TinyNet> learner;
  explicit DpRun(train::LearnerConfig config)
      : model((manual_seed(3), TinyNet())),
        learner(model, optim::AdamConfig().lr(1e-2).init(),
                std::move(config.progress(train::Progress::none).data_parallel())) {}
};

data::DataLoader<data::ImageItem, data::ImageBatch> shard_loader(size_t items, uint64_t seed) {
  return data::DataLoader<data::ImageItem, data::ImageBatch>(
      train::testing::quadrant_images(items, seed), std::make_shared<data::ImageBatcher>(),
      data::DataLoaderConfig().batch_size(8).shuffle(7).shard(static_cast<size_t>(rank()),
                                                              static_cast<size_t>(world())));
}

// A Ctrl-C seen by rank 0 alone (request_stop) stops every rank after the same batch, with one
// checkpoint written (by rank 0); resuming it on every rank ends where an uninterrupted run ends,
// bit for bit, and the replicas are equal.
TEST(DdpLearner, AStopOnOneRankStopsAllAtOneBatchAndTheResumeIsExact) {
  const auto train_set = shard_loader(96, 1), valid_set = shard_loader(32, 2);
  DpRun whole(train::LearnerConfig().epochs(2));
  const train::FitResult full = whole.learner.fit(train_set, valid_set);
  ASSERT_EQ(full.epochs_done, 2);

  const std::string dir = shared_dir("dp_resume");
  {
    DpRun first(train::LearnerConfig().epochs(2).out_dir(dir));
    int batches = 0;
    const train::FitResult stopped =
        first.learner.fit(train_set, valid_set, [&](TinyNet& m, const data::ImageBatch& b) {
          if (rank() == 0 && ++batches == 3) train::request_stop();
          return train::ClassificationStep{}(m, b);
        });
    EXPECT_TRUE(stopped.interrupted);
    EXPECT_EQ(stopped.epochs_done, 0);
    EXPECT_NE(stopped.checkpoint.find("epoch-0001-batch-000003"), std::string::npos)
        << stopped.checkpoint;
  }
  dist::barrier();
  if (rank() == 0) {
    EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir + "/checkpoints"),
                            std::filesystem::directory_iterator()),
              1);
  }
  DpRun second(train::LearnerConfig().epochs(2).out_dir(dir).resume());
  const train::FitResult resumed = second.learner.fit(train_set, valid_set);
  ASSERT_EQ(resumed.epochs_done, 2);
  EXPECT_EQ(train::testing::weights(second.model), train::testing::weights(whole.model));
  ASSERT_EQ(resumed.history.size(), 2u);
  // Epoch 1 was stopped and resumed: its sums are rank 0's saved ones plus every rank's rest.
  EXPECT_EQ(resumed.history[0].train_accuracy, full.history[0].train_accuracy);
  EXPECT_NEAR(resumed.history[0].train_loss, full.history[0].train_loss,
              1e-12 * full.history[0].train_loss);
  EXPECT_EQ(resumed.history[1].valid_accuracy, full.history[1].valid_accuracy);
  EXPECT_NEAR(resumed.history[1].train_loss, full.history[1].train_loss,
              1e-12 * full.history[1].train_loss);
  const DynTensor w = reshape(second.model.fc1.weight.dyn(), Shape{1, -1});
  const DynTensor all = dist::all_gather(w);
  for (int r = 1; r < world(); ++r) expect_close(narrow(all, 0, r, 1), narrow(all, 0, 0, 1), 0);
}

// Last (its own suite, defined last, so it runs last): a rank that does not arrive makes the
// other's collective raise once the timeout has passed, and the group then refuses every further
// collective (they would pair up wrongly); the late rank's arrival lets the group end cleanly.
TEST(DistTimeout, ARankThatDoesNotArriveIsATimeoutErrorNamingTheCollective) {
  if (world() == 1) GTEST_SKIP() << "needs two ranks (ctest's dist.mpi2)";
  const auto limit = dist::timeout();
  if (rank() == 1) {
    std::this_thread::sleep_for(limit + std::chrono::milliseconds(1500));
    dist::barrier();
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  try {
    dist::barrier();
    ADD_FAILURE() << "the barrier passed without rank 1";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("[barrier] rank 0 of 2: timed out after 3 s"), std::string::npos) << what;
  }
  try {
    dist::all_reduce(input_of(0, {2}));
    ADD_FAILURE() << "a collective after a timeout was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("an earlier collective timed out"), std::string::npos);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, limit + std::chrono::milliseconds(1000));
}

}  // namespace
}  // namespace ember

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ember::dist::InitOptions options;
  options.timeout = std::chrono::seconds(3);  // the timeout test waits this long
  ember::dist::init(options);
  const int failed = RUN_ALL_TESTS();
  ember::dist::finalize();
  return failed;
}
