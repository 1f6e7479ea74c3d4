// Reductions (sum, mean, prod, amax, amin, all, any), arg reductions and scans, with the Cpu's
// accumulation types and conventions (src/backends/cpu/reduce.cpp, sort.cpp). Every split of
// the work is fixed by the sizes and partial results merge in a fixed order (no float atomics),
// so results are the same from run to run.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cub/cub.cuh>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "common.cuh"
#include "cuda_backend.hpp"

namespace ember::cuda {
namespace {

// ---- shared helpers ----------------------------------------------------------------------

template <class C>
__device__ bool is_nan(C v) {
  if constexpr (std::is_floating_point_v<C>) {
    return v != v;
  } else {
    return false;
  }
}

template <class T>
__device__ Compute<T> load(const T* p) {
  return static_cast<Compute<T>>(*p);
}

/// Writes v, converted, as element i of a contiguous tensor of dtype `dtype` (out's dtype is only
/// known at run time; the branch is uniform).
template <class V>
__device__ void store_as(void* out, DType dtype, int64_t i, V v) {
  switch (dtype) {
    case DType::f32:
      static_cast<float*>(out)[i] = convert<float>(v);
      break;
    case DType::f64:
      static_cast<double*>(out)[i] = convert<double>(v);
      break;
    case DType::f16:
      static_cast<Half*>(out)[i] = convert<Half>(v);
      break;
    case DType::bf16:
      static_cast<BFloat16*>(out)[i] = convert<BFloat16>(v);
      break;
    case DType::i64:
      static_cast<int64_t*>(out)[i] = convert<int64_t>(v);
      break;
    case DType::i32:
      static_cast<int32_t*>(out)[i] = convert<int32_t>(v);
      break;
    case DType::i8:
      static_cast<int8_t*>(out)[i] = convert<int8_t>(v);
      break;
    case DType::u8:
      static_cast<uint8_t*>(out)[i] = convert<uint8_t>(v);
      break;
    case DType::boolean:
      static_cast<bool*>(out)[i] = convert<bool>(v);
      break;
  }
}

template <class A>
__device__ A shfl_down(A v, int offset) {
  if constexpr (std::is_same_v<A, float> || std::is_same_v<A, double>) {
    return __shfl_down_sync(0xffffffffu, v, offset);
  } else if constexpr (sizeof(A) == 8) {
    return static_cast<A>(__shfl_down_sync(0xffffffffu, static_cast<long long>(v), offset));
  } else {
    return static_cast<A>(__shfl_down_sync(0xffffffffu, static_cast<int>(v), offset));
  }
}

/// Merges a value per thread over a warp, or over the whole block when `whole_block` (every
/// thread of the block must call it then), in a fixed tree; the result is in the first thread.
/// `shared` holds kThreads / 32 values.
template <class A, class Merge>
__device__ A group_merge(A a, bool whole_block, A* shared, Merge merge) {
  for (int off = 16; off > 0; off /= 2) a = merge(a, shfl_down(a, off));
  if (!whole_block) return a;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) shared[warp] = a;
  __syncthreads();
  if (warp == 0) {
    constexpr int kWarps = kThreads / 32;
    a = shared[lane < kWarps ? lane : 0];
    for (int off = kWarps / 2; off > 0; off /= 2) a = merge(a, shfl_down(a, off));
  }
  __syncthreads();  // `shared` is reused by the block's next group
  return a;
}

/// Sizes and element strides of some dims, innermost last.
struct Dims {
  int rank = 0;
  int64_t size[kMaxRank] = {};
  int64_t stride[kMaxRank] = {};

  void push(int64_t s, int64_t st) {
    size[rank] = s;
    stride[rank] = st;
    ++rank;
  }
  /// Adds a dim after the others, merged into the last one when memory allows.
  void push_merged(int64_t s, int64_t st) {
    if (rank > 0 && stride[rank - 1] == st * s) {
      size[rank - 1] *= s;
      stride[rank - 1] = st;
    } else {
      push(s, st);
    }
  }
  /// The element offset of row-major index i.
  __device__ int64_t offset(int64_t i) const {
    if (rank == 0) return 0;
    int64_t off = 0;
    for (int d = rank - 1; d > 0; --d) {
      const int64_t q = i / size[d];
      off += (i - q * size[d]) * stride[d];
      i = q;
    }
    return off + i * stride[0];
  }
  /// offset() for an index and sizes below 2^32: 32-bit divisions, several times cheaper.
  __device__ int64_t offset32(uint32_t i) const {
    if (rank == 0) return 0;
    int64_t off = 0;
    for (int d = rank - 1; d > 0; --d) {
      const auto n = static_cast<uint32_t>(size[d]);
      const uint32_t q = i / n;
      off += static_cast<int64_t>(i - q * n) * stride[d];
      i = q;
    }
    return off + static_cast<int64_t>(i) * stride[0];
  }
};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// ---- reduce ------------------------------------------------------------------------------

inline __device__ int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
inline __device__ int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

/// Op kOp over elements of type T, as the Cpu's Policy: float sums and products accumulate in
/// double, integer ones in (wrapping) int64, max and min in the compute type (NaN propagates),
/// all and any in bool. K is the Cpu kernel's result type, which out's dtype is converted from.
template <ReduceOp kOp, class T>
struct Red {
  using C = Compute<T>;
  static constexpr bool kFloat = std::is_floating_point_v<C>;
  static constexpr bool kLogic = kOp == ReduceOp::All || kOp == ReduceOp::Any;
  static constexpr bool kExtreme = kOp == ReduceOp::Amax || kOp == ReduceOp::Amin;
  using Acc = std::conditional_t<
      kLogic, bool, std::conditional_t<kExtreme, C, std::conditional_t<kFloat, double, int64_t>>>;
  using K = std::conditional_t<kLogic, bool, std::conditional_t<kFloat, C, int64_t>>;

