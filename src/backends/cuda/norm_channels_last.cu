// The Norm kernels (norm.cu) on channels-last tensors: [N, C, *] with C innermost is [M, C] rows,
// so a thread reads 16 bytes of adjacent channels at a time (8 bf16) and keeps their sums, and
// the per-channel multiply-add is a vectorised elementwise pass. Sums are in double, each
// channel's rows split into chunks fixed by the sizes and the GPU's SM count and reduced in a
// fixed tree, so results do not change from run to run. The moments take one pass: sums of x - x[0,
// c] and of its square in double, whose difference loses no digits that matter at these sizes (the
// shift keeps a large mean from cancelling).
#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "../../core/kernel_shapes.hpp"
#include "common.cuh"
#include "cuda_backend.hpp"
#include "ember/backends/cuda/cuda.hpp"

namespace ember::cuda {
namespace {

template <class T, int kVec>
struct alignas(sizeof(T) * kVec) Pack {
  T v[kVec];
};

enum class Sums { Moments, Dot };

constexpr int kBlock = 256;

struct Geometry {
  int tx = 1, ty = kBlock;  // threads over channel packs, over rows
  int64_t groups = 1;       // blocks over the channel packs (gridDim.y)
  int64_t chunks = 1;       // blocks over the rows (gridDim.x)
  int64_t rows_per_chunk = 1;
};

// The chunks depend on the GPU's SM count as well as the sizes: the same bits from run to run
// on one GPU.
Geometry geometry_of(int64_t rows, int64_t packs, int64_t target_blocks) {
  Geometry g;
  while (g.tx < 32 && g.tx * 2 <= packs) g.tx *= 2;
  g.ty = kBlock / g.tx;
  g.groups = (packs + g.tx - 1) / g.tx;
  const int64_t by_rows = (rows + 4 * g.ty - 1) / (4 * g.ty);  // at least 4 rows per thread
  const int64_t by_grid = (target_blocks + g.groups - 1) / g.groups;
  g.chunks = by_rows < by_grid ? by_rows : by_grid;
  if (g.chunks < 1) g.chunks = 1;
  g.rows_per_chunk = (rows + g.chunks - 1) / g.chunks;
  return g;
}

// Adds v over the block's rows of threads (blockDim.y, a power of 2) in a fixed tree through
// shared ([ty][tx * kVec]); thread row 0 writes the totals of its kVec channels to out.
template <int kVec>
__device__ void block_sum(const double (&v)[kVec], double* shared, int tx, int ty, bool active,
                          double* out) {
  const int width = blockDim.x * kVec;
#pragma unroll
  for (int j = 0; j < kVec; ++j) shared[ty * width + tx * kVec + j] = v[j];
  __syncthreads();
  for (int half = blockDim.y / 2; half > 0; half /= 2) {
    if (ty < half) {
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        shared[ty * width + tx * kVec + j] += shared[(ty + half) * width + tx * kVec + j];
      }
    }
    __syncthreads();
  }
  if (ty == 0 && active) {
#pragma unroll
    for (int j = 0; j < kVec; ++j) out[j] = shared[tx * kVec + j];
  }
  __syncthreads();  // the buffer is reused next
}

// Block (chunk, group): rows [chunk * len, ...) of the group's channel packs; writes the chunk's
// two sums of each channel to partial[chunk][c] (s then d, each [chunks, C]).
template <class T, class K, Sums kSums, int kVec>
__global__ void partials_kernel(const T* __restrict__ a, const T* __restrict__ b,
                                const K* __restrict__ center, int64_t rows, int64_t channels,
                                int64_t rows_per_chunk, double* __restrict__ partial_s,
                                double* __restrict__ partial_d) {
  extern __shared__ double shared[];  // [ty][tx * kVec]
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t packs = channels / kVec;
  const int64_t pack = int64_t{blockIdx.y} * blockDim.x + tx;
  const bool active = pack < packs;
  const int64_t c0 = pack * kVec;
  double s[kVec], d[kVec], m[kVec];
#pragma unroll
  for (int j = 0; j < kVec; ++j) {
    s[j] = d[j] = 0;
    m[j] = 0;
    if (active) {
      // Moments: shifted by the channel's first value; Dot: the given center.
      if constexpr (kSums == Sums::Moments) {
        m[j] = static_cast<double>(static_cast<Compute<T>>(a[c0 + j]));
      } else {
        m[j] = static_cast<double>(center[c0 + j]);
      }
    }
  }
  if (active) {
    const int64_t begin = int64_t{blockIdx.x} * rows_per_chunk;
    const int64_t end = begin + rows_per_chunk < rows ? begin + rows_per_chunk : rows;
    const auto* ap = reinterpret_cast<const Pack<T, kVec>*>(a);
    const auto* bp = reinterpret_cast<const Pack<T, kVec>*>(b);
    // 16-bit data: kInner rows at a time summed in float (exact for the first few products of
    // 8-bit mantissas, a rounding of 2^-24 after), then added into the double sums, so the
    // conversions to double do not bound the pass; wider data goes to double directly. The
    // kInner rows are loaded before any is added, so that many loads are in flight per thread.
    using Inner = std::conditional_t<sizeof(T) == 2, float, double>;
    constexpr int kInner = 4;
    const int64_t step = blockDim.y;
    auto add = [&](const Pack<T, kVec>& av, const Pack<T, kVec>& bv, Inner(&si)[kVec],
                   Inner(&di)[kVec]) {
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        if constexpr (kSums == Sums::Moments) {
          const Inner v =
              static_cast<Inner>(static_cast<Compute<T>>(av.v[j])) - static_cast<Inner>(m[j]);
          si[j] += v;
          di[j] += v * v;
        } else {
          const Inner v = static_cast<Inner>(static_cast<Compute<T>>(av.v[j]));
          si[j] += v;
          di[j] +=
              v * (static_cast<Inner>(static_cast<Compute<T>>(bv.v[j])) - static_cast<Inner>(m[j]));
        }
      }
    };
    auto flush = [&](const Inner(&si)[kVec], const Inner(&di)[kVec]) {
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        s[j] += static_cast<double>(si[j]);
        d[j] += static_cast<double>(di[j]);
      }
    };
    int64_t r = begin + ty;
    for (; r + (kInner - 1) * step < end; r += kInner * step) {
      Pack<T, kVec> av[kInner], bv[kInner];
#pragma unroll
      for (int u = 0; u < kInner; ++u) {
        av[u] = ap[(r + u * step) * packs + pack];
        if constexpr (kSums == Sums::Dot) bv[u] = bp[(r + u * step) * packs + pack];
      }
      Inner si[kVec] = {}, di[kVec] = {};
#pragma unroll
      for (int u = 0; u < kInner; ++u) add(av[u], bv[u], si, di);
      flush(si, di);
    }
    for (; r < end; r += step) {  // the last rows, one at a time
      Pack<T, kVec> av = ap[r * packs + pack], bv{};
      if constexpr (kSums == Sums::Dot) bv = bp[r * packs + pack];
      Inner si[kVec] = {}, di[kVec] = {};
      add(av, bv, si, di);
      flush(si, di);
    }
  }
  // A fixed tree over the rows' threads, the two sums one after the other through one buffer.
  block_sum<kVec>(s, shared, tx, ty, active, partial_s + int64_t{blockIdx.x} * channels + c0);
  block_sum<kVec>(d, shared, tx, ty, active, partial_d + int64_t{blockIdx.x} * channels + c0);
}

