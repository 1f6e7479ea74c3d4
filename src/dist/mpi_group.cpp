// The MPI process group: Debian's OpenMPI (or any MPI-3) started by mpirun. Every collective is
// the non-blocking MPI call, waited for by polling MPI_Test until the group's timeout, so a rank
// that never arrives is an ember::Error here rather than a hang.
#include <mpi.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ember/core/error.hpp"
#include "group.hpp"

namespace ember::dist::detail {
namespace {

MPI_Datatype mpi_type(DType dtype, const char* what) {
  switch (dtype) {
    case DType::f32:
      return MPI_FLOAT;
    case DType::f64:
      return MPI_DOUBLE;
    case DType::i64:
      return MPI_INT64_T;
    case DType::i32:
      return MPI_INT32_T;
    case DType::i8:
      return MPI_INT8_T;
    case DType::u8:
      return MPI_UINT8_T;
    case DType::boolean:
      return MPI_C_BOOL;
    default:
      break;
  }
  raise_error(std::string("[") + what + "] " + rank_name() + ": MPI has no " +
              std::string(dtype_name(dtype)) + " reduction (reduce a f32 cast of it)");
}

MPI_Op mpi_op(ReduceOp op, DType dtype, const char* what) {
  if (dtype == DType::boolean) {
    if (op == ReduceOp::max) return MPI_LOR;
    if (op == ReduceOp::min) return MPI_LAND;
    raise_error(std::string("[") + what + "] " + rank_name() +
                ": bool tensors reduce with max (any) or min (all) only");
  }
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg:
      return MPI_SUM;
    case ReduceOp::max:
      return MPI_MAX;
    case ReduceOp::min:
      return MPI_MIN;
    case ReduceOp::product:
      return MPI_PROD;
  }
  return MPI_SUM;
}

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  raise_error(std::string("[") + what + "] " + rank_name() +
              ": MPI failed: " + std::string(text, static_cast<size_t>(len)));
}

// Set once a collective timed out: the ranks' collectives no longer pair up, so every later one
// is refused at once rather than matched with the wrong partner.
std::atomic<bool> g_broken{false};

// The buffers of collectives that timed out: a late rank may still write into them, so they are
// never freed (reachable from here, so not a leak to the sanitizers either).
std::mutex g_abandoned_mutex;
std::vector<Keep>& abandoned() {
  static auto* list = new std::vector<Keep>();
  return *list;
}

void check_usable(const char* what) {
  if (!g_broken.load()) return;
  raise_error(std::string("[") + what + "] " + rank_name() +
              ": an earlier collective timed out, so the ranks' collectives no longer pair up; "
              "end the process (dist::abort) and start the job again");
}

class MpiWork final : public Work {
 public:
  MpiWork(MPI_Request request, const char* what, std::chrono::milliseconds timeout, Keep keep)
      : request_(request), what_(what), timeout_(timeout), keep_(std::move(keep)) {}
  ~MpiWork() override {
    // Destroyed unwaited (an exception between start and wait): the buffers are going away, so
    // the request must end first; a rank that never arrives makes this the timeout's error path.
    if (request_ != MPI_REQUEST_NULL) {
      try {
        wait();
      } catch (...) {  // the error that unwinds already names the cause
      }
    }
  }
  // Gives the request up: its buffers are kept for good (a late rank may still write into them).
  void abandon() {
    request_ = MPI_REQUEST_NULL;
    g_broken = true;
    std::lock_guard<std::mutex> lock(g_abandoned_mutex);
    abandoned().push_back(std::move(keep_));
  }
  bool test() override {
    if (request_ == MPI_REQUEST_NULL) return true;
    int done = 0;
    check(MPI_Test(&request_, &done, MPI_STATUS_IGNORE), what_);
    return done != 0;
  }
  void wait() override {
    const auto start = std::chrono::steady_clock::now();
    for (int spins = 0; !test(); ++spins) {
      // Another collective timed out: this one's partners may never come either, and the error
      // that ends the step is raised already (or about to be): give up at once.
      if (g_broken.load()) {
        abandon();
        raise_error(std::string("[") + what_ + "] " + rank_name() +
                    ": given up after an earlier collective timed out");
      }
      const auto waited = std::chrono::steady_clock::now() - start;
      if (waited > timeout_) {
        // The request cannot be cancelled (collectives are not): its buffers stay alive for
        // good, and the group is marked broken.
        abandon();
        char seconds[32];
        std::snprintf(seconds, sizeof seconds, "%g", static_cast<double>(timeout_.count()) / 1000);
        raise_error(std::string("[") + what_ + "] " + rank_name() + ": timed out after " + seconds +
                    " s waiting for the other ranks (one stopped, failed or is stuck; "
                    "dist::InitOptions::timeout sets the limit)");
      }
      // Spin briefly (a collective of small buckets ends in microseconds), then give the core
      // away: ranks often share cores with each other and with data-loader threads.
      if (spins > 64)
        std::this_thread::sleep_for(std::chrono::microseconds(spins > 4096 ? 200 : 20));
    }
  }

