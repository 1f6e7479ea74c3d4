// ember::dist's front end: the launcher's environment, init(), and collectives on tensors of
// any device (staged through a contiguous host copy: MPI reads host memory).
#include "ember/dist/dist.hpp"

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
#include "group.hpp"

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
  std::unique_ptr<Work> all_reduce(void*, int64_t, DType, ReduceOp) override { return done(); }
  std::unique_ptr<Work> broadcast(void*, int64_t, int) override { return done(); }
  std::unique_ptr<Work> all_gather(const void* in, void* out, int64_t bytes) override {
    if (bytes > 0 && in != out) std::memcpy(out, in, static_cast<size_t>(bytes));
    return done();
  }
  std::unique_ptr<Work> reduce_scatter(const void* in, void* out, int64_t count, DType dtype,
                                       ReduceOp) override {
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

void check_floating_avg(const DynTensor& x, ReduceOp op, const char* what) {
  EMBER_CHECK(op != ReduceOp::avg || is_floating(x.dtype()), "[", what, "] ", detail::rank_name(),
              ": avg needs a floating tensor, got ", x.dtype());
}

}  // namespace

DynTensor all_reduce(const DynTensor& x, ReduceOp op) {
  check_floating_avg(x, op, "all_reduce");
  if (world_size() == 1) return detach(x);
  DynTensor h = host_buffer(x, true);
  detail::world_group().all_reduce(h.raw().data(), h.numel(), h.dtype(), op)->wait();
  if (op == ReduceOp::avg) h = div(h, Scalar(static_cast<double>(world_size())));
  return restore(h, x);
}

DynTensor broadcast(const DynTensor& x, int root) {
  EMBER_CHECK(root >= 0 && root < world_size(), "[broadcast] ", detail::rank_name(), ": root ",
              root, " is not a rank");
  if (world_size() == 1) return detach(x);
  DynTensor h = host_buffer(x, false);
  detail::world_group()
      .broadcast(h.raw().data(), static_cast<int64_t>(h.raw().nbytes()), root)
      ->wait();
  return restore(h, x);
}

DynTensor all_gather(const DynTensor& x) {
  EMBER_CHECK(x.defined() && x.rank() >= 1, "[all_gather] ", detail::rank_name(),
              ": needs a tensor of rank 1 or more (gathered along dim 0)");
  if (world_size() == 1) return detach(x);
  const DynTensor h = host_buffer(x, false);
  Shape dims = h.shape();
  dims[0] *= world_size();
  DynTensor out = empty(dims, h.dtype(), Device::cpu());
  detail::world_group()
      .all_gather(h.raw().data(), out.raw().data(), static_cast<int64_t>(h.raw().nbytes()))
      ->wait();
  return restore(out, x);
}

DynTensor reduce_scatter(const DynTensor& x, ReduceOp op) {
  check_floating_avg(x, op, "reduce_scatter");
  const int n = world_size();
  EMBER_CHECK(x.defined() && x.rank() >= 1 && x.size(0) % n == 0, "[reduce_scatter] ",
              detail::rank_name(), ": dim 0 of ", x.defined() ? x.shape() : Shape{},
              " does not split into ", n, " equal parts");
  if (n == 1) return detach(x);
  const DynTensor h = host_buffer(x, true);
  Shape dims = h.shape();
  dims[0] /= n;
  DynTensor out = empty(dims, h.dtype(), Device::cpu());
  detail::world_group()
      .reduce_scatter(h.raw().data(), out.raw().data(), out.numel(), h.dtype(), op)
      ->wait();
  if (op == ReduceOp::avg) out = div(out, Scalar(static_cast<double>(n)));
  return restore(out, x);
}

void barrier() {
  if (world_size() > 1) detail::world_group().barrier()->wait();
}

}  // namespace ember::dist
