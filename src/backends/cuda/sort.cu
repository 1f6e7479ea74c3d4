// sort and topk: the rows of x along `dim` are copied into contiguous order-preserving radix keys
// (dim last) with their positions, sorted by CUB's stable radix sorts, and written back in
// keepdim layout, the values gathered from x by the sorted positions (NaN payloads and -0.0 kept).
// topk is the first k of the full sort: the Cpu's order (ties by index, NaN the largest).
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <cub/cub.cuh>
#include <type_traits>

#include "common.cuh"
#include "cuda_backend.hpp"

namespace ember::cuda {
namespace {

// The unsigned radix key of an element type (its size), also the type its elements are copied as.
template <class T>
using KeyOf =
    std::conditional_t<sizeof(T) == 8, uint64_t,
                       std::conditional_t<sizeof(T) == 4, uint32_t,
                                          std::conditional_t<sizeof(T) == 2, uint16_t, uint8_t>>>;

// The key of a float's bits (`inf`: the bits of +inf): NaN above +inf, and -0.0 the key of 0.0,
// since the Cpu compares them equal and keeps their index order.
template <class U>
__device__ U float_key(U bits, U inf) {
  constexpr U kSign = U(U(1) << (sizeof(U) * 8 - 1));
  const U mag = U(bits & U(~kSign));
  if (mag > inf) return U(~U(0));
  if (mag == 0) return kSign;
  return (bits & kSign) ? U(~bits) : U(bits | kSign);
}

// An order-preserving unsigned key: a < b iff key(a) < key(b), NaN the largest.
template <class T>
__device__ KeyOf<T> sort_key(T v) {
  if constexpr (std::is_same_v<T, float>) {
    return float_key<uint32_t>(__float_as_uint(v), 0x7f800000u);
  } else if constexpr (std::is_same_v<T, double>) {
    return float_key<uint64_t>(static_cast<uint64_t>(__double_as_longlong(v)),
                               0x7ff0000000000000ull);
  } else if constexpr (std::is_same_v<T, Half>) {
    return float_key<uint16_t>(v.bits, 0x7c00u);
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return float_key<uint16_t>(v.bits, 0x7f80u);
  } else if constexpr (std::is_same_v<T, bool>) {
    return v ? 1 : 0;
  } else if constexpr (std::is_signed_v<T>) {  // flip the sign bit
    using K = KeyOf<T>;
    return static_cast<K>(static_cast<K>(v) ^ (K(1) << (sizeof(K) * 8 - 1)));
  } else {
    return v;
  }
}

// keys[t] and pos[t] for element j of row r (t = r * len + j); descending sorts complemented
// keys ascending, which keeps equal keys in index order as the Cpu does.
template <class T>
__global__ void make_keys(const T* x, Strided<1> rows, int64_t n, int64_t len, int64_t stride,
                          bool descending, KeyOf<T>* keys, int64_t* pos) {
  EMBER_CUDA_FOR(t, n) {
    const int64_t r = t / len, j = t - r * len;
    int64_t off[1];
    rows.offsets(r, off);
    const KeyOf<T> key = sort_key(x[off[0] + j * stride]);
    keys[t] = descending ? KeyOf<T>(~key) : key;
    pos[t] = j;
  }
}

// The first k sorted positions of each row, and the elements there, in keepdim layout (k at dim).
template <class U>
__global__ void write_sorted(const U* x, Strided<1> rows, int64_t n, int64_t k, int64_t len,
                             int64_t inner, int64_t stride, const int64_t* pos, U* values,
                             int64_t* indices) {
  EMBER_CUDA_FOR(t, n) {
    const int64_t r = t / k, j = t - r * k;
    const int64_t i = pos[r * len + j];
    int64_t off[1];
    rows.offsets(r, off);
    const int64_t o = (r / inner) * k * inner + r % inner + j * inner;
    indices[o] = i;
    values[o] = x[off[0] + i * stride];
  }
}

struct RowStart {
  int64_t len;
  __host__ __device__ int64_t operator()(int64_t r) const { return r * len; }
};

// The segmented sort gives a long row one block; a few long rows sort faster each device-wide.
constexpr int64_t kFewRows = 32;
constexpr int64_t kLongRow = int64_t{1} << 18;

// Stable ascending sort of each row of keys, carrying the positions; the result in *_out.
template <class K>
void sort_rows(const K* keys_in, K* keys_out, const int64_t* pos_in, int64_t* pos_out, int64_t rows,
               int64_t len, Device device, cudaStream_t stream, const char* op) {
  size_t bytes = 0;
  if (rows <= kFewRows && len >= kLongRow) {
    constexpr int kBits = sizeof(K) * 8;
    EMBER_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys_in, keys_out, pos_in,
                                                     pos_out, len, 0, kBits, stream),
                     op);
    const auto temp = scratch(bytes, device);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t o = r * len;
      EMBER_CUDA_CHECK(
          cub::DeviceRadixSort::SortPairs(temp->data(), bytes, keys_in + o, keys_out + o,
                                          pos_in + o, pos_out + o, len, 0, kBits, stream),
          op);
    }
    return;
  }
  const auto starts =
      thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), RowStart{len});
  EMBER_CUDA_CHECK(
      cub::DeviceSegmentedSort::StableSortPairs(nullptr, bytes, keys_in, keys_out, pos_in, pos_out,
                                                rows * len, rows, starts, starts + 1, stream),
      op);
  const auto temp = scratch(bytes, device);
  EMBER_CUDA_CHECK(cub::DeviceSegmentedSort::StableSortPairs(temp->data(), bytes, keys_in, keys_out,
                                                             pos_in, pos_out, rows * len, rows,
                                                             starts, starts + 1, stream),
                   op);
}

