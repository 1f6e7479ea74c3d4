// Matrix and shape ops on the rank-erased tensor, with PyTorch's names and conventions: the
// triangles, batched and fused products, einsum, roll, repeat_interleave, kron, diagonals,
// norms and cross. Every one but the SVD is a composite of existing ops, so it runs on every
// backend and its gradient comes from its decomposition; the SVD is a primitive with a kernel
// per backend (docs/TENSOR_OPS.md lists them with their differences).
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "ember/tensor/dyn_tensor.hpp"

namespace ember {

/// The lower (tril) or upper (triu) triangle of the last two dims; the rest is zero. `diagonal`
/// shifts the boundary: 0 the main diagonal, > 0 above it, < 0 below it (torch.tril/triu).
DynTensor tril(const DynTensor& x, int64_t diagonal = 0);
DynTensor triu(const DynTensor& x, int64_t diagonal = 0);

/// [B, N, K] x [B, K, M] -> [B, N, M]; no broadcasting (torch.bmm).
DynTensor bmm(const DynTensor& a, const DynTensor& b);
/// beta * input + alpha * bmm(batch1, batch2); input broadcasts to [B, N, M]. With beta = 0 the
/// input is ignored (its NaNs too), as in PyTorch.
DynTensor baddbmm(const DynTensor& input, const DynTensor& batch1, const DynTensor& batch2,
                  const Scalar& beta = 1, const Scalar& alpha = 1);
/// beta * input + alpha * mat1 @ mat2 for 2-D mat1, mat2; input broadcasts to [N, M].
DynTensor addmm(const DynTensor& input, const DynTensor& mat1, const DynTensor& mat2,
                const Scalar& beta = 1, const Scalar& alpha = 1);

/// torch.einsum: "ij,jk->ik", "...ij,...jk", "ii->i", "ii" (implicit output: the labels seen
/// once, in alphabetical order, after the broadcast "..." dims). Size-1 dims broadcast. Three
/// or more operands are contracted pairwise in a greedy order (smallest intermediate first, as
/// opt_einsum's greedy), each pair as one batched matmul.
DynTensor einsum(std::string_view equation, const std::vector<DynTensor>& operands);

/// Rotates elements along `dims` by `shifts` (negative shifts rotate backwards); with no dims,
/// along the flattened tensor, keeping its shape (torch.roll).
DynTensor roll(const DynTensor& x, const std::vector<int64_t>& shifts,
               const std::vector<int64_t>& dims = {});

/// Repeats each element `repeats` times along `dim`; without a dim, of the flattened tensor.
DynTensor repeat_interleave(const DynTensor& x, int64_t repeats,
                            std::optional<int64_t> dim = std::nullopt);
/// Per-element counts: `repeats` is a 0-d or 1-D Int tensor (size 1 broadcasts). The output
/// size depends on its values, so they are read to the host (a synchronisation, as in PyTorch).
DynTensor repeat_interleave(const DynTensor& x, const DynTensor& repeats,
                            std::optional<int64_t> dim = std::nullopt);
/// [0, 0, 1, 2, 2, ...]: each index i repeated repeats[i] times (torch.repeat_interleave(r)).
DynTensor repeat_interleave(const DynTensor& repeats);

/// Kronecker product; the lower-rank operand gets leading size-1 dims (torch.kron).
DynTensor kron(const DynTensor& a, const DynTensor& b);

/// 1-D -> the square matrix with x on diagonal `diagonal`; 2-D -> that diagonal, 1-D (torch.diag).
DynTensor diag(const DynTensor& x, int64_t diagonal = 0);
/// The diagonal of the (dim1, dim2) planes, appended as the last dim (torch.diagonal): a view when
/// the two dims can be merged without copying (a contiguous matrix), else a copy.
DynTensor diagonal(const DynTensor& x, int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1);
/// The sum of a 2-D tensor's main diagonal (Int sums in i64, as sum does).
DynTensor trace(const DynTensor& x);

/// Cross product of 3-vectors along `dim`, with broadcasting (torch.linalg.cross; torch.cross's
/// deprecated default dim, "the first dim of size 3", is not taken).
DynTensor cross(const DynTensor& a, const DynTensor& b, int64_t dim = -1);

namespace linalg {

/// torch.linalg.svd's result: a = U diag(S) Vh, batched over the leading dims.
struct SVD {
  DynTensor U, S, Vh;
};
/// Singular value decomposition of the matrices in the last two dims (torch.linalg.svd), float
/// and double: S descending and non-negative, U and Vh orthonormal; with full_matrices U is
/// [..., M, M] and Vh [..., N, N], else [..., M, K] and [..., K, N], K = min(M, N). A singular
/// vector's sign is not unique: the Cpu and Cuda kernels agree with each other (the same Jacobi
/// rotations), LibTorch's LAPACK may pick the other sign. Gradients as PyTorch's: those of U and
/// Vh are finite only for distinct singular values, and full matrices' extra columns get none.
SVD svd(const DynTensor& a, bool full_matrices = true);
/// The singular values alone (torch.linalg.svdvals), [..., K]; its gradient is always defined.
DynTensor svdvals(const DynTensor& a);

/// sum(|x|^ord)^(1/ord) over `dims` (every dim when empty); ord = inf / -inf give max / min |x|,
/// ord = 0 the count of non-zeros (torch.linalg.vector_norm). Floating tensors only.
DynTensor vector_norm(const DynTensor& x, double ord = 2.0, const std::vector<int64_t>& dims = {},
                      bool keepdim = false);
/// Matrix norm over the two `dims`: ord = 1 / -1 the max / min column sum of |x|, inf / -inf the
/// max / min row sum, 2 / -2 the largest / smallest singular value.
DynTensor matrix_norm(const DynTensor& x, double ord, const std::vector<int64_t>& dims = {-2, -1},
                      bool keepdim = false);
/// ord = "fro" (Frobenius) or "nuc" (nuclear: the sum of the singular values).
DynTensor matrix_norm(const DynTensor& x, std::string_view ord = "fro",
                      const std::vector<int64_t>& dims = {-2, -1}, bool keepdim = false);
/// torch.linalg.norm: with no ord and no dims, the 2-norm of the flattened tensor; one dim (or a
/// 1-D input) means vector_norm, two dims (or a 2-D input) matrix_norm.
DynTensor norm(const DynTensor& x, std::optional<double> ord = std::nullopt,
               const std::optional<std::vector<int64_t>>& dims = std::nullopt,
               bool keepdim = false);
DynTensor norm(const DynTensor& x, std::string_view ord,
               const std::optional<std::vector<int64_t>>& dims = std::nullopt,
               bool keepdim = false);
/// Same as ember::cross.
DynTensor cross(const DynTensor& a, const DynTensor& b, int64_t dim = -1);

}  // namespace linalg

}  // namespace ember
