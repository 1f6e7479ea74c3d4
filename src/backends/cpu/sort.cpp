// Dim-wise kernels: argmax/argmin, cumsum/cumprod, sort and topk. Each works on the independent
// rows of x along `dim` (one row per position of the other dims), in parallel over rows.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <type_traits>
#include <vector>

#include "../../core/convert.hpp"
#include "cpu_backend.hpp"
#include "ember/core/error.hpp"
#include "parallel.hpp"

namespace ember::cpu {
namespace {

// The rows of x along `dim`, numbered in row-major order of the other dims. Row r has len()
// elements stride() apart in x, from x_offset(r); in a contiguous output with `out_len` at dim
// it starts at out_offset(r, out_len) and steps by inner(). Rank 0 is one row of one element.
class Rows {
 public:
  Rows(const RawTensor& x, int dim) {
    if (x.rank() == 0) return;
    len_ = x.shape[dim];
    stride_ = x.strides[dim];
    for (int d = 0; d < x.rank(); ++d) {
      if (d == dim) continue;
      sizes_[rank_] = x.shape[d];
      strides_[rank_] = x.strides[d];
      ++rank_;
      count_ *= x.shape[d];
      if (d > dim) inner_ *= x.shape[d];
      if (x.shape[d] > 1) row_step_ = x.strides[d];
    }
  }

  int64_t count() const { return count_; }
  int64_t len() const { return len_; }
  int64_t stride() const { return stride_; }
  int64_t inner() const { return inner_; }

  int64_t x_offset(int64_t r) const {
    int64_t off = 0;
    for (int d = rank_ - 1; d >= 0; --d) {
      off += (r % sizes_[d]) * strides_[d];
      r /= sizes_[d];
    }
    return off;
  }
  int64_t out_offset(int64_t r, int64_t out_len) const {
    return (r / inner_) * out_len * inner_ + r % inner_;
  }
  /// Whether consecutive rows lie closer together in x than a row's consecutive elements.
  bool interleaved() const { return std::abs(row_step_) < std::abs(stride_); }
  /// Rows per parallel piece, so that each piece has about kGrain elements of work.
  int64_t grain() const { return std::max<int64_t>(1, kGrain / std::max<int64_t>(len_, 1)); }

