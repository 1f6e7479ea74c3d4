// Data-parallel training (torch.nn.parallel.DistributedDataParallel): every rank holds the whole
// model and trains on its own share of each batch; backward() averages the gradients over ranks,
// so every rank takes the same optimizer step and the replicas stay equal.
//
//   dist::init();
//   models::FashionCnn model(dev);
//   dist::DistributedDataParallel ddp(model);     // rank 0's parameters and buffers everywhere
//   ...
//   Gradients grads = ddp.backward(loss);         // the mean over ranks, as loss.backward() gives
//   opt.step(model, grads);
//
// The trainable parameters are grouped into buckets of about 25 MB, in reverse declaration order
// (the order backward finishes them); a bucket is all-reduced as soon as its last gradient is
// complete, while backward goes on with earlier layers. Gradient accumulation without
// communication: backward() under no_sync(), then all_reduce() of the accumulated sums.
// docs/DISTRIBUTED.md has the design.
#pragma once

#include <functional>
#include <memory>

#include "ember/autodiff/autodiff.hpp"
#include "ember/nn/module.hpp"
#include "ember/optim/grads.hpp"

namespace ember::dist {

/// Options of DistributedDataParallel (chained setters).
struct DdpConfig {
  double bucket_mb_ = 25;          // PyTorch's bucket_cap_mb
  bool broadcast_buffers_ = true;  // rank 0's buffers (BatchNorm statistics) after each backward

  DdpConfig& bucket_mb(double mb) {
    bucket_mb_ = mb;
    return *this;
  }
  DdpConfig& broadcast_buffers(bool on = true) {
    broadcast_buffers_ = on;
    return *this;
  }
};

class DistributedDataParallel {
 public:
  /// Keeps a reference to `model` (it must outlive this) and makes every rank's parameters and
  /// buffers rank 0's. A collective: every rank constructs it at the same point.
  template <nn::detail::Module M>
  explicit DistributedDataParallel(M& model, DdpConfig config = {})
      : DistributedDataParallel([&model] { return nn::module_tree(model); }, config) {}
  /// The same over a flattened module (what the Learner holds).
  DistributedDataParallel(std::function<nn::ModuleTree()> tree, DdpConfig config);
  ~DistributedDataParallel();
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  /// loss.backward() (a one-element loss), with each trainable parameter's gradient replaced by
  /// its mean over the ranks. A parameter no rank used has no gradient; one used on some ranks
  /// only gets the others' zeros in the mean. Other tracked leaves keep their local gradient.
  /// Under no_sync(), the local gradients.
  Gradients backward(const DynTensor& loss, const BackwardOptions& options = {});
  template <int D>
  Gradients backward(const Tensor<D>& loss, const BackwardOptions& options = {}) {
    return backward(loss.dyn(), options);
  }
  /// Averages gradients over the ranks, in buckets: for sums accumulated under no_sync()
  /// (optim::GradientsAccumulator), once before the optimizer step.
  void all_reduce(optim::ParamGrads& grads);

  /// backward() without communication while the returned guard lives (PyTorch's no_sync()).
  class NoSync {
   public:
    explicit NoSync(DistributedDataParallel& ddp) : ddp_(ddp), previous_(ddp.no_sync_) {
      ddp.no_sync_ = true;
    }
    ~NoSync() { ddp_.no_sync_ = previous_; }
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;

   private:
    DistributedDataParallel& ddp_;
    bool previous_;
  };
  [[nodiscard]] NoSync no_sync() { return NoSync(*this); }

  /// Root's parameters and buffers on every rank (the constructor does this with root 0).
  void broadcast_state(int root = 0);
  /// Buckets of the last backward() or all_reduce() (0 before one): for tests and logs.
  int num_buckets() const;
  /// Buckets of the last backward() reduced a second time: a gradient reported again after its
  /// bucket left (a parameter used inside and outside a checkpoint() segment).
  int buckets_reduced_again() const;
  const DdpConfig& config() const { return config_; }

 private:
  struct Reducer;
  void broadcast_slots(const nn::ModuleTree& tree, int root, bool params);
  std::function<nn::ModuleTree()> tree_;
  DdpConfig config_;
  bool no_sync_ = false;
  std::unique_ptr<Reducer> reducer_;
};

}  // namespace ember::dist
