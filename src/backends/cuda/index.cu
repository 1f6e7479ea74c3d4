// Indexing kernels: gather, index_select, scatter (assign, add, and scatter_reduce's *, max, min)
// and nonzero. Index tensors are i64 and may be strided. Their range checks are queued (range.cu),
// so a kernel may still meet a bad index: it skips it, touching no memory out of bounds, and
// synchronize raises the error.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <thrust/iterator/counting_iterator.h>

#include <algorithm>
#include <bit>
#include <cub/cub.cuh>
#include <type_traits>

#include "../../core/kernel_shapes.hpp"
#include "../../core/scatter_combine.hpp"
#include "common.cuh"
#include "cuda_backend.hpp"
#include "ember/backends/cuda/cuda.hpp"
#include "ember/core/device.hpp"

namespace ember::cuda {
namespace {

int64_t size_at(const RawTensor& t, int d) { return d < t.rank() ? t.shape[d] : 1; }
int64_t stride_at(const RawTensor& t, int d) { return d < t.rank() ? t.strides[d] : 0; }

// ---- gather and index_select ---------------------------------------------------------------

// out[i] = x_view[i] shifted by index[i] * step along dim; out, index and x_view share out's
// shape (x_view has stride 0 at dim).
template <class U>
__global__ void gather_kernel(U* out, const int64_t* index, const U* x, Strided<3> st, int64_t n,
                              int64_t size, int64_t step) {
  EMBER_CUDA_FOR(i, n) {
    int64_t off[3];
    st.offsets(i, off);
    const int64_t j = index[off[1]];
    out[off[0]] = j >= 0 && j < size ? x[off[2] + j * step] : U(0);  // a bad index reads nothing
  }
}

// `index` has out's shape (index_select passes a view of its 1-D index).
void launch_gather(const RawTensor& x, int dim, const RawTensor& index, const RawTensor& out,
                   const char* op) {
  const int64_t n = out.numel();
  if (n == 0) return;
  Strides x_strides = Shape::filled(out.rank(), 0);
  for (int d = 0; d < out.rank(); ++d) {
    if (d != dim) x_strides[d] = stride_at(x, d);
  }
  const RawTensor x_view = x.view(out.shape, x_strides, x.offset);
  const RawTensor* ts[3] = {&out, &index, &x_view};
  const Strided<3> st = make_strided<3>(out.shape, ts);
  const int64_t size = size_at(x, dim), step = stride_at(x, dim);
  const cudaStream_t stream = stream_of(out);
  visit_size(dtype_size(x.dtype), [&](auto tag) {
    using U = decltype(tag);
    gather_kernel<U>
        <<<grid_for(n), kThreads, 0, stream>>>(out.data_as<U>(), index.data_as<const int64_t>(),
                                               x_view.data_as<const U>(), st, n, size, step);
  });
  EMBER_CUDA_LAUNCHED(op);
}

// ---- scatter ---------------------------------------------------------------------------------

// Where one update of a line goes: the line's start (from the Strided addressing of the other
// dims) plus k steps along dim for index and src, index[k] steps for dst.
struct LineSteps {
  int64_t dst, index, src;
};

// One thread per line of index along dim (the other dims fixed), walking it in order: lines write
// disjoint elements of dst, and inside a line the last write wins, as in the Cpu's serial loop.
template <class T, ScatterReduce R>
__global__ void scatter_lines(T* dst, const int64_t* index, const T* src, Strided<3> st,
                              int64_t lines, int64_t len, int64_t size, LineSteps step) {
  EMBER_CUDA_FOR(l, lines) {
    int64_t off[3];
    st.offsets(l, off);
    for (int64_t k = 0; k < len; ++k) {
      const int64_t j = index[off[1] + k * step.index];
      if (j < 0 || j >= size) continue;  // a bad index writes nothing
      T& d = dst[off[0] + j * step.dst];
      d = scatter_combine<R>(d, src[off[2] + k * step.src]);
    }
  }
}

// 1-byte elements (i8, u8, bool) have no atomicAdd: a compare-and-swap of the aligned 32-bit
// word that holds them (allocations are 512-byte blocks, so the word is inside ours).
template <class T>
__device__ void atomic_add_byte(T* p, T v) {
  const auto addr = reinterpret_cast<uintptr_t>(p);
  auto* word = reinterpret_cast<unsigned int*>(addr & ~uintptr_t{3});
  const unsigned int shift = static_cast<unsigned int>(addr & 3u) * 8u;
  unsigned int old = *word, assumed = 0;
  do {
    assumed = old;
    const T cur = static_cast<T>(static_cast<uint8_t>(assumed >> shift));
    const auto next = static_cast<unsigned int>(static_cast<uint8_t>(accumulate(cur, v)));
    old = atomicCAS(word, assumed, (assumed & ~(0xffu << shift)) | (next << shift));
  } while (old != assumed);
}

template <class T>
__device__ void atomic_add(T* p, T v) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    atomicAdd(p, v);
  } else if constexpr (std::is_same_v<T, Half>) {
    atomicAdd(reinterpret_cast<__half*>(p), __ushort_as_half(v.bits));
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    atomicAdd(reinterpret_cast<__nv_bfloat16*>(p), __ushort_as_bfloat16(v.bits));
  } else if constexpr (sizeof(T) == 8) {  // i64: two's complement wraps the same unsigned
    atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
  } else if constexpr (sizeof(T) == 4) {
    atomicAdd(reinterpret_cast<unsigned int*>(p), static_cast<unsigned int>(v));
  } else {
    atomic_add_byte(p, v);
  }
}

