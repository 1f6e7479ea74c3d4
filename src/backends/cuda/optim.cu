// Fused optimizer updates: one Adam/AdamW step in one pass, one thread per element, with the
// formulas and operation order of the Cpu's kernel (src/backends/cpu/optim.cpp).
#include <type_traits>

#include "common.cuh"
#include "cuda_backend.hpp"

namespace ember::cuda {
namespace {

// The step's constants in the tensors' dtype, as the Cpu rounds them.
template <class T>
struct AdamConsts {
  T decay, wd, one_minus_beta1, beta2, one_minus_beta2, bc2_sqrt, eps, neg_step;
};

// One instantiation per combination of options, so the loop has no branches.
template <class T, bool kDecoupled, bool kCoupled, bool kAmsgrad>
__global__ void adam_kernel(int64_t n, const T* __restrict__ pp, const T* __restrict__ gp,
                            const T* __restrict__ mp, const T* __restrict__ vp,
                            const T* __restrict__ xp, T* __restrict__ po, T* __restrict__ mo,
                            T* __restrict__ vo, T* __restrict__ xo, const AdamConsts<T> c) {
  EMBER_CUDA_FOR(i, n) {
    T w = pp[i], g = gp[i];
    if constexpr (kDecoupled) w = w * c.decay;
    if constexpr (kCoupled) g = g + w * c.wd;
    const T m_prev = mp[i];
    const T m = m_prev + c.one_minus_beta1 * (g - m_prev);  // lerp(m, g, 1 - beta1)
    const T v = vp[i] * c.beta2 + (g * g) * c.one_minus_beta2;
    T second = v;
    if constexpr (kAmsgrad) {
      const T x = xp[i];
      second = x > v ? x : v;  // maximum(vmax, v)
      xo[i] = second;
    }
    const T denom = sqrt(second) / c.bc2_sqrt + c.eps;
    po[i] = w + (m / denom) * c.neg_step;
    mo[i] = m;
    vo[i] = v;
  }
}

template <class T>
void adam(const RawTensor& param, const RawTensor& grad, const RawTensor& m_in,
          const RawTensor& v_in, const RawTensor& vmax_in, const AdamParams& p,
          const RawTensor& param_out, const RawTensor& m_out, const RawTensor& v_out,
          const RawTensor& vmax_out) {
  const int64_t n = param.numel();
  if (n == 0) return;
  const T* pp = param.data_as<T>();
  const T* gp = grad.data_as<T>();
  const T* mp = m_in.data_as<T>();
  const T* vp = v_in.data_as<T>();
  const T* xp = p.amsgrad ? vmax_in.data_as<T>() : nullptr;
  T* po = param_out.data_as<T>();
  T* mo = m_out.data_as<T>();
  T* vo = v_out.data_as<T>();
  T* xo = p.amsgrad ? vmax_out.data_as<T>() : nullptr;
  const AdamConsts<T> c{static_cast<T>(1 - p.lr * p.weight_decay),
                        static_cast<T>(p.weight_decay),
                        static_cast<T>(1 - p.beta1),
                        static_cast<T>(p.beta2),
                        static_cast<T>(1 - p.beta2),
                        static_cast<T>(p.bias_correction2_sqrt),
                        static_cast<T>(p.eps),
                        static_cast<T>(-(p.lr / p.bias_correction1))};
  const bool decoupled = p.decoupled && p.weight_decay != 0,
             coupled = !p.decoupled && p.weight_decay != 0;
  const cudaStream_t stream = stream_of(param);
  auto run = [&](auto decoupled_c, auto coupled_c, auto amsgrad_c) {
    constexpr bool kDecoupled = decltype(decoupled_c)::value, kCoupled = decltype(coupled_c)::value,
                   kAmsgrad = decltype(amsgrad_c)::value;
    adam_kernel<T, kDecoupled, kCoupled, kAmsgrad>
        <<<grid_for(n), kThreads, 0, stream>>>(n, pp, gp, mp, vp, xp, po, mo, vo, xo, c);
    EMBER_CUDA_LAUNCHED("adam_step");
  };
  using Yes = std::true_type;
  using No = std::false_type;
  if (p.amsgrad) {
    if (decoupled) return run(Yes{}, No{}, Yes{});
    if (coupled) return run(No{}, Yes{}, Yes{});
    return run(No{}, No{}, Yes{});
  }
  if (decoupled) return run(Yes{}, No{}, No{});
  if (coupled) return run(No{}, Yes{}, No{});
  run(No{}, No{}, No{});
}

}  // namespace

void CudaBackend::adam_step(const RawTensor& param, const RawTensor& grad, const RawTensor& exp_avg,
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
      no_kernel("adam_step", param.dtype);
  }
}

}  // namespace ember::cuda
