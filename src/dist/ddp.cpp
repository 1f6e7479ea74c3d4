// DistributedDataParallel: buckets of gradients all-reduced while backward runs (ddp.hpp).
#include "ember/dist/ddp.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>

#include "ember/autodiff/node.hpp"
#include "ember/core/error.hpp"
#include "ember/dist/dist.hpp"
#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "ember/tensor/sync.hpp"
#include "ember/tensor/tensor_data.hpp"
#include "group.hpp"

namespace ember::dist {
namespace {

// The dtype a bucket is summed in over MPI: half floats in f32.
DType wire_dtype(DType dtype) { return dtype == DType::f64 ? DType::f64 : DType::f32; }

void wait_for_host_copies(Device device) {
  if (device != Device::cpu()) synchronize(device);
  synchronize(Device::cpu());
}

}  // namespace

struct DistributedDataParallel::Reducer {
  struct Bucket {
    std::vector<size_t> params;  // indices into `slots`
    DType dtype = DType::f32;
    Device device = Device::cpu();
    int64_t numel = 0;
    // One backward's reduction: the flattened gradients (on the device under NCCL, else a host
    // copy in the wire dtype).
    int waiting = 0;  // gradients not yet complete
    bool launched = false, stale = false;
    DynTensor values;
    std::unique_ptr<detail::Work> values_work;
  };
  std::vector<nn::TensorSlot*> slots;  // trainable Params, reverse declaration order
  std::vector<Bucket> buckets;
  std::vector<size_t> bucket_of;
  std::vector<int64_t> offset_in_bucket;
  std::string layout;  // what the buckets were made for: rebuilt when it changes
  // This backward's local gradients by slot (the latest total backward reported), and the
  // means that finish() computes from them.
  std::vector<DynTensor> grads, means;
  size_t next_launch = 0;
  int reduced_again = 0;  // buckets of the last reduction reduced a second time

  // Buckets of at most `cap` bytes over the trainable Params (each bucket one dtype and device).
  void plan(const nn::ModuleTree& tree, double bucket_mb) {
    std::vector<nn::TensorSlot*> now;
    std::string sig;
    for (const nn::NamedTensor& t : nn::named_params(tree)) {
      if (!t.slot->trainable()) continue;
      now.push_back(t.slot);
      sig += std::to_string(t.slot->numel()) + dtype_name(t.slot->dtype()).data() +
             to_string(t.slot->device()) + ";";
    }
    slots.assign(now.rbegin(), now.rend());
    if (sig == layout) return;
    layout = sig;
    buckets.clear();
    bucket_of.assign(slots.size(), 0);
    offset_in_bucket.assign(slots.size(), 0);
    const double cap = bucket_mb * 1024.0 * 1024.0;
    for (size_t i = 0; i < slots.size(); ++i) {
      const nn::TensorSlot& s = *slots[i];
      const double bytes = static_cast<double>(s.numel()) * dtype_size(s.dtype());
      const bool fits =
          !buckets.empty() && buckets.back().dtype == s.dtype() &&
          buckets.back().device == s.device() &&
          static_cast<double>(buckets.back().numel) * dtype_size(s.dtype()) + bytes <= cap;
      if (!fits) {
        buckets.emplace_back();
        buckets.back().dtype = s.dtype();
        buckets.back().device = s.device();
      }
      Bucket& b = buckets.back();
      bucket_of[i] = buckets.size() - 1;
      offset_in_bucket[i] = b.numel;
      b.params.push_back(i);
      b.numel += s.numel();
    }
  }

  void start() {
    grads.assign(slots.size(), DynTensor());
    means.assign(slots.size(), DynTensor());
    next_launch = 0;
    for (Bucket& b : buckets) {
      b.waiting = static_cast<int>(b.params.size());
      b.launched = b.stale = false;
      b.values_work.reset();  // the collective ends before its buffer goes
      b.values = DynTensor();
    }
  }

