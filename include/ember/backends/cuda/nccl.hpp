// NCCL for the Cuda backend's tensors (ember::dist's collectives on cuda:N when Ember is built with
// NCCL): a communicator per job and GPU, its collectives queued on the device's stream like every
// other Cuda op, so a training step never waits on the host for them. No CUDA or NCCL header
// here. A watchdog ends the process, naming the rank and the collective, when one has not
// finished on the GPU after the timeout (a peer that never arrives would otherwise hang it).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>

#include "ember/core/raw_tensor.hpp"

namespace ember::cuda::nccl {

/// ncclUniqueId's bytes: rank 0 makes one, every rank passes the same to Communicator.
using UniqueId = std::array<uint8_t, 128>;
UniqueId unique_id();

/// How a collective combines (ember::dist::ReduceOp's order).
enum class Op { sum, avg, max, min, product };

class Communicator {
 public:
  /// Joins the `world` ranks that were given `id`, on cuda:`device`; waits at most `timeout`
  /// for them (an ember::Error naming the rank after it).
  Communicator(int device, int rank, int world, const UniqueId& id,
               std::chrono::milliseconds timeout);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int device() const;
  // Tensors are contiguous, on this communicator's device; the calls queue the collective on
  // the device's stream and return.
  void all_reduce(const RawTensor& t, Op op);                             // in place
  void broadcast(const RawTensor& t, int root);                           // in place
  void all_gather(const RawTensor& in, const RawTensor& out);             // out: world * in
  void reduce_scatter(const RawTensor& in, const RawTensor& out, Op op);  // in: world * out

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ember::cuda::nccl