 private:
  int64_t sizes_[kMaxRank] = {};
  int64_t strides_[kMaxRank] = {};
  int rank_ = 0;
  int64_t count_ = 1, len_ = 1, stride_ = 0, inner_ = 1, row_step_ = 0;
};

constexpr int kBlock = 64;

// Calls f(r0, m, off) on blocks of m consecutive rows, off[j] being row r0 + j's x offset.
// Kernels step along dim in their outer loop and across the block inside. When rows are
// interleaved in memory (dim is not innermost) a block of kBlock rows reads whole cache lines;
// otherwise blocks are single rows, read in order (many rows far apart would thrash the cache).
template <class F>
void for_row_blocks(const Rows& rows, const F& f) {
  const int64_t block = rows.interleaved() ? kBlock : 1;
  parallel_for(0, rows.count(), rows.grain(), [&](int64_t begin, int64_t end) {
    int64_t off[kBlock];
    for (int64_t r0 = begin; r0 < end; r0 += block) {
      const int m = static_cast<int>(std::min(block, end - r0));
      for (int j = 0; j < m; ++j) off[j] = rows.x_offset(r0 + j);
      f(r0, m, off);
    }
  });
}

template <class C>
bool is_nan(C v) {
  if constexpr (std::is_floating_point_v<C>) {
    return std::isnan(v);
  } else {
    return false;
  }
}

// ---- arg_reduce --------------------------------------------------------------------------

// Whether v replaces the current best: NaN beats everything and nothing beats NaN; a tie keeps
// the earlier index.
template <bool kMax, class C>
bool beats(C v, C best) {
  if (is_nan(best)) return false;
  if (is_nan(v)) return true;
  if constexpr (kMax) {
    return v > best;
  } else {
    return v < best;
  }
}

// values and indices have size 1 at dim, so row r's result lands at flat position r.
template <class T, bool kMax>
void arg_reduce_kernel(const RawTensor& x, const Rows& rows, T* values, int64_t* indices) {
  using C = Compute<T>;
  const T* xp = x.data_as<T>();
  const int64_t len = rows.len(), s = rows.stride();
  for_row_blocks(rows, [&](int64_t r0, int m, const int64_t* off) {
    C best[kBlock];
    int64_t arg[kBlock];
    for (int j = 0; j < m; ++j) {
      best[j] = static_cast<C>(xp[off[j]]);
      arg[j] = 0;
    }
    for (int64_t k = 1; k < len; ++k) {
      for (int j = 0; j < m; ++j) {
        const C v = static_cast<C>(xp[off[j] + k * s]);
        if (beats<kMax>(v, best[j])) {
          best[j] = v;
          arg[j] = k;
        }
      }
    }
    for (int j = 0; j < m; ++j) {
      indices[r0 + j] = arg[j];
      values[r0 + j] = xp[off[j] + arg[j] * s];  // the element itself, NaN payload and all
    }
  });
}

// ---- scan --------------------------------------------------------------------------------

// Floats accumulate in double (PyTorch's Cpu accumulate type for f32), integers and bool in
// wrapping 64-bit arithmetic, and round to out's dtype at every step.
template <class T, class Out>
void scan_kernel(ScanOp op, const RawTensor& x, const Rows& rows, Out* out) {
  constexpr bool kFloat = std::is_floating_point_v<Compute<Out>>;
  using Acc = std::conditional_t<kFloat, double, uint64_t>;
  const auto load = [](T v) -> Acc {
    if constexpr (kFloat) {
      return convert<double>(v);
    } else {
      return static_cast<uint64_t>(convert<int64_t>(v));
    }
  };
  const auto store = [](Acc a) -> Out {
    if constexpr (kFloat) {
      return convert<Out>(a);
    } else {
      return convert<Out>(static_cast<int64_t>(a));
    }
  };
  const T* xp = x.data_as<T>();
  const int64_t len = rows.len(), s = rows.stride(), inner = rows.inner();
  const bool prod = op == ScanOp::CumProd;
  for_row_blocks(rows, [&](int64_t r0, int m, const int64_t* off) {
    Acc acc[kBlock];
    int64_t o[kBlock];
    for (int j = 0; j < m; ++j) {
      acc[j] = prod ? Acc(1) : Acc(0);
      o[j] = rows.out_offset(r0 + j, len);
    }
    for (int64_t k = 0; k < len; ++k) {
      for (int j = 0; j < m; ++j) {
        const Acc v = load(xp[off[j] + k * s]);
        acc[j] = prod ? acc[j] * v : acc[j] + v;
        out[o[j] + k * inner] = store(acc[j]);
      }
    }
  });
}

// ---- sort and topk -----------------------------------------------------------------------

template <class C>
struct Keyed {
  C v;
  int64_t i;
};

// A strict total order on numbers (not NaN), ties by index: equal values keep their order, which
// makes std::sort stable and topk prefer the lower index.
template <bool kDescending, class C>
bool before(const Keyed<C>& a, const Keyed<C>& b) {
  if (a.v != b.v) return kDescending ? a.v > b.v : a.v < b.v;
  return a.i < b.i;
}

// Sorts the first k of [first, last) into place: a heap of k when k is small (about one
// comparison per element), else a selection then a sort of the k.
template <class It, class Cmp>
void sort_first(It first, int64_t k, It last, Cmp cmp) {
  if (k * 8 <= last - first) {
    std::partial_sort(first, first + k, last, cmp);
  } else {
    if (first + k < last) std::nth_element(first, first + k, last, cmp);
    std::sort(first, first + k, cmp);
  }
}

// The first k of each row in sorted order: sort is k = len; topk selects, then sorts. NaN sorts
// as the largest value: NaNs are set aside while gathering (they keep index order, last when
// ascending and first when descending), so the comparisons need no NaN checks.
template <class T, bool kDescending>
void select_sorted_rows(const RawTensor& x, const Rows& rows, int64_t k, T* values,
                        int64_t* indices) {
  using C = Compute<T>;
  const T* xp = x.data_as<T>();
  const int64_t len = rows.len(), s = rows.stride(), inner = rows.inner();
  if (k == 0 || len == 0) return;
  parallel_for(0, rows.count(), rows.grain(), [&](int64_t begin, int64_t end) {
    std::vector<Keyed<C>> buf(static_cast<size_t>(len));
    std::vector<int64_t> nans;  // indices of the row's NaNs
    const auto cmp = [](const Keyed<C>& a, const Keyed<C>& b) { return before<kDescending>(a, b); };
    for (int64_t r = begin; r < end; ++r) {
      const T* row = xp + rows.x_offset(r);
      int64_t m = 0;  // numbers in the row
      nans.clear();
      for (int64_t j = 0; j < len; ++j) {
        const C v = static_cast<C>(row[j * s]);
        if (is_nan(v)) {
          nans.push_back(j);
        } else {
          buf[m++] = {v, j};
        }
      }
      const int64_t nan_count = static_cast<int64_t>(nans.size());
      const int64_t lead = kDescending ? std::min(k, nan_count) : 0;  // NaNs before the numbers
      const int64_t want = std::min(k - lead, m);                     // numbers in the first k
      sort_first(buf.begin(), want, buf.begin() + m, cmp);
      const int64_t o = rows.out_offset(r, k);
      for (int64_t j = 0; j < k; ++j) {
        const int64_t q = j - lead;
        int64_t& index = indices[o + j * inner];
        if (q >= 0 && q < want) {
          index = buf[q].i;
          values[o + j * inner] = T(buf[q].v);
        } else {
          index = nans[kDescending ? j : j - want];
          values[o + j * inner] = row[index * s];
        }
      }
    }
  });
}

template <class T>
void select_sorted(const RawTensor& x, const Rows& rows, int64_t k, bool descending,
                   const RawTensor& values, const RawTensor& indices) {
  T* v = values.data_as<T>();
  int64_t* i = indices.data_as<int64_t>();
  if (descending) {
    select_sorted_rows<T, true>(x, rows, k, v, i);
  } else {
    select_sorted_rows<T, false>(x, rows, k, v, i);
  }
}

}  // namespace

void CpuBackend::arg_reduce(ArgReduceOp op, const RawTensor& x, int dim, const RawTensor& values,
                            const RawTensor& indices) {
  const Rows rows(x, dim);
  if (rows.count() == 0) return;
  EMBER_CHECK(rows.len() > 0, "[", op_name(op), "] cannot reduce over dim ", dim,
              " of size 0 in shape ", x.shape);
  visit_dtype(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    T* v = values.data_as<T>();
    int64_t* i = indices.data_as<int64_t>();
    if (op == ArgReduceOp::ArgMax) {
      arg_reduce_kernel<T, true>(x, rows, v, i);
    } else {
      arg_reduce_kernel<T, false>(x, rows, v, i);
    }
  });
}