  __device__ static Acc init() {
    if constexpr (kOp == ReduceOp::Sum || kOp == ReduceOp::Mean) {
      return Acc(0);
    } else if constexpr (kOp == ReduceOp::Prod) {
      return Acc(1);
    } else if constexpr (kOp == ReduceOp::All) {
      return true;
    } else if constexpr (kOp == ReduceOp::Any) {
      return false;
    } else if constexpr (kOp == ReduceOp::Amax) {
      if constexpr (kFloat) {
        return -std::numeric_limits<C>::infinity();
      } else {
        return std::numeric_limits<C>::lowest();
      }
    } else {
      if constexpr (kFloat) {
        return std::numeric_limits<C>::infinity();
      } else {
        return std::numeric_limits<C>::max();
      }
    }
  }
  __device__ static Acc step(Acc a, C v) {
    if constexpr (kOp == ReduceOp::Sum || kOp == ReduceOp::Mean) {
      if constexpr (kFloat) {
        return a + static_cast<double>(v);
      } else {
        return wrap_add(a, static_cast<int64_t>(v));
      }
    } else if constexpr (kOp == ReduceOp::Prod) {
      if constexpr (kFloat) {
        return a * static_cast<double>(v);
      } else {
        return wrap_mul(a, static_cast<int64_t>(v));
      }
    } else if constexpr (kOp == ReduceOp::Amax) {
      return (v > a || is_nan(v)) ? v : a;
    } else if constexpr (kOp == ReduceOp::Amin) {
      return (v < a || is_nan(v)) ? v : a;
    } else if constexpr (kOp == ReduceOp::All) {
      return a && v != C(0);
    } else {
      return a || v != C(0);
    }
  }
  __device__ static Acc merge(Acc a, Acc b) {
    if constexpr (kExtreme) {
      return is_nan(a) ? a : step(a, b);
    } else if constexpr (kOp == ReduceOp::Prod) {
      if constexpr (kFloat) {
        return a * b;
      } else {
        return wrap_mul(a, b);
      }
    } else if constexpr (kOp == ReduceOp::All) {
      return a && b;
    } else if constexpr (kOp == ReduceOp::Any) {
      return a || b;
    } else {
      if constexpr (kFloat) {
        return a + b;
      } else {
        return wrap_add(a, b);
      }
    }
  }
  __device__ static K finish(Acc a, double count) {
    if constexpr (kOp == ReduceOp::Mean) {
      return convert<K>(static_cast<double>(a) / count);  // 0 / 0 = NaN for an empty mean
    } else {
      return convert<K>(a);
    }
  }
  struct Merge {
    __device__ Acc operator()(Acc a, Acc b) const { return merge(a, b); }
  };
};

template <class T>
struct alignas(16) Vec {
  static constexpr int kN = 16 / static_cast<int>(sizeof(T));
  T v[kN];
};

/// Folds the n contiguous elements from p into a, the `group` threads taking every group-th
/// 16-byte vector (four in flight at a time), with the unaligned head and the tail scalar.
template <class R, class T>
__device__ typename R::Acc fold_dense(const T* p, int64_t n, int lane, int group,
                                      typename R::Acc a) {
  using V = Vec<T>;
  const auto misaligned = static_cast<int64_t>(reinterpret_cast<uintptr_t>(p) % 16);
  int64_t head = misaligned ? (16 - misaligned) / static_cast<int64_t>(sizeof(T)) : 0;
  head = head < n ? head : n;
  if (lane < head) a = R::step(a, load(p + lane));  // head < 16 <= group
  const V* v = reinterpret_cast<const V*>(p + head);
  const int64_t nv = (n - head) / V::kN;
  const auto fold = [&](const V& b) {
#pragma unroll
    for (int k = 0; k < V::kN; ++k) a = R::step(a, static_cast<Compute<T>>(b.v[k]));
  };
  int64_t i = lane;
  for (; i + 3 * group < nv; i += 4 * group) {
    const V b0 = v[i], b1 = v[i + group], b2 = v[i + 2 * group], b3 = v[i + 3 * group];
    fold(b0);
    fold(b1);
    fold(b2);
    fold(b3);
  }
  for (; i < nv; i += group) fold(v[i]);
  for (int64_t j = head + nv * V::kN + lane; j < n; j += group) a = R::step(a, load(p + j));
  return a;
}

// Reductions whose reduced elements are the closest in memory: a group (a warp, or a block for
// long reductions) per (output, chunk of the reduced range).
struct RowPlan {
  Dims kept, red;  // kept: row-major over out; red: the reduced dims, innermost last
  int64_t n_out = 1, red_count = 1, chunks = 1, chunk_len = 1;
  int group = 32;
  bool dense = false;  // the reduced elements of an output are one contiguous run
};

template <ReduceOp kOp, class T>
__global__ void reduce_rows(const T* __restrict__ x, RowPlan p, double count, void* out,
                            DType out_dtype, typename Red<kOp, T>::Acc* __restrict__ partial) {
  using R = Red<kOp, T>;
  using Acc = typename R::Acc;
  __shared__ Acc shared[kThreads / 32];
  const bool whole_block = p.group == kThreads;
  const int lane = static_cast<int>(threadIdx.x) % p.group;
  const int64_t per_block = kThreads / p.group, n_groups = p.n_out * p.chunks;
  for (int64_t g0 = blockIdx.x * per_block; g0 < n_groups; g0 += int64_t{gridDim.x} * per_block) {
    const int64_t g = g0 + threadIdx.x / p.group;
    Acc a = R::init();
    if (g < n_groups) {
      const int64_t o = g / p.chunks, c = g - o * p.chunks;
      const int64_t begin = c * p.chunk_len;
      const int64_t end = begin + p.chunk_len < p.red_count ? begin + p.chunk_len : p.red_count;
      const T* base = x + p.kept.offset(o);
      if (p.dense) {
        if (end > begin) a = fold_dense<R>(base + begin, end - begin, lane, p.group, a);
      } else if (p.red_count <= UINT32_MAX) {
        for (int64_t r = begin + lane; r < end; r += p.group) {
          a = R::step(a, load(base + p.red.offset32(static_cast<uint32_t>(r))));
        }
      } else {
        for (int64_t r = begin + lane; r < end; r += p.group) {
          a = R::step(a, load(base + p.red.offset(r)));
        }
      }
    }
    a = group_merge(a, whole_block, shared, typename R::Merge{});
    if (g < n_groups && lane == 0) {
      if (p.chunks == 1) {
        store_as(out, out_dtype, g, R::finish(a, count));
      } else {
        partial[g] = a;
      }
    }
  }
}

// Reductions whose kept elements are the closest in memory: a thread per (output, chunk of the
// reduced range), neighbouring threads reading neighbouring elements.
struct ColPlan {
  Dims kept, red;
  int64_t n_out = 1, red_count = 1, chunks = 1, chunk_len = 1;
};

template <ReduceOp kOp, class T>
__global__ void reduce_cols(const T* __restrict__ x, ColPlan p, double count, void* out,
                            DType out_dtype, typename Red<kOp, T>::Acc* __restrict__ partial) {
  using R = Red<kOp, T>;
  using Acc = typename R::Acc;
  EMBER_CUDA_FOR(t, p.n_out * p.chunks) {
    const int64_t c = t / p.n_out, o = t - c * p.n_out;
    const int64_t begin = c * p.chunk_len;
    const int64_t end = begin + p.chunk_len < p.red_count ? begin + p.chunk_len : p.red_count;
    const T* base = x + p.kept.offset(o);
    Acc a = R::init();
    if (p.red.rank <= 1) {
      const int64_t s = p.red.rank == 1 ? p.red.stride[0] : 0;
#pragma unroll 4
      for (int64_t r = begin; r < end; ++r) a = R::step(a, load(base + r * s));
    } else {
      // The multi-index of r, stepped with carries rather than divided out per element.
      int64_t idx[kMaxRank];
      int64_t off = 0, rest = begin;
      for (int d = p.red.rank - 1; d >= 0; --d) {
        idx[d] = rest % p.red.size[d];
        rest /= p.red.size[d];
        off += idx[d] * p.red.stride[d];
      }
      for (int64_t r = begin; r < end; ++r) {
        a = R::step(a, load(base + off));
        for (int d = p.red.rank - 1; d >= 0; --d) {
          off += p.red.stride[d];
          if (++idx[d] < p.red.size[d]) break;
          off -= p.red.stride[d] * p.red.size[d];
          idx[d] = 0;
        }
      }
    }
    if (p.chunks == 1) {
      store_as(out, out_dtype, o, R::finish(a, count));
    } else {
      partial[c * p.n_out + o] = a;
    }
  }
}

/// A warp per output merges its chunks' partials (partial[o * so + c * sc]) in a fixed order.
template <ReduceOp kOp, class T>
__global__ void reduce_finish(const typename Red<kOp, T>::Acc* __restrict__ partial, int64_t n_out,
                              int64_t chunks, int64_t so, int64_t sc, double count, void* out,
                              DType out_dtype) {
  using R = Red<kOp, T>;
  const int64_t o = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) / 32;
  if (o >= n_out) return;  // whole warps
  const int lane = threadIdx.x % 32;
  typename R::Acc a = R::init();
  for (int64_t c = lane; c < chunks; c += 32) a = R::merge(a, partial[o * so + c * sc]);
  a = group_merge(a, false, static_cast<typename R::Acc*>(nullptr), typename R::Merge{});
  if (lane == 0) store_as(out, out_dtype, o, R::finish(a, count));
}

