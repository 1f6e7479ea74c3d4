// Indexing kernels: gather, scatter (assign, add, and scatter_reduce's *, max, min), index_select,
// nonzero, and the range check the front end runs on indices first. Index tensors are i64, already
// range-checked and wrapped to non-negative by the front end, and may be strided.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "../../core/convert.hpp"
#include "../../core/kernel_shapes.hpp"
#include "../../core/scatter_combine.hpp"
#include "cpu_backend.hpp"
#include "ember/core/error.hpp"
#include "loops.hpp"

namespace ember::cpu {
namespace {

// x seen with `shape` and stride 0 at `dim`: a loop over it walks x's other dims, and the kernel
// adds index * x.strides[dim] itself.
RawTensor without_dim(const RawTensor& x, const Shape& shape, int dim) {
  Strides strides = x.strides;
  if (x.rank() > 0) strides[dim] = 0;
  return x.view(shape, strides, x.offset);
}

int64_t dim_stride(const RawTensor& x, int dim) { return x.rank() > 0 ? x.strides[dim] : 0; }

// out[i] = x_view[i] shifted by index[i] along dim; out, index and x_view share out's shape.
template <class U>
void gather_kernel(const RawTensor& out, const RawTensor& index, const RawTensor& x_view,
                   int64_t x_dim_stride) {
  StridedLoop<3> loop(out.shape, {&out, &index, &x_view});
  const int64_t step = x_dim_stride * static_cast<int64_t>(sizeof(U));
  loop.run([step](char** p, const int64_t* st, int64_t n) {
    if (st[1] == 0 && dense(st[0], sizeof(U)) && dense(st[2], sizeof(U))) {
      // One index for the whole run (index_select, an expanded index): a row copy.
      const int64_t j = *reinterpret_cast<const int64_t*>(p[1]);
      std::memcpy(p[0], p[2] + j * step, static_cast<size_t>(n) * sizeof(U));
      return;
    }
    for (int64_t i = 0; i < n; ++i) {
      const int64_t j = *reinterpret_cast<const int64_t*>(p[1] + i * st[1]);
      *reinterpret_cast<U*>(p[0] + i * st[0]) =
          *reinterpret_cast<const U*>(p[2] + i * st[2] + j * step);
    }
  });
}

// The loop runs over index's shape with dim innermost, so a row (fixed other dims) is a run of
// `len` consecutive positions. Rows write disjoint dst elements and run in parallel; inside a
// row updates go in index order, so the result is the serial row-major one (last write wins).
template <class T, ScatterReduce R>
void scatter_kernel(const StridedLoop<3>& loop, int64_t len, int64_t dst_dim_stride) {
  const int64_t step = dst_dim_stride * static_cast<int64_t>(sizeof(T));
  const int64_t rows = loop.numel() / len;
  parallel_for(0, rows, std::max<int64_t>(1, kGrain / len), [&](int64_t begin, int64_t end) {
    loop.run_range(begin * len, end * len, [step](char** p, const int64_t* st, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        const int64_t j = *reinterpret_cast<const int64_t*>(p[1] + i * st[1]);
        T& d = *reinterpret_cast<T*>(p[0] + i * st[0] + j * step);
        const T v = *reinterpret_cast<const T*>(p[2] + i * st[2]);
        d = scatter_combine<R>(d, v);
      }
    });
  });
}

// Calls f(coords) for each non-zero of x among the row-major positions [begin, end), in order,
// walking the multi-index along (no division per element). NaN is non-zero.
template <class T, class F>
void for_nonzero(const RawTensor& x, int64_t begin, int64_t end, const F& f) {
  using C = Compute<T>;
  const T* base = x.data_as<T>();
  const int rank = x.rank();
  int64_t idx[kMaxRank] = {};
  if (rank == 0) {
    if (static_cast<C>(*base) != C(0)) f(idx);
    return;
  }
  int64_t rest = begin;
  for (int d = rank - 1; d >= 0; --d) {
    idx[d] = rest % x.shape[d];
    rest /= x.shape[d];
  }
  const int inner = rank - 1;
  const int64_t s = x.strides[inner];
  for (int64_t pos = begin; pos < end;) {
    int64_t off = 0;
    for (int d = 0; d < rank; ++d) off += idx[d] * x.strides[d];
    const int64_t n = std::min(x.shape[inner] - idx[inner], end - pos);
    for (int64_t i = 0; i < n; ++i, ++idx[inner]) {
      if (static_cast<C>(base[off + i * s]) != C(0)) f(idx);
    }
    pos += n;
    for (int d = inner; d > 0 && idx[d] == x.shape[d]; --d) {
      idx[d] = 0;
      ++idx[d - 1];
    }
  }
}

// The smallest and largest value of x, and whether it holds NaN: one pass, in pieces of kGrain
// elements on the threads (a BCE input may be large), merged after.
template <class T>
RangeError check_values(const RawTensor& x, const RangeCheck& check) {
  using V = std::conditional_t<std::is_integral_v<T>, int64_t, double>;
  struct MinMax {
    V lo = std::numeric_limits<V>::max(), hi = std::numeric_limits<V>::lowest();
    bool nan = false;
  };
  StridedLoop<1> loop(x.shape, {&x});
  auto scan = [&loop](MinMax& m, int64_t begin, int64_t end) {
    loop.run_range(begin, end, [&m](char** p, const int64_t* st, int64_t len) {
      const char* q = p[0];
      for (int64_t i = 0; i < len; ++i, q += st[0]) {
        const V v = static_cast<V>(static_cast<Compute<T>>(*reinterpret_cast<const T*>(q)));
        if constexpr (!std::is_integral_v<T>) m.nan |= std::isnan(v);
        m.lo = std::min(m.lo, v);
        m.hi = std::max(m.hi, v);
      }
    });
  };
  const int64_t n = loop.numel();
  MinMax all;
  if (n <= 2 * kGrain) {  // indices and targets: this thread, no merge
    scan(all, 0, n);
  } else {
    constexpr int64_t kPieces = 64;
    const int64_t pieces = std::min(n / kGrain, kPieces);
    MinMax part[kPieces];
    parallel_for(0, pieces, 1, [&](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) scan(part[k], n * k / pieces, n * (k + 1) / pieces);
    });
    for (int64_t k = 0; k < pieces; ++k) {
      all.lo = std::min(all.lo, part[k].lo);
      all.hi = std::max(all.hi, part[k].hi);
      all.nan |= part[k].nan;
    }
  }
  RangeError e;
  e.check = check;
  const double lo = static_cast<double>(all.lo), hi = static_cast<double>(all.hi);
  if (!all.nan && lo >= check.lo && hi <= check.hi) return e;
  e.found = true;
  const V bad = lo < check.lo ? all.lo : all.hi;
  e.value = all.nan ? std::numeric_limits<double>::quiet_NaN() : static_cast<double>(bad);
  if constexpr (std::is_integral_v<T>) e.index = bad;
  return e;
}

}  // namespace