// Block (32 channels) x (32 slices of the chunks): each thread adds every 32nd chunk of its
// channel, a fixed tree adds the slices, and row 0 writes out [2, C].
constexpr int kFinishSlices = 32;

template <class T, class K, Sums kSums>
__global__ void finish_kernel(const T* __restrict__ a, const double* __restrict__ partial_s,
                              const double* __restrict__ partial_d, int64_t channels,
                              int64_t chunks, double count, K* __restrict__ out) {
  __shared__ double sh_s[kFinishSlices][33], sh_d[kFinishSlices][33];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t c = int64_t{blockIdx.x} * 32 + tx;
  double s = 0, d = 0;
  if (c < channels) {
#pragma unroll 4
    for (int64_t k = ty; k < chunks; k += kFinishSlices) {
      s += partial_s[k * channels + c];
      d += partial_d[k * channels + c];
    }
  }
  sh_s[ty][tx] = s;
  sh_d[ty][tx] = d;
  __syncthreads();
  for (int half = kFinishSlices / 2; half > 0; half /= 2) {
    if (ty < half) {
      sh_s[ty][tx] += sh_s[ty + half][tx];
      sh_d[ty][tx] += sh_d[ty + half][tx];
    }
    __syncthreads();
  }
  if (ty != 0 || c >= channels) return;
  s = sh_s[0][tx];
  d = sh_d[0][tx];
  if constexpr (kSums == Sums::Moments) {
    const double shift = static_cast<double>(static_cast<Compute<T>>(a[c]));
    const double mean_shifted = s / count;
    double var = d / count - mean_shifted * mean_shifted;
    if (var < 0) var = 0;  // rounding of an all-equal channel
    out[c] = static_cast<K>(shift + mean_shifted);
    out[channels + c] = static_cast<K>(var);
  } else {
    out[c] = static_cast<K>(s);
    out[channels + c] = static_cast<K>(d);
  }
}

