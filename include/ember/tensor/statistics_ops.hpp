// Order statistics and scans on Tensor<D, K>: thin forwards to ember/tensor/ops/statistics.hpp,
// with the result's rank settled at compile time: median(x, 1) drops dim 1, median(x, 1, keepdim)
// keeps it, and a 1-D q adds quantile's leading dim.
#pragma once

#include "ember/tensor/ops/statistics.hpp"
#include "ember/tensor/tensor.hpp"

namespace ember {

/// unique's results; inverse and counts are defined only when asked for.
template <int D, class K>
struct TypedUnique {
  Tensor<1, K> values;
  Tensor<D, Int> inverse;
  Tensor<1, Int> counts;
};

/// aminmax's results.
template <int D, class K>
struct TypedMinMax {
  Tensor<D, K> min;
  Tensor<D, K> max;
};

namespace detail {
template <int R, class K>
TypedValuesIndices<R, K> typed_vi(ValuesIndices r) {
  return {Tensor<R, K>(std::move(r.values)), Tensor<R, Int>(std::move(r.indices))};
}
}  // namespace detail

// median, nanmedian, mode, kthvalue: over all elements (0-d), along dim, or along dim keeping it.
#define EMBER_TYPED_SELECT(name)                                                     \
  template <int D, class K>                                                          \
  TypedValuesIndices<detail::drop1(D), K> name(const Tensor<D, K>& x, int64_t dim) { \
    return detail::typed_vi<detail::drop1(D), K>(name(x.dyn(), dim, false));         \
  }                                                                                  \
  template <int D, class K>                                                          \
  TypedValuesIndices<D, K> name(const Tensor<D, K>& x, int64_t dim, KeepDim) {       \
    return detail::typed_vi<D, K>(name(x.dyn(), dim, true));                         \
  }
EMBER_TYPED_SELECT(median)
EMBER_TYPED_SELECT(nanmedian)
EMBER_TYPED_SELECT(mode)
#undef EMBER_TYPED_SELECT

template <int D, class K>
Tensor<0, K> median(const Tensor<D, K>& x) {
  return Tensor<0, K>(median(x.dyn()));
}
template <int D, class K>
Tensor<0, K> nanmedian(const Tensor<D, K>& x) {
  return Tensor<0, K>(nanmedian(x.dyn()));
}
template <int D, class K>
TypedValuesIndices<detail::drop1(D), K> mode(const Tensor<D, K>& x) {
  return mode(x, -1);
}
template <int D, class K>
TypedValuesIndices<detail::drop1(D), K> kthvalue(const Tensor<D, K>& x, int64_t k,
                                                 int64_t dim = -1) {
  return detail::typed_vi<detail::drop1(D), K>(kthvalue(x.dyn(), k, dim, false));
}
template <int D, class K>
TypedValuesIndices<D, K> kthvalue(const Tensor<D, K>& x, int64_t k, int64_t dim, KeepDim) {
  return detail::typed_vi<D, K>(kthvalue(x.dyn(), k, dim, true));
}

// quantile and nanquantile: a number q removes the reduced dims (all, or dim) unless keepdim; a
// 1-D q of n values adds a leading dim of size n.
#define EMBER_TYPED_QUANTILE(name)                                                                \
  template <int D>                                                                                \
  Tensor<0> name(const Tensor<D>& x, double q,                                                    \
                 QuantileInterpolation mode = QuantileInterpolation::Linear) {                    \
    return Tensor<0>(name(x.dyn(), q, std::nullopt, false, mode));                                \
  }                                                                                               \
  template <int D>                                                                                \
  Tensor<D> name(const Tensor<D>& x, double q, KeepDim,                                           \
                 QuantileInterpolation mode = QuantileInterpolation::Linear) {                    \
    return Tensor<D>(name(x.dyn(), q, std::nullopt, true, mode));                                 \
  }                                                                                               \
  template <int D>                                                                                \
  Tensor<detail::drop1(D)> name(const Tensor<D>& x, double q, int64_t dim,                        \
                                QuantileInterpolation mode = QuantileInterpolation::Linear) {     \
    return Tensor<detail::drop1(D)>(name(x.dyn(), q, dim, false, mode));                          \
  }                                                                                               \
  template <int D>                                                                                \
  Tensor<D> name(const Tensor<D>& x, double q, int64_t dim, KeepDim,                              \
                 QuantileInterpolation mode = QuantileInterpolation::Linear) {                    \
    return Tensor<D>(name(x.dyn(), q, dim, true, mode));                                          \
  }                                                                                               \
  template <int D>                                                                                \
  Tensor<1> name(const Tensor<D>& x, const Tensor<1>& q,                                          \
                 QuantileInterpolation mode = QuantileInterpolation::Linear) {                    \
    return Tensor<1>(name(x.dyn(), q.dyn(), std::nullopt, false, mode));                          \
  }                                                                                               \
  template <int D>                                                                                \
  Tensor<D + 1> name(const Tensor<D>& x, const Tensor<1>& q, KeepDim,                             \
                     QuantileInterpolation mode = QuantileInterpolation::Linear) {                \
    return Tensor<D + 1>(name(x.dyn(), q.dyn(), std::nullopt, true, mode));                       \
  }                                                                                               \
  template <int D>                                                                                \
  Tensor<detail::drop1(D) + 1> name(const Tensor<D>& x, const Tensor<1>& q, int64_t dim,          \
                                    QuantileInterpolation mode = QuantileInterpolation::Linear) { \
    return Tensor<detail::drop1(D) + 1>(name(x.dyn(), q.dyn(), dim, false, mode));                \
  }                                                                                               \
  template <int D>                                                                                \
  Tensor<D + 1> name(const Tensor<D>& x, const Tensor<1>& q, int64_t dim, KeepDim,                \
                     QuantileInterpolation mode = QuantileInterpolation::Linear) {                \
    return Tensor<D + 1>(name(x.dyn(), q.dyn(), dim, true, mode));                                \
  }
EMBER_TYPED_QUANTILE(quantile)
EMBER_TYPED_QUANTILE(nanquantile)
#undef EMBER_TYPED_QUANTILE

template <int D, class K>
TypedUnique<D, K> unique(const Tensor<D, K>& x, bool sorted = true, bool return_inverse = false,
                         bool return_counts = false) {
  UniqueResult r = unique(x.dyn(), sorted, return_inverse, return_counts);
  return {Tensor<1, K>(std::move(r.values)), Tensor<D, Int>(std::move(r.inverse)),
          Tensor<1, Int>(std::move(r.counts))};
}
template <int D, class K>
TypedUnique<D, K> unique_consecutive(const Tensor<D, K>& x, bool return_inverse = false,
                                     bool return_counts = false) {
  UniqueResult r = unique_consecutive(x.dyn(), return_inverse, return_counts);
  return {Tensor<1, K>(std::move(r.values)), Tensor<D, Int>(std::move(r.inverse)),
          Tensor<1, Int>(std::move(r.counts))};
}

template <int D, class K>
TypedValuesIndices<D, K> cummax(const Tensor<D, K>& x, int64_t dim) {
  return detail::typed_vi<D, K>(cummax(x.dyn(), dim));
}
template <int D, class K>
TypedValuesIndices<D, K> cummin(const Tensor<D, K>& x, int64_t dim) {
  return detail::typed_vi<D, K>(cummin(x.dyn(), dim));
}
/// Int input computes in the default float dtype.
template <int D, class K>
requires(!std::is_same_v<K, Bool>) Tensor<D> logcumsumexp(const Tensor<D, K>& x, int64_t dim) {
  return Tensor<D>(logcumsumexp(x.dyn(), dim));
}

template <int D, class K>
Tensor<0, Int> count_nonzero(const Tensor<D, K>& x) {
  return Tensor<0, Int>(count_nonzero(x.dyn()));
}
template <int D, class K>
Tensor<detail::drop1(D), Int> count_nonzero(const Tensor<D, K>& x, int64_t dim) {
  return Tensor<detail::drop1(D), Int>(count_nonzero(x.dyn(), {dim}));
}
template <int D, class K, size_t N>
Tensor<D - static_cast<int>(N), Int> count_nonzero(const Tensor<D, K>& x,
                                                   const int64_t (&dims)[N]) {
  return Tensor<D - static_cast<int>(N), Int>(count_nonzero(x.dyn(), {dims, dims + N}));
}

template <int D, class K>
TypedMinMax<0, K> aminmax(const Tensor<D, K>& x) {
  MinMax r = aminmax(x.dyn());
  return {Tensor<0, K>(std::move(r.min)), Tensor<0, K>(std::move(r.max))};
}
template <int D, class K>
TypedMinMax<detail::drop1(D), K> aminmax(const Tensor<D, K>& x, int64_t dim) {
  MinMax r = aminmax(x.dyn(), dim, false);
  return {Tensor<detail::drop1(D), K>(std::move(r.min)),
          Tensor<detail::drop1(D), K>(std::move(r.max))};
}
template <int D, class K>
TypedMinMax<D, K> aminmax(const Tensor<D, K>& x, int64_t dim, KeepDim) {
  MinMax r = aminmax(x.dyn(), dim, true);
  return {Tensor<D, K>(std::move(r.min)), Tensor<D, K>(std::move(r.max))};
}

}  // namespace ember
