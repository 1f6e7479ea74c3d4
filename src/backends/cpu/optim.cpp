// Fused optimizer updates: one Adam/AdamW step in one pass over its tensors (the composite of
// src/optim/rules.cpp makes 13). Computed in the tensors' dtype with the composite's operation
// order, so results match it and torch.optim's to rounding.
#include <cmath>
#include <cstdint>

#include "cpu_backend.hpp"
#include "ember/core/error.hpp"
#include "parallel.hpp"

namespace ember::cpu {
namespace {

template <class T>
void adam(const RawTensor& param, const RawTensor& grad, const RawTensor& m_in,
          const RawTensor& v_in, const RawTensor& vmax_in, const AdamParams& p,
          const RawTensor& param_out, const RawTensor& m_out, const RawTensor& v_out,
          const RawTensor& vmax_out) {
  const T* pp = param.data_as<T>();
  const T* gp = grad.data_as<T>();
  const T* mp = m_in.data_as<T>();
  const T* vp = v_in.data_as<T>();
  const T* xp = p.amsgrad ? vmax_in.data_as<T>() : nullptr;
  T* po = param_out.data_as<T>();
  T* mo = m_out.data_as<T>();
  T* vo = v_out.data_as<T>();
  T* xo = p.amsgrad ? vmax_out.data_as<T>() : nullptr;
  const T decay = static_cast<T>(1 - p.lr * p.weight_decay), wd = static_cast<T>(p.weight_decay);
  const T one_minus_beta1 = static_cast<T>(1 - p.beta1), beta2 = static_cast<T>(p.beta2),
          one_minus_beta2 = static_cast<T>(1 - p.beta2);
  const T bc2_sqrt = static_cast<T>(p.bias_correction2_sqrt), eps = static_cast<T>(p.eps);
  const T neg_step = static_cast<T>(-(p.lr / p.bias_correction1));
  const bool decoupled = p.decoupled && p.weight_decay != 0,
             coupled = !p.decoupled && p.weight_decay != 0;
  parallel_for(0, param.numel(), kGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      T w = pp[i], g = gp[i];
      if (decoupled) w = w * decay;
      if (coupled) g = g + w * wd;
      const T m = mp[i] + one_minus_beta1 * (g - mp[i]);  // lerp(m, g, 1 - beta1)
      const T v = vp[i] * beta2 + (g * g) * one_minus_beta2;
      T second = v;
      if (xo) {
        second = xp[i] > v ? xp[i] : v;  // maximum(vmax, v)
        xo[i] = second;
      }
      const T denom = std::sqrt(second) / bc2_sqrt + eps;
      po[i] = w + (m / denom) * neg_step;
      mo[i] = m;
      vo[i] = v;
    }
  });
}

}  // namespace

void CpuBackend::adam_step(const RawTensor& param, const RawTensor& grad, const RawTensor& exp_avg,
                           const RawTensor& exp_avg_sq, const RawTensor& max_exp_avg_sq,
                           const AdamParams& p, const RawTensor& param_out,
                           const RawTensor& exp_avg_out, const RawTensor& exp_avg_sq_out,
                           const RawTensor& max_exp_avg_sq_out) {
  switch (param.dtype) {
    case DType::f32:
      return adam<float>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, p, param_out,
                         exp_avg_out, exp_avg_sq_out, max_exp_avg_sq_out);
    case DType::f64:
      return adam<double>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, p, param_out,
                          exp_avg_out, exp_avg_sq_out, max_exp_avg_sq_out);
    default:
      EMBER_FAIL("[adam_step] supports f32 and f64, got ", param.dtype);
  }
}

}  // namespace ember::cpu
