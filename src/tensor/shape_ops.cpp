// tril/triu, roll, repeat_interleave, kron and the diagonals: composites of movement, indexing
// and elementwise ops, so they run on every backend and autodiff differentiates their parts.
#include <algorithm>

#include "ember/autodiff/autodiff.hpp"
#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/indexing.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "ember/tensor/ops/reduce.hpp"
#include "ember/tensor/ops/shape_linalg.hpp"
#include "internal.hpp"

namespace ember {
namespace {

// col - row for an [n, m] grid, in i64 on `device`.
DynTensor col_minus_row(int64_t n, int64_t m, Device device) {
  const DynTensor rows = unsqueeze(arange(0, n, 1, DType::i64, device), 1);
  const DynTensor cols = unsqueeze(arange(0, m, 1, DType::i64, device), 0);
  return sub(cols, rows);
}

// Zero of x's own dtype (a Scalar 0 would promote a bool tensor to i64).
Scalar zero_of(const DynTensor& x) {
  return x.dtype() == DType::boolean ? Scalar(false) : Scalar(0);
}

DynTensor triangle(const DynTensor& x, int64_t diagonal, bool lower, const char* op) {
  detail::check_defined(x, op);
  EMBER_CHECK(x.rank() >= 2, "[", op, "] expects a tensor with at least 2 dims, got shape ",
              x.shape());
  const DynTensor d = col_minus_row(x.size(-2), x.size(-1), x.device());
  // where, not a product with a 0/1 mask: an inf or NaN outside the triangle becomes 0.
  const DynTensor keep = lower ? le(d, diagonal) : ge(d, diagonal);
  return as_op(op, [&] { return where(keep, x, zero_of(x)); });
}

// Rank-0 inputs act as [1] where PyTorch allows a dim on them.
DynTensor at_least_1d(const DynTensor& x) { return x.rank() == 0 ? reshape(x, Shape{1}) : x; }

}  // namespace

DynTensor tril(const DynTensor& x, int64_t diagonal) { return triangle(x, diagonal, true, "tril"); }
DynTensor triu(const DynTensor& x, int64_t diagonal) {
  return triangle(x, diagonal, false, "triu");
}

DynTensor roll(const DynTensor& x, const std::vector<int64_t>& shifts,
               const std::vector<int64_t>& dims) {
  detail::check_defined(x, "roll");
  if (dims.empty()) {
    EMBER_CHECK(shifts.size() == 1, "[roll] without dims takes one shift, got ", shifts.size());
    return reshape(roll(flatten(x), shifts, {0}), x.shape());
  }
  EMBER_CHECK(shifts.size() == dims.size(),
              "[roll] shifts and dims differ in length: ", shifts.size(), " shifts, ", dims.size(),
              " dims");
  DynTensor y = x;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int d = wrap_dim(dims[i], x.rank(), "roll");
    const int64_t n = x.size(d);
    if (n == 0) continue;
    const int64_t s = ((shifts[i] % n) + n) % n;  // a negative shift rotates backwards
    if (s == 0) continue;
    y = as_op("roll", [&] { return cat({slice(y, d, n - s, n), slice(y, d, 0, n - s)}, d); });
  }
  return y;
}

DynTensor repeat_interleave(const DynTensor& x, int64_t repeats, std::optional<int64_t> dim) {
  detail::check_defined(x, "repeat_interleave");
  EMBER_CHECK(repeats >= 0, "[repeat_interleave] repeats must be non-negative, got ", repeats);
  const DynTensor xs = dim ? at_least_1d(x) : flatten(x);
  const int d = wrap_dim(dim.value_or(0), xs.rank(), "repeat_interleave");
  // [.., n, ..] -> [.., n, r, ..] (a broadcast view) -> [.., n * r, ..].
  Shape expanded = unsqueeze(xs, d + 1).shape();
  expanded[d + 1] = repeats;
  Shape out = xs.shape();
  out[d] = xs.size(d) * repeats;
  return as_op("repeat_interleave",
               [&] { return reshape(expand(unsqueeze(xs, d + 1), expanded), out); });
}

DynTensor repeat_interleave(const DynTensor& repeats) {
  detail::check_defined(repeats, "repeat_interleave");
  EMBER_CHECK(repeats.rank() <= 1 && kind_of(repeats.dtype()) == KindId::Int,
              "[repeat_interleave] repeats must be a 0-d or 1-D Int tensor, got ", repeats.dtype(),
              " of shape ", repeats.shape());
  const std::vector<int64_t> r = repeats.to_vector<int64_t>();  // the output size needs them
  std::vector<int64_t> index;
  for (size_t i = 0; i < r.size(); ++i) {
    EMBER_CHECK(r[i] >= 0, "[repeat_interleave] repeats must be non-negative, got ", r[i],
                " at index ", i);
    index.insert(index.end(), static_cast<size_t>(r[i]), static_cast<int64_t>(i));
  }
  const Shape shape{static_cast<int64_t>(index.size())};
  return to_device(from_data(TensorData::from(index, shape)), repeats.device());
}

