// Fused normalisation kernels over contiguous [N, C, inner] tensors (f32, f64; f16 and bf16 data
// with f32 per-channel operands and statistics, computed in f32): per-channel sums
// in double, each channel split into chunks fixed by the sizes (blocks reduce a chunk with a fixed
// tree, a warp then adds the chunks in order), so results do not change from run to run; and the
// per-channel multiply-add, one thread per element.
#include <cub/cub.cuh>

#include "../../core/kernel_shapes.hpp"
#include "common.cuh"
#include "cuda_backend.hpp"

namespace ember::cuda {

// norm_channels_last.cu: the same ops on channels-last operands.
void channel_moments_channels_last(const RawTensor& x, const RawTensor& out);
void channel_dot_channels_last(const RawTensor& a, const RawTensor& b, const RawTensor& center,
                               const RawTensor& out);
void channel_fma_channels_last(const RawTensor& a, const RawTensor& ka, const RawTensor& b,
                               const RawTensor& kb, const RawTensor& k0, const RawTensor& out);

namespace {

// Channels-last and not also contiguous (Backend::channels_last: the front end passes such
// operands as they are).
bool channels_last_only(const RawTensor& t) { return t.is_channels_last() && !t.is_contiguous(); }

// Two sums accumulated together (channel_dot needs both; the moments use the first).
struct Pair {
  double s, d;
};
struct PairSum {
  __device__ Pair operator()(const Pair& a, const Pair& b) const { return {a.s + b.s, a.d + b.d}; }
};

// What each element adds, given a (and b) at the same position and channel c's center.
enum class Term { Value, Deviation2, Dot };

constexpr int64_t kChunkElems = 16384;  // elements per block: enough blocks for a few channels
constexpr int64_t kMaxChunks = 1024;

int64_t chunks_for(int64_t per_channel) {
  const int64_t c = (per_channel + kChunkElems - 1) / kChunkElems;
  return c < 1 ? 1 : (c < kMaxChunks ? c : kMaxChunks);
}

// Block (c, chunk) sums the terms of its chunk of channel c's elements (flat index k = n * inner +
// i) into partial[c * chunks + chunk].
template <class T, class K, Term kTerm>
__global__ void channel_partials(const T* __restrict__ a, const T* __restrict__ b,
                                 const double* __restrict__ center64, const K* __restrict__ center,
                                 Planes p, int64_t chunks, Pair* __restrict__ partial) {
  using Reduce = cub::BlockReduce<Pair, kThreads>;
  __shared__ typename Reduce::TempStorage temp;
  const int64_t c = blockIdx.x / chunks, chunk = blockIdx.x - c * chunks;
  const int64_t per_channel = p.outer * p.inner;
  const int64_t len = (per_channel + chunks - 1) / chunks;
  const int64_t begin = chunk * len;
  const int64_t end = begin + len < per_channel ? begin + len : per_channel;
  double m = 0;
  if constexpr (kTerm == Term::Deviation2) m = center64[c];
  if constexpr (kTerm == Term::Dot) m = static_cast<double>(center[c]);
  Pair acc{0, 0};
  // (n, i) of k, stepped by kThreads without a division per element.
  const int64_t inner = p.inner > 0 ? p.inner : 1;  // no elements then: the loop does not run
  int64_t k = begin + threadIdx.x;
  int64_t n = k / inner, i = k - n * inner;
  const int64_t dn = kThreads / inner, di = kThreads - dn * inner;
  for (; k < end; k += kThreads) {
    const int64_t at = (n * p.channels + c) * inner + i;
    const double v = static_cast<double>(static_cast<Compute<T>>(a[at]));
    if constexpr (kTerm == Term::Value) {
      acc.s += v;
    } else if constexpr (kTerm == Term::Deviation2) {
      const double dv = v - m;
      acc.s += dv * dv;
    } else {
      acc.s += v;
      acc.d += v * (static_cast<double>(static_cast<Compute<T>>(b[at])) - m);
    }
    n += dn;
    i += di;
    if (i >= inner) {
      i -= inner;
      ++n;
    }
  }
  const Pair total = Reduce(temp).Reduce(acc, PairSum{});
  if (threadIdx.x == 0) partial[blockIdx.x] = total;
}

// One warp per channel adds its chunks (lanes stride over them, then a fixed shuffle tree).
__device__ Pair chunk_total(const Pair* partial, int64_t c, int64_t chunks) {
  const int lane = threadIdx.x % 32;
  Pair acc{0, 0};
  for (int64_t j = lane; j < chunks; j += 32) {
    acc.s += partial[c * chunks + j].s;
    acc.d += partial[c * chunks + j].d;
  }
  for (int off = 16; off > 0; off /= 2) {
    acc.s += __shfl_down_sync(0xffffffffu, acc.s, off);
    acc.d += __shfl_down_sync(0xffffffffu, acc.d, off);
  }
  return acc;  // lane 0 holds the total
}

constexpr int kWarpsPerBlock = kThreads / 32;

unsigned warp_blocks(int64_t channels) {
  return static_cast<unsigned>((channels + kWarpsPerBlock - 1) / kWarpsPerBlock);
}

// The mean of each channel, for the second pass.
__global__ void finish_mean(const Pair* __restrict__ partial, int64_t channels, int64_t chunks,
                            double count, double* __restrict__ mean) {
  const int64_t c = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) / 32;
  if (c >= channels) return;
  const Pair t = chunk_total(partial, c, chunks);
  if (threadIdx.x % 32 == 0) mean[c] = t.s / count;
}

template <class T>
__global__ void finish_moments(const Pair* __restrict__ partial, const double* __restrict__ mean,
                               int64_t channels, int64_t chunks, double count,
                               T* __restrict__ out) {
  const int64_t c = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) / 32;
  if (c >= channels) return;
  const Pair t = chunk_total(partial, c, chunks);
  if (threadIdx.x % 32 == 0) {
    out[c] = static_cast<T>(mean[c]);
    out[channels + c] = static_cast<T>(t.s / count);
  }
}

