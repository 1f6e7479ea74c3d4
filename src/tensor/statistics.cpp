// Order statistics and scans as composites (include/ember/tensor/ops/statistics.hpp). The
// selecting ops find their indices on a detached copy (sort, cumsum, argmax) and take their
// values with gather(x, indices), so the gradient reaches exactly the selected elements, as
// PyTorch's value_selecting_reduction_backward does; nothing here needs a kernel of its own.
#include "ember/tensor/ops/statistics.hpp"

#include <cmath>
#include <limits>

#include "ember/autodiff/autodiff.hpp"
#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/indexing.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "internal.hpp"

namespace ember {
namespace {

// 16-bit floats compute in f32 (their sums and interpolations lose too much); rounded once.
DynTensor widen(const DynTensor& x) {
  return x.dtype() == DType::f16 || x.dtype() == DType::bf16 ? cast(x, DType::f32) : x;
}

// The keepdim shape of reducing `d`.
Shape kept(const Shape& s, int d) {
  Shape out = s;
  out[d] = 1;
  return out;
}

// The values of x at `idx` (keepdim shape along d) with idx; gathered from x so that the
// gradient goes to those elements.
ValuesIndices take(const DynTensor& x, int d, const DynTensor& idx) {
  return {gather(x, d, idx), idx};
}

// Empty results of a reduction along d of an input with no elements (and d not of size 0).
ValuesIndices empty_result(const DynTensor& x, int d, bool keepdim, const char* name) {
  Shape s = kept(x.shape(), d);
  if (!keepdim) s.erase(d);
  return {detail::make_empty(s, x.dtype(), x.device(), name),
          detail::make_empty(s, DType::i64, x.device(), name)};
}

// Runs `f(x1, d)` on x viewed as 1-D when x is 0-d (PyTorch treats dim 0 of a scalar as size 1),
// then gives the results back as 0-d.
template <class F>
ValuesIndices along(const DynTensor& x, int64_t dim, bool keepdim, const char* name, F&& f) {
  detail::check_defined(x, name);
  const int d = wrap_dim(dim, x.rank(), name);
  if (x.rank() == 0) {
    ValuesIndices r = f(reshape(x, Shape{1}), 0);
    return {reshape(r.values, Shape{}), reshape(r.indices, Shape{})};
  }
  EMBER_CHECK(x.size(d) > 0, "[", name, "] cannot reduce over a zero-size dimension: dim ", dim,
              " of input shape ", x.shape());
  if (x.numel() == 0) return empty_result(x, d, keepdim, name);
  ValuesIndices r = f(x, d);
  if (keepdim) return r;
  return {squeeze(r.values, d), squeeze(r.indices, d)};
}

// Number of non-NaN elements along d (keepdim), i64; n for non-floating x.
DynTensor count_numbers(const DynTensor& x, int d) {
  if (!is_floating(x.dtype())) return full(kept(x.shape(), d), x.size(d), DType::i64, x.device());
  return sum(logical_not(isnan(x)), {d}, true);
}

ValuesIndices median_impl(const DynTensor& x, int64_t dim, bool keepdim, bool ignore_nan) {
  const char* name = ignore_nan ? "nanmedian" : "median";
  return as_op(name, [&] {
    return along(x, dim, keepdim, name, [&](const DynTensor& xs, int d) {
      // Stable sort: NaN last in their original order, so position k (the count of numbers) is
      // the first NaN, which PyTorch's median returns with its index.
      const DynTensor xd = detach(xs);
      const DynTensor order = sort(xd, d).indices;
      const int64_t n = xs.size(d);
      const DynTensor k = count_numbers(xd, d);
      DynTensor pos;
      if (ignore_nan) {  // lower median of the k numbers; a row of NaN only gives its first
        pos = clamp_min(bitwise_right_shift(sub(k, 1), 1), 0);
      } else {
        pos = where(lt(k, n), k, full(Shape{}, (n - 1) / 2, DType::i64, x.device()));
      }
      return take(xs, d, gather(order, d, pos));
    });
  });
}

DynTensor median_all(const DynTensor& x, bool ignore_nan) {
  const char* name = ignore_nan ? "nanmedian" : "median";
  detail::check_defined(x, name);
  if (x.numel() == 0) {
    EMBER_CHECK(is_floating(x.dtype()), "[", name, "] of an empty ", x.dtype(),
                " tensor has no value (a floating one gives NaN)");
    return full(Shape{}, std::numeric_limits<double>::quiet_NaN(), x.dtype(), x.device());
  }
  return median_impl(reshape(x, Shape{x.numel()}), 0, false, ignore_nan).values;
}

}  // namespace

DynTensor median(const DynTensor& x) { return median_all(x, false); }
ValuesIndices median(const DynTensor& x, int64_t dim, bool keepdim) {
  return median_impl(x, dim, keepdim, false);
}
DynTensor nanmedian(const DynTensor& x) { return median_all(x, true); }
ValuesIndices nanmedian(const DynTensor& x, int64_t dim, bool keepdim) {
  return median_impl(x, dim, keepdim, true);
}

ValuesIndices kthvalue(const DynTensor& x, int64_t k, int64_t dim, bool keepdim) {
  detail::check_defined(x, "kthvalue");
  const int d = wrap_dim(dim, x.rank(), "kthvalue");
  const int64_t n = x.rank() == 0 ? 1 : x.size(d);
  EMBER_CHECK(k >= 1 && k <= n, "[kthvalue] k = ", k, " is out of range for dimension ", dim,
              " of size ", n, " (k counts from 1; input shape ", x.shape(), ")");
  return as_op("kthvalue", [&] {
    return along(x, dim, keepdim, "kthvalue", [&](const DynTensor& xs, int dd) {
      const DynTensor order = sort(detach(xs), dd).indices;
      return take(xs, dd, narrow(order, dd, k - 1, 1));
    });
  });
}

ValuesIndices mode(const DynTensor& x, int64_t dim, bool keepdim) {
  return as_op("mode", [&] {
    return along(x, dim, keepdim, "mode", [&](const DynTensor& xs, int d) {
      const ValuesIndices sorted = sort(detach(xs), d);
      const DynTensor& s = sorted.values;
      const int64_t n = xs.size(d);
      // Runs of equal values in sorted order (NaN != NaN: each NaN is a run of its own).
      const DynTensor first = full(kept(s.shape(), d), true, DType::boolean, s.device());
      const DynTensor start = n == 1
                                  ? first
                                  : cat({first, ne(narrow(s, d, 1, n - 1), narrow(s, d, 0, n - 1))},
                                        static_cast<int64_t>(d));
      const DynTensor run = sub(cumsum(start, d), 1);
      const DynTensor ones_i = ones(s.shape(), DType::i64, s.device());
      const DynTensor counts =
          scatter_add(zeros(s.shape(), DType::i64, s.device()), d, run, ones_i);
      const DynTensor per_pos = gather(counts, d, run);
      // The first position holding the largest count is the smallest most frequent value;
      // PyTorch returns the last index of that value, the end of its run in a stable sort.
      const DynTensor best = argmax(per_pos, d, true);
      const DynTensor last = sub(add(best, gather(per_pos, d, best)), 1);
      return take(xs, d, gather(sorted.indices, d, last));
    });
  });
}

namespace {

DynTensor quantile_impl(const DynTensor& x, const DynTensor& q, std::optional<int64_t> dim,
                        bool keepdim, QuantileInterpolation mode, bool ignore_nan, bool q_checked) {
  const char* name = ignore_nan ? "nanquantile" : "quantile";
  detail::check_defined(x, name);
  detail::check_defined(q, name, "q");
  EMBER_CHECK(is_floating(x.dtype()), "[", name, "] needs a floating input, got ", x.dtype(),
              " (cast it first)");
  EMBER_CHECK(q.rank() <= 1, "[", name, "] q must be a scalar or a 1-D tensor, got shape ",
              q.shape());
  const int d = dim ? wrap_dim(*dim, x.rank(), name) : 0;
  EMBER_CHECK(x.numel() > 0, "[", name, "] input is empty: shape ", x.shape());
  if (!q_checked) {
    // q's values decide whether the call is valid: read them, as PyTorch does.
    for (double v : q.to_vector<double>()) {
      EMBER_CHECK(v >= 0.0 && v <= 1.0, "[", name, "] q must be in [0, 1], got ", v);
    }
  }
  return as_op(name, [&] {
    const DynTensor xw = widen(x);
    const DType ct = xw.dtype();
    // Sorted along the reduced dim, viewed as [kept dims (reduced one as size 1)..., n], as
    // PyTorch's quantile does; the sort is tracked, so the gradient goes through it.
    const DynTensor src = dim ? (x.rank() == 0 ? reshape(xw, Shape{1}) : xw) : flatten(xw);
    const DynTensor sorted = transpose(unsqueeze(sort(src, d).values, -1), d, -1);
    const int64_t n = sorted.size(-1);
    const int64_t nq = q.numel();
    const DynTensor q1 = reshape(cast(detach(q), ct), Shape{nq});
    Shape rshape = sorted.shape();
    rshape[rshape.rank() - 1] = nq;
    DynTensor ranks;
    const DynTensor nan_mask = isnan(detach(sorted));
    if (ignore_nan) {  // ranks among the numbers; a row of only NaN takes rank 0 (NaN)
      const DynTensor count = sum(logical_not(nan_mask), {-1}, true);
      ranks = clamp_min(mul(q1, cast(sub(count, 1), ct)), 0.0);
    } else {  // a NaN anywhere makes the rank the last index, which holds NaN
      ranks = where(any(nan_mask, {-1}, true), full(Shape{}, double(n - 1), ct, x.device()),
                    mul(q1, double(n - 1)));
    }
    ranks = contiguous(expand(ranks, rshape));
    switch (mode) {
      case QuantileInterpolation::Lower:
        ranks = floor(ranks);
        break;
      case QuantileInterpolation::Higher:
        ranks = ceil(ranks);
        break;
      case QuantileInterpolation::Nearest:
        ranks = round(ranks);  // half to even, as torch.round
        break;
      default:
        break;
    }
    const DynTensor below = cast(floor(ranks), DType::i64);
    DynTensor r = gather(sorted, -1, below);
    if (mode == QuantileInterpolation::Linear || mode == QuantileInterpolation::Midpoint) {
      const DynTensor above = gather(sorted, -1, cast(ceil(ranks), DType::i64));
      r = mode == QuantileInterpolation::Midpoint ? lerp(r, above, 0.5)
                                                  : lerp(r, above, sub(ranks, floor(ranks)));
    }
    // [kept..., nq] -> [nq, kept...]; then the reduced dim goes unless keepdim.
    std::vector<int64_t> perm{r.rank() - 1};
    for (int i = 0; i + 1 < r.rank(); ++i) perm.push_back(i);
    r = permute(r, perm);
    Shape out;
    if (q.rank() == 1) out.push_back(nq);
    if (!dim) {
      if (keepdim) {
        for (int i = 0; i < x.rank(); ++i) out.push_back(1);
      }
    } else {
      for (int i = 0; i < x.rank(); ++i) {
        if (i != d)
          out.push_back(x.size(i));
        else if (keepdim)
          out.push_back(1);
      }
    }
    return cast(reshape(r, out), x.dtype());
  });
}

}  // namespace

DynTensor quantile(const DynTensor& x, double q, std::optional<int64_t> dim, bool keepdim,
                   QuantileInterpolation interpolation) {
  EMBER_CHECK(q >= 0.0 && q <= 1.0, "[quantile] q must be in [0, 1], got ", q);
  detail::check_defined(x, "quantile");
  const DType ct = is_floating(x.dtype()) ? widen(x).dtype() : DType::f32;
  return quantile_impl(x, full(Shape{}, q, ct, x.device()), dim, keepdim, interpolation, false,
                       true);
}
DynTensor quantile(const DynTensor& x, const DynTensor& q, std::optional<int64_t> dim, bool keepdim,
                   QuantileInterpolation interpolation) {
  return quantile_impl(x, q, dim, keepdim, interpolation, false, false);
}
DynTensor nanquantile(const DynTensor& x, double q, std::optional<int64_t> dim, bool keepdim,
                      QuantileInterpolation interpolation) {
  EMBER_CHECK(q >= 0.0 && q <= 1.0, "[nanquantile] q must be in [0, 1], got ", q);
  detail::check_defined(x, "nanquantile");
  const DType ct = is_floating(x.dtype()) ? widen(x).dtype() : DType::f32;
  return quantile_impl(x, full(Shape{}, q, ct, x.device()), dim, keepdim, interpolation, true,
                       true);
}
DynTensor nanquantile(const DynTensor& x, const DynTensor& q, std::optional<int64_t> dim,
                      bool keepdim, QuantileInterpolation interpolation) {
  return quantile_impl(x, q, dim, keepdim, interpolation, true, false);
}

namespace {

// Runs of equal values in the 1-D `s`: whether each element starts a run.
DynTensor run_starts(const DynTensor& s) {
  const int64_t n = s.numel();
  const DynTensor first = full(Shape{1}, true, DType::boolean, s.device());
  if (n == 1) return first;
  return cat({first, ne(slice(s, 0, 1, n), slice(s, 0, 0, n - 1))}, 0);
}

UniqueResult unique_impl(const DynTensor& x, bool consecutive, bool return_inverse,
                         bool return_counts) {
  const char* name = consecutive ? "unique_consecutive" : "unique";
  detail::check_defined(x, name);
  return as_op(name, [&] {
    const DynTensor flat = reshape(detach(x), Shape{x.numel()});
    const int64_t n = flat.numel();
    UniqueResult r;
    if (n == 0) {
      r.values = detail::make_empty(Shape{0}, x.dtype(), x.device(), name);
      if (return_inverse) r.inverse = detail::make_empty(x.shape(), DType::i64, x.device(), name);
      if (return_counts) r.counts = detail::make_empty(Shape{0}, DType::i64, x.device(), name);
      return r;
    }
    DynTensor s = flat, order;
    if (!consecutive) {
      ValuesIndices sorted = sort(flat, 0);
      s = sorted.values;
      order = sorted.indices;
    }
    const DynTensor start = run_starts(s);
    // The number of distinct values decides the result's size: masked_select waits for the
    // device here, as torch.unique does.
    r.values = masked_select(s, start);
    const DynTensor run = sub(cumsum(start, 0), 1);
    if (return_inverse) {
      r.inverse =
          consecutive ? run : scatter(zeros(Shape{n}, DType::i64, x.device()), 0, order, run);
      r.inverse = reshape(r.inverse, x.shape());
    }
    if (return_counts) {
      r.counts = scatter_add(zeros(Shape{r.values.numel()}, DType::i64, x.device()), 0, run,
                             ones(Shape{n}, DType::i64, x.device()));
    }
    return r;
  });
}

}  // namespace

UniqueResult unique(const DynTensor& x, bool /*sorted*/, bool return_inverse, bool return_counts) {
  return unique_impl(x, false, return_inverse, return_counts);
}
UniqueResult unique_consecutive(const DynTensor& x, bool return_inverse, bool return_counts) {
  return unique_impl(x, true, return_inverse, return_counts);
}

namespace {

// The index of the running max (min) along d by doubling (Hillis-Steele): after the step of
// shift s each position holds the winner of the 2s positions ending there. The later element
// wins ties and a NaN wins everything (PyTorch's cummax: `isnan(x) || x >= best`), which is
// the maximum of (value with NaN on top, index), so the combination is associative.
ValuesIndices cum_extreme(const DynTensor& x, int64_t dim, bool is_max) {
  const char* name = is_max ? "cummax" : "cummin";
  detail::check_defined(x, name);
  const int d = wrap_dim(dim, x.rank(), name);
  return as_op(name, [&] {
    if (x.rank() == 0) return ValuesIndices{clone(x), zeros(Shape{}, DType::i64, x.device())};
    const int64_t n = x.size(d);
    if (x.numel() == 0) {
      return ValuesIndices{clone(x), detail::make_empty(x.shape(), DType::i64, x.device(), name)};
    }
    DynTensor v = detach(x);
    Shape ishape(std::vector<int64_t>(static_cast<size_t>(x.rank()), 1));
    ishape[d] = n;
    DynTensor idx =
        contiguous(expand(reshape(arange(0, n, 1, DType::i64, x.device()), ishape), x.shape()));
    const bool floating = is_floating(x.dtype());
    for (int64_t s = 1; s < n; s *= 2) {
      const DynTensor av = narrow(v, d, 0, n - s), bv = narrow(v, d, s, n - s);
      DynTensor later = is_max ? ge(bv, av) : le(bv, av);
      if (floating) later = logical_or(isnan(bv), logical_and(logical_not(isnan(av)), later));
      const DynTensor nv = where(later, bv, av);
      const DynTensor ni = where(later, narrow(idx, d, s, n - s), narrow(idx, d, 0, n - s));
      v = cat({narrow(v, d, 0, s), nv}, d);
      idx = cat({narrow(idx, d, 0, s), ni}, d);
    }
    return ValuesIndices{gather(x, d, idx), idx};
  });
}

// log(exp(a) + exp(b)), shifted by the larger; the shift is a constant to autodiff (any
// constant gives the same function), so the gradient is the exact softmax weight.
DynTensor logaddexp(const DynTensor& a, const DynTensor& b) {
  DynTensor m = detach(maximum(a, b));
  m = where(isinf(m), zeros_like(m), m);  // -inf with -inf gives -inf; +inf stays +inf
  return add(m, log(add(exp(sub(a, m)), exp(sub(b, m)))));
}

}  // namespace

ValuesIndices cummax(const DynTensor& x, int64_t dim) { return cum_extreme(x, dim, true); }
ValuesIndices cummin(const DynTensor& x, int64_t dim) { return cum_extreme(x, dim, false); }

DynTensor logcumsumexp(const DynTensor& x, int64_t dim) {
  detail::check_defined(x, "logcumsumexp");
  const int d = wrap_dim(dim, x.rank(), "logcumsumexp");
  return as_op("logcumsumexp", [&] {
    const DynTensor xf = is_floating(x.dtype()) ? x : cast(x, default_dtype(KindId::Float));
    DynTensor y = widen(xf);
    if (x.rank() == 0 || x.numel() == 0) return clone(xf);
    // Doubling, as cummax: log(n) steps of logaddexp over shifted copies. Exact where
    // exp(x - max) would underflow (PyTorch's sequential scan is too); the tape holds log(n)
    // copies of x.
    const int64_t n = x.size(d);
    for (int64_t s = 1; s < n; s *= 2) {
      y = cat({narrow(y, d, 0, s), logaddexp(narrow(y, d, 0, n - s), narrow(y, d, s, n - s))}, d);
    }
    return cast(y, xf.dtype());
  });
}

DynTensor count_nonzero(const DynTensor& x, const Dims& dims) {
  detail::check_defined(x, "count_nonzero");
  detail::dims_mask(dims, x.rank(), "count_nonzero");
  return as_op("count_nonzero", [&] { return sum(ne(x, 0), dims, false); });
}

MinMax aminmax(const DynTensor& x, std::optional<int64_t> dim, bool keepdim) {
  detail::check_defined(x, "aminmax");
  const Dims dims = dim ? Dims{*dim} : Dims{};
  if (dim) wrap_dim(*dim, x.rank(), "aminmax");
  const int64_t reduced =
      !dim || x.rank() == 0 ? x.numel() : x.size(wrap_dim(*dim, x.rank(), "aminmax"));
  EMBER_CHECK(reduced > 0, "[aminmax] cannot reduce over a zero-size dimension: input shape ",
              x.shape());
  return as_op("aminmax", [&] { return MinMax{amin(x, dims, keepdim), amax(x, dims, keepdim)}; });
}

}  // namespace ember