  // Starts the all-reduce of bucket k from the local gradients (zeros where none).
  void launch(size_t k) {
    Bucket& b = buckets[k];
    b.values_work.reset();
    std::vector<DynTensor> parts;
    parts.reserve(b.params.size());
    for (size_t i : b.params) {
      const DynTensor& g = grads[i];
      parts.push_back(g.defined() ? reshape(g, Shape{g.numel()})
                                  : zeros(Shape{slots[i]->numel()}, b.dtype, b.device));
    }
    // A copy, never the gradient itself: a stale bucket is reduced again from the local values.
    DynTensor flat = parts.size() == 1 ? clone(parts[0]) : cat(parts, 0);
    if (detail::on_device_collectives(b.device)) {
      b.values = flat;  // NCCL's mean, queued on the device's stream
      detail::device_all_reduce(b.values, ReduceOp::avg);
    } else {
      const DType wire = wire_dtype(b.dtype);
      if (flat.dtype() != wire) flat = cast(flat, wire);
      b.values = flat.device() == Device::cpu() ? flat : to_device(flat, Device::cpu());
      wait_for_host_copies(b.device);
      b.values_work = detail::world_group().all_reduce(
          b.values.raw().data(), b.values.numel(), wire, ReduceOp::sum, {b.values.raw().storage});
    }
    b.launched = true;
  }

  // Launches, in bucket order, every bucket whose gradients are all complete: the ranks must
  // start their collectives in one order, whatever order their backward passes finish in.
  void launch_ready() {
    while (next_launch < buckets.size() && buckets[next_launch].waiting == 0) launch(next_launch++);
  }

  // Backward's report of a finished gradient (the leaf's total so far).
  void on_grad(size_t i, const DynTensor& g) {
    Bucket& b = buckets[bucket_of[i]];
    const bool first = !grads[i].defined();
    grads[i] = g;
    if (b.launched) {
      b.stale = true;  // reported again after its bucket left: reduced again in finish()
    } else if (first) {
      --b.waiting;
      launch_ready();
    }
    for (Bucket& other : buckets) {  // MPI moves data only inside its calls
      if (other.values_work) other.values_work->test();
    }
  }

  // The means of bucket k into `means`; `used` counts, by slot, the ranks that had a gradient
  // (none: no mean).
  void collect(size_t k, const float* used) {
    Bucket& b = buckets[k];
    if (b.values_work) b.values_work->wait();
    DynTensor values = b.values;
    if (!detail::on_device_collectives(b.device)) {
      values = div(values, Scalar(static_cast<double>(world_size())));
      if (values.dtype() != b.dtype) values = cast(values, b.dtype);
      if (b.device != Device::cpu()) values = to_device(values, b.device);
    }
    for (const size_t i : b.params) {
      const nn::TensorSlot& s = *slots[i];
      means[i] = used[i] > 0 ? reshape(narrow(values, 0, offset_in_bucket[i], s.numel()), s.shape())
                             : DynTensor();
    }
  }

