// Reductions (sum, mean, prod, max, min, all, any) over any set of dims of a strided tensor.
// Two loop shapes: when a reduced dim is innermost in memory, each output reduces a contiguous
// run (vectorised lanes); otherwise whole output rows accumulate at once (out[j] += x[r, j]).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "../../core/convert.hpp"
#include "cpu_backend.hpp"
#include "ember/core/error.hpp"
#include "loops.hpp"

namespace ember::cpu {
namespace {

// Per-op accumulation policy over input type T.
template <class T, ReduceOp kOp>
struct Policy {
  using C = Compute<T>;
  static constexpr bool kFloat = std::is_floating_point_v<C>;
  // Sums of floats accumulate in double; integer sums and products in int64.
  using Acc =
      std::conditional_t<kOp == ReduceOp::All || kOp == ReduceOp::Any, bool,
                         std::conditional_t<kOp == ReduceOp::Amax || kOp == ReduceOp::Amin, C,
                                            std::conditional_t<kFloat, double, int64_t>>>;

  static Acc init() {
    switch (kOp) {
      case ReduceOp::Sum:
      case ReduceOp::Mean:
        return Acc(0);
      case ReduceOp::Prod:
        return Acc(1);
      case ReduceOp::All:
        return true;
      case ReduceOp::Any:
        return false;
      case ReduceOp::Amax:
        if constexpr (kFloat)
          return -std::numeric_limits<C>::infinity();
        else
          return std::numeric_limits<C>::lowest();
      case ReduceOp::Amin:
        if constexpr (kFloat)
          return std::numeric_limits<C>::infinity();
        else
          return std::numeric_limits<C>::max();
    }
    return Acc(0);
  }
  // NaN propagates through max and min, as in PyTorch.
  static Acc step(Acc a, C v) {
    // Integer sums and products wrap, computed unsigned (overflowing int64 is undefined).
    if constexpr ((kOp == ReduceOp::Sum || kOp == ReduceOp::Mean) && std::is_same_v<Acc, int64_t>) {
      return static_cast<Acc>(static_cast<uint64_t>(a) + static_cast<uint64_t>(v));
    } else if constexpr (kOp == ReduceOp::Prod && std::is_same_v<Acc, int64_t>) {
      return static_cast<Acc>(static_cast<uint64_t>(a) * static_cast<uint64_t>(v));
    } else if constexpr (kOp == ReduceOp::Sum || kOp == ReduceOp::Mean) {
      return a + static_cast<Acc>(v);
    } else if constexpr (kOp == ReduceOp::Prod) {
      return a * static_cast<Acc>(v);
    } else if constexpr (kOp == ReduceOp::Amax) {
      return (v > a || v != v) ? v : a;
    } else if constexpr (kOp == ReduceOp::Amin) {
      return (v < a || v != v) ? v : a;
    } else if constexpr (kOp == ReduceOp::All) {
      return a && v != C(0);
    } else {
      return a || v != C(0);
    }
  }
  static Acc merge(Acc a, Acc b) {
    if constexpr (kOp == ReduceOp::Amax || kOp == ReduceOp::Amin) {
      return a != a ? a : step(a, b);
    } else if constexpr (std::is_same_v<Acc, int64_t> && kOp == ReduceOp::Prod) {  // as step's
      return static_cast<Acc>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
    } else if constexpr (std::is_same_v<Acc, int64_t>) {
      return static_cast<Acc>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
    } else if constexpr (kOp == ReduceOp::Prod) {
      return a * b;
    } else if constexpr (kOp == ReduceOp::All) {
      return a && b;
    } else if constexpr (kOp == ReduceOp::Any) {
      return a || b;
    } else {
      return a + b;
    }
  }

  // One run of n elements, `stride` bytes apart.
  static Acc run(const char* p, int64_t stride, int64_t n, Acc a) {
    if constexpr (std::is_same_v<T, float> && (kOp == ReduceOp::Sum || kOp == ReduceOp::Mean)) {
      if (stride == sizeof(float)) return a + sum_dense(reinterpret_cast<const float*>(p), n);
    }
    if constexpr (std::is_same_v<T, float> && (kOp == ReduceOp::Amax || kOp == ReduceOp::Amin)) {
      if (stride == sizeof(float))
        return merge(a, extreme_dense(reinterpret_cast<const float*>(p), n));
    }
    for (int64_t i = 0; i < n; ++i)
      a = step(a, static_cast<C>(*reinterpret_cast<const T*>(p + i * stride)));
    return a;
  }

