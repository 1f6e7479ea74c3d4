// ember::dist's front end: the launcher's environment, init(), and collectives on tensors of
// any device (staged through a contiguous host copy: MPI reads host memory).
#include "ember/dist/dist.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "ember/autodiff/autodiff.hpp"
#include "ember/core/error.hpp"
#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "ember/tensor/sync.hpp"
#include "ember/tensor/tensor_data.hpp"
#include "group.hpp"
#ifdef EMBER_HAVE_NCCL
#include "ember/backends/cuda/nccl.hpp"
#endif

namespace ember::dist {
namespace detail {
namespace {

// The group of one process: every collective is the identity (there is nobody to wait for).
class Done final : public Work {
 public:
  void wait() override {}
  bool test() override { return true; }
};
class LocalGroup final : public Group {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::unique_ptr<Work> all_reduce(void*, int64_t, DType, ReduceOp, Keep) override {
    return done();
  }
  std::unique_ptr<Work> broadcast(void*, int64_t, int, Keep) override { return done(); }
  std::unique_ptr<Work> all_gather(const void* in, void* out, int64_t bytes, Keep) override {
    if (bytes > 0 && in != out) std::memcpy(out, in, static_cast<size_t>(bytes));
    return done();
  }
  std::unique_ptr<Work> reduce_scatter(const void* in, void* out, int64_t count, DType dtype,
                                       ReduceOp, Keep) override {
    const size_t bytes = static_cast<size_t>(count) * dtype_size(dtype);
    if (bytes > 0 && in != out) std::memcpy(out, in, bytes);
    return done();
  }
  std::unique_ptr<Work> barrier() override { return done(); }
  [[noreturn]] void abort(int code) override { std::_Exit(code); }
  void finalize() override {}

