// ParamGrads, accumulation over backward passes, and gradient clipping.
#include "ember/optim/grads.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ember/core/error.hpp"
#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "ember/tensor/ops/reduce.hpp"
#include "ember/tensor/sync.hpp"

namespace ember::optim {

ParamGrads ParamGrads::from(const nn::ModuleTree& tree, const Gradients& grads) {
  ParamGrads out;
  for (const nn::NamedTensor& p : nn::named_params(tree)) {
    if (!p.slot->trainable()) continue;
    DynTensor g = grads.find(p.slot->dyn());
    if (g.defined()) out.grads_[p.slot->id()] = detach(g);
  }
  return out;
}

DynTensor ParamGrads::find(nn::ParamId id) const {
  auto it = grads_.find(id);
  return it == grads_.end() ? DynTensor() : it->second;
}

void ParamGrads::set(nn::ParamId id, const DynTensor& grad) {
  EMBER_CHECK(grad.defined(), "[ParamGrads] cannot set an undefined gradient");
  grads_[id] = detach(grad);
}

DynTensor ParamGrads::remove(nn::ParamId id) {
  auto it = grads_.find(id);
  if (it == grads_.end()) return {};
  DynTensor g = std::move(it->second);
  grads_.erase(it);
  return g;
}

void GradientsAccumulator::accumulate(const nn::ModuleTree& tree, const Gradients& grads) {
  accumulate(ParamGrads::from(tree, grads));
}

void GradientsAccumulator::accumulate(const ParamGrads& grads) {
  auto guard = no_grad();
  for (const auto& [id, g] : grads.map()) {
    const DynTensor have = sum_.find(id);
    if (!have.defined()) {
      sum_.set(id, g);
      continue;
    }
    EMBER_CHECK(have.shape() == g.shape(), "[GradientsAccumulator] the gradient of parameter ", id,
                " changed shape: ", have.shape(), " then ", g.shape());
    sum_.set(id, add(have, g));
  }
  ++count_;
}

ParamGrads GradientsAccumulator::take() {
  ParamGrads out = std::move(sum_);
  sum_ = ParamGrads();
  count_ = 0;
  return out;
}

namespace {
std::string nonfinite_message(const RangeError& e) {
  return ember::detail::cat("[clip_grad_norm] the total norm of order ", e.check.arg0,
                            " of the gradients is ", e.value, ", so they cannot be clipped");
}
}  // namespace

Tensor<0> clip_grad_norm(ParamGrads& grads, double max_norm, double norm_type,
                         bool error_if_nonfinite) {
  EMBER_CHECK(norm_type > 0, "[clip_grad_norm] norm_type must be positive, got ", norm_type);
  EMBER_CHECK(max_norm >= 0, "[clip_grad_norm] max_norm must be >= 0, got ", max_norm);
  if (grads.empty()) return Tensor<0>(zeros(Shape{}, DType::f64, default_device()));
  auto guard = no_grad();
  // As PyTorch: the norm of the per-tensor norms (each in its gradient's dtype; reductions
  // accumulate in double blocks), in ParamId order (the parameters' creation order), so the
  // result does not depend on the map's order.
  std::vector<nn::ParamId> ids;
  for (const auto& [id, g] : grads.map()) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  std::vector<DynTensor> norms;
  norms.reserve(ids.size());
  const bool inf = std::isinf(norm_type);
  for (nn::ParamId id : ids) {
    const DynTensor g = grads.find(id);
    const DynTensor n = inf ? amax(abs(g)) : norm(g, norm_type);
    norms.push_back(reshape(cast(n, DType::f64), Shape{1}));
  }
  const DynTensor all = cat(norms, 0);
  const DynTensor total = inf ? amax(all) : norm(all, norm_type);
  if (error_if_nonfinite) {  // checked where total lives: no host read
    RangeCheck check;
    check.lo = -std::numeric_limits<double>::max();
    check.hi = std::numeric_limits<double>::max();
    check.op = "clip_grad_norm";
    check.arg0 = norm_type;
    check.message = nonfinite_message;
    check_range(total, check);
  }
  // The coefficient stays a tensor, so clipping never waits for the device.
  const DynTensor coef = clamp_max(div(max_norm, add(total, 1e-6)), 1.0);
  std::vector<std::pair<nn::ParamId, DynTensor>> scaled;
  for (const auto& [id, g] : grads.map()) scaled.emplace_back(id, mul(g, coef));
  for (auto& [id, g] : scaled) grads.set(id, g);
  return Tensor<0>(total);
}

void clip_grad_value(ParamGrads& grads, double clip_value) {
  EMBER_CHECK(clip_value >= 0, "[clip_grad_value] clip_value must be >= 0, got ", clip_value);
  auto guard = no_grad();
  std::vector<std::pair<nn::ParamId, DynTensor>> clipped;
  for (const auto& [id, g] : grads.map())
    clipped.emplace_back(id, clamp(g, -clip_value, clip_value));
  for (auto& [id, g] : clipped) grads.set(id, g);
}

}  // namespace ember::optim