template <class T>
__global__ void finish_dot(const Pair* __restrict__ partial, int64_t channels, int64_t chunks,
                           T* __restrict__ out) {
  const int64_t c = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) / 32;
  if (c >= channels) return;
  const Pair t = chunk_total(partial, c, chunks);
  if (threadIdx.x % 32 == 0) {
    out[c] = static_cast<T>(t.s);
    out[channels + c] = static_cast<T>(t.d);
  }
}

// One block per (channel, chunk): a grid past 2^31 - 1 blocks cannot launch.
unsigned block_count(int64_t blocks, const char* op) {
  EMBER_CHECK(blocks < (int64_t{1} << 31), "[", op, "] ", blocks,
              " channel pieces are more than one launch holds (2^31 - 1)");
  return static_cast<unsigned>(blocks);
}

// T: the data's type; K: the statistics' and per-channel operands' (float for 16-bit T).
template <class T, class K = Compute<T>>
void moments(const RawTensor& x, const RawTensor& out) {
  const Planes p = planes(x.shape);
  if (p.channels == 0) return;
  const char* op = "channel_moments";
  const cudaStream_t stream = stream_of(x);
  const int64_t per_channel = p.outer * p.inner, chunks = chunks_for(per_channel);
  const double count = static_cast<double>(per_channel);  // 0: the mean is NaN, as on the Cpu
  const auto partial_mem = scratch(sizeof(Pair) * p.channels * chunks, x.storage->device());
  const auto mean_mem = scratch(sizeof(double) * p.channels, x.storage->device());
  auto* partial = static_cast<Pair*>(partial_mem->data());
  auto* mean = static_cast<double*>(mean_mem->data());
  const unsigned blocks = block_count(p.channels * chunks, op);
  channel_partials<T, K, Term::Value><<<blocks, kThreads, 0, stream>>>(
      x.data_as<T>(), nullptr, nullptr, nullptr, p, chunks, partial);
  EMBER_CUDA_LAUNCHED(op);
  finish_mean<<<warp_blocks(p.channels), kThreads, 0, stream>>>(partial, p.channels, chunks, count,
                                                                mean);
  EMBER_CUDA_LAUNCHED(op);
  // Second pass: squared deviations from the mean (stable where E[x^2] - E[x]^2 is not).
  channel_partials<T, K, Term::Deviation2>
      <<<blocks, kThreads, 0, stream>>>(x.data_as<T>(), nullptr, mean, nullptr, p, chunks, partial);
  EMBER_CUDA_LAUNCHED(op);
  finish_moments<K><<<warp_blocks(p.channels), kThreads, 0, stream>>>(
      partial, mean, p.channels, chunks, count, out.data_as<K>());
  EMBER_CUDA_LAUNCHED(op);
}

