// Order statistics and scans on the rank-erased tensor, with PyTorch's names and conventions:
// median, quantile, mode, kthvalue, unique, cummax/cummin, logcumsumexp, count_nonzero, aminmax.
// All are composites of sort, gather, cumsum and the elementwise ops, so they run on every
// backend; the ones that select elements (median, kthvalue, mode, cummax, quantile) carry the
// gradient to the selected elements, as PyTorch's do. docs/ARCHITECTURE.md ("Semantics") lists the
// conventions.
#pragma once

#include <optional>

#include "ember/tensor/ops/reduce.hpp"

namespace ember {

/// The lower of the two middle values over all elements (a 0-d tensor); NaN if any is NaN.
/// An empty floating input gives NaN, as in PyTorch.
DynTensor median(const DynTensor& x);
/// Lower median along `dim` and its index; a row with a NaN gives that NaN and its first index.
ValuesIndices median(const DynTensor& x, int64_t dim, bool keepdim = false);
/// As median, ignoring NaN (a row of only NaN gives NaN).
DynTensor nanmedian(const DynTensor& x);
ValuesIndices nanmedian(const DynTensor& x, int64_t dim, bool keepdim = false);

enum class QuantileInterpolation : uint8_t { Linear, Lower, Higher, Midpoint, Nearest };

/// The q-th quantile along `dim` (all elements, flattened, when dim is empty); q in [0, 1].
/// A 1-D `q` adds a leading dim of size q.numel() to the result. NaN anywhere in a row gives NaN.
/// Floating input only (f16 and bf16 compute in f32). A tensor q is range-checked on the host.
DynTensor quantile(const DynTensor& x, double q, std::optional<int64_t> dim = std::nullopt,
                   bool keepdim = false,
                   QuantileInterpolation interpolation = QuantileInterpolation::Linear);
DynTensor quantile(const DynTensor& x, const DynTensor& q,
                   std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
                   QuantileInterpolation interpolation = QuantileInterpolation::Linear);
/// As quantile, ignoring NaN.
DynTensor nanquantile(const DynTensor& x, double q, std::optional<int64_t> dim = std::nullopt,
                      bool keepdim = false,
                      QuantileInterpolation interpolation = QuantileInterpolation::Linear);
DynTensor nanquantile(const DynTensor& x, const DynTensor& q,
                      std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
                      QuantileInterpolation interpolation = QuantileInterpolation::Linear);

/// The most frequent value along `dim` (the smallest of those on a tie) and its last index.
ValuesIndices mode(const DynTensor& x, int64_t dim = -1, bool keepdim = false);
/// The k-th smallest value along `dim` (k counts from 1) and its index.
ValuesIndices kthvalue(const DynTensor& x, int64_t k, int64_t dim = -1, bool keepdim = false);

/// unique's results; `inverse` and `counts` are defined only when asked for.
struct UniqueResult {
  DynTensor values;   // 1-D, sorted ascending
  DynTensor inverse;  // x's shape: the position of each element in `values`
  DynTensor counts;   // 1-D, how often each value occurs
};
/// The distinct elements of x, flattened (torch.unique with dim=None). The result's size
/// depends on the data, so this waits for the device, as in PyTorch. Always sorted (sorted =
/// false is accepted for PyTorch's signature); each NaN counts as distinct. Not differentiable.
UniqueResult unique(const DynTensor& x, bool sorted = true, bool return_inverse = false,
                    bool return_counts = false);
/// Collapses runs of equal consecutive elements of the flattened x.
UniqueResult unique_consecutive(const DynTensor& x, bool return_inverse = false,
                                bool return_counts = false);

/// Running maximum (minimum) along `dim` and its index: the last index on ties, a NaN sticks.
ValuesIndices cummax(const DynTensor& x, int64_t dim);
ValuesIndices cummin(const DynTensor& x, int64_t dim);
/// log(cumsum(exp(x))) along `dim`, without overflow or underflow. Int input computes in the
/// default float dtype.
DynTensor logcumsumexp(const DynTensor& x, int64_t dim);

/// The number of non-zero elements over `dims` (all when empty), as an Int (i64) tensor.
DynTensor count_nonzero(const DynTensor& x, const Dims& dims = {});

struct MinMax {
  DynTensor min;
  DynTensor max;
};
/// amin and amax in one call, over `dim` or all elements; NaN propagates to both.
MinMax aminmax(const DynTensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);

}  // namespace ember
