// The process group behind ember::dist (internal): collectives on contiguous host buffers, each
// started at once and waited for separately, so that DistributedDataParallel can overlap a
// bucket's all-reduce with the rest of the backward pass. One implementation per transport:
// MPI (mpi_group.cpp) and the group of one process (dist.cpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ember/core/device.hpp"
#include "ember/core/dtype.hpp"
#include "ember/core/storage.hpp"
#include "ember/dist/dist.hpp"

namespace ember::dist::detail {

/// A collective in flight. wait() returns when it is done on this rank, or raises an
/// ember::Error naming the rank and the collective once the group's timeout has passed.
class Work {
 public:
  virtual ~Work() = default;
  virtual void wait() = 0;
  /// Done already? Also lets the transport progress (MPI moves data only inside its calls).
  virtual bool test() = 0;
};

/// The buffers a collective reads and writes, kept alive by its Work: a collective that timed
/// out cannot be cancelled, and a late rank may still write into them.
using Keep = std::vector<std::shared_ptr<Storage>>;

class Group {
 public:
  virtual ~Group() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Buffers are host memory, contiguous, and must stay alive until the Work is waited for.
  // `count` is in elements of `dtype`; reductions take f32, f64 and the integer dtypes (bool:
  // max and min), avg is left to the caller (a sum here).
  virtual std::unique_ptr<Work> all_reduce(void* data, int64_t count, DType dtype, ReduceOp op,
                                           Keep keep) = 0;
  virtual std::unique_ptr<Work> broadcast(void* data, int64_t bytes, int root, Keep keep) = 0;
  /// out holds size() * bytes: rank r's `in` at r * bytes.
  virtual std::unique_ptr<Work> all_gather(const void* in, void* out, int64_t bytes, Keep keep) = 0;
  /// in holds size() * count elements; out gets the reduction of part rank().
  virtual std::unique_ptr<Work> reduce_scatter(const void* in, void* out, int64_t count,
                                               DType dtype, ReduceOp op, Keep keep) = 0;
  virtual std::unique_ptr<Work> barrier() = 0;
  /// Ends every rank (MPI_Abort); the group of one exits.
  [[noreturn]] virtual void abort(int code) = 0;
  virtual void finalize() = 0;
};

/// The group init() joined (the group of one before init()).
Group& world_group();

/// The MPI group (mpi_group.cpp, when Ember is built with MPI; null otherwise).
std::unique_ptr<Group> make_mpi_group(std::chrono::milliseconds timeout);

/// "rank 1 of 4": how errors name the process.
std::string rank_name();

/// Whether collectives on `device`'s tensors run on the device itself (NCCL on cuda:N, when
/// built with it) rather than through a host copy over MPI.
bool on_device_collectives(Device device);
/// Queues an in-place all-reduce of `t` (contiguous, owned by the caller) on its device's
/// stream: only where on_device_collectives(t.device()).
void device_all_reduce(const DynTensor& t, ReduceOp op);

}  // namespace ember::dist::detail
