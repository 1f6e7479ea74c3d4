// The elementwise engine of the Cuda backend: out[i] = f(in0[i], in1[i], ...) over one shape.
// Two kernels per (types, f): a dense one, where out is contiguous and each input is contiguous
// or one broadcast value, moving 16 bytes per access when the pointers allow; and a strided one
// for everything else (merged dims, any strides, including 0 and negative).
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "common.cuh"

namespace ember::cuda {

/// Elements per thread in the dense kernel: 16 bytes of the widest operand.
template <class Out, class... In>
constexpr int vec_width() {
  constexpr size_t widest = std::max({sizeof(Out), sizeof(In)...});
  return static_cast<int>(16 / widest);
}

template <class T, int K>
struct alignas(sizeof(T) * K) Pack {
  T v[K];
};

// One input of the dense kernel: contiguous, or one value broadcast to every element.
template <class T>
struct DenseIn {
  const T* p;
  bool scalar;
};

// f on the inputs' compute types (float for Half and BFloat16), stored as Out.
template <class Out, class F, class... In>
__device__ __forceinline__ Out apply(const F& f, const In&... x) {
  return convert<Out>(f(static_cast<Compute<In>>(x)...));
}

// Input d's pack j: K consecutive values, or K copies of its one value.
template <int K, class T>
__device__ __forceinline__ Pack<T, K> load_pack(const DenseIn<T>& d, int64_t j) {
  if (d.scalar) {
    Pack<T, K> r;
    const T v = d.p[0];
#pragma unroll
    for (int k = 0; k < K; ++k) r.v[k] = v;
    return r;
  }
  return reinterpret_cast<const Pack<T, K>*>(d.p)[j];
}

template <int K, class Out, class F, class... In>
__device__ __forceinline__ void apply_pack(const F& f, Pack<Out, K>& o, const Pack<In, K>&... x) {
#pragma unroll
  for (int k = 0; k < K; ++k) o.v[k] = apply<Out>(f, x.v[k]...);
}

template <int K, class Out, class F, class... In>
__global__ void map_dense_kernel(Out* out, int64_t n, bool vectorised, F f, DenseIn<In>... in) {
  const int64_t tid = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  const int64_t threads = int64_t{gridDim.x} * blockDim.x;
  int64_t start = 0;
  if (vectorised) {
    const int64_t packs = n / K;
    for (int64_t j = tid; j < packs; j += threads) {
      Pack<Out, K> o;
      apply_pack<K>(f, o, load_pack<K>(in, j)...);
      reinterpret_cast<Pack<Out, K>*>(out)[j] = o;
    }
    start = packs * K;
  }
  for (int64_t i = start + tid; i < n; i += threads) {
    out[i] = apply<Out>(f, in.p[in.scalar ? 0 : i]...);
  }
}

template <int N, class Out, class F, class... In, size_t... K>
__device__ __forceinline__ void apply_at(Out* out, const int64_t (&off)[N], const F& f,
                                         std::index_sequence<K...>, const In*... in) {
  out[off[0]] = apply<Out>(f, in[off[K + 1]]...);
}

template <int N, class Out, class F, class... In>
__global__ void map_strided_kernel(Out* out, Strided<N> s, int64_t n, F f, const In*... in) {
  EMBER_CUDA_FOR(i, n) {
    int64_t off[N];
    s.offsets(i, off);
    apply_at<N>(out, off, f, std::index_sequence_for<In...>{}, in...);
  }
}

inline bool aligned_to(const void* p, int bytes) {
  return reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(bytes) == 0;
}

inline bool all_zero_strides(const RawTensor& t) {
  for (int d = 0; d < t.rank(); ++d) {
    if (t.shape[d] != 1 && t.strides[d] != 0) return false;
  }
  return true;
}

/// out = f(ins...) elementwise, for In the inputs' element types (given: map<Out, In...>): `f`
/// takes the inputs' compute types (Compute<In>: float for the 16-bit floats) and its result is
/// stored as Out with convert<Out>. Inputs have out's shape (broadcast by the front end).
template <class>
using RawTensorOf = RawTensor;

template <class Out, class... In, class F>
void map(const char* op, const RawTensor& out, F f, const RawTensorOf<In>&... ins) {
  const int64_t n = out.numel();
  if (n == 0) return;
  cudaStream_t stream = stream_of(out);
  constexpr int K = vec_width<Out, In...>();
  const bool dense = out.is_contiguous() && ((ins.is_contiguous() || all_zero_strides(ins)) && ...);
  if (dense) {
    constexpr int kPackBytes = static_cast<int>(sizeof(Out)) * K;
    bool vectorised = K > 1 && aligned_to(out.data(), kPackBytes);
    ((vectorised = vectorised && (all_zero_strides(ins) ||
                                  aligned_to(ins.data(), static_cast<int>(sizeof(In)) * K))),
     ...);
    const unsigned grid = grid_for(vectorised ? (n + K - 1) / K : n);
    map_dense_kernel<K, Out, F, In...><<<grid, kThreads, 0, stream>>>(
        static_cast<Out*>(out.data()), n, vectorised, f,
        DenseIn<In>{static_cast<const In*>(ins.data()), all_zero_strides(ins)}...);
  } else {
    constexpr int N = 1 + sizeof...(In);
    const RawTensor* const ts[N] = {&out, &ins...};
    map_strided_kernel<N, Out, F, In...><<<grid_for(n), kThreads, 0, stream>>>(
        static_cast<Out*>(out.data()), make_strided<N>(out.shape, ts), n, f,
        static_cast<const In*>(ins.data())...);
  }
  EMBER_CUDA_LAUNCHED(op);
}

}  // namespace ember::cuda