/// Every output of an empty reduction is the identity (mean: NaN).
template <ReduceOp kOp, class T>
__global__ void reduce_empty(int64_t n_out, void* out, DType out_dtype) {
  using R = Red<kOp, T>;
  EMBER_CUDA_FOR(i, n_out) store_as(out, out_dtype, i, R::finish(R::init(), 0.0));
}

struct Plan {
  Dims kept, red;
  int64_t red_count = 1;
};

// Kept dims stay in x's order (so that out, contiguous, is row-major over them); reduced dims
// are ordered by decreasing |stride| (the order of a sum does not matter) and merged.
Plan make_plan(const RawTensor& x, uint32_t mask) {
  Plan p;
  std::vector<std::pair<int64_t, int64_t>> red;
  for (int d = 0; d < x.rank(); ++d) {
    if (mask & (1u << d)) p.red_count *= x.shape[d];
    if (x.shape[d] == 1) continue;
    if (mask & (1u << d)) {
      red.emplace_back(x.shape[d], x.strides[d]);
    } else {
      p.kept.push_merged(x.shape[d], x.strides[d]);
    }
  }
  std::stable_sort(red.begin(), red.end(), [](const auto& a, const auto& b) {
    return std::llabs(a.second) > std::llabs(b.second);
  });
  for (const auto& [size, stride] : red) p.red.push_merged(size, stride);
  return p;
}