// One thread per update; dst has stride 0 at dim in the addressing.
template <class T>
__global__ void scatter_add_atomic(T* dst, const int64_t* index, const T* src, Strided<3> st,
                                   int64_t n, int64_t size, int64_t dst_step) {
  EMBER_CUDA_FOR(i, n) {
    int64_t off[3];
    st.offsets(i, off);
    const int64_t j = index[off[1]];
    if (j >= 0 && j < size) atomic_add(dst + off[0] + j * dst_step, src[off[2]]);
  }
}

// Assignment over few long lines, in two parallel passes that give the ordered result: each dst
// element first records the last position k along its line that writes it (as k + 1 in `last`,
// zeroed; k from the row-major i with `inner` elements after dim), then only that one writes.
__global__ void scatter_claim(unsigned long long* last, const int64_t* index, Strided<3> st,
                              int64_t n, int64_t size, int64_t dst_step, int64_t len,
                              int64_t inner) {
  EMBER_CUDA_FOR(i, n) {
    int64_t off[3];
    st.offsets(i, off);
    const int64_t j = index[off[1]];
    if (j < 0 || j >= size) continue;
    const auto k = static_cast<unsigned long long>(i / inner % len);
    atomicMax(last + off[0] + j * dst_step, k + 1);
  }
}

template <class T>
__global__ void scatter_last(T* dst, const int64_t* index, const T* src,
                             const unsigned long long* last, Strided<3> st, int64_t n, int64_t size,
                             int64_t dst_step, int64_t len, int64_t inner) {
  EMBER_CUDA_FOR(i, n) {
    int64_t off[3];
    st.offsets(i, off);
    const int64_t j = index[off[1]];
    if (j < 0 || j >= size) continue;
    const int64_t o = off[0] + j * dst_step;
    if (last[o] == static_cast<unsigned long long>(i / inner % len) + 1) dst[o] = src[off[2]];
  }
}

// Deterministic scatter_add over few long lines: the updates sorted (stably) by the dst element
// they go to, keyed by its offset in contiguous dst (`numel` for a bad index), then one thread per
// run of equal keys adds them in index order: the Cpu's sums, bit for bit, in parallel.
__global__ void scatter_keys(const int64_t* index, Strided<3> st, int64_t n, int64_t size,
                             int64_t dst_step, int64_t numel, uint64_t* keys, int64_t* pos) {
  EMBER_CUDA_FOR(i, n) {
    int64_t off[3];
    st.offsets(i, off);
    const int64_t j = index[off[1]];
    keys[i] = static_cast<uint64_t>(j >= 0 && j < size ? off[0] + j * dst_step : numel);
    pos[i] = i;
  }
}