DynTensor repeat_interleave(const DynTensor& x, const DynTensor& repeats,
                            std::optional<int64_t> dim) {
  detail::check_defined(x, "repeat_interleave");
  detail::check_defined(repeats, "repeat_interleave", "repeats");
  detail::check_same_device(x, repeats, "repeat_interleave");
  const DynTensor xs = dim ? at_least_1d(x) : flatten(x);
  const int d = wrap_dim(dim.value_or(0), xs.rank(), "repeat_interleave");
  const int64_t n = xs.size(d);
  EMBER_CHECK(repeats.rank() <= 1 && (repeats.numel() == 1 || repeats.numel() == n),
              "[repeat_interleave] repeats must have 1 or ", n,
              " elements (the size of the repeated dim), got shape ", repeats.shape());
  if (repeats.numel() == 1 && n != 1) {
    EMBER_CHECK(kind_of(repeats.dtype()) == KindId::Int,
                "[repeat_interleave] repeats must be an Int tensor, got ", repeats.dtype());
    return repeat_interleave(x, repeats.to_vector<int64_t>()[0], dim);
  }
  const DynTensor index = repeat_interleave(reshape(repeats, Shape{-1}));
  return as_op("repeat_interleave", [&] { return index_select(xs, d, index); });
}

DynTensor kron(const DynTensor& a, const DynTensor& b) {
  detail::check_defined(a, "kron");
  detail::check_defined(b, "kron");
  detail::check_same_device(a, b, "kron");
  const int r = std::max(a.rank(), b.rank());
  // a as [a0, 1, a1, 1, ...] times b as [1, b0, 1, b1, ...], then pairs of dims merged.
  Shape as, bs, out;
  for (int i = 0; i < r; ++i) {
    const int ia = i - (r - a.rank()), ib = i - (r - b.rank());
    const int64_t sa = ia >= 0 ? a.size(ia) : 1, sb = ib >= 0 ? b.size(ib) : 1;
    as.push_back(sa);
    as.push_back(1);
    bs.push_back(1);
    bs.push_back(sb);
    out.push_back(sa * sb);
  }
  return as_op("kron", [&] { return reshape(mul(reshape(a, as), reshape(b, bs)), out); });
}

DynTensor diagonal(const DynTensor& x, int64_t offset, int64_t dim1, int64_t dim2) {
  detail::check_defined(x, "diagonal");
  EMBER_CHECK(x.rank() >= 2, "[diagonal] expects a tensor with at least 2 dims, got shape ",
              x.shape());
  const int d1 = wrap_dim(dim1, x.rank(), "diagonal"), d2 = wrap_dim(dim2, x.rank(), "diagonal");
  EMBER_CHECK(d1 != d2, "[diagonal] dim1 and dim2 cannot be the same dim, got ", dim1, " and ",
              dim2, " for shape ", x.shape());
  const int64_t n = x.size(d1), m = x.size(d2);
  const int64_t len =
      std::max<int64_t>(0, offset >= 0 ? std::min(n, m - offset) : std::min(n + offset, m));
  return as_op("diagonal", [&] {
    // The other dims, then (dim1, dim2) merged into one: element (i, i + offset) of each plane
    // sits every m + 1 elements of the merged dim, from `offset` (or -offset rows down).
    std::vector<int64_t> order;
    for (int i = 0; i < x.rank(); ++i) {
      if (i != d1 && i != d2) order.push_back(i);
    }
    order.push_back(d1);
    order.push_back(d2);
    const DynTensor planes = flatten(permute(x, order), -2, -1);
    if (len == 0) return slice(planes, -1, 0, 0);
    const int64_t start = offset >= 0 ? offset : -offset * m;
    return slice(planes, -1, start, start + (len - 1) * (m + 1) + 1, m + 1);
  });
}

DynTensor diag(const DynTensor& x, int64_t diagonal_) {
  detail::check_defined(x, "diag");
  EMBER_CHECK(x.rank() == 1 || x.rank() == 2, "[diag] expects a 1-D or 2-D tensor, got shape ",
              x.shape());
  if (x.rank() == 2) return as_op("diag", [&] { return diagonal(x, diagonal_, 0, 1); });
  const int64_t n = x.size(0), k = diagonal_ < 0 ? -diagonal_ : diagonal_;
  return as_op("diag", [&] {
    // x[j] at (i, j) where i == j, else 0; then padded so the diagonal moves by `diagonal`.
    const DynTensor on = eq(col_minus_row(n, n, x.device()), 0);
    const DynTensor square = where(on, unsqueeze(x, 0), zero_of(x));
    if (k == 0) return square;
    return diagonal_ > 0 ? pad(square, {k, 0, 0, k}) : pad(square, {0, k, k, 0});
  });
}

DynTensor trace(const DynTensor& x) {
  detail::check_defined(x, "trace");
  EMBER_CHECK(x.rank() == 2, "[trace] expects a 2-D tensor, got shape ", x.shape());
  return as_op("trace", [&] { return sum(diagonal(x, 0, 0, 1)); });
}

}  // namespace ember