constexpr int64_t kRowChunk = 8192;     // fewest elements a block's chunk of a long row gets
constexpr int64_t kRowBlocks = 1024;    // chunks are made until there are about this many blocks
constexpr int64_t kColChunk = 128;      // fewest elements a thread's chunk of a column gets
constexpr int64_t kColThreads = 65536;  // chunks are made until there are about this many threads
constexpr int64_t kMaxChunks = 4096;

template <ReduceOp kOp, class T>
void reduce_typed(const RawTensor& x, uint32_t mask, const RawTensor& out) {
  using R = Red<kOp, T>;
  using Acc = typename R::Acc;
  const char* op = op_name(kOp).data();
  const int64_t n_out = out.numel();
  if (n_out == 0) return;
  const cudaStream_t stream = stream_of(x);
  void* o = out.data();
  if (x.numel() == 0) {
    reduce_empty<kOp, T><<<grid_for(n_out), kThreads, 0, stream>>>(n_out, o, out.dtype);
    EMBER_CUDA_LAUNCHED(op);
    return;
  }
  const Plan plan = make_plan(x, mask);
  const double count = static_cast<double>(plan.red_count);
  const T* xp = x.data_as<T>();
  const int last_red = plan.red.rank - 1, last_kept = plan.kept.rank - 1;
  // Short reductions (under a warp's width) go to the column kernel, a thread per output.
  const bool rows = plan.red.rank > 0 && plan.red_count >= 32 &&
                    (plan.kept.rank == 0 || std::llabs(plan.red.stride[last_red]) <=
                                                std::llabs(plan.kept.stride[last_kept]));
  std::shared_ptr<Storage> partial_mem;
  Acc* partial = nullptr;
  int64_t chunks = 1, so = 0, sc = 0;
  if (rows) {
    RowPlan p{plan.kept, plan.red, n_out, plan.red_count};
    p.dense = plan.red.rank == 1 && plan.red.stride[0] == 1;
    p.group = plan.red_count >= 1024 ? kThreads : 32;
    if (p.group == kThreads) {
      p.chunks = std::clamp<int64_t>(
          std::min(plan.red_count / kRowChunk, ceil_div(kRowBlocks, n_out)), 1, kMaxChunks);
    }
    // Chunks start 64 elements apart at least, so that dense ones stay 16-byte aligned.
    p.chunk_len = ceil_div(ceil_div(plan.red_count, p.chunks), 64) * 64;
    p.chunks = ceil_div(plan.red_count, p.chunk_len);
    chunks = p.chunks, so = p.chunks, sc = 1;
    if (chunks > 1) {
      partial_mem = scratch(sizeof(Acc) * n_out * chunks, x.storage->device());
      partial = static_cast<Acc*>(partial_mem->data());
    }
    const int64_t blocks = ceil_div(n_out * p.chunks, kThreads / p.group);
    reduce_rows<kOp, T><<<static_cast<unsigned>(std::min<int64_t>(blocks, int64_t{1} << 20)),
                          kThreads, 0, stream>>>(xp, p, count, o, out.dtype, partial);
    EMBER_CUDA_LAUNCHED(op);
  } else {
    ColPlan p{plan.kept, plan.red, n_out, plan.red_count};
    p.chunks = std::clamp<int64_t>(
        std::min(plan.red_count / kColChunk, ceil_div(kColThreads, n_out)), 1, kMaxChunks);
    p.chunk_len = ceil_div(plan.red_count, p.chunks);
    p.chunks = ceil_div(plan.red_count, p.chunk_len);
    chunks = p.chunks, so = 1, sc = n_out;
    if (chunks > 1) {
      partial_mem = scratch(sizeof(Acc) * n_out * chunks, x.storage->device());
      partial = static_cast<Acc*>(partial_mem->data());
    }
    reduce_cols<kOp, T>
        <<<grid_for(n_out * p.chunks), kThreads, 0, stream>>>(xp, p, count, o, out.dtype, partial);
    EMBER_CUDA_LAUNCHED(op);
  }
  if (chunks > 1) {
    const auto blocks = static_cast<unsigned>(ceil_div(n_out * 32, kThreads));
    reduce_finish<kOp, T>
        <<<blocks, kThreads, 0, stream>>>(partial, n_out, chunks, so, sc, count, o, out.dtype);
    EMBER_CUDA_LAUNCHED(op);
  }
}