// The widest pack that divides C and the operands' alignment: 16 bytes, else one element.
template <class T>
int pack_width(int64_t channels, std::initializer_list<const RawTensor*> operands) {
  constexpr int kWide = static_cast<int>(16 / sizeof(T));
  if (channels % kWide != 0) return 1;
  for (const RawTensor* t : operands) {
    if (t->defined() && reinterpret_cast<uintptr_t>(t->data()) % 16 != 0) return 1;
  }
  return kWide;
}

template <class T, class K, Sums kSums, int kVec>
void sums_launch(const RawTensor& a, const RawTensor& b, const RawTensor& center,
                 const RawTensor& out, const char* op) {
  const int64_t channels = a.shape[1], rows = a.numel() / channels;
  const Device device = a.storage->device();
  const size_t shared = sizeof(double) * kBlock * kVec;
  // One wave of as many blocks as the SMs hold at once: no tail of a second wave. The count is
  // kept per device (the occupancy query answers for the current one).
  constexpr int kDevices = 64;
  static std::atomic<int> resident[kDevices] = {};
  const int slot = device.index < kDevices ? device.index : kDevices - 1;
  int blocks = resident[slot].load(std::memory_order_relaxed);
  if (blocks == 0) {
    int per_sm = 0, sms = 0;
    EMBER_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                         &per_sm, partials_kernel<T, K, kSums, kVec>, kBlock, shared),
                     op);
    EMBER_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device.index),
                     op);
    blocks = (per_sm > 0 ? per_sm : 1) * (sms > 0 ? sms : 1);
    resident[slot].store(blocks, std::memory_order_relaxed);
  }
  const Geometry g = geometry_of(rows, channels / kVec, blocks);
  const cudaStream_t stream = stream_of(a);
  const auto partial_mem = scratch(2 * sizeof(double) * g.chunks * channels, device);
  auto* partial_s = static_cast<double*>(partial_mem->data());
  double* partial_d = partial_s + g.chunks * channels;
  EMBER_CHECK(g.chunks < (int64_t{1} << 31) && g.groups < 65536, "[", op, "] ", a.shape,
              " has more rows or channels than one launch holds");
  const dim3 grid(static_cast<unsigned>(g.chunks), static_cast<unsigned>(g.groups));
  partials_kernel<T, K, kSums, kVec><<<grid, dim3(g.tx, g.ty), shared, stream>>>(
      a.data_as<T>(), b.defined() ? b.data_as<T>() : nullptr,
      center.defined() ? center.data_as<K>() : nullptr, rows, channels, g.rows_per_chunk, partial_s,
      partial_d);
  EMBER_CUDA_LAUNCHED(op);
  finish_kernel<T, K, kSums>
      <<<static_cast<unsigned>((channels + 31) / 32), dim3(32, kFinishSlices), 0, stream>>>(
          a.data_as<T>(), partial_s, partial_d, channels, g.chunks, static_cast<double>(rows),
          out.data_as<K>());
  EMBER_CUDA_LAUNCHED(op);
}