 private:
  MPI_Request request_;
  const char* what_;
  std::chrono::milliseconds timeout_;
  Keep keep_;
};

class MpiGroup final : public Group {
 public:
  explicit MpiGroup(std::chrono::milliseconds timeout) : timeout_(timeout) {
    int started = 0, provided = 0;
    MPI_Initialized(&started);
    if (started) {  // the program started MPI itself: it finalizes it too
      owns_mpi_ = false;
      MPI_Query_thread(&provided);
    } else {
      check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "dist::init");
    }
    // Collectives come from one thread at a time (the training loop), not always the first.
    EMBER_CHECK(provided >= MPI_THREAD_SERIALIZED, "[dist::init] this MPI gives thread level ",
                provided, "; Ember needs MPI_THREAD_SERIALIZED (",
                static_cast<int>(MPI_THREAD_SERIALIZED), ")");
    // Errors come back as codes (then ember::Errors), not MPI's default abort.
    // A communicator of Ember's own: a program's own collectives on MPI_COMM_WORLD never pair up
    // with Ember's, and its error handler stays the program's.
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "dist::init");
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  std::unique_ptr<Work> all_reduce(void* data, int64_t count, DType dtype, ReduceOp op,
                                   Keep keep) override {
    return start("all_reduce", std::move(keep), [&](const char* what, MPI_Request* r) {
      return MPI_Iallreduce(MPI_IN_PLACE, data, to_int(count, what), mpi_type(dtype, what),
                            mpi_op(op, dtype, what), comm_, r);
    });
  }
  std::unique_ptr<Work> broadcast(void* data, int64_t bytes, int root, Keep keep) override {
    return start("broadcast", std::move(keep), [&](const char* what, MPI_Request* r) {
      return MPI_Ibcast(data, to_int(bytes, what), MPI_BYTE, root, comm_, r);
    });
  }
  std::unique_ptr<Work> all_gather(const void* in, void* out, int64_t bytes, Keep keep) override {
    return start("all_gather", std::move(keep), [&](const char* what, MPI_Request* r) {
      const int n = to_int(bytes, what);
      return MPI_Iallgather(in, n, MPI_BYTE, out, n, MPI_BYTE, comm_, r);
    });
  }
  std::unique_ptr<Work> reduce_scatter(const void* in, void* out, int64_t count, DType dtype,
                                       ReduceOp op, Keep keep) override {
    return start("reduce_scatter", std::move(keep), [&](const char* what, MPI_Request* r) {
      return MPI_Ireduce_scatter_block(in, out, to_int(count, what), mpi_type(dtype, what),
                                       mpi_op(op, dtype, what), comm_, r);
    });
  }
  std::unique_ptr<Work> barrier() override {
    return start("barrier", Keep{},
                 [&](const char*, MPI_Request* r) { return MPI_Ibarrier(comm_, r); });
  }
  [[noreturn]] void abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);  // MPI_Abort does not return; this is for the compiler
  }
  void finalize() override {
    int done = 0;
    MPI_Finalized(&done);
    if (done || !owns_mpi_) return;  // a program's own MPI is the program's to finalize
    // MPI_Finalize waits for every rank, for ever: the ranks first meet here, for at most the
    // timeout, and where one does not come (it stopped, or still waits in a collective) this
    // rank leaves without MPI_Finalize (mpirun then ends the job).
    MPI_Request r;
    if (MPI_Ibarrier(MPI_COMM_WORLD, &r) != MPI_SUCCESS) return;
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    int met = 0;
    while (MPI_Test(&r, &met, MPI_STATUS_IGNORE) == MPI_SUCCESS && !met) {
      if (std::chrono::steady_clock::now() > deadline) return;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    if (!g_broken.load()) MPI_Comm_free(&comm_);  // not with abandoned requests on it
    MPI_Finalize();
  }

 private:
  // MPI counts are ints: a larger buffer is an error naming the collective (DDP's buckets are
  // far below it).
  // Starts one non-blocking collective: `call(what, &request)` is the MPI call.
  template <class Call>
  std::unique_ptr<Work> start(const char* what, Keep keep, Call&& call) {
    check_usable(what);
    MPI_Request r;
    check(call(what, &r), what);
    return std::make_unique<MpiWork>(r, what, timeout_, std::move(keep));
  }
  int to_int(int64_t count, const char* what) const {
    EMBER_CHECK(count >= 0 && count <= INT32_MAX, "[", what, "] ", rank_name(), ": a count of ",
                count,
                " (elements, or bytes for broadcast and all_gather) in one collective; "
                "MPI takes at most 2^31 - 1");
    return static_cast<int>(count);
  }
  int rank_ = 0, size_ = 1;
  bool owns_mpi_ = true;
  MPI_Comm comm_ = MPI_COMM_NULL;
  std::chrono::milliseconds timeout_;
};

}  // namespace

std::unique_ptr<Group> make_mpi_group(std::chrono::milliseconds timeout) {
  return std::make_unique<MpiGroup>(timeout);
}

}  // namespace ember::dist::detail