  // Waits for every bucket; afterwards `means` holds the mean gradients.
  void finish() {
    while (next_launch < buckets.size()) launch(next_launch++);  // unused parameters: zeros
    // One small all-reduce for the whole step: per parameter, the ranks that had a gradient (a
    // parameter no rank used gets none, as PyTorch's None grad); per bucket, whether any rank saw
    // a gradient reported again after the bucket left (a leaf used inside and outside a
    // checkpoint() segment). Those buckets are reduced again from the final local gradients, on
    // every rank alike.
    std::vector<float> counts;
    for (const DynTensor& g : grads) counts.push_back(g.defined() ? 1.0f : 0.0f);
    for (const Bucket& b : buckets) counts.push_back(b.stale ? 1.0f : 0.0f);
    const DynTensor summed = from_data(
        TensorData::from(counts, Shape{static_cast<int64_t>(counts.size())}), Device::cpu());
    if (!counts.empty()) {
      synchronize(Device::cpu());  // MPI reads the host memory directly
      detail::world_group()
          .all_reduce(summed.raw().data(), summed.numel(), DType::f32, ReduceOp::sum,
                      {summed.raw().storage})
          ->wait();
    }
    const float* used = summed.raw().data_as<float>();
    const float* stale = used + slots.size();
    reduced_again = 0;
    for (size_t k = 0; k < buckets.size(); ++k) {
      if (stale[k] > 0) {
        ++reduced_again;
        if (buckets[k].values_work) buckets[k].values_work->wait();  // the early one, discarded
        launch(k);
      }
    }
    for (size_t k = 0; k < buckets.size(); ++k) collect(k, used);
  }
};

DistributedDataParallel::DistributedDataParallel(std::function<nn::ModuleTree()> tree,
                                                 DdpConfig config)
    : tree_(std::move(tree)), config_(config), reducer_(std::make_unique<Reducer>()) {
  EMBER_CHECK(config_.bucket_mb_ > 0, "[DistributedDataParallel] bucket_mb must be positive, got ",
              config_.bucket_mb_);
  broadcast_state(0);
}

DistributedDataParallel::~DistributedDataParallel() = default;

int DistributedDataParallel::num_buckets() const {
  return static_cast<int>(reducer_->buckets.size());
}

int DistributedDataParallel::buckets_reduced_again() const { return reducer_->reduced_again; }

Gradients DistributedDataParallel::backward(const DynTensor& loss, const BackwardOptions& options) {
  if (no_sync_ || world_size() == 1) return ember::backward(loss, options);
  const nn::ModuleTree tree = tree_();
  Reducer& r = *reducer_;
  r.plan(tree, config_.bucket_mb_);
  r.start();
  std::unordered_map<uint64_t, size_t> by_node;
  for (size_t i = 0; i < r.slots.size(); ++i) {
    const DynTensor& v = r.slots[i]->dyn();
    if (v.requires_grad()) by_node.emplace(v.node()->id(), i);
  }
  Gradients grads;
  {
    const LeafGradHookGuard hook([&](uint64_t id, const DynTensor& g) {
      if (auto it = by_node.find(id); it != by_node.end()) r.on_grad(it->second, g);
    });
    grads = ember::backward(loss, options);
  }
  r.finish();
  for (size_t i = 0; i < r.slots.size(); ++i) {
    if (r.means[i].defined()) grads.set(r.slots[i]->dyn(), r.means[i]);
  }
  r.grads.clear();
  r.means.clear();
  // Rank 0's running statistics everywhere, as PyTorch broadcasts them before each forward.
  // Buffers only: a Param set anew would be a new leaf, which `grads` does not know.
  if (config_.broadcast_buffers_) broadcast_slots(tree, 0, false);
  return grads;
}

void DistributedDataParallel::all_reduce(optim::ParamGrads& grads) {
  if (world_size() == 1) return;
  Reducer& r = *reducer_;
  r.plan(tree_(), config_.bucket_mb_);
  r.start();
  for (size_t i = 0; i < r.slots.size(); ++i) r.grads[i] = grads.find(r.slots[i]->id());
  r.finish();
  for (size_t i = 0; i < r.slots.size(); ++i) {
    if (r.means[i].defined()) {
      grads.set(r.slots[i]->id(), r.means[i]);
    } else {
      grads.remove(r.slots[i]->id());
    }
  }
  r.grads.clear();
  r.means.clear();
}

void DistributedDataParallel::broadcast_state(int root) {
  if (world_size() == 1) return;
  EMBER_CHECK(root >= 0 && root < world_size(), "[DistributedDataParallel] ", detail::rank_name(),
              ": root ", root, " is not a rank");
  broadcast_slots(tree_(), root, true);
}

namespace {

// Root's values of the module's buffers (and Params, with `params`) on every rank: one
// broadcast per dtype and device, of every such tensor flattened into one (NCCL on cuda:N, a host
// copy over MPI elsewhere).
void broadcast_slots_impl(const nn::ModuleTree& tree, int root, bool params) {
  std::map<std::pair<DType, std::string>, std::vector<nn::TensorSlot*>> groups;
  for (const nn::NamedTensor& t : nn::named_tensors(tree)) {
    if (params || t.slot->kind() == nn::TensorSlot::Kind::Buffer) {
      groups[{t.slot->dtype(), to_string(t.slot->device())}].push_back(t.slot);
    }
  }
  for (auto& [key, slots] : groups) {
    std::vector<DynTensor> parts;
    for (nn::TensorSlot* s : slots) parts.push_back(reshape(detach(s->dyn()), Shape{s->numel()}));
    const DynTensor all =
        dist::broadcast(parts.size() == 1 ? clone(parts[0]) : cat(parts, 0), root);
    int64_t at = 0;
    for (nn::TensorSlot* s : slots) {
      const DynTensor v = reshape(narrow(all, 0, at, s->numel()), s->shape());
      // A buffer is written in place; a Param becomes a fresh leaf with storage of its own.
      s->assign(s->kind() == nn::TensorSlot::Kind::Param ? clone(v) : v);
      at += s->numel();
    }
  }
}

}  // namespace

void DistributedDataParallel::broadcast_slots(const nn::ModuleTree& tree, int root, bool params) {
  if (world_size() > 1) broadcast_slots_impl(tree, root, params);
}

}  // namespace ember::dist
