// Fused optimizer updates: one Adam/AdamW step in one pass, one thread per element, with the
// Cpu's element formula (src/core/adam_step.hpp); and the multi-tensor Adam and SGD steps, in
// place over many parameters per launch (PyTorch's fused AdamW and foreach SGD), each block one
// chunk of one tensor.
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

// SGD: each product and sum rounded on its own (no FMA contraction), as the tensor ops of
// sgd_step_composite round them, so the fused step gives the same values.
__device__ inline float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ inline double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ inline float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ inline double add_rn(double a, double b) { return __dadd_rn(a, b); }

constexpr int kMaxSgdTensors = 48;

template <class T>
struct SgdArgs {
  T* p[kMaxSgdTensors];
  const T* g[kMaxSgdTensors];
  T* buf[kMaxSgdTensors];
  int64_t n[kMaxSgdTensors];
  int first_chunk[kMaxSgdTensors + 1];
  bool first[kMaxSgdTensors];
  int count;
  // Shared by the launch (one bucket's constants, rounded to T as the tensor ops' scalars; which
  // terms apply is decided on the doubles, as sgd_step_composite decides).
  T neg_lr, momentum, dampening1, weight_decay;
  bool has_momentum, has_decay, nesterov;
};

template <class T>
__global__ void sgd_multi_kernel(const SgdArgs<T> a) {
  const int block = static_cast<int>(blockIdx.x);
  int t = 0;
  while (t + 1 < a.count && block >= a.first_chunk[t + 1]) ++t;
  const int64_t begin = static_cast<int64_t>(block - a.first_chunk[t]) * kChunk;
  const int64_t end = begin + kChunk < a.n[t] ? begin + kChunk : a.n[t];
  T* pp = a.p[t];
  T* bp = a.buf[t];
  const T* gp = a.g[t];
  const bool first = a.first[t];
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const T w = pp[i];
    T g = gp[i];
    if (a.has_decay) g = add_rn(g, mul_rn(w, a.weight_decay));
    if (a.has_momentum) {
      const T b = first ? g : add_rn(mul_rn(bp[i], a.momentum), mul_rn(g, a.dampening1));
      bp[i] = b;
      g = a.nesterov ? add_rn(g, mul_rn(b, a.momentum)) : b;
    }
    pp[i] = add_rn(w, mul_rn(g, a.neg_lr));
  }
}

// Items of one bucket: the same lr, momentum, dampening, weight decay and Nesterov flag.
template <class T>
void sgd_multi(const std::vector<Backend::SgdStepItem>& items) {
  const cudaStream_t stream = stream_of(items.front().param);
  const SgdParams& c = items.front().params;
  SgdArgs<T> a{};
  auto reset = [&] {
    a = SgdArgs<T>{};
    a.neg_lr = static_cast<T>(-c.lr);
    a.momentum = static_cast<T>(c.momentum);
    a.dampening1 = static_cast<T>(1 - c.dampening);
    a.weight_decay = static_cast<T>(c.weight_decay);
    a.has_momentum = c.momentum != 0;
    a.has_decay = c.weight_decay != 0;
    a.nesterov = c.nesterov;
  };
  auto launch = [&] {
    if (a.count == 0) return;
    sgd_multi_kernel<T><<<static_cast<unsigned>(a.first_chunk[a.count]), kThreads, 0, stream>>>(a);
    EMBER_CUDA_LAUNCHED("sgd_step_multi");
    reset();
  };
  reset();
  for (const Backend::SgdStepItem& it : items) {
    const int64_t n = it.param.numel();
    if (n == 0) continue;
    const int64_t chunks = (n + kChunk - 1) / kChunk;
    if (a.count == kMaxSgdTensors || a.first_chunk[a.count] + chunks > (int64_t{1} << 30)) {
      launch();
    }
    const int k = a.count++;
    a.p[k] = it.param.data_as<T>();
    a.g[k] = it.grad.data_as<T>();
    a.buf[k] = c.momentum != 0 ? it.momentum_buffer.data_as<T>() : nullptr;
    a.first[k] = it.params.first;
    a.n[k] = n;
    a.first_chunk[k + 1] = a.first_chunk[k] + static_cast<int>(chunks);
  }
  launch();
}

// Groups items by what `same` says a launch may share, in first-seen order: parameter groups (a
// no-decay group for biases, say) each fill their own launches rather than break each other's.
template <class Item, class Same>
std::vector<std::vector<Item>> buckets_of(const std::vector<Item>& items, const Same& same) {
  std::vector<std::vector<Item>> buckets;
  for (const Item& it : items) {
    auto b = std::find_if(buckets.begin(), buckets.end(), [&](const std::vector<Item>& bucket) {
      return same(it, bucket.front());
    });
    if (b == buckets.end()) {
      buckets.push_back({it});
    } else {
      b->push_back(it);
    }
  }
  return buckets;
}

}  // namespace

bool CudaBackend::sgd_step_multi(const std::vector<SgdStepItem>& items) {
  if (items.empty()) return true;
  const DType dtype = items.front().param.dtype;
  if (dtype != DType::f32 && dtype != DType::f64) return false;
  const auto buckets = buckets_of(items, [](const SgdStepItem& x, const SgdStepItem& y) {
    const SgdParams &p = x.params, &q = y.params;
    return p.lr == q.lr && p.momentum == q.momentum && p.dampening == q.dampening &&
           p.weight_decay == q.weight_decay && p.nesterov == q.nesterov;
  });
  for (const std::vector<SgdStepItem>& b : buckets) {
    if (dtype == DType::f32) {
      sgd_multi<float>(b);
    } else {
      sgd_multi<double>(b);
    }
  }
  return true;
}

void CudaBackend::adam_step_multi(const std::vector<AdamStepItem>& items) {
  if (items.empty()) return;
  const auto buckets = buckets_of(items, [](const AdamStepItem& x, const AdamStepItem& y) {
    const AdamParams &p = x.params, &q = y.params;
    return p.lr == q.lr && p.beta1 == q.beta1 && p.beta2 == q.beta2 && p.eps == q.eps &&
           p.weight_decay == q.weight_decay;
  });
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
