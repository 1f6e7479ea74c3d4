// Fused optimizer updates: one Adam/AdamW step in one pass, one thread per element, with the
// Cpu's element formula (src/core/adam_step.hpp).
#include <type_traits>

#include "../../core/adam_step.hpp"
#include "common.cuh"
#include "cuda_backend.hpp"

namespace ember::cuda {
namespace {

// One instantiation per combination of options, so the loop has no branches.
template <class T, bool kDecoupled, bool kCoupled, bool kAmsgrad>
__global__ void adam_kernel(int64_t n, const T* __restrict__ pp, const T* __restrict__ gp,
                            const T* __restrict__ mp, const T* __restrict__ vp,
                            const T* __restrict__ xp, T* __restrict__ po, T* __restrict__ mo,
                            T* __restrict__ vo, T* __restrict__ xo, const adam::Consts<T> c) {
  EMBER_CUDA_FOR(i, n) {
    T w = pp[i], m = mp[i], v = vp[i], x = kAmsgrad ? xp[i] : T(0);
    adam::element<T, kDecoupled, kCoupled, kAmsgrad>(w, gp[i], m, v, x, c);
    po[i] = w;
    mo[i] = m;
    vo[i] = v;
    if constexpr (kAmsgrad) xo[i] = x;
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
  const adam::Consts<T> c(p);
  const cudaStream_t stream = stream_of(param);
  adam::with_options(p, [&](auto decoupled_c, auto coupled_c, auto amsgrad_c) {
    constexpr bool kDecoupled = decltype(decoupled_c)::value, kCoupled = decltype(coupled_c)::value,
                   kAmsgrad = decltype(amsgrad_c)::value;
    adam_kernel<T, kDecoupled, kCoupled, kAmsgrad>
        <<<grid_for(n), kThreads, 0, stream>>>(n, pp, gp, mp, vp, xp, po, mo, vo, xo, c);
    EMBER_CUDA_LAUNCHED("adam_step");
  });
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