template <class T, class K, Sums kSums>
void sums(const RawTensor& a, const RawTensor& b, const RawTensor& center, const RawTensor& out,
          const char* op) {
  if (a.numel() == 0) return;
  constexpr int kWide = static_cast<int>(16 / sizeof(T));
  if (pack_width<T>(a.shape[1], {&a, &b}) == kWide) {
    sums_launch<T, K, kSums, kWide>(a, b, center, out, op);
  } else {
    sums_launch<T, K, kSums, 1>(a, b, center, out, op);
  }
}

// kVec coefficients of adjacent channels from c0: one vector load where kPacked (aligned).
template <class K, int kVec, bool kPacked>
__device__ Pack<K, kVec> coefficients(const K* __restrict__ k, int64_t c0) {
  if constexpr (kPacked) {
    return *reinterpret_cast<const Pack<K, kVec>*>(k + c0);
  } else {
    Pack<K, kVec> r;
#pragma unroll
    for (int j = 0; j < kVec; ++j) r.v[j] = k[c0 + j];
    return r;
  }
}

// out = a * ka[c] + b * kb[c] + k0[c] over packs of kVec adjacent channels.
template <class T, class K, class I, int kVec, bool kHasB, bool kPacked>
__global__ void fma_kernel(I packs, I channels, const T* __restrict__ a, const K* __restrict__ ka,
                           const T* __restrict__ b, const K* __restrict__ kb,
                           const K* __restrict__ k0, T* __restrict__ out) {
  const auto* ap = reinterpret_cast<const Pack<T, kVec>*>(a);
  const auto* bp = reinterpret_cast<const Pack<T, kVec>*>(b);
  auto* outp = reinterpret_cast<Pack<T, kVec>*>(out);
  for (I i = blockIdx.x * I{blockDim.x} + threadIdx.x; i < packs; i += I{gridDim.x} * blockDim.x) {
    const I c0 = (i * kVec) % channels;
    const Pack<T, kVec> av = ap[i];
    const Pack<K, kVec> sa = coefficients<K, kVec, kPacked>(ka, c0);
    const Pack<K, kVec> s0 = coefficients<K, kVec, kPacked>(k0, c0);
    Pack<T, kVec> r;
    if constexpr (kHasB) {
      const Pack<T, kVec> bv = bp[i];
      const Pack<K, kVec> sb = coefficients<K, kVec, kPacked>(kb, c0);
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        r.v[j] =
            static_cast<T>(static_cast<K>(static_cast<Compute<T>>(av.v[j])) * sa.v[j] +
                           static_cast<K>(static_cast<Compute<T>>(bv.v[j])) * sb.v[j] + s0.v[j]);
      }
    } else {
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        r.v[j] =
            static_cast<T>(static_cast<K>(static_cast<Compute<T>>(av.v[j])) * sa.v[j] + s0.v[j]);
      }
    }
    outp[i] = r;
  }
}

template <class T, class K, class I, int kVec, bool kPacked>
void fma_launch(const RawTensor& a, const RawTensor& ka, const RawTensor& b, const RawTensor& kb,
                const RawTensor& k0, const RawTensor& out) {
  const int64_t packs = a.numel() / kVec;
  const cudaStream_t stream = stream_of(a);
  const unsigned grid = grid_for(packs);
  if (b.defined()) {
    fma_kernel<T, K, I, kVec, true, kPacked><<<grid, kThreads, 0, stream>>>(
        static_cast<I>(packs), static_cast<I>(a.shape[1]), a.data_as<T>(), ka.data_as<K>(),
        b.data_as<T>(), kb.data_as<K>(), k0.data_as<K>(), out.data_as<T>());
  } else {
    fma_kernel<T, K, I, kVec, false, kPacked><<<grid, kThreads, 0, stream>>>(
        static_cast<I>(packs), static_cast<I>(a.shape[1]), a.data_as<T>(), ka.data_as<K>(), nullptr,
        nullptr, k0.data_as<K>(), out.data_as<T>());
  }
  EMBER_CUDA_LAUNCHED("channel_fma");
}

