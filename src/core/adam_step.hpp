// One Adam/AdamW step element by element, shared by the Cpu and Cuda kernels (EMBER_HD): the
// constants rounded to the tensors' dtype once, the composite's operation order (src/optim), and
// the options as compile-time flags so each loop has no branches.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "ember/core/host_device.hpp"
#include "ember/core/ops.hpp"

namespace ember::adam {

/// The step's constants in the tensors' dtype.
template <class T>
struct Consts {
  T decay, wd, one_minus_beta1, beta2, one_minus_beta2, bc2_sqrt, eps, neg_step;

  explicit Consts(const AdamParams& p)
      : decay(static_cast<T>(1 - p.lr * p.weight_decay)),
        wd(static_cast<T>(p.weight_decay)),
        one_minus_beta1(static_cast<T>(1 - p.beta1)),
        beta2(static_cast<T>(p.beta2)),
        one_minus_beta2(static_cast<T>(1 - p.beta2)),
        bc2_sqrt(static_cast<T>(p.bias_correction2_sqrt)),
        eps(static_cast<T>(p.eps)),
        neg_step(static_cast<T>(-(p.lr / p.bias_correction1))) {}
};

/// One element: the parameter w, its gradient g, exp_avg m, exp_avg_sq v and (with kAmsgrad)
/// max_exp_avg_sq x, updated in place. Values, not pointers, so each backend's loop keeps its
/// own loads and stores (the Cpu's restrict pointers, which its vectoriser needs).
template <class T, bool kDecoupled, bool kCoupled, bool kAmsgrad>
EMBER_HD inline void element(T& w, T g, T& m, T& v, T& x, const Consts<T>& c) {
  if constexpr (kDecoupled) w = w * c.decay;
  if constexpr (kCoupled) g = g + w * c.wd;
  m = m + c.one_minus_beta1 * (g - m);  // lerp(m, g, 1 - beta1)
  v = v * c.beta2 + (g * g) * c.one_minus_beta2;
  T second = v;
  if constexpr (kAmsgrad) {
    x = x > v ? x : v;  // maximum(vmax, v)
    second = x;
  }
  const T denom = std::sqrt(second) / c.bc2_sqrt + c.eps;
  w = w + (m / denom) * c.neg_step;
}

/// Calls run(decoupled, coupled, amsgrad) with std::bool_constant flags for p's options.
template <class F>
void with_options(const AdamParams& p, F&& run) {
  using Yes = std::true_type;
  using No = std::false_type;
  const bool decoupled = p.decoupled && p.weight_decay != 0,
             coupled = !p.decoupled && p.weight_decay != 0;
  if (p.amsgrad) {
    if (decoupled) return run(Yes{}, No{}, Yes{});
    if (coupled) return run(No{}, Yes{}, Yes{});
    return run(No{}, No{}, Yes{});
  }
  if (decoupled) return run(Yes{}, No{}, No{});
  if (coupled) return run(No{}, Yes{}, No{});
  run(No{}, No{}, No{});
}

}  // namespace ember::adam