void CpuBackend::gather(const RawTensor& x, int dim, const RawTensor& index, const RawTensor& out) {
  if (out.numel() == 0) return;
  const RawTensor x_view = without_dim(x, index.shape, dim);
  visit_size(dtype_size(x.dtype), [&](auto tag) {
    gather_kernel<decltype(tag)>(out, index, x_view, dim_stride(x, dim));
  });
}

void CpuBackend::index_select(const RawTensor& x, int dim, const RawTensor& index,
                              const RawTensor& out) {
  if (out.numel() == 0) return;
  // index_select is a gather whose index is the 1-D index expanded along the other dims.
  Strides index_strides = Shape::filled(out.rank(), 0);
  if (out.rank() > 0) index_strides[dim] = index.rank() > 0 ? index.strides[0] : 0;
  const RawTensor index_view = index.view(out.shape, index_strides, index.offset);
  const RawTensor x_view = without_dim(x, out.shape, dim);
  visit_size(dtype_size(x.dtype), [&](auto tag) {
    gather_kernel<decltype(tag)>(out, index_view, x_view, dim_stride(x, dim));
  });
}

void CpuBackend::scatter(ScatterReduce reduce, const RawTensor& dst, int dim,
                         const RawTensor& index, const RawTensor& src) {
  if (index.numel() == 0) return;
  // dst, index and src over index's shape with dim moved last (dst's dim stride zeroed: the
  // kernel adds index * stride itself).
  Shape shape;
  Strides dst_st, index_st, src_st;
  const auto keep = [&](int d) {
    shape.push_back(index.shape[d]);
    dst_st.push_back(d == dim ? 0 : dst.strides[d]);
    index_st.push_back(index.strides[d]);
    src_st.push_back(src.strides[d]);
  };
  for (int d = 0; d < index.rank(); ++d) {
    if (d != dim) keep(d);
  }
  if (index.rank() > 0) keep(dim);
  const RawTensor dst_view = dst.view(shape, dst_st, dst.offset);
  const RawTensor index_view = index.view(shape, index_st, index.offset);
  const RawTensor src_view = src.view(shape, src_st, src.offset);
  const StridedLoop<3> loop(shape, {&dst_view, &index_view, &src_view});
  const int64_t len = index.rank() > 0 ? index.shape[dim] : 1;
  visit_dtype(dst.dtype, [&](auto tag) {
    using T = decltype(tag);
    const int64_t step = dim_stride(dst, dim);
    switch (reduce) {
      case ScatterReduce::None:
        return scatter_kernel<T, ScatterReduce::None>(loop, len, step);
      case ScatterReduce::Add:
        return scatter_kernel<T, ScatterReduce::Add>(loop, len, step);
      case ScatterReduce::Mul:
        return scatter_kernel<T, ScatterReduce::Mul>(loop, len, step);
      case ScatterReduce::Max:
        return scatter_kernel<T, ScatterReduce::Max>(loop, len, step);
      case ScatterReduce::Min:
        return scatter_kernel<T, ScatterReduce::Min>(loop, len, step);
    }
  });
}

