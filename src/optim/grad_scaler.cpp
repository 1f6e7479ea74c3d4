// GradScaler (include/ember/optim/grad_scaler.hpp): PyTorch's algorithm, with the overflow test
// kept on the device until step() needs its verdict.
#include "ember/optim/grad_scaler.hpp"

#include <cmath>
#include <limits>

#include "ember/core/error.hpp"
#include "state_text.hpp"

namespace ember::optim {

namespace {
constexpr double kMaxScale = std::numeric_limits<float>::max();
}  // namespace

GradScaler::GradScaler(GradScalerConfig config) : config_(config), scale_(config.init_scale_) {
  // The scale multiplies f32 losses: beyond f32's range it would be inf on every backend.
  EMBER_CHECK(config_.init_scale_ > 0 && config_.init_scale_ <= kMaxScale,
              "[GradScaler] init_scale must be positive and at most f32's largest value, got ",
              config_.init_scale_);
  EMBER_CHECK(config_.growth_factor_ > 1, "[GradScaler] growth_factor must exceed 1, got ",
              config_.growth_factor_);
  EMBER_CHECK(config_.backoff_factor_ > 0 && config_.backoff_factor_ < 1,
              "[GradScaler] backoff_factor must lie in (0, 1), got ", config_.backoff_factor_);
  EMBER_CHECK(config_.growth_interval_ > 0, "[GradScaler] growth_interval must be positive, got ",
              config_.growth_interval_);
}

DynTensor GradScaler::scale(const DynTensor& loss) const {
  EMBER_CHECK(loss.defined() && is_floating(loss.dtype()),
              "[GradScaler] scale() needs a floating loss");
  if (!config_.enabled_) return loss;
  // In f32 whatever the loss's type: 2^16 times an f16 loss would overflow it.
  return mul(cast(loss, DType::f32), scale_);
}

void GradScaler::unscale(ParamGrads& grads) {
  if (!config_.enabled_) return;
  EMBER_CHECK(!unscaled_, "[GradScaler] unscale() was already called since the last update()");
  auto guard = no_grad();
  const double inv = 1.0 / scale_;
  DynTensor flag;
  for (const auto& [id, g] : grads.map()) {
    const DynTensor u = mul(g, inv);
    grads.set(id, u);
    // g * 0 is NaN exactly where g is inf or NaN; the sum carries it (in f32: an f16 sum of
    // zeros cannot overflow, but its type must match the flag's).
    const DynTensor bad = sum(mul(cast(u, DType::f32), 0.0));
    flag = flag.defined() ? add(flag, bad) : bad;
  }
  found_inf_ = flag;
  unscaled_ = true;
}

bool GradScaler::step(Optimizer& opt, const nn::ModuleTree& tree, ParamGrads grads) {
  if (!config_.enabled_) {
    opt.step(tree, grads);
    return true;
  }
  if (!unscaled_) unscale(grads);
  skipped_ = found_inf_.defined() && !std::isfinite(found_inf_.item<float>());
  if (!skipped_) opt.step(tree, grads);
  return !skipped_;
}

void GradScaler::update() {
  if (!config_.enabled_) return;
  if (skipped_) {
    scale_ *= config_.backoff_factor_;
    growth_tracker_ = 0;
  } else if (++growth_tracker_ == config_.growth_interval_) {
    if (scale_ * config_.growth_factor_ <= kMaxScale) scale_ *= config_.growth_factor_;
    growth_tracker_ = 0;
  }
  unscaled_ = skipped_ = false;
  found_inf_ = DynTensor();
}

std::map<std::string, std::string> GradScaler::state() const {
  return {{"scale", detail::format_double(scale_)},
          {"growth_tracker", std::to_string(growth_tracker_)}};
}

void GradScaler::load_state(const std::map<std::string, std::string>& state) {
  const double scale = detail::state_double(state, "scale", "GradScaler", 0, kMaxScale);
  const int64_t tracker =
      detail::state_int(state, "growth_tracker", "GradScaler", 0, config_.growth_interval_ - 1);
  EMBER_CHECK(scale > 0, "[GradScaler] the state's scale must be positive, got ", scale);
  scale_ = scale;  // both checked before either is set
  growth_tracker_ = tracker;
}

}  // namespace ember::optim
