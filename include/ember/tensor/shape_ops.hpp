// Matrix and shape ops on Tensor<D, K>: thin forwards to ember/tensor/ops/shape_linalg.hpp, with
// the result rank fixed at compile time where it is static (diag 1 -> 2 and 2 -> 1, trace -> 0,
// diagonal D -> D - 1). einsum's rank comes from its equation: give it, einsum<2>("ij,jk", a, b).
#pragma once

#include <algorithm>

#include "ember/tensor/ops/shape_linalg.hpp"
#include "ember/tensor/tensor.hpp"

namespace ember {

template <int D, class K>
requires(D >= 2) Tensor<D, K> tril(const Tensor<D, K>& x, int64_t diagonal = 0) {
  return Tensor<D, K>(tril(x.dyn(), diagonal));
}
template <int D, class K>
requires(D >= 2) Tensor<D, K> triu(const Tensor<D, K>& x, int64_t diagonal = 0) {
  return Tensor<D, K>(triu(x.dyn(), diagonal));
}

template <class K>
Tensor<3, K> bmm(const Tensor<3, K>& a, const Tensor<3, K>& b) {
  return Tensor<3, K>(bmm(a.dyn(), b.dyn()));
}
template <int DI, class K>
requires(DI <= 3) Tensor<3, K> baddbmm(const Tensor<DI, K>& input, const Tensor<3, K>& batch1,
                                       const Tensor<3, K>& batch2, const Scalar& beta = 1,
                                       const Scalar& alpha = 1) {
  return Tensor<3, K>(baddbmm(input.dyn(), batch1.dyn(), batch2.dyn(), beta, alpha));
}
template <int DI, class K>
requires(DI <= 2) Tensor<2, K> addmm(const Tensor<DI, K>& input, const Tensor<2, K>& mat1,
                                     const Tensor<2, K>& mat2, const Scalar& beta = 1,
                                     const Scalar& alpha = 1) {
  return Tensor<2, K>(addmm(input.dyn(), mat1.dyn(), mat2.dyn(), beta, alpha));
}

/// einsum<R>(equation, operands...): R is the output rank, checked at run time.
template <int R, class K, int... Ds>
Tensor<R, K> einsum(std::string_view equation, const Tensor<Ds, K>&... operands) {
  return Tensor<R, K>(einsum(equation, std::vector<DynTensor>{operands.dyn()...}));
}

template <int D, class K>
Tensor<D, K> roll(const Tensor<D, K>& x, const std::vector<int64_t>& shifts,
                  const std::vector<int64_t>& dims = {}) {
  return Tensor<D, K>(roll(x.dyn(), shifts, dims));
}

/// Along `dim` the rank stays; without a dim the result is the flattened, repeated tensor.
template <int D, class K>
requires(D >= 1) Tensor<D, K> repeat_interleave(const Tensor<D, K>& x, int64_t repeats,
                                                int64_t dim) {
  return Tensor<D, K>(repeat_interleave(x.dyn(), repeats, dim));
}
template <int D, class K>
Tensor<1, K> repeat_interleave(const Tensor<D, K>& x, int64_t repeats) {
  return Tensor<1, K>(repeat_interleave(x.dyn(), repeats));
}
template <int D, int DR, class K>
requires(D >= 1 && DR <= 1) Tensor<D, K> repeat_interleave(const Tensor<D, K>& x,
                                                           const Tensor<DR, Int>& repeats,
                                                           int64_t dim) {
  return Tensor<D, K>(repeat_interleave(x.dyn(), repeats.dyn(), dim));
}
template <int D, int DR, class K>
requires(DR <= 1) Tensor<1, K> repeat_interleave(const Tensor<D, K>& x,
                                                 const Tensor<DR, Int>& repeats) {
  return Tensor<1, K>(repeat_interleave(x.dyn(), repeats.dyn()));
}
template <int DR>
requires(DR <= 1) Tensor<1, Int> repeat_interleave(const Tensor<DR, Int>& repeats) {
  return Tensor<1, Int>(repeat_interleave(repeats.dyn()));
}

template <int DA, int DB, class K>
Tensor<std::max(DA, DB), K> kron(const Tensor<DA, K>& a, const Tensor<DB, K>& b) {
  return Tensor<std::max(DA, DB), K>(kron(a.dyn(), b.dyn()));
}

template <class K>
Tensor<2, K> diag(const Tensor<1, K>& x, int64_t diagonal = 0) {
  return Tensor<2, K>(diag(x.dyn(), diagonal));
}
template <class K>
Tensor<1, K> diag(const Tensor<2, K>& x, int64_t diagonal = 0) {
  return Tensor<1, K>(diag(x.dyn(), diagonal));
}
template <int D, class K>
requires(D >= 2) Tensor<D - 1, K> diagonal(const Tensor<D, K>& x, int64_t offset = 0,
                                           int64_t dim1 = 0, int64_t dim2 = 1) {
  return Tensor<D - 1, K>(diagonal(x.dyn(), offset, dim1, dim2));
}
template <class K>
Tensor<0, detail::SumKind<K>> trace(const Tensor<2, K>& x) {
  return Tensor<0, detail::SumKind<K>>(trace(x.dyn()));
}

template <int D, class K>
requires(D >= 1) Tensor<D, K> cross(const Tensor<D, K>& a, const Tensor<D, K>& b,
                                    int64_t dim = -1) {
  return Tensor<D, K>(cross(a.dyn(), b.dyn(), dim));
}

namespace linalg {

/// linalg::svd of a Tensor<D>: U and Vh keep the rank, S has one dim less.
template <int D>
struct TypedSVD {
  Tensor<D> U;
  Tensor<D - 1> S;
  Tensor<D> Vh;
};
template <int D>
requires(D >= 2) TypedSVD<D> svd(const Tensor<D>& a, bool full_matrices = true) {
  SVD r = svd(a.dyn(), full_matrices);
  return {Tensor<D>(r.U), Tensor<D - 1>(r.S), Tensor<D>(r.Vh)};
}
template <int D>
requires(D >= 2) Tensor<D - 1> svdvals(const Tensor<D>& a) {
  return Tensor<D - 1>(svdvals(a.dyn()));
}

/// Over every element (0-d), one dim, or N dims; KeepDim keeps the rank.
template <int D>
Tensor<0> vector_norm(const Tensor<D>& x, double ord = 2.0) {
  return Tensor<0>(vector_norm(x.dyn(), ord));
}
template <int D>
requires(D >= 1) Tensor<D - 1> vector_norm(const Tensor<D>& x, double ord, int64_t dim) {
  return Tensor<D - 1>(vector_norm(x.dyn(), ord, {dim}));
}
template <int D, size_t N>
requires(D >= static_cast<int>(N)) Tensor < D - static_cast<int>(N)
> vector_norm(const Tensor<D>& x, double ord, const int64_t (&dims)[N]) {
  return Tensor<D - static_cast<int>(N)>(vector_norm(x.dyn(), ord, {dims, dims + N}));
}
template <int D>
Tensor<D> vector_norm(const Tensor<D>& x, double ord, const std::vector<int64_t>& dims, KeepDim) {
  return Tensor<D>(vector_norm(x.dyn(), ord, dims, true));
}

/// Over the last two dims (Tensor<D - 2>), or any two with KeepDim.
template <int D>
requires(D >= 2) Tensor<D - 2> matrix_norm(const Tensor<D>& x, double ord) {
  return Tensor<D - 2>(matrix_norm(x.dyn(), ord));
}
template <int D>
requires(D >= 2) Tensor<D - 2> matrix_norm(const Tensor<D>& x, std::string_view ord = "fro") {
  return Tensor<D - 2>(matrix_norm(x.dyn(), ord));
}
template <int D>
requires(D >= 2) Tensor<D> matrix_norm(const Tensor<D>& x, double ord,
                                       const std::vector<int64_t>& dims, KeepDim) {
  return Tensor<D>(matrix_norm(x.dyn(), ord, dims, true));
}
template <int D>
requires(D >= 2) Tensor<D> matrix_norm(const Tensor<D>& x, std::string_view ord,
                                       const std::vector<int64_t>& dims, KeepDim) {
  return Tensor<D>(matrix_norm(x.dyn(), ord, dims, true));
}

/// torch.linalg.norm of a whole tensor: the 2-norm of all elements, or `ord` of a vector or
/// matrix (1-D or 2-D input).
template <int D>
Tensor<0> norm(const Tensor<D>& x) {
  return Tensor<0>(linalg::norm(x.dyn()));
}
template <int D>
requires(D == 1 || D == 2) Tensor<0> norm(const Tensor<D>& x, double ord) {
  return Tensor<0>(linalg::norm(x.dyn(), std::optional<double>(ord)));
}
inline Tensor<0> norm(const Tensor<2>& x, std::string_view ord) {
  return Tensor<0>(linalg::norm(x.dyn(), ord));
}

template <int D, class K>
requires(D >= 1) Tensor<D, K> cross(const Tensor<D, K>& a, const Tensor<D, K>& b,
                                    int64_t dim = -1) {
  return Tensor<D, K>(linalg::cross(a.dyn(), b.dyn(), dim));
}

}  // namespace linalg

}  // namespace ember