template <class T>
__global__ void scatter_add_runs(T* dst, const T* src, Strided<3> st, int64_t n, int64_t numel,
                                 const uint64_t* keys, const int64_t* pos) {
  EMBER_CUDA_FOR(t, n) {
    const uint64_t key = keys[t];
    if (key == static_cast<uint64_t>(numel) || (t > 0 && keys[t - 1] == key)) continue;
    T acc = dst[key];
    for (int64_t u = t; u < n && keys[u] == key; ++u) {
      int64_t off[3];
      st.offsets(pos[u], off);
      acc = accumulate(acc, src[off[2]]);
    }
    dst[key] = acc;
  }
}

template <class T>
void scatter_add_sorted(const RawTensor& dst, const RawTensor& index, const RawTensor& src,
                        const Strided<3>& st, int64_t size, int64_t dst_step, cudaStream_t stream) {
  const int64_t n = index.numel(), numel = dst.numel();
  const Device device = dst.device();
  const auto keys = scratch(static_cast<size_t>(n) * sizeof(uint64_t) * 2, device);
  const auto pos = scratch(static_cast<size_t>(n) * sizeof(int64_t) * 2, device);
  auto* keys_in = static_cast<uint64_t*>(keys->data());
  auto* pos_in = static_cast<int64_t*>(pos->data());
  scatter_keys<<<grid_for(n), kThreads, 0, stream>>>(index.data_as<const int64_t>(), st, n, size,
                                                     dst_step, numel, keys_in, pos_in);
  EMBER_CUDA_LAUNCHED("scatter_add");
  // Keys are at most numel; one bit at least, so that CUB sorts rather than copies nothing.
  const int bits = std::max(1, static_cast<int>(std::bit_width(static_cast<uint64_t>(numel))));
  size_t bytes = 0;
  EMBER_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys_in, keys_in + n, pos_in,
                                                   pos_in + n, n, 0, bits, stream),
                   "scatter_add");
  const auto temp = scratch(bytes, device);
  EMBER_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp->data(), bytes, keys_in, keys_in + n,
                                                   pos_in, pos_in + n, n, 0, bits, stream),
                   "scatter_add");
  scatter_add_runs<T><<<grid_for(n), kThreads, 0, stream>>>(
      dst.data_as<T>(), src.data_as<const T>(), st, n, numel, keys_in + n, pos_in + n);
}

// Few long lines leave the ordered kernel with too few threads. Then scatter_add uses atomics,
// exact for integers but of varying rounding order for floats (floats under
// use_deterministic_algorithms sort their updates instead), and assignment the two passes above
// when dst is not much larger than index (`last` has one word per dst element). Both sorted and
// two-pass paths want dst contiguous (the front end's clone is). Short lines (the small cases the
// tests compare) stay ordered.
constexpr int64_t kOrderedLines = int64_t{1} << 16;
constexpr int64_t kAtomicMinLen = 32;

// The addressing of one update per element of index: dst (stride 0 at dim), index, src.
Strided<3> update_addressing(const RawTensor& dst, int dim, const RawTensor& index,
                             const RawTensor& src) {
  Strides dst_strides = Shape::filled(index.rank(), 0);
  Strides src_strides = Shape::filled(index.rank(), 0);
  for (int d = 0; d < index.rank(); ++d) {
    if (d != dim) dst_strides[d] = stride_at(dst, d);
    src_strides[d] = stride_at(src, d);
  }
  const RawTensor dst_view = dst.view(index.shape, dst_strides, dst.offset);
  const RawTensor src_view = src.view(index.shape, src_strides, src.offset);
  const RawTensor* ts[3] = {&dst_view, &index, &src_view};
  return make_strided<3>(index.shape, ts);
}