  // Blocks of 1024 in 32 float lanes (memory speed on long sums), block sums added in double;
  // the rest (a whole 256-wide LayerNorm or softmax row) in 16 double lanes, as exact as adding
  // in double one element at a time, which was a single dependent chain 3x slower.
  static double sum_dense(const float* x, int64_t n) {
    const int64_t blocked = n / 1024 * 1024;
    return sum_blocks(x, blocked) + sum_lanes(x + blocked, n - blocked);
  }
  static double sum_blocks(const float* x, int64_t n) {
    double total = 0.0;
    for (int64_t i = 0; i < n; i += 1024) {
      float lanes[32] = {};
      for (int64_t j = 0; j < 1024; j += 32) {
        for (int k = 0; k < 32; ++k) lanes[k] += x[i + j + k];
      }
      float s = 0.f;
      for (float l : lanes) s += l;
      total += s;
    }
    return total;
  }
  static double sum_lanes(const float* x, int64_t n) {
    double lanes[16] = {};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
      for (int k = 0; k < 16; ++k) lanes[k] += static_cast<double>(x[i + k]);
    }
    double total = 0.0;
    for (double l : lanes) total += l;
    for (; i < n; ++i) total += x[i];
    return total;
  }

  // Max (min) in 32 lanes; a NaN anywhere wins, as step() makes it.
  static C extreme_dense(const float* x, int64_t n) {
    C lanes[32];
    std::fill(lanes, lanes + 32, init());
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
      for (int k = 0; k < 32; ++k) lanes[k] = step(lanes[k], x[i + k]);
    }
    C a = init();
    for (C l : lanes) a = merge(a, l);
    for (; i < n; ++i) a = step(a, x[i]);
    return a;
  }
};

// A reduction problem reduced to plain sizes and byte strides.
struct Plan {
  std::vector<int64_t> kept_size, kept_x, kept_out;  // kept dims: size, x stride, out stride
  std::vector<int64_t> red_size, red_x;              // reduced dims: size, x stride
  int64_t red_count = 1;
};

// Merges dims that are contiguous in every stride list given, keeping the innermost last.
void coalesce(std::vector<int64_t>& size, std::vector<std::vector<int64_t>*> strides) {
  std::vector<int> order(size.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  // Largest |x stride| first, so the inner loop walks the smallest stride.
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return std::llabs((*strides[0])[a]) > std::llabs((*strides[0])[b]);
  });
  std::vector<int64_t> s2;
  std::vector<std::vector<int64_t>> st2(strides.size());
  for (int d : order) {
    if (!s2.empty()) {
      bool merge = true;
      for (size_t k = 0; k < strides.size(); ++k) {
        merge &= st2[k].back() == (*strides[k])[d] * size[d];
      }
      if (merge) {
        s2.back() *= size[d];
        for (size_t k = 0; k < strides.size(); ++k) st2[k].back() = (*strides[k])[d];
        continue;
      }
    }
    s2.push_back(size[d]);
    for (size_t k = 0; k < strides.size(); ++k) st2[k].push_back((*strides[k])[d]);
  }
  size = s2;
  for (size_t k = 0; k < strides.size(); ++k) *strides[k] = st2[k];
}

Plan make_plan(const RawTensor& x, uint32_t mask, const RawTensor& out) {
  Plan p;
  const int64_t xe = static_cast<int64_t>(dtype_size(x.dtype));
  const int64_t oe = static_cast<int64_t>(dtype_size(out.dtype));
  for (int d = 0; d < x.rank(); ++d) {
    if (x.shape[d] == 1) continue;
    if (mask & (1u << d)) {
      p.red_size.push_back(x.shape[d]);
      p.red_x.push_back(x.strides[d] * xe);
      p.red_count *= x.shape[d];
    } else {
      p.kept_size.push_back(x.shape[d]);
      p.kept_x.push_back(x.strides[d] * xe);
      p.kept_out.push_back(out.strides[d] * oe);
    }
  }
  coalesce(p.red_size, {&p.red_x});
  coalesce(p.kept_size, {&p.kept_x, &p.kept_out});
  return p;
}

