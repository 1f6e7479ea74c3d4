// DistributedDataParallel: buckets of gradients all-reduced while backward runs (ddp.hpp).
#include "ember/dist/ddp.hpp"

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
    // One reduction: the flattened gradients, then one "used here" flag per parameter.
    int waiting = 0;  // gradients not yet complete
    bool launched = false, stale = false;
    DynTensor host;
    std::unique_ptr<detail::Work> work;
  };
  std::vector<nn::TensorSlot*> slots;  // trainable Params, reverse declaration order
  std::vector<Bucket> buckets;
  std::vector<size_t> bucket_of;
  std::vector<int64_t> offset_in_bucket;
  std::string layout;  // what the buckets were made for: rebuilt when it changes
  // This backward's gradients, by slot.
  std::vector<DynTensor> grads;
  size_t next_launch = 0;

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
    if (sig == layout && now.size() == slots.size()) {
      slots.assign(now.rbegin(), now.rend());
      return;
    }
    layout = sig;
    slots.assign(now.rbegin(), now.rend());
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
    next_launch = 0;
    for (Bucket& b : buckets) {
      b.waiting = static_cast<int>(b.params.size());
      b.launched = b.stale = false;
      b.host = DynTensor();
      b.work.reset();
    }
  }

  // Starts the all-reduce of bucket k: its gradients (zeros where none) and the used flags.
  void launch(size_t k) {
    Bucket& b = buckets[k];
    const DType wire = wire_dtype(b.dtype);
    std::vector<DynTensor> parts;
    parts.reserve(b.params.size());
    std::vector<double> used;
    for (size_t i : b.params) {
      const DynTensor& g = grads[i];
      used.push_back(g.defined() ? 1.0 : 0.0);
      parts.push_back(g.defined() ? reshape(g, Shape{g.numel()})
                                  : zeros(Shape{slots[i]->numel()}, b.dtype, b.device));
    }
    DynTensor flat = parts.size() == 1 ? parts[0] : cat(parts, 0);
    if (flat.dtype() != wire) flat = cast(flat, wire);
    DynTensor flags =
        from_data(TensorData::from(used, Shape{static_cast<int64_t>(used.size())}), Device::cpu());
    if (flags.dtype() != wire) flags = cast(flags, wire);
    b.host = cat({to_device(flat, Device::cpu()), flags}, 0);
    wait_for_host_copies(b.device);
    b.work =
        detail::world_group().all_reduce(b.host.raw().data(), b.host.numel(), wire, ReduceOp::sum);
    b.launched = true;
  }

  // Launches, in bucket order, every bucket whose gradients are all complete: the ranks must
  // start their collectives in one order, whatever order their backward passes finish in.
  void launch_ready() {
    while (next_launch < buckets.size() && buckets[next_launch].waiting == 0) launch(next_launch++);
  }

  // Backward's report of a finished gradient.
  void on_grad(size_t i, const DynTensor& g) {
    Bucket& b = buckets[bucket_of[i]];
    const bool first = !grads[i].defined();
    grads[i] = g;
    if (b.launched) {
      b.stale = true;  // a leaf reached again after its bucket left: reduced again at the end
    } else if (first) {
      --b.waiting;
      launch_ready();
    }
    for (Bucket& other : buckets) {
      if (other.work) other.work->test();  // MPI moves data only inside its calls
    }
  }

  // Waits for every bucket and writes the means into `grads` (undefined where no rank had one).
  void finish() {
    while (next_launch < buckets.size()) launch(next_launch++);  // unused parameters: zeros
    const double world = static_cast<double>(world_size());
    for (size_t pass = 0; pass < 2; ++pass) {
      for (size_t k = 0; k < buckets.size(); ++k) {
        Bucket& b = buckets[k];
        if (pass == 1) {
          if (!b.stale) continue;
          launch(k);
        }
        b.work->wait();
        b.work.reset();
        const DynTensor mean = div(narrow(b.host, 0, 0, b.numel), Scalar(world));
        DynTensor values = mean.dtype() == b.dtype ? mean : cast(mean, b.dtype);
        if (b.device != Device::cpu()) values = to_device(values, b.device);
        synchronize(Device::cpu());  // the flags are read from the host buffer below
        const auto flag = [&](size_t j) {
          const int64_t at = b.numel + static_cast<int64_t>(j);
          return b.host.dtype() == DType::f64 ? b.host.raw().data_as<double>()[at]
                                              : double(b.host.raw().data_as<float>()[at]);
        };
        for (size_t j = 0; j < b.params.size(); ++j) {
          const size_t i = b.params[j];
          const nn::TensorSlot& s = *slots[i];
          grads[i] = flag(j) > 0
                         ? reshape(narrow(values, 0, offset_in_bucket[i], s.numel()), s.shape())
                         : DynTensor();
        }
      }
    }
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
    const DynTensor& v = r.slots[i]->dyn();
    if (r.grads[i].defined()) grads.set(v, r.grads[i]);
  }
  r.grads.clear();
  if (config_.broadcast_buffers_) {
    // Rank 0's running statistics everywhere, as PyTorch broadcasts them before each forward.
    std::vector<nn::TensorSlot*> buffers;
    for (const nn::NamedTensor& t : nn::named_tensors(tree)) {
      if (t.slot->kind() == nn::TensorSlot::Kind::Buffer) buffers.push_back(t.slot);
    }
    if (!buffers.empty()) broadcast_state(0);
  }
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
    if (r.grads[i].defined()) {
      grads.set(r.slots[i]->id(), r.grads[i]);
    } else {
      grads.remove(r.slots[i]->id());
    }
  }
  r.grads.clear();
}

void DistributedDataParallel::broadcast_state(int root) {
  if (world_size() == 1) return;
  EMBER_CHECK(root >= 0 && root < world_size(), "[DistributedDataParallel] ", detail::rank_name(),
              ": root ", root, " is not a rank");
  // One broadcast per dtype: every tensor of it flattened into one host buffer.
  const nn::ModuleTree tree = tree_();
  std::map<DType, std::vector<nn::TensorSlot*>> by_dtype;
  for (const nn::NamedTensor& t : nn::named_tensors(tree))
    by_dtype[t.slot->dtype()].push_back(t.slot);
  for (auto& [dtype, slots] : by_dtype) {
    std::vector<DynTensor> parts;
    std::vector<Device> devices;
    for (nn::TensorSlot* s : slots) {
      parts.push_back(to_device(reshape(detach(s->dyn()), Shape{s->numel()}), Device::cpu()));
      devices.push_back(s->device());
    }
    DynTensor host = cat(parts, 0);
    for (Device d : devices) {
      if (d != Device::cpu()) synchronize(d);
    }
    synchronize(Device::cpu());
    detail::world_group()
        .broadcast(host.raw().data(), static_cast<int64_t>(host.raw().nbytes()), root)
        ->wait();
    int64_t at = 0;
    for (size_t j = 0; j < slots.size(); ++j) {
      nn::TensorSlot& s = *slots[j];
      DynTensor v = clone(reshape(narrow(host, 0, at, s.numel()), s.shape()));
      at += s.numel();
      if (devices[j] != Device::cpu()) v = to_device(v, devices[j]);
      s.assign(v);  // a trainable Param becomes a fresh leaf with the same id
    }
  }
}

}  // namespace ember::dist
