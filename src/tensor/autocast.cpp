// Autocast's per-thread state and its two casting rules (include/ember/tensor/autocast.hpp).
#include "ember/tensor/autocast.hpp"

#include <array>
#include <unordered_map>
#include <utility>

#include "ember/autodiff/autodiff.hpp"
#include "ember/autodiff/node.hpp"
#include "ember/core/error.hpp"
#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/movement.hpp"

namespace ember {

namespace {

constexpr size_t kDeviceTypes = 4;  // DeviceType's values

struct CachedCast {
  std::shared_ptr<autodiff::Node> source;  // keeps the key's node alive
  DynTensor cast;
};

struct AutocastState {
  std::array<std::optional<DType>, kDeviceTypes> dtype{};
  int depth = 0;  // live guards that turn autocast on; the cache lives as long as one does
  // Casts of leaves (weights) by node and target type: a weight used several times per forward
  // (tied embeddings, recurrent steps) is cast once, as PyTorch's autocast cache does.
  std::unordered_map<const autodiff::Node*, std::array<CachedCast, 2>> cache;
};

#if defined(EMBER_NO_THREADS)  // bare metal: no thread-local storage, one thread
AutocastState g_state;
#else
thread_local AutocastState g_state;
#endif

size_t slot(DeviceType type) { return static_cast<size_t>(type); }

}  // namespace

AutocastGuard::AutocastGuard(DeviceType type, std::optional<DType> dtype)
    : type_(type), previous_(g_state.dtype[slot(type)]) {
  EMBER_CHECK(!dtype || *dtype == DType::bf16 || *dtype == DType::f16,
              "[autocast] runs in bf16 or f16, got ", *dtype);
  g_state.dtype[slot(type)] = dtype;
  ++g_state.depth;
}

AutocastGuard::~AutocastGuard() {
  g_state.dtype[slot(type_)] = previous_;
  if (--g_state.depth == 0) g_state.cache.clear();
}

AutocastGuard autocast(Device device, DType dtype, bool enabled) {
  return AutocastGuard(device.type, enabled ? std::optional<DType>(dtype) : std::nullopt);
}

std::optional<DType> autocast_dtype(DeviceType type) { return g_state.dtype[slot(type)]; }

namespace detail {

bool autocast_on(const DynTensor& t) {
  return t.defined() && g_state.dtype[slot(t.device().type)].has_value();
}

DynTensor autocast_lower(const DynTensor& t) {
  if (!t.defined() || t.dtype() != DType::f32) return t;  // f64 and integers are left alone
  const std::optional<DType> to = g_state.dtype[slot(t.device().type)];
  if (!to) return t;
  const autodiff::Node* node = t.node().get();
  // Only recorded casts are cached: one made under no_grad would cut the weight's gradient off
  // for a later use in the same scope.
  if (node == nullptr || !node->is_leaf() || !grad_enabled()) {
    return cast(t, *to);
  }
  CachedCast& entry = g_state.cache[node][*to == DType::bf16 ? 0 : 1];
  if (!entry.cast.defined()) entry = {t.node(), cast(t, *to)};
  return entry.cast;
}

bool autocast_lowers(const DynTensor& a, const DynTensor& b, const DynTensor& c) {
  auto f32 = [](const DynTensor& t) { return t.defined() && t.dtype() == DType::f32; };
  return autocast_on(a) && (f32(a) || f32(b) || f32(c));
}

bool autocast_widens(const DynTensor& t) {
  return t.defined() && (t.dtype() == DType::f16 || t.dtype() == DType::bf16) && autocast_on(t);
}

DynTensor autocast_widen(const DynTensor& t) {
  return autocast_widens(t) ? cast(t, DType::f32) : t;
}

AutocastSuspend::AutocastSuspend() {
  for (size_t i = 0; i < kDeviceTypes; ++i) saved_[i] = std::exchange(g_state.dtype[i], {});
  g_state.cache.clear();
}

AutocastSuspend::~AutocastSuspend() {
  for (size_t i = 0; i < kDeviceTypes; ++i) g_state.dtype[i] = saved_[i];
}

}  // namespace detail
}  // namespace ember