template <ReduceOp kOp>
void reduce_op(const RawTensor& x, uint32_t mask, const RawTensor& out) {
  visit_dtype(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kOp != ReduceOp::Mean || std::is_floating_point_v<Compute<T>>) {
      reduce_typed<kOp, T>(x, mask, out);
    }
  });
}

// ---- arg_reduce --------------------------------------------------------------------------

// The rows of x along `dim`, numbered in row-major order of the other dims (as the Cpu's Rows).
// Row r starts at other.offset(r) and has len elements stride apart; in a contiguous output
// with len at dim it starts at (r / inner) * len * inner + r % inner and steps by inner.
struct Rows {
  Dims other;
  int64_t count = 1, len = 1, stride = 0, inner = 1;
  bool interleaved = false;  // consecutive rows lie closer together than a row's elements
};

Rows rows_of(const RawTensor& x, int dim) {
  Rows r;
  if (x.rank() == 0) return r;
  r.len = x.shape[dim];
  r.stride = x.strides[dim];
  int64_t row_step = 0;
  for (int d = 0; d < x.rank(); ++d) {
    if (d == dim) continue;
    r.other.push(x.shape[d], x.strides[d]);
    r.count *= x.shape[d];
    if (d > dim) r.inner *= x.shape[d];
    if (x.shape[d] > 1) row_step = x.strides[d];
  }
  r.interleaved = std::llabs(row_step) < std::llabs(r.stride);
  return r;
}

constexpr int64_t kManyRows = 1024;  // enough rows to fill the GPU with a thread each

// A candidate: value and index; index -1 is no candidate yet.
template <class C>
struct Best {
  C v;
  int64_t i;
};

// Whether b beats a: NaN beats numbers, the larger (smaller) value wins, ties go to the lower
// index. Commutative and associative, so any merge order finds the Cpu's answer.
template <bool kMax, class C>
__device__ bool beats(const Best<C>& b, const Best<C>& a) {
  if (b.i < 0) return false;
  if (a.i < 0) return true;
  const bool bn = is_nan(b.v), an = is_nan(a.v);
  if (bn || an) return bn && (!an || b.i < a.i);
  if (b.v == a.v) return b.i < a.i;
  return kMax ? b.v > a.v : b.v < a.v;
}

template <bool kMax, class C>
struct BestMerge {
  __device__ Best<C> operator()(const Best<C>& a, const Best<C>& b) const {
    return beats<kMax>(b, a) ? b : a;
  }
};

template <class C>
__device__ Best<C> shfl_down(Best<C> v, int offset) {
  return {shfl_down(v.v, offset), shfl_down(v.i, offset)};
}

// A thread per row, stepping along it: coalesced when rows are interleaved.
template <class T, bool kMax>
__global__ void arg_rows_thread(const T* __restrict__ x, Rows rows, T* __restrict__ values,
                                int64_t* __restrict__ indices) {
  using C = Compute<T>;
  EMBER_CUDA_FOR(r, rows.count) {
    const T* row = x + rows.other.offset(r);
    Best<C> best{load(row), 0};
    for (int64_t k = 1; k < rows.len; ++k) {
      const Best<C> b{load(row + k * rows.stride), k};
      if (beats<kMax>(b, best)) best = b;
    }
    indices[r] = best.i;
    values[r] = row[best.i * rows.stride];  // the element itself, NaN payload and all
  }
}