template <class T, class K = Compute<T>>
void dot(const RawTensor& a, const RawTensor& b, const RawTensor& center, const RawTensor& out) {
  const Planes p = planes(a.shape);
  if (p.channels == 0) return;
  const char* op = "channel_dot";
  const cudaStream_t stream = stream_of(a);
  const int64_t chunks = chunks_for(p.outer * p.inner);
  const auto partial_mem = scratch(sizeof(Pair) * p.channels * chunks, a.storage->device());
  auto* partial = static_cast<Pair*>(partial_mem->data());
  channel_partials<T, K, Term::Dot><<<block_count(p.channels * chunks, op), kThreads, 0, stream>>>(
      a.data_as<T>(), b.data_as<T>(), nullptr, center.data_as<K>(), p, chunks, partial);
  EMBER_CUDA_LAUNCHED(op);
  finish_dot<K><<<warp_blocks(p.channels), kThreads, 0, stream>>>(partial, p.channels, chunks,
                                                                  out.data_as<K>());
  EMBER_CUDA_LAUNCHED(op);
}

// out = a * ka[c] + (b * kb[c]) + k0[c]; I is the index type (32-bit when it fits: the channel
// of each element costs two divisions).
template <class T, class K, class I, bool kHasB>
__global__ void fma_kernel(I n, I channels, I inner, const T* __restrict__ a,
                           const K* __restrict__ ka, const T* __restrict__ b,
                           const K* __restrict__ kb, const K* __restrict__ k0,
                           T* __restrict__ out) {
  for (I i = blockIdx.x * I{blockDim.x} + threadIdx.x; i < n; i += I{gridDim.x} * blockDim.x) {
    const I c = (inner == 1 ? i : i / inner) % channels;
    const K av = static_cast<K>(static_cast<Compute<T>>(a[i]));
    if constexpr (kHasB) {
      out[i] = static_cast<T>(av * ka[c] + static_cast<K>(static_cast<Compute<T>>(b[i])) * kb[c] +
                              k0[c]);
    } else {
      out[i] = static_cast<T>(av * ka[c] + k0[c]);
    }
  }
}

template <class T, class K, class I>
void fma_launch(const Planes& p, int64_t n, const RawTensor& a, const RawTensor& ka,
                const RawTensor& b, const RawTensor& kb, const RawTensor& k0,
                const RawTensor& out) {
  const cudaStream_t stream = stream_of(a);
  if (b.defined()) {
    fma_kernel<T, K, I, true><<<grid_for(n), kThreads, 0, stream>>>(
        static_cast<I>(n), static_cast<I>(p.channels), static_cast<I>(p.inner), a.data_as<T>(),
        ka.data_as<K>(), b.data_as<T>(), kb.data_as<K>(), k0.data_as<K>(), out.data_as<T>());
  } else {
    fma_kernel<T, K, I, false><<<grid_for(n), kThreads, 0, stream>>>(
        static_cast<I>(n), static_cast<I>(p.channels), static_cast<I>(p.inner), a.data_as<T>(),
        ka.data_as<K>(), nullptr, nullptr, k0.data_as<K>(), out.data_as<T>());
  }
  EMBER_CUDA_LAUNCHED("channel_fma");
}

template <class T, class K = Compute<T>>
void fma(const RawTensor& a, const RawTensor& ka, const RawTensor& b, const RawTensor& kb,
         const RawTensor& k0, const RawTensor& out) {
  const Planes p = planes(a.shape);
  const int64_t n = a.numel();
  if (n == 0) return;
  // The loop index reaches n + the grid's thread count, which must fit the index type too.
  if (n + int64_t{grid_for(n)} * kThreads < (int64_t{1} << 31)) {
    fma_launch<T, K, uint32_t>(p, n, a, ka, b, kb, k0, out);
  } else {
    fma_launch<T, K, int64_t>(p, n, a, ka, b, kb, k0, out);
  }
}

// Batch norm's per-channel arithmetic, a thread a channel (tensor/ops/norm.hpp's formulas).
template <class K>
__global__ void coefficients_kernel(int64_t channels, const K* __restrict__ moments,
                                    const K* __restrict__ weight, const K* __restrict__ bias,
                                    double eps, K* __restrict__ out) {
  EMBER_CUDA_FOR(c, channels) {
    const K mean = moments[c], var = moments[channels + c];
    const K invstd = K{1} / sqrt(var + static_cast<K>(eps));
    const K scale = weight != nullptr ? weight[c] * invstd : invstd;
    const K shift = -(mean * scale) + (bias != nullptr ? bias[c] : K{0});
    out[c] = invstd;
    out[channels + c] = scale;
    out[2 * channels + c] = shift;
  }
}

