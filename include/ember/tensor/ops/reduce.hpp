// Reductions, scans and sorting on the rank-erased tensor. `dims` empty = reduce every dim.
#pragma once

#include <vector>

#include "ember/core/ops.hpp"
#include "ember/tensor/dyn_tensor.hpp"

namespace ember {

using Dims = std::vector<int64_t>;

DynTensor reduce(ReduceOp op, const DynTensor& x, const Dims& dims, bool keepdim);
DynTensor sum(const DynTensor& x, const Dims& dims = {}, bool keepdim = false);
DynTensor mean(const DynTensor& x, const Dims& dims = {}, bool keepdim = false);
DynTensor prod(const DynTensor& x, const Dims& dims = {}, bool keepdim = false);
DynTensor amax(const DynTensor& x, const Dims& dims = {}, bool keepdim = false);
DynTensor amin(const DynTensor& x, const Dims& dims = {}, bool keepdim = false);
DynTensor all(const DynTensor& x, const Dims& dims = {}, bool keepdim = false);
DynTensor any(const DynTensor& x, const Dims& dims = {}, bool keepdim = false);
/// Variance with `correction` (1 = unbiased, Bessel's; 0 = population).
DynTensor var(const DynTensor& x, const Dims& dims = {}, int64_t correction = 1,
              bool keepdim = false);
/// Standard deviation. Call it `ember::std(x)` or `x.std()`: unqualified, `std` names namespace
/// std even under `using namespace ember` (C++ has no way around that), as `torch.std` would not.
DynTensor std(const DynTensor& x, const Dims& dims = {}, int64_t correction = 1,
              bool keepdim = false);
/// p-norm (p = 2 default; inf and -inf give max/min of |x|).
DynTensor norm(const DynTensor& x, double p = 2.0, const Dims& dims = {}, bool keepdim = false);
DynTensor logsumexp(const DynTensor& x, const Dims& dims, bool keepdim = false);

/// Values and indices of an arg-reduction or sort.
struct ValuesIndices {
  DynTensor values;
  DynTensor indices;
};
ValuesIndices max(const DynTensor& x, int64_t dim, bool keepdim = false);
ValuesIndices min(const DynTensor& x, int64_t dim, bool keepdim = false);
DynTensor max(const DynTensor& x);  // over all elements (0-d)
DynTensor min(const DynTensor& x);
DynTensor argmax(const DynTensor& x, int64_t dim, bool keepdim = false);
DynTensor argmin(const DynTensor& x, int64_t dim, bool keepdim = false);
DynTensor argmax(const DynTensor& x);  // index into the flattened tensor
DynTensor argmin(const DynTensor& x);

DynTensor cumsum(const DynTensor& x, int64_t dim);
DynTensor cumprod(const DynTensor& x, int64_t dim);
/// Always stable on every backend (ties keep their input order, also when descending), so
/// `stable` is accepted for PyTorch's signature and changes nothing.
ValuesIndices sort(const DynTensor& x, int64_t dim = -1, bool descending = false,
                   bool stable = false);
DynTensor argsort(const DynTensor& x, int64_t dim = -1, bool descending = false,
                  bool stable = false);
/// Always sorted (ties by lower index); sorted = false allows any order in PyTorch, so the sorted
/// result is a valid answer to it too.
ValuesIndices topk(const DynTensor& x, int64_t k, int64_t dim = -1, bool largest = true,
                   bool sorted = true);

}  // namespace ember