template <class T>
void launch_scatter(ScatterReduce reduce, const RawTensor& dst, int dim, const RawTensor& index,
                    const RawTensor& src) {
  const int64_t n = index.numel();
  const int64_t len = size_at(index, dim), size = size_at(dst, dim), dst_step = stride_at(dst, dim);
  const cudaStream_t stream = stream_of(dst);
  const bool add = reduce == ScatterReduce::Add;
  const int64_t lines = n / len;
  const bool few_long_lines = lines < kOrderedLines && len >= kAtomicMinLen;
  if (few_long_lines && add && (std::is_integral_v<T> || !deterministic_algorithms())) {
    scatter_add_atomic<T><<<grid_for(n), kThreads, 0, stream>>>(
        dst.data_as<T>(), index.data_as<const int64_t>(), src.data_as<const T>(),
        update_addressing(dst, dim, index, src), n, size, dst_step);
    return;
  }
  if (few_long_lines && add && dst.is_contiguous()) {
    if constexpr (!std::is_integral_v<T>) {  // floats under use_deterministic_algorithms
      scatter_add_sorted<T>(dst, index, src, update_addressing(dst, dim, index, src), size,
                            dst_step, stream);
      return;
    }
  }
  if (few_long_lines && reduce == ScatterReduce::None && dst.is_contiguous() &&
      dst.numel() <= 8 * n) {
    const Strided<3> st = update_addressing(dst, dim, index, src);
    int64_t inner = 1;
    for (int d = dim + 1; d < index.rank(); ++d) inner *= index.shape[d];
    const size_t bytes = static_cast<size_t>(dst.numel()) * sizeof(unsigned long long);
    const auto last_storage = scratch(bytes, dst.device());
    auto* last = static_cast<unsigned long long*>(last_storage->data());
    EMBER_CUDA_CHECK(cudaMemsetAsync(last, 0, bytes, stream), "scatter");
    scatter_claim<<<grid_for(n), kThreads, 0, stream>>>(last, index.data_as<const int64_t>(), st, n,
                                                        size, dst_step, len, inner);
    EMBER_CUDA_LAUNCHED("scatter");
    scatter_last<T><<<grid_for(n), kThreads, 0, stream>>>(
        dst.data_as<T>(), index.data_as<const int64_t>(), src.data_as<const T>(), last, st, n, size,
        dst_step, len, inner);
    return;
  }
  // One thread per line: index's shape without dim, each operand at its strides there.
  Shape line_shape;
  Strides dst_strides, index_strides, src_strides;
  for (int d = 0; d < index.rank(); ++d) {
    if (d == dim) continue;
    line_shape.push_back(index.shape[d]);
    dst_strides.push_back(stride_at(dst, d));
    index_strides.push_back(index.strides[d]);
    src_strides.push_back(stride_at(src, d));
  }
  const RawTensor dst_view = dst.view(line_shape, dst_strides, dst.offset);
  const RawTensor index_view = index.view(line_shape, index_strides, index.offset);
  const RawTensor src_view = src.view(line_shape, src_strides, src.offset);
  const RawTensor* ts[3] = {&dst_view, &index_view, &src_view};
  const Strided<3> st = make_strided<3>(line_shape, ts);
  const LineSteps step{dst_step, stride_at(index, dim), stride_at(src, dim)};
  // scatter_reduce's *, max and min always take this path (one thread per line, in order).
  const auto kernel = reduce == ScatterReduce::None  ? scatter_lines<T, ScatterReduce::None>
                      : reduce == ScatterReduce::Add ? scatter_lines<T, ScatterReduce::Add>
                      : reduce == ScatterReduce::Mul ? scatter_lines<T, ScatterReduce::Mul>
                      : reduce == ScatterReduce::Max ? scatter_lines<T, ScatterReduce::Max>
                                                     : scatter_lines<T, ScatterReduce::Min>;
  kernel<<<grid_for(lines), kThreads, 0, stream>>>(dst.data_as<T>(), index.data_as<const int64_t>(),
                                                   src.data_as<const T>(), st, lines, len, size,
                                                   step);
}

// ---- nonzero ---------------------------------------------------------------------------------

// Whether x's element at row-major position i is non-zero (NaN is).
template <class T>
struct IsNonZero {
  const T* x;
  Strided<1> st;
  __device__ bool operator()(int64_t i) const {
    int64_t off[1];
    st.offsets(i, off);
    return static_cast<Compute<T>>(x[off[0]]) != Compute<T>(0);
  }
};

struct Sizes {
  int64_t d[kMaxRank];
};

