// NCCL communicators for ember::dist (include/ember/backends/cuda/nccl.hpp). Non-blocking
// communicators, so that joining and every enqueue can give up after the timeout; a watchdog
// thread per communicator checks that each collective finishes on the GPU within it.
#include "ember/backends/cuda/nccl.hpp"

#include <nccl.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "check.hpp"
#include "state.hpp"

namespace ember::cuda::nccl {
namespace {

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return ncclFloat32;
    case DType::f64:
      return ncclFloat64;
    case DType::f16:
      return ncclFloat16;
    case DType::bf16:
      return ncclBfloat16;
    case DType::i64:
      return ncclInt64;
    case DType::i32:
      return ncclInt32;
    case DType::i8:
      return ncclInt8;
    case DType::u8:
    case DType::boolean:
      return ncclUint8;  // bool: max is any, min is all
  }
  return ncclFloat32;
}

ncclRedOp_t nccl_op(Op op) {
  switch (op) {
    case Op::sum:
      return ncclSum;
    case Op::avg:
      return ncclAvg;
    case Op::max:
      return ncclMax;
    case Op::min:
      return ncclMin;
    case Op::product:
      return ncclProd;
  }
  return ncclSum;
}

using Clock = std::chrono::steady_clock;

}  // namespace

UniqueId unique_id() {
  ncclUniqueId id;
  const ncclResult_t r = ncclGetUniqueId(&id);
  EMBER_CHECK(r == ncclSuccess,
              "[dist::init] NCCL could not make a unique id: ", ncclGetErrorString(r));
  static_assert(sizeof(id) == sizeof(UniqueId));
  UniqueId out;
  std::memcpy(out.data(), &id, sizeof id);
  return out;
}

struct Communicator::Impl {
  ncclComm_t comm = nullptr;
  int device = 0, rank = 0, world = 1;
  std::chrono::milliseconds timeout;
  DeviceState* state = nullptr;

  // The watchdog: one event per queued collective, oldest first.
  struct Pending {
    cudaEvent_t done;
    Clock::time_point started;
    const char* what;
  };
  std::mutex mutex;
  std::condition_variable wake;
  std::deque<Pending> pending;
  std::vector<cudaEvent_t> spare;
  bool stopping = false;
  std::string broken;  // why the communicator was aborted ("" while it works)
  std::thread watchdog;

  std::string who() const {
    return "rank " + std::to_string(rank) + " of " + std::to_string(world) +
           " on cuda:" + std::to_string(device);
  }

  // A call on a non-blocking communicator: ncclInProgress until NCCL has done its part, which a
  // missing peer can make last for ever; then the communicator is aborted and the error raised.
  void settle(ncclResult_t r, const char* what) {
    const auto deadline = Clock::now() + timeout;
    while (r == ncclInProgress) {
      if (Clock::now() > deadline) {
        fail(what, "NCCL timed out after " + std::to_string(timeout.count() / 1000) +
                       " s waiting for the other ranks (one stopped, failed or is stuck)");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      ncclCommGetAsyncError(comm, &r);
    }
    if (r != ncclSuccess) {
      fail(what, std::string("NCCL failed: ") + ncclGetErrorString(r) + " (" +
                     ncclGetLastError(comm) + ")");
    }
  }

  // An NCCL error or timeout: the communicator is aborted (NCCL's rule after an error), and
  // every later call raises the same message.
  [[noreturn]] void fail(const char* what, const std::string& why) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (comm != nullptr) ncclCommAbort(comm);
      comm = nullptr;
      broken = std::string("[") + what + "] " + who() + ": " + why;
    }
    raise_error(broken);
  }

  // Before each call: the communicator's device current (through the backend's own cache of
  // it), and a communicator that failed refused.
  void begin(const char* what) {
    state->check_not_capturing(what, "NCCL collectives are not captured");
    device_state(device);
    std::lock_guard<std::mutex> lock(mutex);
    if (!broken.empty()) {
      raise_error(std::string("[") + what + "] " + who() +
                  ": the communicator failed earlier: " + broken);
    }
  }

  // Queues one collective on the device's stream: `call(comm, stream)` is the NCCL call.
  template <class Call>
  void run(const char* what, Call&& call) {
    begin(what);
    settle(call(comm, state->stream), what);
    watch(what);
  }

  // Called after queueing a collective: the watchdog expects its event within the timeout.
  void watch(const char* what) {
    cudaEvent_t e = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (!spare.empty()) {
        e = spare.back();
        spare.pop_back();
      }
    }
    if (e == nullptr) EMBER_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), what);
    EMBER_CUDA_CHECK(cudaEventRecord(e, state->stream), what);
    {
      std::lock_guard<std::mutex> lock(mutex);
      pending.push_back({e, Clock::now(), what});
    }
    wake.notify_one();
  }

  void watch_loop() {
    cudaSetDevice(device);
    std::unique_lock<std::mutex> lock(mutex);
    while (!stopping) {
      if (pending.empty()) {
        wake.wait(lock);
        continue;
      }
      Pending& p = pending.front();
      if (cudaEventQuery(p.done) == cudaSuccess) {
        spare.push_back(p.done);
        pending.pop_front();
        continue;
      }
      if (Clock::now() - p.started > timeout) {
        // The GPU waits for a peer that does not come: nothing on the host could raise an error
        // in time (the next read of any tensor would block for ever), so end the process, as
        // PyTorch's NCCL watchdog does; mpirun then ends the other ranks.
        std::fprintf(stderr,
                     "[%s] %s: the collective has not finished on the GPU after %g s (a rank "
                     "stopped, failed or is stuck); ending this process\n",
                     p.what, who().c_str(), static_cast<double>(timeout.count()) / 1000);
        std::fflush(stderr);
        if (comm != nullptr) ncclCommAbort(comm);  // under the mutex, as fail() aborts
        std::_Exit(1);
      }
      wake.wait_for(lock, std::chrono::milliseconds(20));
    }
  }
};