// Calls f(offset_a, offset_b) for every multi-index of `size` in [begin, end) (row-major), with
// offset = sum(idx * stride) for two stride lists.
template <class F>
void for_each_offset2(const std::vector<int64_t>& size, const std::vector<int64_t>& sa,
                      const std::vector<int64_t>& sb, int64_t begin, int64_t end, F&& f) {
  const int r = static_cast<int>(size.size());
  int64_t idx[kMaxRank] = {};
  int64_t rest = begin, oa = 0, ob = 0;
  for (int d = r - 1; d >= 0; --d) {
    idx[d] = rest % size[d];
    rest /= size[d];
    oa += idx[d] * sa[d];
    ob += idx[d] * sb[d];
  }
  for (int64_t i = begin; i < end; ++i) {
    f(oa, ob);
    for (int d = r - 1; d >= 0; --d) {
      oa += sa[d];
      ob += sb[d];
      if (++idx[d] < size[d]) break;
      oa -= sa[d] * size[d];
      ob -= sb[d] * size[d];
      idx[d] = 0;
    }
  }
}

template <class F>
void for_each_offset(const std::vector<int64_t>& size, const std::vector<int64_t>& stride,
                     int64_t begin, int64_t end, F&& f) {
  for_each_offset2(size, stride, stride, begin, end, [&](int64_t o, int64_t) { f(o); });
}

