// The Cuda backend's NCCL communicator (include/ember/backends/cuda/nccl.hpp) on one GPU, as a
// job of one rank: each collective's plumbing (pointers, counts, dtypes, the device's stream,
// the watchdog's events) against the values a job of one must give. Several ranks need one GPU
// each (docs/DISTRIBUTED.md says what was run where). Skipped without a GPU.
#include <gtest/gtest.h>

#include <chrono>

#include <ember/backends/cuda/nccl.hpp>
#include <ember/ember.hpp>

namespace ember {
namespace {

namespace nccl = cuda::nccl;

TEST(Nccl, CollectivesOfAJobOfOneRankOnTheGpu) {
  if (device_count(DeviceType::Cuda) == 0) GTEST_SKIP() << "no Cuda device here";
  const Device gpu = Device::cuda(0);
  nccl::Communicator comm(0, 0, 1, nccl::unique_id(), std::chrono::seconds(60));
  EXPECT_EQ(comm.device(), 0);
  Generator gen(5);
  for (DType dtype : {DType::f32, DType::bf16, DType::f64, DType::i64}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    const DynTensor x = cast(mul(randn({3, 4}, DType::f32, gpu, &gen), Scalar(50)), dtype);
    const std::vector<double> want = cast(x, DType::f64).to_vector<double>();
    for (nccl::Op op : {nccl::Op::sum, nccl::Op::max, nccl::Op::min, nccl::Op::product}) {
      const DynTensor y = clone(x);
      comm.all_reduce(y.raw(), op);
      EXPECT_EQ(cast(y, DType::f64).to_vector<double>(), want);
    }
    const DynTensor b = clone(x);
    comm.broadcast(b.raw(), 0);
    EXPECT_EQ(cast(b, DType::f64).to_vector<double>(), want);
    // Outputs start as a sentinel: a collective that wrote nothing fails.
    const DynTensor gathered = full({3, 4}, Scalar(-7), dtype, gpu);
    comm.all_gather(x.raw(), gathered.raw());
    EXPECT_EQ(cast(gathered, DType::f64).to_vector<double>(), want);
    const DynTensor scattered = full({3, 4}, Scalar(-7), dtype, gpu);
    comm.reduce_scatter(x.raw(), scattered.raw(), nccl::Op::sum);
    EXPECT_EQ(cast(scattered, DType::f64).to_vector<double>(), want);
  }
  const DynTensor f = randn({1000}, DType::f32, gpu, &gen);
  const DynTensor mean = clone(f);
  comm.all_reduce(mean.raw(), nccl::Op::avg);
  EXPECT_EQ(mean.to_vector<float>(), f.to_vector<float>());
}

}  // namespace
}  // namespace ember