template <class K>
__global__ void backward_coefficients_kernel(int64_t channels, const K* __restrict__ d,
                                             const K* __restrict__ coefficients,
                                             const K* __restrict__ moments, K count,
                                             K* __restrict__ out) {
  EMBER_CUDA_FOR(c, channels) {
    const K sum_g = d[c], sum_gxc = d[channels + c];
    const K invstd = coefficients[c], scale = coefficients[channels + c], mean = moments[c];
    const K k2 = -(scale * (invstd * invstd) * sum_gxc / count);
    out[c] = k2;
    out[channels + c] = -(scale * sum_g / count) - k2 * mean;
    out[2 * channels + c] = sum_gxc * invstd;
    out[3 * channels + c] = sum_g;
  }
}

template <class K>
void coefficients(const RawTensor& moments, const RawTensor& weight, const RawTensor& bias,
                  double eps, const RawTensor& out) {
  const int64_t c = moments.shape[1];
  if (c == 0) return;
  coefficients_kernel<K><<<grid_for(c), kThreads, 0, stream_of(out)>>>(
      c, moments.data_as<K>(), weight.defined() ? weight.data_as<K>() : nullptr,
      bias.defined() ? bias.data_as<K>() : nullptr, eps, out.data_as<K>());
  EMBER_CUDA_LAUNCHED("batch_norm_coefficients");
}

template <class K>
void backward_coefficients(const RawTensor& d, const RawTensor& coefficients,
                           const RawTensor& moments, double count, const RawTensor& out) {
  const int64_t c = d.shape[1];
  if (c == 0) return;
  backward_coefficients_kernel<K><<<grid_for(c), kThreads, 0, stream_of(out)>>>(
      c, d.data_as<K>(), coefficients.data_as<K>(), moments.data_as<K>(), static_cast<K>(count),
      out.data_as<K>());
  EMBER_CUDA_LAUNCHED("batch_norm_backward_coefficients");
}

}  // namespace

void CudaBackend::batch_norm_coefficients(const RawTensor& moments, const RawTensor& weight,
                                          const RawTensor& bias, double eps, const RawTensor& out) {
  if (moments.dtype == DType::f64) return coefficients<double>(moments, weight, bias, eps, out);
  if (moments.dtype == DType::f32) return coefficients<float>(moments, weight, bias, eps, out);
  no_kernel("batch_norm_coefficients", moments.dtype);
}

void CudaBackend::batch_norm_backward_coefficients(const RawTensor& d,
                                                   const RawTensor& coefficients,
                                                   const RawTensor& moments, double count,
                                                   const RawTensor& out) {
  if (d.dtype == DType::f64) {
    return backward_coefficients<double>(d, coefficients, moments, count, out);
  }
  if (d.dtype == DType::f32) {
    return backward_coefficients<float>(d, coefficients, moments, count, out);
  }
  no_kernel("batch_norm_backward_coefficients", d.dtype);
}

void CudaBackend::channel_moments(const RawTensor& x, const RawTensor& out) {
  if (channels_last_only(x)) return channel_moments_channels_last(x, out);
  switch (x.dtype) {
    case DType::f32:
      return moments<float>(x, out);
    case DType::f64:
      return moments<double>(x, out);
    case DType::f16:
      return moments<Half>(x, out);
    case DType::bf16:
      return moments<BFloat16>(x, out);
    default:
      no_kernel("channel_moments", x.dtype);
  }
}

void CudaBackend::channel_dot(const RawTensor& a, const RawTensor& b, const RawTensor& center,
                              const RawTensor& out) {
  if (channels_last_only(a)) return channel_dot_channels_last(a, b, center, out);
  switch (a.dtype) {
    case DType::f32:
      return dot<float>(a, b, center, out);
    case DType::f64:
      return dot<double>(a, b, center, out);
    case DType::f16:
      return dot<Half>(a, b, center, out);
    case DType::bf16:
      return dot<BFloat16>(a, b, center, out);
    default:
      no_kernel("channel_dot", a.dtype);
  }
}

void CudaBackend::channel_fma(const RawTensor& a, const RawTensor& ka, const RawTensor& b,
                              const RawTensor& kb, const RawTensor& k0, const RawTensor& out) {
  if (channels_last_only(a)) return channel_fma_channels_last(a, ka, b, kb, k0, out);
  switch (a.dtype) {
    case DType::f32:
      return fma<float>(a, ka, b, kb, k0, out);
    case DType::f64:
      return fma<double>(a, ka, b, kb, k0, out);
    case DType::f16:
      return fma<Half>(a, ka, b, kb, k0, out);
    case DType::bf16:
      return fma<BFloat16>(a, ka, b, kb, k0, out);
    default:
      no_kernel("channel_fma", a.dtype);
  }
}

}  // namespace ember::cuda
