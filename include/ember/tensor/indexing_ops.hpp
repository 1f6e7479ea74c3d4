// scatter_reduce, take_along_dim, index_put, masked_scatter, searchsorted and bucketize on
// Tensor<D, K>: thin forwards to ember/tensor/ops/indexing.hpp (semantics documented there).
#pragma once

#include <string_view>
#include <vector>

#include "ember/tensor/ops/indexing.hpp"
#include "ember/tensor/tensor.hpp"

namespace ember {

template <int D, class K>
Tensor<D, K> scatter_reduce(const Tensor<D, K>& x, int64_t dim, const Tensor<D, Int>& index,
                            const Tensor<D, K>& src, std::string_view reduce,
                            bool include_self = true) {
  return Tensor<D, K>(scatter_reduce(x.dyn(), dim, index.dyn(), src.dyn(), reduce, include_self));
}

template <int D, class K>
Tensor<D, K> take_along_dim(const Tensor<D, K>& x, const Tensor<D, Int>& indices, int64_t dim) {
  return Tensor<D, K>(take_along_dim(x.dyn(), indices.dyn(), dim));
}
template <int D, int E, class K>
Tensor<1, K> take_along_dim(const Tensor<D, K>& x, const Tensor<E, Int>& indices) {
  return Tensor<1, K>(take_along_dim(x.dyn(), indices.dyn()));
}

/// indices as rank-erased tensors (Int, Bool, or undefined for a full slice), as PyTorch's list.
template <int D, int E, class K>
Tensor<D, K> index_put(const Tensor<D, K>& x, const std::vector<DynTensor>& indices,
                       const Tensor<E, K>& values, bool accumulate = false) {
  return Tensor<D, K>(index_put(x.dyn(), indices, values.dyn(), accumulate));
}

/// The result keeps x's rank (mask may broadcast x's sizes of 1, not add dims).
template <int D, int M, int S, class K>
Tensor<D, K> masked_scatter(const Tensor<D, K>& x, const Tensor<M, Bool>& mask,
                            const Tensor<S, K>& source) {
  return Tensor<D, K>(masked_scatter(x.dyn(), mask.dyn(), source.dyn()));
}

/// The result has values' rank (Int: i64, or i32 with out_int32).
template <int D, int E, class K>
Tensor<E, Int> searchsorted(const Tensor<D, K>& sorted_sequence, const Tensor<E, K>& values,
                            bool out_int32 = false, bool right = false, std::string_view side = {},
                            const Tensor<D, Int>& sorter = {}) {
  return Tensor<E, Int>(
      searchsorted(sorted_sequence.dyn(), values.dyn(), out_int32, right, side, sorter.dyn()));
}

template <int D, class K>
Tensor<D, Int> bucketize(const Tensor<D, K>& x, const Tensor<1, K>& boundaries,
                         bool out_int32 = false, bool right = false) {
  return Tensor<D, Int>(bucketize(x.dyn(), boundaries.dyn(), out_int32, right));
}

}  // namespace ember