// Row c of out gets the coordinates of row-major position pos[c] in a tensor of `sizes`.
__global__ void coordinates_kernel(const int64_t* pos, int64_t count, Sizes sizes, int rank,
                                   int64_t* out) {
  EMBER_CUDA_FOR(c, count) {
    int64_t rest = pos[c];
    for (int d = rank - 1; d >= 0; --d) {
      out[c * rank + d] = rest % sizes.d[d];
      rest /= sizes.d[d];
    }
  }
}

// The row-major positions of x's non-zeros, in order, into `pos`; their count into *count.
template <class T>
void select_nonzero(const RawTensor& x, int64_t* pos, int64_t* count, cudaStream_t stream) {
  const RawTensor* ts[1] = {&x};
  const IsNonZero<T> pred{x.data_as<const T>(), make_strided<1>(x.shape, ts)};
  const thrust::counting_iterator<int64_t> first(0);
  size_t temp_bytes = 0;
  EMBER_CUDA_CHECK(
      cub::DeviceSelect::If(nullptr, temp_bytes, first, pos, count, x.numel(), pred, stream),
      "nonzero");
  const auto temp = scratch(temp_bytes, x.device());
  EMBER_CUDA_CHECK(
      cub::DeviceSelect::If(temp->data(), temp_bytes, first, pos, count, x.numel(), pred, stream),
      "nonzero");
}

}  // namespace

void CudaBackend::gather(const RawTensor& x, int dim, const RawTensor& index,
                         const RawTensor& out) {
  launch_gather(x, dim, index, out, "gather");
}

void CudaBackend::index_select(const RawTensor& x, int dim, const RawTensor& index,
                               const RawTensor& out) {
  // A gather whose index is the 1-D index expanded along the other dims.
  Strides index_strides = Shape::filled(out.rank(), 0);
  if (out.rank() > 0) index_strides[dim] = stride_at(index, 0);
  const RawTensor index_view = index.view(out.shape, index_strides, index.offset);
  launch_gather(x, dim, index_view, out, "index_select");
}

void CudaBackend::scatter(ScatterReduce reduce, const RawTensor& dst, int dim,
                          const RawTensor& index, const RawTensor& src) {
  if (index.numel() == 0) return;
  EMBER_CUDA_DISPATCH_ALL(dst.dtype, launch_scatter, reduce, dst, dim, index, src)
  EMBER_CUDA_LAUNCHED(scatter_name(reduce));
}

RawTensor CudaBackend::nonzero(const RawTensor& x) {
  const int64_t numel = x.numel();
  const int rank = x.rank();
  const Device device = x.device();
  const cudaStream_t stream = stream_of(x);
  int64_t count = 0;
  std::shared_ptr<Storage> pos;
  if (numel > 0) {
    pos = scratch(static_cast<size_t>(numel + 1) * sizeof(int64_t), device);
    auto* positions = static_cast<int64_t*>(pos->data());
    int64_t* count_dev = positions + numel;  // the count after the positions
    EMBER_CUDA_DISPATCH_ALL(x.dtype, select_nonzero, x, positions, count_dev, stream)
    // The result's shape is data: the one host synchronisation the contract needs.
    EMBER_CUDA_CHECK(
        cudaMemcpyAsync(&count, count_dev, sizeof count, cudaMemcpyDeviceToHost, stream),
        "nonzero");
    EMBER_CUDA_CHECK(cudaStreamSynchronize(stream), "nonzero");
  }
  const Shape shape{count, int64_t{rank}};
  RawTensor result{backend().allocate(static_cast<size_t>(count * rank) * sizeof(int64_t), device),
                   shape, contiguous_strides(shape), 0, DType::i64};
  if (count > 0 && rank > 0) {
    Sizes sizes{};
    for (int d = 0; d < rank; ++d) sizes.d[d] = x.shape[d];
    coordinates_kernel<<<grid_for(count), kThreads, 0, stream>>>(
        static_cast<const int64_t*>(pos->data()), count, sizes, rank, result.data_as<int64_t>());
    EMBER_CUDA_LAUNCHED("nonzero");
  }
  return result;
}

}  // namespace ember::cuda