template <class T, class Out, ReduceOp kOp>
void reduce_typed(const RawTensor& x, uint32_t mask, const RawTensor& out) {
  using P = Policy<T, kOp>;
  using Acc = typename P::Acc;
  const Plan plan = make_plan(x, mask, out);
  const char* xb = static_cast<const char*>(x.data());
  char* ob = static_cast<char*>(out.data());
  const int64_t n_out = out.numel();
  const auto finish = [&](Acc a) {
    if constexpr (kOp == ReduceOp::Mean) {
      return convert<Out>(static_cast<double>(a) / static_cast<double>(plan.red_count));
    } else {
      return convert<Out>(a);
    }
  };
  if (x.numel() == 0) {  // empty reduction: the identity (mean: 0 / 0 = NaN)
    for (int64_t i = 0; i < n_out; ++i) reinterpret_cast<Out*>(ob)[i] = finish(P::init());
    return;
  }
  if (plan.red_size.empty()) {  // only size-1 dims reduced: a converting copy
    for_each_offset2(
        plan.kept_size, plan.kept_x, plan.kept_out, 0, n_out, [&](int64_t xo, int64_t oo) {
          const auto v = static_cast<typename P::C>(*reinterpret_cast<const T*>(xb + xo));
          *reinterpret_cast<Out*>(ob + oo) = finish(P::step(P::init(), v));
        });
    return;
  }
  const bool has_red = !plan.red_size.empty();
  const int64_t red_inner_stride = has_red ? plan.red_x.back() : 0;
  const int64_t kept_inner_stride = plan.kept_size.empty() ? 0 : plan.kept_x.back();
  const bool inner_is_reduced =
      has_red &&
      (plan.kept_size.empty() || std::llabs(red_inner_stride) <= std::llabs(kept_inner_stride));

  if (inner_is_reduced) {
    // Each output reduces runs along the innermost reduced dim.
    const int64_t n_inner = plan.red_size.back();
    std::vector<int64_t> outer_size(plan.red_size.begin(), plan.red_size.end() - 1);
    std::vector<int64_t> outer_stride(plan.red_x.begin(), plan.red_x.end() - 1);
    int64_t n_outer = 1;
    for (int64_t s : outer_size) n_outer *= s;
    const auto reduce_range = [&](const char* base, int64_t b, int64_t e, Acc a) {
      for_each_offset(outer_size, outer_stride, b, e,
                      [&](int64_t off) { a = P::run(base + off, red_inner_stride, n_inner, a); });
      return a;
    };
    if (n_out >= num_threads() || plan.red_count < 4 * kGrain) {
      parallel_for(0, n_out, std::max<int64_t>(1, kGrain / plan.red_count),
                   [&](int64_t b, int64_t e) {
                     for_each_offset2(plan.kept_size, plan.kept_x, plan.kept_out, b, e,
                                      [&](int64_t xo, int64_t oo) {
                                        *reinterpret_cast<Out*>(ob + oo) =
                                            finish(reduce_range(xb + xo, 0, n_outer, P::init()));
                                      });
                   });
      return;
    }
    // Few outputs, long reductions: split each reduction into fixed pieces (the same whatever
    // the thread count, so results do not depend on it) and merge the pieces in order.
    const int64_t piece = std::max<int64_t>(1, kGrain / n_inner);
    const int64_t n_pieces = (n_outer + piece - 1) / piece;
    using Slot =
        std::conditional_t<std::is_same_v<Acc, bool>, unsigned char, Acc>;  // no vector<bool> races
    std::vector<Slot> partial(static_cast<size_t>(n_pieces));
    for_each_offset2(
        plan.kept_size, plan.kept_x, plan.kept_out, 0, n_out, [&](int64_t xo, int64_t oo) {
          parallel_for(0, n_pieces, 1, [&](int64_t b, int64_t e) {
            for (int64_t k = b; k < e; ++k) {
              partial[k] =
                  reduce_range(xb + xo, k * piece, std::min(n_outer, (k + 1) * piece), P::init());
            }
          });
          Acc a = P::init();
          for (const Slot& v : partial) a = P::merge(a, static_cast<Acc>(v));
          *reinterpret_cast<Out*>(ob + oo) = finish(a);
        });
    return;
  }

  // Output rows: acc[j] op= x[r, j] along the innermost kept dim, for every reduced index r.
  const int64_t n_row = plan.kept_size.back();
  const int64_t out_inner_stride = plan.kept_out.back();
  std::vector<int64_t> rows_size(plan.kept_size.begin(), plan.kept_size.end() - 1);
  std::vector<int64_t> rows_x(plan.kept_x.begin(), plan.kept_x.end() - 1);
  std::vector<int64_t> rows_out(plan.kept_out.begin(), plan.kept_out.end() - 1);
  int64_t n_rows = 1;
  for (int64_t s : rows_size) n_rows *= s;
  std::vector<int64_t> row_x_off(static_cast<size_t>(n_rows)), row_out_off(row_x_off.size());
  {
    int64_t k = 0;
    for_each_offset(rows_size, rows_x, 0, n_rows, [&](int64_t off) { row_x_off[k++] = off; });
    k = 0;
    for_each_offset(rows_size, rows_out, 0, n_rows, [&](int64_t off) { row_out_off[k++] = off; });
  }
  // Split rows, and long rows into column blocks, across threads.
  const int64_t col_block = 4096;
  const int64_t n_blocks = (n_row + col_block - 1) / col_block;
  const int64_t piece = std::max<int64_t>(128, 4 * kGrain / std::min(n_row, col_block));
  if (n_rows * n_blocks < 8 && plan.red_count >= 2 * piece) {
    // Few output rows, many reduced ones (a bias gradient: [tokens, features] -> [features]):
    // the reduced range also splits, into pieces fixed by the sizes (not the thread count, so
    // results do not depend on it), whose partial rows are merged in order.
    const int64_t n_pieces = (plan.red_count + piece - 1) / piece;
    const int64_t n_tasks = n_rows * n_blocks;
    using Slot = std::conditional_t<std::is_same_v<Acc, bool>, unsigned char, Acc>;
    std::vector<Slot> partial(static_cast<size_t>(n_tasks * n_pieces * std::min(n_row, col_block)));
    const int64_t width = std::min(n_row, col_block);
    parallel_for(0, n_tasks * n_pieces, 1, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const int64_t task = t / n_pieces, k = t % n_pieces;
        const int64_t row = task / n_blocks, j0 = (task % n_blocks) * col_block;
        const int64_t nj = std::min(col_block, n_row - j0);
        Slot* acc = partial.data() + t * width;
        std::fill(acc, acc + nj, static_cast<Slot>(P::init()));
        const char* xr = xb + row_x_off[row] + j0 * kept_inner_stride;
        for_each_offset(plan.red_size, plan.red_x, k * piece,
                        std::min(plan.red_count, (k + 1) * piece), [&](int64_t off) {
                          const char* p = xr + off;
                          if (kept_inner_stride == sizeof(T)) {  // contiguous: vectorises
                            const T* v = reinterpret_cast<const T*>(p);
                            for (int64_t j = 0; j < nj; ++j) {
                              acc[j] = static_cast<Slot>(P::step(static_cast<Acc>(acc[j]),
                                                                 static_cast<typename P::C>(v[j])));
                            }
                            return;
                          }
                          for (int64_t j = 0; j < nj; ++j) {
                            acc[j] = static_cast<Slot>(P::step(
                                static_cast<Acc>(acc[j]),
                                static_cast<typename P::C>(
                                    *reinterpret_cast<const T*>(p + j * kept_inner_stride))));
                          }
                        });
      }
    });
    for (int64_t task = 0; task < n_tasks; ++task) {
      const int64_t row = task / n_blocks, j0 = (task % n_blocks) * col_block;
      const int64_t nj = std::min(col_block, n_row - j0);
      // Pieces merged in order, a whole row at a time (vectorises).
      const Slot* first = partial.data() + task * n_pieces * width;
      std::vector<Slot> total(first, first + nj);
      for (int64_t k = 1; k < n_pieces; ++k) {
        const Slot* part = first + k * width;
        for (int64_t j = 0; j < nj; ++j) {
          total[static_cast<size_t>(j)] = static_cast<Slot>(
              P::merge(static_cast<Acc>(total[static_cast<size_t>(j)]), static_cast<Acc>(part[j])));
        }
      }
      char* orow = ob + row_out_off[row] + j0 * out_inner_stride;
      for (int64_t j = 0; j < nj; ++j) {
        *reinterpret_cast<Out*>(orow + j * out_inner_stride) =
            finish(static_cast<Acc>(total[static_cast<size_t>(j)]));
      }
    }
    return;
  }
  parallel_for(0, n_rows * n_blocks, std::max<int64_t>(1, kGrain / (plan.red_count * col_block)),
               [&](int64_t b, int64_t e) {
                 std::vector<Acc> acc(static_cast<size_t>(std::min(n_row, col_block)));
                 for (int64_t t = b; t < e; ++t) {
                   const int64_t row = t / n_blocks, j0 = (t % n_blocks) * col_block;
                   const int64_t nj = std::min(col_block, n_row - j0);
                   std::fill(acc.begin(), acc.begin() + nj, P::init());
                   const char* xr = xb + row_x_off[row] + j0 * kept_inner_stride;
                   for_each_offset(plan.red_size, plan.red_x, 0, plan.red_count, [&](int64_t off) {
                     const char* p = xr + off;
                     if (kept_inner_stride == sizeof(T)) {
                       const T* v = reinterpret_cast<const T*>(p);
                       for (int64_t j = 0; j < nj; ++j)
                         acc[j] = P::step(acc[j], static_cast<typename P::C>(v[j]));
                     } else {
                       for (int64_t j = 0; j < nj; ++j) {
                         acc[j] = P::step(
                             acc[j], static_cast<typename P::C>(
                                         *reinterpret_cast<const T*>(p + j * kept_inner_stride)));
                       }
                     }
                   });
                   char* orow = ob + row_out_off[row] + j0 * out_inner_stride;
                   for (int64_t j = 0; j < nj; ++j) {
                     *reinterpret_cast<Out*>(orow + j * out_inner_stride) = finish(acc[j]);
                   }
                 }
               });
}