// A group (warp or block) per (row, chunk of the row), for long rows whose elements are close
// together. With one chunk it writes the result, else the chunk's best to partial[r * chunks + c].
template <class T, bool kMax>
__global__ void arg_rows_group(const T* __restrict__ x, Rows rows, int group, int64_t chunks,
                               int64_t chunk_len, T* __restrict__ values,
                               int64_t* __restrict__ indices,
                               Best<Compute<T>>* __restrict__ partial) {
  using C = Compute<T>;
  __shared__ Best<C> shared[kThreads / 32];
  const bool whole_block = group == kThreads;
  const int lane = static_cast<int>(threadIdx.x) % group;
  const int64_t per_block = kThreads / group, n_groups = rows.count * chunks;
  for (int64_t g0 = blockIdx.x * per_block; g0 < n_groups; g0 += int64_t{gridDim.x} * per_block) {
    const int64_t g = g0 + threadIdx.x / group;
    Best<C> best{C(0), -1};
    const T* row = x;
    if (g < n_groups) {
      const int64_t r = g / chunks, c = g - r * chunks;
      const int64_t begin = c * chunk_len;
      const int64_t end = begin + chunk_len < rows.len ? begin + chunk_len : rows.len;
      row = x + rows.other.offset(r);
      for (int64_t k = begin + lane; k < end; k += group) {
        const Best<C> b{load(row + k * rows.stride), k};
        if (beats<kMax>(b, best)) best = b;
      }
    }
    best = group_merge(best, whole_block, shared, BestMerge<kMax, C>{});
    if (g < n_groups && lane == 0) {
      if (chunks == 1) {
        indices[g] = best.i;
        values[g] = row[best.i * rows.stride];  // the element itself, NaN payload and all
      } else {
        partial[g] = best;
      }
    }
  }
}

// A warp per row merges the bests of its chunks.
template <class T, bool kMax>
__global__ void arg_finish(const T* __restrict__ x, Rows rows, int64_t chunks,
                           const Best<Compute<T>>* __restrict__ partial, T* __restrict__ values,
                           int64_t* __restrict__ indices) {
  using C = Compute<T>;
  const int64_t r = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) / 32;
  if (r >= rows.count) return;  // whole warps
  const int lane = threadIdx.x % 32;
  Best<C> best{C(0), -1};
  for (int64_t c = lane; c < chunks; c += 32) {
    const Best<C> b = partial[r * chunks + c];
    if (beats<kMax>(b, best)) best = b;
  }
  best = group_merge(best, false, static_cast<Best<C>*>(nullptr), BestMerge<kMax, C>{});
  if (lane == 0) {
    indices[r] = best.i;
    values[r] = x[rows.other.offset(r) + best.i * rows.stride];
  }
}

template <class T, bool kMax>
void arg_reduce_typed(const RawTensor& x, const Rows& rows, const RawTensor& values,
                      const RawTensor& indices, const char* op) {
  const cudaStream_t stream = stream_of(x);
  const T* xp = x.data_as<T>();
  T* vp = values.data_as<T>();
  int64_t* ip = indices.data_as<int64_t>();
  // A thread per row when rows are short, or interleaved and many (reads coalesce across rows);
  // few interleaved long rows still take the group kernel, whose reads are strided but parallel.
  if (rows.len < 64 || (rows.interleaved && rows.count >= kManyRows)) {
    arg_rows_thread<T, kMax><<<grid_for(rows.count), kThreads, 0, stream>>>(xp, rows, vp, ip);
    EMBER_CUDA_LAUNCHED(op);
    return;
  }
  // Few long rows are split into chunks (fixed by the sizes) so that enough blocks work at once.
  const int group = rows.len >= 4096 ? kThreads : 32;
  int64_t chunks = 1;
  if (group == kThreads) {
    chunks = std::clamp<int64_t>(std::min(rows.len / kRowChunk, ceil_div(kRowBlocks, rows.count)),
                                 1, kMaxChunks);
  }
  const int64_t chunk_len = ceil_div(rows.len, chunks);
  chunks = ceil_div(rows.len, chunk_len);
  std::shared_ptr<Storage> partial_mem;
  Best<Compute<T>>* partial = nullptr;
  if (chunks > 1) {
    partial_mem = scratch(sizeof(Best<Compute<T>>) * rows.count * chunks, x.storage->device());
    partial = static_cast<Best<Compute<T>>*>(partial_mem->data());
  }
  const int64_t blocks = ceil_div(rows.count * chunks, kThreads / group);
  arg_rows_group<T, kMax>
      <<<static_cast<unsigned>(std::min<int64_t>(blocks, int64_t{1} << 20)), kThreads, 0, stream>>>(
          xp, rows, group, chunks, chunk_len, vp, ip, partial);
  EMBER_CUDA_LAUNCHED(op);
  if (chunks > 1) {
    arg_finish<T, kMax>
        <<<static_cast<unsigned>(ceil_div(rows.count * 32, kThreads)), kThreads, 0, stream>>>(
            xp, rows, chunks, partial, vp, ip);
    EMBER_CUDA_LAUNCHED(op);
  }
}

// ---- scan --------------------------------------------------------------------------------