// Whether every defined coefficient vector is aligned for Pack<K, kVec> loads.
template <class K, int kVec>
bool packed_coefficients(std::initializer_list<const RawTensor*> ks) {
  for (const RawTensor* k : ks) {
    if (k->defined() && reinterpret_cast<uintptr_t>(k->data()) % (sizeof(K) * kVec) != 0) {
      return false;
    }
  }
  return true;
}

template <class T, class K, class I, int kVec>
void fma_aligned(const RawTensor& a, const RawTensor& ka, const RawTensor& b, const RawTensor& kb,
                 const RawTensor& k0, const RawTensor& out) {
  if (kVec > 1 && packed_coefficients<K, kVec>({&ka, &kb, &k0})) {
    fma_launch<T, K, I, kVec, true>(a, ka, b, kb, k0, out);
  } else {
    fma_launch<T, K, I, kVec, false>(a, ka, b, kb, k0, out);
  }
}

template <class T, class K, int kVec>
void fma_indexed(const RawTensor& a, const RawTensor& ka, const RawTensor& b, const RawTensor& kb,
                 const RawTensor& k0, const RawTensor& out) {
  const int64_t packs = a.numel() / kVec;
  // The loop index (times kVec) reaches past n by the grid's thread count: it must fit I too.
  if ((packs + int64_t{grid_for(packs)} * kThreads) * kVec < (int64_t{1} << 31)) {
    fma_aligned<T, K, uint32_t, kVec>(a, ka, b, kb, k0, out);
  } else {
    fma_aligned<T, K, int64_t, kVec>(a, ka, b, kb, k0, out);
  }
}

template <class T, class K = Compute<T>>
void fma(const RawTensor& a, const RawTensor& ka, const RawTensor& b, const RawTensor& kb,
         const RawTensor& k0, const RawTensor& out) {
  if (a.numel() == 0) return;
  constexpr int kWide = static_cast<int>(16 / sizeof(T));
  if (pack_width<T>(a.shape[1], {&a, &b, &out}) == kWide) {
    fma_indexed<T, K, kWide>(a, ka, b, kb, k0, out);
  } else {
    fma_indexed<T, K, 1>(a, ka, b, kb, k0, out);
  }
}

template <class T>
void moments(const RawTensor& x, const RawTensor& out) {
  sums<T, Compute<T>, Sums::Moments>(x, RawTensor(), RawTensor(), out, "channel_moments");
}

template <class T>
void dot(const RawTensor& a, const RawTensor& b, const RawTensor& center, const RawTensor& out) {
  sums<T, Compute<T>, Sums::Dot>(a, b, center, out, "channel_dot");
}

}  // namespace

// Operands are channels-last and dense (the front end's contract), so data() is row 0, channel
// 0 of an [M, C] matrix.
void channel_moments_channels_last(const RawTensor& x, const RawTensor& out) {
  EMBER_CUDA_DISPATCH_FLOAT(x.dtype, backend().no_kernel("channel_moments", x.dtype), moments, x,
                            out)
}

void channel_dot_channels_last(const RawTensor& a, const RawTensor& b, const RawTensor& center,
                               const RawTensor& out) {
  EMBER_CUDA_DISPATCH_FLOAT(a.dtype, backend().no_kernel("channel_dot", a.dtype), dot, a, b, center,
                            out)
}

void channel_fma_channels_last(const RawTensor& a, const RawTensor& ka, const RawTensor& b,
                               const RawTensor& kb, const RawTensor& k0, const RawTensor& out) {
  EMBER_CUDA_DISPATCH_FLOAT(a.dtype, backend().no_kernel("channel_fma", a.dtype), fma, a, ka, b, kb,
                            k0, out)
}

}  // namespace ember::cuda
