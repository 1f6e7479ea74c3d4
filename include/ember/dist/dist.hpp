// Several processes training one model (torch.distributed): a process group of `world_size`
// ranks started by `mpirun -np N` (or a torchrun-style launcher), and collectives over it.
//
//   dist::init();                                   // reads the launcher's environment
//   auto total = dist::all_reduce(x);               // the sum of every rank's x
//   if (dist::rank() == 0) save(model, "m.safetensors");
//
// Cpu tensors travel over MPI (Debian's OpenMPI); tensors on other devices are staged through
// host memory. Every collective waits at most the group's timeout and then raises an
// ember::Error naming the rank and the collective, never hanging without end. docs/DISTRIBUTED.md
// has the design; dist/ddp.hpp has DistributedDataParallel.
#pragma once

#include <chrono>
#include <string>

#include "ember/tensor/dyn_tensor.hpp"
#include "ember/tensor/tensor.hpp"

namespace ember::dist {

/// How a collective combines the ranks' values. avg is the sum divided by the world size.
enum class ReduceOp { sum, avg, max, min, product };

/// Where this process sits, as the launcher said (environment()), before or without init().
struct Environment {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;        // rank among the processes of this host: which GPU to take
  int local_world_size = 1;  // processes on this host
  std::string launcher;      // "mpi" (OpenMPI or MPICH), "torchrun", or "none"
};

/// The launcher's variables: OMPI_COMM_WORLD_* (OpenMPI), PMI_RANK/PMI_SIZE (MPICH), or RANK,
/// WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE (torchrun). None: one process of one. Inconsistent
/// values (a rank outside the world) are an error naming the variable.
Environment environment();

/// Options of init().
struct InitOptions {
  /// How long a collective waits for the other ranks before raising (PyTorch's default is 10
  /// minutes; a first collective also waits for slow starters).
  std::chrono::milliseconds timeout = std::chrono::minutes(10);
};

/// Joins the process group the launcher started: MPI when launched by mpirun (Ember built with
/// MPI), a group of one when launched alone. A second call is an error; world_size() > 1 without
/// MPI (a torchrun-style launch of Cpu processes, or Ember built without MPI) is an error saying
/// how to launch instead. The group is left at exit (or by finalize()).
void init(const InitOptions& options = {});
bool is_initialized();
/// Leaves the group (MPI_Finalize). Every rank must call it, or none; init() cannot follow.
void finalize();
/// Ends every rank of the group with `code` (MPI_Abort): what a rank that failed does so that
/// the others stop at once rather than at their next collective's timeout.
[[noreturn]] void abort(int code);
/// Whether this build has the MPI process group (Ember built with MPI found).
bool mpi_available();

/// This process's rank and the group's size (0 and 1 before init(): code written for several
/// processes runs unchanged in one).
int rank();
int world_size();
int local_rank();
std::chrono::milliseconds timeout();

/// The sum (or other reduction) of x over every rank, on every rank: same shape, dtype, device.
DynTensor all_reduce(const DynTensor& x, ReduceOp op = ReduceOp::sum);
/// Root's x on every rank (each rank's x gives the shape and dtype, which must agree).
DynTensor broadcast(const DynTensor& x, int root = 0);
/// Every rank's x concatenated along dim 0 in rank order: [world_size * n, ...].
DynTensor all_gather(const DynTensor& x);
/// x's dim 0 split into world_size equal parts: rank r gets the reduction of part r over ranks.
DynTensor reduce_scatter(const DynTensor& x, ReduceOp op = ReduceOp::sum);
/// Waits until every rank has reached it.
void barrier();
/// Root's string on every rank (a path, a decision: what every rank must agree on).
std::string broadcast(const std::string& text, int root = 0);

// Typed forms: the same rank and kind back.
template <int D, class K>
Tensor<D, K> all_reduce(const Tensor<D, K>& x, ReduceOp op = ReduceOp::sum) {
  return Tensor<D, K>(all_reduce(x.dyn(), op));
}
template <int D, class K>
Tensor<D, K> broadcast(const Tensor<D, K>& x, int root = 0) {
  return Tensor<D, K>(broadcast(x.dyn(), root));
}
template <int D, class K>
Tensor<D, K> all_gather(const Tensor<D, K>& x) {
  return Tensor<D, K>(all_gather(x.dyn()));
}
template <int D, class K>
Tensor<D, K> reduce_scatter(const Tensor<D, K>& x, ReduceOp op = ReduceOp::sum) {
  return Tensor<D, K>(reduce_scatter(x.dyn(), op));
}

}  // namespace ember::dist