RangeError CpuBackend::check_range(const RawTensor& x, const RangeCheck& check) {
  return visit_dtype(x.dtype, [&](auto tag) { return check_values<decltype(tag)>(x, check); });
}

RawTensor CpuBackend::nonzero(const RawTensor& x) {
  // Two passes over fixed chunks of the row-major order: count each chunk's non-zeros, then
  // write each chunk's coordinates from its prefix-sum position. Same result for any threads.
  const int64_t numel = x.numel();
  const int rank = x.rank();
  const int64_t chunks = (numel + kGrain - 1) / kGrain;
  const auto chunk_end = [numel](int64_t c) { return std::min(numel, (c + 1) * kGrain); };
  std::vector<int64_t> start(static_cast<size_t>(chunks) + 1, 0);
  RawTensor result;
  visit_dtype(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c) {
        int64_t count = 0;
        for_nonzero<T>(x, c * kGrain, chunk_end(c), [&](const int64_t*) { ++count; });
        start[c + 1] = count;
      }
    });
    for (int64_t c = 0; c < chunks; ++c) start[c + 1] += start[c];
    result = empty_raw(Shape{start[chunks], int64_t{rank}}, DType::i64);
    int64_t* coords = result.data_as<int64_t>();
    parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c) {
        int64_t* row = coords + start[c] * rank;
        for_nonzero<T>(x, c * kGrain, chunk_end(c), [&](const int64_t* idx) {
          std::copy(idx, idx + rank, row);
          row += rank;
        });
      }
    });
  });
  return result;
}

}  // namespace ember::cpu
