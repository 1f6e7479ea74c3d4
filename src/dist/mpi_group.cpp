// The MPI process group: Debian's OpenMPI (or any MPI-3) started by mpirun. Every collective is
// the non-blocking MPI call, waited for by polling MPI_Test until the group's timeout, so a rank
// that never arrives is an ember::Error here rather than a hang.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

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

class MpiWork final : public Work {
 public:
  MpiWork(MPI_Request request, const char* what, std::chrono::milliseconds timeout)
      : request_(request), what_(what), timeout_(timeout) {}
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
  bool test() override {
    if (request_ == MPI_REQUEST_NULL) return true;
    int done = 0;
    check(MPI_Test(&request_, &done, MPI_STATUS_IGNORE), what_);
    return done != 0;
  }
  void wait() override {
    const auto start = std::chrono::steady_clock::now();
    for (int spins = 0; !test(); ++spins) {
      const auto waited = std::chrono::steady_clock::now() - start;
      if (waited > timeout_) {
        // The request cannot be cancelled (collectives are not): leave it to MPI_Abort.
        request_ = MPI_REQUEST_NULL;
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
};

class MpiGroup final : public Group {
 public:
  explicit MpiGroup(std::chrono::milliseconds timeout) : timeout_(timeout) {
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "dist::init");
    // Errors come back as codes (then ember::Errors), not MPI's default abort.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  std::unique_ptr<Work> all_reduce(void* data, int64_t count, DType dtype, ReduceOp op) override {
    const char* what = "all_reduce";
    MPI_Request r;
    check(MPI_Iallreduce(MPI_IN_PLACE, data, to_int(count, what), mpi_type(dtype, what),
                         mpi_op(op, dtype, what), MPI_COMM_WORLD, &r),
          what);
    return std::make_unique<MpiWork>(r, what, timeout_);
  }
  std::unique_ptr<Work> broadcast(void* data, int64_t bytes, int root) override {
    const char* what = "broadcast";
    MPI_Request r;
    check(MPI_Ibcast(data, to_int(bytes, what), MPI_BYTE, root, MPI_COMM_WORLD, &r), what);
    return std::make_unique<MpiWork>(r, what, timeout_);
  }
  std::unique_ptr<Work> all_gather(const void* in, void* out, int64_t bytes) override {
    const char* what = "all_gather";
    MPI_Request r;
    const int n = to_int(bytes, what);
    check(MPI_Iallgather(in, n, MPI_BYTE, out, n, MPI_BYTE, MPI_COMM_WORLD, &r), what);
    return std::make_unique<MpiWork>(r, what, timeout_);
  }
  std::unique_ptr<Work> reduce_scatter(const void* in, void* out, int64_t count, DType dtype,
                                       ReduceOp op) override {
    const char* what = "reduce_scatter";
    MPI_Request r;
    check(MPI_Ireduce_scatter_block(in, out, to_int(count, what), mpi_type(dtype, what),
                                    mpi_op(op, dtype, what), MPI_COMM_WORLD, &r),
          what);
    return std::make_unique<MpiWork>(r, what, timeout_);
  }
  std::unique_ptr<Work> barrier() override {
    MPI_Request r;
    check(MPI_Ibarrier(MPI_COMM_WORLD, &r), "barrier");
    return std::make_unique<MpiWork>(r, "barrier", timeout_);
  }
  [[noreturn]] void abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);  // MPI_Abort does not return; this is for the compiler
  }
  void finalize() override {
    int done = 0;
    MPI_Finalized(&done);
    if (!done) MPI_Finalize();
  }

 private:
  // MPI counts are ints: a larger buffer is an error naming the collective (DDP's buckets are
  // far below it).
  int to_int(int64_t count, const char* what) const {
    EMBER_CHECK(count >= 0 && count <= INT32_MAX, "[", what, "] ", rank_name(), ": ", count,
                " elements in one collective; MPI takes at most 2^31 - 1");
    return static_cast<int>(count);
  }
  int rank_ = 0, size_ = 1;
  std::chrono::milliseconds timeout_;
};

}  // namespace

std::unique_ptr<Group> make_mpi_group(std::chrono::milliseconds timeout) {
  return std::make_unique<MpiGroup>(timeout);
}

}  // namespace ember::dist::detail