// Float outputs accumulate in double, integer ones in wrapping 64-bit arithmetic (as the Cpu);
// every prefix is rounded to out's dtype on store, the accumulator is not.
template <class T, bool kFloat>
struct ScanIo {
  using Acc = std::conditional_t<kFloat, double, uint64_t>;
  __device__ static Acc read(const T* p) {
    if constexpr (kFloat) {
      return convert<double>(*p);
    } else {
      return static_cast<uint64_t>(convert<int64_t>(*p));
    }
  }
  __device__ static void write(void* out, DType dtype, int64_t i, Acc a) {
    if constexpr (kFloat) {
      store_as(out, dtype, i, a);
    } else {
      store_as(out, dtype, i, static_cast<int64_t>(a));
    }
  }
};

template <class Acc, bool kProd>
struct ScanCombine {
  __device__ Acc operator()(const Acc& a, const Acc& b) const { return kProd ? a * b : a + b; }
};

// A thread per row, in order (exactly the Cpu's arithmetic); coalesced when rows interleave.
template <class T, bool kFloat, bool kProd>
__global__ void scan_rows_thread(const T* __restrict__ x, Rows rows, void* out, DType out_dtype) {
  using Io = ScanIo<T, kFloat>;
  using Acc = typename Io::Acc;
  EMBER_CUDA_FOR(r, rows.count) {
    const T* row = x + rows.other.offset(r);
    const int64_t o = (r / rows.inner) * rows.len * rows.inner + r % rows.inner;
    Acc a = kProd ? Acc(1) : Acc(0);
    for (int64_t k = 0; k < rows.len; ++k) {
      const Acc v = Io::read(row + k * rows.stride);
      a = kProd ? a * v : a + v;
      Io::write(out, out_dtype, o + k * rows.inner, a);
    }
  }
}

constexpr int kScanItems = 4;

constexpr int64_t kScanTile = int64_t{kThreads} * kScanItems;

// A block per (row, chunk of the row) for long rows: tiles of kScanTile scanned by
// cub::BlockScan in order, each offset by the running total before it (carry_in[g] for chunk g,
// from scan_carries, when the row is split; else the identity).
template <class T, bool kFloat, bool kProd>
__global__ void scan_rows_block(const T* __restrict__ x, Rows rows, int64_t chunks,
                                int64_t chunk_len,
                                const typename ScanIo<T, kFloat>::Acc* __restrict__ carry_in,
                                void* out, DType out_dtype) {
  using Io = ScanIo<T, kFloat>;
  using Acc = typename Io::Acc;
  using Scan = cub::BlockScan<Acc, kThreads>;
  __shared__ typename Scan::TempStorage temp;
  const ScanCombine<Acc, kProd> combine;
  const Acc identity = kProd ? Acc(1) : Acc(0);
  for (int64_t g = blockIdx.x; g < rows.count * chunks; g += gridDim.x) {
    const int64_t r = g / chunks, c = g - r * chunks;
    const int64_t begin = c * chunk_len;
    const int64_t end = begin + chunk_len < rows.len ? begin + chunk_len : rows.len;
    const T* row = x + rows.other.offset(r);
    const int64_t o = (r / rows.inner) * rows.len * rows.inner + r % rows.inner;
    Acc carry = carry_in ? carry_in[g] : identity;
    for (int64_t t0 = begin; t0 < end; t0 += kScanTile) {
      Acc items[kScanItems];
      const int64_t k0 = t0 + int64_t{threadIdx.x} * kScanItems;
#pragma unroll
      for (int j = 0; j < kScanItems; ++j) {
        items[j] = k0 + j < end ? Io::read(row + (k0 + j) * rows.stride) : identity;
      }
      Acc tile_total;
      Scan(temp).InclusiveScan(items, items, combine, tile_total);
#pragma unroll
      for (int j = 0; j < kScanItems; ++j) {
        if (k0 + j < end) {
          Io::write(out, out_dtype, o + (k0 + j) * rows.inner, combine(carry, items[j]));
        }
      }
      carry = combine(carry, tile_total);
      __syncthreads();  // temp is reused by the next tile
    }
  }
}

// The total of each chunk g of each row into totals[g] (a block per chunk, fixed tree).
template <class T, bool kFloat, bool kProd>
__global__ void scan_chunk_totals(const T* __restrict__ x, Rows rows, int64_t chunks,
                                  int64_t chunk_len,
                                  typename ScanIo<T, kFloat>::Acc* __restrict__ totals) {
  using Io = ScanIo<T, kFloat>;
  using Acc = typename Io::Acc;
  using Reduce = cub::BlockReduce<Acc, kThreads>;
  __shared__ typename Reduce::TempStorage temp;
  const ScanCombine<Acc, kProd> combine;
  for (int64_t g = blockIdx.x; g < rows.count * chunks; g += gridDim.x) {
    const int64_t r = g / chunks, c = g - r * chunks;
    const int64_t begin = c * chunk_len;
    const int64_t end = begin + chunk_len < rows.len ? begin + chunk_len : rows.len;
    const T* row = x + rows.other.offset(r);
    Acc a = kProd ? Acc(1) : Acc(0);
    for (int64_t k = begin + threadIdx.x; k < end; k += kThreads) {
      a = combine(a, Io::read(row + k * rows.stride));
    }
    a = Reduce(temp).Reduce(a, combine);
    if (threadIdx.x == 0) totals[g] = a;
    __syncthreads();  // temp is reused by the next chunk
  }
}