 private:
  static std::unique_ptr<Work> done() { return std::make_unique<Done>(); }
};

struct State {
  std::unique_ptr<Group> group;  // null before init()
  bool initialized = false, finalized = false;
  std::chrono::milliseconds timeout = InitOptions{}.timeout;
  Environment env;
#ifdef EMBER_HAVE_NCCL
  std::unique_ptr<cuda::nccl::Communicator> nccl;  // made by the first collective on cuda:N
#endif
};
State& state() {
  static State s;
  return s;
}

std::optional<int> env_int(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  EMBER_CHECK(*end == '\0' && n >= 0 && n < (1L << 24), "[dist::environment] ", name, "='", v,
              "' is not a rank or a count");
  return static_cast<int>(n);
}

}  // namespace

Group& world_group() {
  State& s = state();
  if (!s.group) {
    static LocalGroup one;
    return one;
  }
  return *s.group;
}

std::string rank_name() {
  return "rank " + std::to_string(dist::rank()) + " of " + std::to_string(dist::world_size());
}

#ifdef EMBER_HAVE_NCCL
// The NCCL communicator of this rank's GPU: made by the first collective on a Cuda tensor, which
// every rank reaches together (collectives come in one order on every rank); rank 0's unique id
// travels over MPI.
cuda::nccl::Communicator& nccl_of(Device device) {
  State& s = state();
  if (s.nccl) {
    EMBER_CHECK(s.nccl->device() == device.index, "[dist] ", rank_name(),
                ": a collective on cuda:", device.index, " after one on cuda:", s.nccl->device(),
                " (each rank uses one GPU: cuda:<local rank>)");
    return *s.nccl;
  }
  cuda::nccl::UniqueId id{};
  if (dist::rank() == 0) id = cuda::nccl::unique_id();
  const std::vector<uint8_t> mine(id.begin(), id.end());
  const DynTensor sent = dist::broadcast(
      from_data(TensorData::from(mine, Shape{static_cast<int64_t>(mine.size())}), Device::cpu()),
      0);
  const std::vector<uint8_t> got = sent.to_vector<uint8_t>();
  std::copy(got.begin(), got.end(), id.begin());
  s.nccl = std::make_unique<cuda::nccl::Communicator>(device.index, dist::rank(),
                                                      dist::world_size(), id, s.timeout);
  return *s.nccl;
}
cuda::nccl::Op nccl_op(ReduceOp op) { return static_cast<cuda::nccl::Op>(op); }
#endif

bool on_device_collectives(Device device) {
#ifdef EMBER_HAVE_NCCL
  return device.type == DeviceType::Cuda;
#else
  (void)device;
  return false;
#endif
}

void device_all_reduce(const DynTensor& t, ReduceOp op) {
#ifdef EMBER_HAVE_NCCL
  nccl_of(t.device()).all_reduce(t.raw(), nccl_op(op));
#else
  (void)op;
  EMBER_FAIL("[all_reduce] ", rank_name(), ": no collectives on ", t.device(), " in this build");
#endif
}

}  // namespace detail

using detail::state;

Environment environment() {
  using detail::env_int;
  Environment e;
  auto take = [&](const char* rank, const char* size, const char* local, const char* local_size,
                  const char* launcher) {
    const std::optional<int> r = env_int(rank), n = env_int(size);
    if (!r || !n) return false;
    e.rank = *r;
    e.world_size = *n;
    e.local_rank = local ? env_int(local).value_or(0) : 0;
    e.local_world_size = local_size ? env_int(local_size).value_or(1) : 1;
    e.launcher = launcher;
    EMBER_CHECK(e.world_size >= 1 && e.rank < e.world_size, "[dist::environment] ", rank, "=",
                e.rank, " is outside ", size, "=", e.world_size);
    EMBER_CHECK(e.local_rank < std::max(e.local_world_size, 1) || !local_size,
                "[dist::environment] ", local, "=", e.local_rank, " is outside ", local_size, "=",
                e.local_world_size);
    return true;
  };
  if (take("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
           "OMPI_COMM_WORLD_LOCAL_SIZE", "mpi") ||
      take("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", "mpi") ||
      take("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "torchrun")) {
    return e;
  }
  e.launcher = "none";
  return e;
}

bool mpi_available() {
#ifdef EMBER_HAVE_MPI
  return true;
#else
  return false;
#endif
}

void init(const InitOptions& options) {
  detail::State& s = state();
  EMBER_CHECK(!s.initialized, "[dist::init] called twice (the process group is joined once)");
  EMBER_CHECK(!s.finalized, "[dist::init] after dist::finalize(): MPI cannot be started again");
  EMBER_CHECK(options.timeout.count() > 0, "[dist::init] the timeout must be positive, got ",
              static_cast<long long>(options.timeout.count()), " ms");
  const Environment env = environment();
  s.timeout = options.timeout;
  if (env.launcher == "mpi") {
    EMBER_CHECK(mpi_available(), "[dist::init] launched by mpirun as rank ", env.rank, " of ",
                env.world_size,
                ", but this Ember was built without MPI (apt-get install libopenmpi-dev and "
                "build again)");
#ifdef EMBER_HAVE_MPI
    s.group = detail::make_mpi_group(options.timeout);
#endif
    EMBER_CHECK(s.group->size() == env.world_size, "[dist::init] MPI counts ", s.group->size(),
                " processes, the launcher's environment ", env.world_size);
  } else {
    EMBER_CHECK(env.world_size == 1, "[dist::init] a ", env.launcher, "-style launch of ",
                env.world_size,
                " processes: Ember's Cpu process group is MPI, so start the processes with "
                "`mpirun -np ",
                env.world_size, " ...` instead");
  }
  s.env = env;
  s.initialized = true;
  // MPI wants MPI_Finalize before exit; a program that never calls finalize() gets it here.
  static const bool registered = [] {
    std::atexit([] {
      if (is_initialized()) finalize();
    });
    return true;
  }();
  (void)registered;
}

bool is_initialized() { return state().initialized; }

void finalize() {
  detail::State& s = state();
  if (!s.initialized) return;
#ifdef EMBER_HAVE_NCCL
  s.nccl.reset();  // before MPI goes
#endif
  detail::world_group().finalize();
  s.initialized = false;
  s.finalized = true;
  s.group.reset();
}

void abort(int code) {
  detail::world_group().abort(code);
  std::_Exit(code);  // not reached: abort() ends the process
}

int rank() { return is_initialized() ? detail::world_group().rank() : 0; }
int world_size() { return is_initialized() ? detail::world_group().size() : 1; }
int local_rank() { return is_initialized() ? state().env.local_rank : 0; }
std::chrono::milliseconds timeout() { return state().timeout; }

namespace {

// A contiguous Cpu copy of x that nobody else holds (the collective writes into it), in the
// dtype MPI reduces: half floats travel as f32.
DynTensor host_buffer(const DynTensor& x, bool widen) {
  EMBER_CHECK(x.defined(), "[dist] ", detail::rank_name(), ": the tensor is undefined");
  DynTensor h = to_device(detach(x), Device::cpu());
  if (widen && (h.dtype() == DType::f16 || h.dtype() == DType::bf16)) h = cast(h, DType::f32);
  if (!h.is_contiguous() || !h.is_unique() || h.raw().storage == x.raw().storage) h = clone(h);
  synchronize(Device::cpu());  // MPI reads the memory directly
  return h;
}

// The result back in x's dtype and on x's device.
DynTensor restore(const DynTensor& h, const DynTensor& x) {
  DynTensor out = h.dtype() == x.dtype() ? h : cast(h, x.dtype());
  return out.device() == x.device() ? out : to_device(out, x.device());
}

// The reductions a dtype takes: avg on floating tensors only, bool with max (any) and min (all).
void check_reduction(const DynTensor& x, ReduceOp op, const char* what) {
  EMBER_CHECK(x.defined(), "[", what, "] ", detail::rank_name(), ": the tensor is undefined");
  EMBER_CHECK(op != ReduceOp::avg || is_floating(x.dtype()), "[", what, "] ", detail::rank_name(),
              ": avg needs a floating tensor, got ", x.dtype());
  EMBER_CHECK(x.dtype() != DType::boolean || op == ReduceOp::max || op == ReduceOp::min, "[", what,
              "] ", detail::rank_name(), ": bool tensors reduce with max (any) or min (all) only");
}

// dims with dim 0 multiplied (all_gather) or divided (reduce_scatter) by the world size.
Shape scaled_dim0(Shape dims, int times, int parts) {
  dims[0] = dims[0] * times / parts;
  return dims;
}

}  // namespace

// Each collective runs on the device where it can (NCCL on cuda:N), and otherwise over MPI on a
// host copy, whose result goes back to x's device and dtype.

DynTensor all_reduce(const DynTensor& x, ReduceOp op) {
  check_reduction(x, op, "all_reduce");
  if (world_size() == 1) return detach(x);
  if (detail::on_device_collectives(x.device())) {
    const DynTensor out = clone(detach(x));
    detail::device_all_reduce(out, op);
    return out;
  }
  DynTensor h = host_buffer(x, true);
  detail::world_group()
      .all_reduce(h.raw().data(), h.numel(), h.dtype(), op, {h.raw().storage})
      ->wait();
  if (op == ReduceOp::avg) h = div(h, Scalar(static_cast<double>(world_size())));
  return restore(h, x);
}

DynTensor broadcast(const DynTensor& x, int root) {
  EMBER_CHECK(root >= 0 && root < world_size(), "[broadcast] ", detail::rank_name(), ": root ",
              root, " is not a rank");
  EMBER_CHECK(x.defined(), "[broadcast] ", detail::rank_name(), ": the tensor is undefined");
  if (world_size() == 1) return detach(x);
#ifdef EMBER_HAVE_NCCL
  if (detail::on_device_collectives(x.device())) {
    const DynTensor out = clone(detach(x));
    detail::nccl_of(x.device()).broadcast(out.raw(), root);
    return out;
  }
#endif
  DynTensor h = host_buffer(x, false);
  // In pieces of at most 1 GiB: MPI counts are ints.
  constexpr int64_t kPiece = int64_t{1} << 30;
  char* bytes = static_cast<char*>(h.raw().data());
  const auto total = static_cast<int64_t>(h.raw().nbytes());
  for (int64_t at = 0; at < total; at += kPiece) {
    detail::world_group()
        .broadcast(bytes + at, std::min(kPiece, total - at), root, {h.raw().storage})
        ->wait();
  }
  return restore(h, x);
}

DynTensor all_gather(const DynTensor& x) {
  EMBER_CHECK(x.defined() && x.rank() >= 1, "[all_gather] ", detail::rank_name(),
              ": needs a tensor of rank 1 or more (gathered along dim 0)");
  if (world_size() == 1) return detach(x);
#ifdef EMBER_HAVE_NCCL
  if (detail::on_device_collectives(x.device())) {
    const DynTensor in = clone(detach(x));
    const DynTensor out = empty(scaled_dim0(in.shape(), world_size(), 1), in.dtype(), in.device());
    detail::nccl_of(x.device()).all_gather(in.raw(), out.raw());
    return out;
  }
#endif
  const DynTensor h = host_buffer(x, false);
  DynTensor out = empty(scaled_dim0(h.shape(), world_size(), 1), h.dtype(), Device::cpu());
  detail::world_group()
      .all_gather(h.raw().data(), out.raw().data(), static_cast<int64_t>(h.raw().nbytes()),
                  {h.raw().storage, out.raw().storage})
      ->wait();
  return restore(out, x);
}

DynTensor reduce_scatter(const DynTensor& x, ReduceOp op) {
  check_reduction(x, op, "reduce_scatter");
  const int n = world_size();
  EMBER_CHECK(x.rank() >= 1 && x.size(0) % n == 0, "[reduce_scatter] ", detail::rank_name(),
              ": dim 0 of ", x.shape(), " does not split into ", n, " equal parts");
  if (n == 1) return detach(x);
#ifdef EMBER_HAVE_NCCL
  if (detail::on_device_collectives(x.device())) {
    const DynTensor in = clone(detach(x));
    const DynTensor out = empty(scaled_dim0(in.shape(), 1, n), in.dtype(), in.device());
    detail::nccl_of(x.device()).reduce_scatter(in.raw(), out.raw(), detail::nccl_op(op));
    return out;
  }
#endif
  const DynTensor h = host_buffer(x, true);
  DynTensor out = empty(scaled_dim0(h.shape(), 1, n), h.dtype(), Device::cpu());
  detail::world_group()
      .reduce_scatter(h.raw().data(), out.raw().data(), out.numel(), h.dtype(), op,
                      {h.raw().storage, out.raw().storage})
      ->wait();
  if (op == ReduceOp::avg) out = div(out, Scalar(static_cast<double>(n)));
  return restore(out, x);
}

std::string broadcast(const std::string& text, int root) {
  if (world_size() == 1) return text;
  const int64_t mine = static_cast<int64_t>(text.size());
  const DynTensor length = broadcast(
      from_data(TensorData::from(std::vector<int64_t>{mine}, Shape{1}), Device::cpu()), root);
  const int64_t n = length.to_vector<int64_t>()[0];
  std::vector<uint8_t> bytes(static_cast<size_t>(n), 0);
  if (rank() == root) bytes.assign(text.begin(), text.end());
  if (n == 0) return {};
  const DynTensor got =
      broadcast(from_data(TensorData::from(bytes, Shape{n}), Device::cpu()), root);
  const std::vector<uint8_t> back = got.to_vector<uint8_t>();
  return std::string(back.begin(), back.end());
}

void barrier() {
  if (world_size() > 1) detail::world_group().barrier()->wait();
}

}  // namespace ember::dist