// The rows of x along dim: their count, length, x's stride along them, the addressing of each
// row's start (row-major over the other dims) and `inner` (the elements after dim).
struct Rows {
  int64_t count = 1, len = 1, stride = 0, inner = 1;
  Strided<1> start;
};

Rows rows_of(const RawTensor& x, int dim) {
  Rows rows;
  Shape shape;
  Strides strides;
  for (int d = 0; d < x.rank(); ++d) {
    if (d == dim) continue;
    shape.push_back(x.shape[d]);
    strides.push_back(x.strides[d]);
    if (d > dim) rows.inner *= x.shape[d];
  }
  if (x.rank() > 0) {
    rows.len = x.shape[dim];
    rows.stride = x.strides[dim];
  }
  rows.count = shape.numel();
  const RawTensor view = x.view(shape, strides, x.offset);
  const RawTensor* ts[1] = {&view};
  rows.start = make_strided<1>(shape, ts);
  return rows;
}

template <class T>
void sort_typed(const RawTensor& x, const Rows& rows, int64_t k, bool descending,
                const RawTensor& values, const RawTensor& indices, const char* op) {
  using K = KeyOf<T>;
  const Device device = x.device();
  const cudaStream_t stream = stream_of(x);
  const int64_t n = rows.count * rows.len;
  const auto keys = scratch(static_cast<size_t>(n) * sizeof(K) * 2, device);
  const auto pos = scratch(static_cast<size_t>(n) * sizeof(int64_t) * 2, device);
  K* keys_in = static_cast<K*>(keys->data());
  int64_t* pos_in = static_cast<int64_t*>(pos->data());
  make_keys<T><<<grid_for(n), kThreads, 0, stream>>>(x.data_as<const T>(), rows.start, n, rows.len,
                                                     rows.stride, descending, keys_in, pos_in);
  EMBER_CUDA_LAUNCHED(op);
  const int64_t* sorted = pos_in;
  if (rows.len > 1) {
    sort_rows<K>(keys_in, keys_in + n, pos_in, pos_in + n, rows.count, rows.len, device, stream,
                 op);
    sorted = pos_in + n;
  }
  const int64_t m = rows.count * k;
  write_sorted<K><<<grid_for(m), kThreads, 0, stream>>>(
      x.data_as<const K>(), rows.start, m, k, rows.len, rows.inner, rows.stride, sorted,
      values.data_as<K>(), indices.data_as<int64_t>());
  EMBER_CUDA_LAUNCHED(op);
}

void sort_impl(const RawTensor& x, int dim, int64_t k, bool descending, const RawTensor& values,
               const RawTensor& indices, const char* op) {
  const Rows rows = rows_of(x, dim);
  if (rows.count == 0 || k == 0) return;
  EMBER_CUDA_DISPATCH_ALL(x.dtype, sort_typed, x, rows, k, descending, values, indices, op)
}

}  // namespace

void CudaBackend::sort(const RawTensor& x, int dim, bool descending, const RawTensor& values,
                       const RawTensor& indices) {
  sort_impl(x, dim, x.rank() > 0 ? x.shape[dim] : 1, descending, values, indices, "sort");
}

void CudaBackend::topk(const RawTensor& x, int64_t k, int dim, bool largest,
                       const RawTensor& values, const RawTensor& indices) {
  const int64_t len = x.rank() > 0 ? x.shape[dim] : 1;
  EMBER_CHECK(k >= 0 && k <= len, "[topk] k = ", k, " is out of range for dim ", dim, " of shape ",
              x.shape);
  sort_impl(x, dim, k, largest, values, indices, "topk");
}

}  // namespace ember::cuda