Communicator::Communicator(int device, int rank, int world, const UniqueId& id,
                           std::chrono::milliseconds timeout)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.device = device;
  m.rank = rank;
  m.world = world;
  m.timeout = timeout;
  m.state = &device_state(device);  // makes the device current
  ncclUniqueId nid;
  std::memcpy(&nid, id.data(), sizeof nid);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  m.settle(ncclCommInitRankConfig(&m.comm, world, nid, rank, &config), "dist::init");
  m.watchdog = std::thread([&m] { m.watch_loop(); });
}

Communicator::~Communicator() {
  Impl& m = *impl_;
  // Queued collectives finish before the communicator goes; the watchdog, still running, ends
  // the process if one never does (a peer that left), rather than this waiting for ever.
  if (m.comm != nullptr) {
    device_state(m.device);
    while (cudaStreamQuery(m.state->stream) == cudaErrorNotReady) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    try {
      m.settle(ncclCommFinalize(m.comm), "dist::finalize");
      ncclCommDestroy(m.comm);
    } catch (const Error&) {  // aborted by settle(); nothing more to free
    }
  }
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    m.stopping = true;
  }
  m.wake.notify_one();
  if (m.watchdog.joinable()) m.watchdog.join();
  for (const Impl::Pending& p : m.pending) cudaEventDestroy(p.done);
  for (cudaEvent_t e : m.spare) cudaEventDestroy(e);
}

int Communicator::device() const { return impl_->device; }

void Communicator::all_reduce(const RawTensor& t, Op op) {
  impl_->run("all_reduce", [&](ncclComm_t c, cudaStream_t s) {
    return ncclAllReduce(t.data(), t.data(), static_cast<size_t>(t.numel()), nccl_type(t.dtype),
                         nccl_op(op), c, s);
  });
}

void Communicator::broadcast(const RawTensor& t, int root) {
  impl_->run("broadcast", [&](ncclComm_t c, cudaStream_t s) {
    return ncclBroadcast(t.data(), t.data(), t.nbytes(), ncclUint8, root, c, s);
  });
}

void Communicator::all_gather(const RawTensor& in, const RawTensor& out) {
  impl_->run("all_gather", [&](ncclComm_t c, cudaStream_t s) {
    return ncclAllGather(in.data(), out.data(), in.nbytes(), ncclUint8, c, s);
  });
}

void Communicator::reduce_scatter(const RawTensor& in, const RawTensor& out, Op op) {
  impl_->run("reduce_scatter", [&](ncclComm_t c, cudaStream_t s) {
    return ncclReduceScatter(in.data(), out.data(), static_cast<size_t>(out.numel()),
                             nccl_type(out.dtype), nccl_op(op), c, s);
  });
}

}  // namespace ember::cuda::nccl
