// Fused optimizer updates: one Adam/AdamW step in one pass, one thread per element, with the
// Cpu's element formula (src/core/adam_step.hpp); and the multi-tensor step, in place over up to
// kMaxTensors parameters per launch (PyTorch's fused AdamW), each block one chunk of one tensor.
#include <algorithm>
#include <type_traits>
#include <vector>

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

// One launch's tensors, passed by value (under the 4 KiB of kernel arguments): the pointers,
// sizes and per-tensor constants, and where each tensor's chunks start in the grid.
constexpr int kMaxTensors = 24;
constexpr int64_t kChunk = 32768;  // elements per block

template <class T>
struct MultiArgs {
  T* p[kMaxTensors];
  const T* g[kMaxTensors];
  T* m[kMaxTensors];
  T* v[kMaxTensors];
  T* x[kMaxTensors];
  int64_t n[kMaxTensors];
  T bc2_sqrt[kMaxTensors], neg_step[kMaxTensors];
  int first_chunk[kMaxTensors + 1];
  int count;
};

template <class T, bool kDecoupled, bool kCoupled, bool kAmsgrad>
__global__ void adam_multi_kernel(MultiArgs<T> a, adam::Consts<T> c) {
  const int block = static_cast<int>(blockIdx.x);
  int t = 0;
  while (t + 1 < a.count && block >= a.first_chunk[t + 1]) ++t;
  c.bc2_sqrt = a.bc2_sqrt[t];
  c.neg_step = a.neg_step[t];
  const int64_t begin = static_cast<int64_t>(block - a.first_chunk[t]) * kChunk;
  const int64_t end = begin + kChunk < a.n[t] ? begin + kChunk : a.n[t];
  T *pp = a.p[t], *mp = a.m[t], *vp = a.v[t], *xp = a.x[t];
  const T* gp = a.g[t];
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    T w = pp[i], m = mp[i], v = vp[i], x = kAmsgrad ? xp[i] : T(0);
    adam::element<T, kDecoupled, kCoupled, kAmsgrad>(w, gp[i], m, v, x, c);
    pp[i] = w;
    mp[i] = m;
    vp[i] = v;
    if constexpr (kAmsgrad) xp[i] = x;
  }
}

// Items of one bucket: the same lr, betas, eps and weight decay (the shared constants).
template <class T>
void adam_multi(const std::vector<Backend::AdamStepItem>& items) {
  const cudaStream_t stream = stream_of(items.front().param);
  const AdamParams& first = items.front().params;
  const adam::Consts<T> c(first);  // the options and lr shared; bias corrections per tensor
  MultiArgs<T> a{};
  auto launch = [&] {
    if (a.count == 0) return;
    adam::with_options(first, [&](auto decoupled_c, auto coupled_c, auto amsgrad_c) {
      constexpr bool kDecoupled = decltype(decoupled_c)::value,
                     kCoupled = decltype(coupled_c)::value, kAmsgrad = decltype(amsgrad_c)::value;
      adam_multi_kernel<T, kDecoupled, kCoupled, kAmsgrad>
          <<<static_cast<unsigned>(a.first_chunk[a.count]), kThreads, 0, stream>>>(a, c);
      EMBER_CUDA_LAUNCHED("adam_step_multi");
    });
    a = MultiArgs<T>{};
  };
  for (const Backend::AdamStepItem& it : items) {
    const int64_t n = it.param.numel();
    if (n == 0) continue;
    const AdamParams& p = it.params;
    const int64_t chunks = (n + kChunk - 1) / kChunk;
    if (a.count == kMaxTensors || a.first_chunk[a.count] + chunks > (int64_t{1} << 30)) launch();
    const adam::Consts<T> own(p);
    const int k = a.count++;
    a.p[k] = it.param.data_as<T>();
    a.g[k] = it.grad.data_as<T>();
    a.m[k] = it.exp_avg.data_as<T>();
    a.v[k] = it.exp_avg_sq.data_as<T>();
    a.x[k] = p.amsgrad ? it.max_exp_avg_sq.data_as<T>() : nullptr;
    a.n[k] = n;
    a.bc2_sqrt[k] = own.bc2_sqrt;
    a.neg_step[k] = own.neg_step;
    a.first_chunk[k + 1] = a.first_chunk[k] + static_cast<int>(chunks);
  }
  launch();
}

}  // namespace

void CudaBackend::adam_step_multi(const std::vector<AdamStepItem>& items) {
  if (items.empty()) return;
  // Buckets by the constants a launch shares, in first-seen order: parameter groups (a no-decay
  // group for biases, say) each fill their own launches rather than break each other's.
  std::vector<std::vector<AdamStepItem>> buckets;
  for (const AdamStepItem& it : items) {
    auto same = [&](const std::vector<AdamStepItem>& b) {
      const AdamParams &p = it.params, &q = b.front().params;
      return p.lr == q.lr && p.beta1 == q.beta1 && p.beta2 == q.beta2 && p.eps == q.eps &&
             p.weight_decay == q.weight_decay;
    };
    auto b = std::find_if(buckets.begin(), buckets.end(), same);
    if (b == buckets.end()) {
      buckets.push_back({it});
    } else {
      b->push_back(it);
    }
  }
  for (const std::vector<AdamStepItem>& b : buckets) {
    switch (b.front().param.dtype) {
      case DType::f32:
        adam_multi<float>(b);
        break;
      case DType::f64:
        adam_multi<double>(b);
        break;
      default:
        no_kernel("adam_step_multi", b.front().param.dtype);
    }
  }
}

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