// Converts `t` to `dtype` (a contiguous copy) unless it already is.
RawTensor as_dtype(Backend& be, const RawTensor& t, DType dtype) {
  if (t.dtype == dtype) return t;
  RawTensor c = empty_raw(t.shape, dtype);
  be.copy(t, c);
  return c;
}

// Kernels exist for f32, f64 and i64 (bool for all/any); narrower types are widened first and
// the result narrowed on store. This keeps the instantiations few; the 16-bit floats compute in
// f32 as everywhere else.
DType kernel_dtype(ReduceOp op, DType t) {
  if (op == ReduceOp::All || op == ReduceOp::Any) return DType::boolean;
  if (t == DType::f32 || t == DType::f64) return t;
  return is_floating(t) ? DType::f32 : DType::i64;
}

template <ReduceOp kOp>
void reduce_dispatch(const RawTensor& x, uint32_t mask, const RawTensor& out) {
  switch (x.dtype) {
    case DType::f32:
      return reduce_typed<float, float, kOp>(x, mask, out);
    case DType::f64:
      return reduce_typed<double, double, kOp>(x, mask, out);
    case DType::i64:
      return reduce_typed<int64_t, int64_t, kOp>(x, mask, out);
    case DType::boolean:
      if constexpr (kOp == ReduceOp::All || kOp == ReduceOp::Any) {
        return reduce_typed<bool, bool, kOp>(x, mask, out);
      }
      break;
    default:
      break;
  }
  EMBER_FAIL("[", op_name(kOp), "] has no Cpu kernel for ", x.dtype);
}

}  // namespace

void CpuBackend::reduce(ReduceOp op, const RawTensor& x, uint32_t dims_mask, const RawTensor& out) {
  const DType kd = kernel_dtype(op, x.dtype);
  const RawTensor xk = as_dtype(*this, x, kd);
  const RawTensor ok = out.dtype == kd ? out : empty_raw(out.shape, kd);
  switch (op) {
#define EMBER_REDUCE_CASE(Name, name, kinds)            \
  case ReduceOp::Name:                                  \
    reduce_dispatch<ReduceOp::Name>(xk, dims_mask, ok); \
    break;
    EMBER_REDUCE_OPS(EMBER_REDUCE_CASE)
#undef EMBER_REDUCE_CASE
  }
  if (ok.storage != out.storage) copy(ok, out);
}

}  // namespace ember::cpu