void CpuBackend::scan(ScanOp op, const RawTensor& x, int dim, const RawTensor& out) {
  const Rows rows(x, dim);
  if (rows.count() == 0 || rows.len() == 0) return;
  visit_dtype(x.dtype, [&](auto x_tag) {
    using T = decltype(x_tag);
    visit_dtype(out.dtype, [&](auto out_tag) {
      using Out = decltype(out_tag);
      scan_kernel<T, Out>(op, x, rows, out.data_as<Out>());
    });
  });
}

void CpuBackend::sort(const RawTensor& x, int dim, bool descending, const RawTensor& values,
                      const RawTensor& indices) {
  const Rows rows(x, dim);
  visit_dtype(x.dtype, [&](auto tag) {
    select_sorted<decltype(tag)>(x, rows, rows.len(), descending, values, indices);
  });
}

void CpuBackend::topk(const RawTensor& x, int64_t k, int dim, bool largest, const RawTensor& values,
                      const RawTensor& indices) {
  const Rows rows(x, dim);
  EMBER_CHECK(k >= 0 && k <= rows.len(), "[topk] k = ", k, " is out of range for dim ", dim,
              " of shape ", x.shape);
  visit_dtype(x.dtype, [&](auto tag) {
    select_sorted<decltype(tag)>(x, rows, k, largest, values, indices);
  });
}

}  // namespace ember::cpu