// Turns each row's chunk totals, in place, into the running total before each chunk.
template <class Acc, bool kProd>
__global__ void scan_carries(int64_t count, int64_t chunks, Acc* __restrict__ totals) {
  EMBER_CUDA_FOR(r, count) {
    Acc run = kProd ? Acc(1) : Acc(0);
    for (int64_t c = 0; c < chunks; ++c) {
      const Acc t = totals[r * chunks + c];
      totals[r * chunks + c] = run;
      run = kProd ? run * t : run + t;
    }
  }
}

constexpr int64_t kScanChunk = 16384;  // fewest elements a chunk of a split row gets
constexpr int64_t kMaxScanChunks = 1024;

template <class T, bool kFloat, bool kProd>
void scan_launch(const RawTensor& x, const Rows& rows, const RawTensor& out, const char* op) {
  using Acc = typename ScanIo<T, kFloat>::Acc;
  const cudaStream_t stream = stream_of(x);
  const T* xp = x.data_as<T>();
  if (rows.len < 256 || (rows.interleaved && rows.count >= kManyRows)) {
    scan_rows_thread<T, kFloat, kProd>
        <<<grid_for(rows.count), kThreads, 0, stream>>>(xp, rows, out.data(), out.dtype);
    EMBER_CUDA_LAUNCHED(op);
    return;
  }
  // Few long rows are split into chunks (fixed by the sizes): the chunks' totals, their running
  // totals per row, then each chunk scanned from its carry.
  int64_t chunks = std::clamp<int64_t>(
      std::min(rows.len / kScanChunk, ceil_div(kRowBlocks, rows.count)), 1, kMaxScanChunks);
  const int64_t chunk_len = ceil_div(ceil_div(rows.len, chunks), kScanTile) * kScanTile;
  chunks = ceil_div(rows.len, chunk_len);
  const auto blocks =
      static_cast<unsigned>(std::min<int64_t>(rows.count * chunks, int64_t{1} << 20));
  std::shared_ptr<Storage> carry_mem;
  Acc* carry = nullptr;
  if (chunks > 1) {
    carry_mem = scratch(sizeof(Acc) * rows.count * chunks, x.storage->device());
    carry = static_cast<Acc*>(carry_mem->data());
    scan_chunk_totals<T, kFloat, kProd>
        <<<blocks, kThreads, 0, stream>>>(xp, rows, chunks, chunk_len, carry);
    EMBER_CUDA_LAUNCHED(op);
    scan_carries<Acc, kProd>
        <<<grid_for(rows.count), kThreads, 0, stream>>>(rows.count, chunks, carry);
    EMBER_CUDA_LAUNCHED(op);
  }
  scan_rows_block<T, kFloat, kProd>
      <<<blocks, kThreads, 0, stream>>>(xp, rows, chunks, chunk_len, carry, out.data(), out.dtype);
  EMBER_CUDA_LAUNCHED(op);
}

}  // namespace

void CudaBackend::reduce(ReduceOp op, const RawTensor& x, uint32_t dims_mask,
                         const RawTensor& out) {
  if (op == ReduceOp::Mean && !is_floating(x.dtype)) no_kernel(op_name(op), x.dtype);
  switch (op) {
#define EMBER_REDUCE_CASE(Name, name, kinds)      \
  case ReduceOp::Name:                            \
    reduce_op<ReduceOp::Name>(x, dims_mask, out); \
    break;
    EMBER_REDUCE_OPS(EMBER_REDUCE_CASE)
#undef EMBER_REDUCE_CASE
  }
}

void CudaBackend::arg_reduce(ArgReduceOp op, const RawTensor& x, int dim, const RawTensor& values,
                             const RawTensor& indices) {
  const char* name = op_name(op).data();
  const Rows rows = rows_of(x, dim);
  if (rows.count == 0) return;
  EMBER_CHECK(rows.len > 0, "[", name, "] cannot reduce over dim ", dim, " of size 0 in shape ",
              x.shape);
  visit_dtype(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    if (op == ArgReduceOp::ArgMax) {
      arg_reduce_typed<T, true>(x, rows, values, indices, name);
    } else {
      arg_reduce_typed<T, false>(x, rows, values, indices, name);
    }
  });
}

void CudaBackend::scan(ScanOp op, const RawTensor& x, int dim, const RawTensor& out) {
  const char* name = op_name(op).data();
  const Rows rows = rows_of(x, dim);
  if (rows.count == 0 || rows.len == 0) return;
  const bool prod = op == ScanOp::CumProd, floating = is_floating(out.dtype);
  visit_dtype(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    if (floating) {
      prod ? scan_launch<T, true, true>(x, rows, out, name)
           : scan_launch<T, true, false>(x, rows, out, name);
    } else {
      prod ? scan_launch<T, false, true>(x, rows, out, name)
           : scan_launch<T, false, false>(x, rows, out, name);
    }
  });
}

}  // namespace ember::cuda
