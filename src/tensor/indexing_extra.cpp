// scatter_reduce (a primitive: the Scatter kernels with *, max, min), and composites of existing
// ops that run on every backend with their gradients: take_along_dim (gather), index_put
// (index_add or scatter on x seen as [indexed positions, rest]), masked_scatter (cumsum +
// index_select + where), searchsorted and bucketize (one stable sort of the merged rows).
#include <algorithm>
#include <cmath>
#include <limits>

#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/indexing.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "ember/tensor/ops/reduce.hpp"
#include "ember/tensor/sync.hpp"
#include "indexing_internal.hpp"
#include "internal.hpp"
#include "record.hpp"

namespace ember {
namespace {

ScatterMode parse_mode(std::string_view reduce) {
  if (reduce == "sum") return ScatterMode::Sum;
  if (reduce == "prod") return ScatterMode::Prod;
  if (reduce == "mean") return ScatterMode::Mean;
  if (reduce == "amax") return ScatterMode::Amax;
  if (reduce == "amin") return ScatterMode::Amin;
  EMBER_FAIL("[scatter_reduce] reduce must be one of sum, prod, mean, amax, amin, got '", reduce,
             "'");
}

ScatterReduce kernel_of(ScatterMode m) {
  switch (m) {
    case ScatterMode::Prod:
      return ScatterReduce::Mul;
    case ScatterMode::Amax:
      return ScatterReduce::Max;
    case ScatterMode::Amin:
      return ScatterReduce::Min;
    default:
      return ScatterReduce::Add;  // sum, and mean's sum
  }
}

// The identity a position starts from when include_self = false: 0, 1, or the dtype's lowest
// (amax) / highest (amin) value.
Scalar identity_of(ScatterMode m, DType dtype) {
  switch (m) {
    case ScatterMode::Prod:
      return Scalar(1);
    case ScatterMode::Amax:
    case ScatterMode::Amin: {
      const bool max = m == ScatterMode::Amax;
      if (dtype == DType::boolean) return Scalar(!max);
      if (is_floating(dtype)) return Scalar(max ? -INFINITY : INFINITY);
      switch (dtype) {
        case DType::i8:
          return Scalar(int64_t{max ? INT8_MIN : INT8_MAX});
        case DType::u8:
          return Scalar(int64_t{max ? 0 : UINT8_MAX});
        case DType::i32:
          return Scalar(int64_t{max ? INT32_MIN : INT32_MAX});
        default:
          return Scalar(max ? INT64_MIN : INT64_MAX);
      }
    }
    default:
      return Scalar(0);
  }
}

// The unrecorded forward of scatter_reduce on valid indices.
DynTensor scatter_reduce_forward(const DynTensor& x, int dim, const DynTensor& index,
                                 const DynTensor& src, ScatterMode mode, bool include_self) {
  const DType dtype = x.dtype();
  const Device dev = x.device();
  DynTensor touched;  // the positions that receive an update
  if (!include_self || mode == ScatterMode::Mean) {
    touched = scatter(zeros(x.shape(), DType::boolean, dev), dim, index, Scalar(true));
  }
  DynTensor out = include_self
                      ? clone(x)
                      : where(touched, full(Shape{}, identity_of(mode, dtype), dtype, dev), x);
  detail::backend_of(out).scatter(kernel_of(mode), out.raw(), dim, index.raw(), src.raw());
  if (mode != ScatterMode::Mean) return out;
  // count = the values reduced at each position (>= 1 where touched, x's own included when
  // include_self); untouched positions divide by 1.
  DynTensor count =
      scatter_add(zeros(x.shape(), dtype, dev), dim, index, ones(index.shape(), dtype, dev));
  if (include_self) count = add(count, 1);
  count = where(touched, count, full(Shape{}, Scalar(1), dtype, dev));
  if (is_floating(dtype)) return div(out, count);
  // Int: rounds down, as PyTorch's (computed in f64: exact below 2^53).
  return cast(floor(div(cast(out, DType::f64), cast(count, DType::f64))), dtype);
}

}  // namespace

DynTensor scatter_reduce(const DynTensor& x, int64_t dim, const DynTensor& index,
                         const DynTensor& src, std::string_view reduce, bool include_self) {
  const char* op = "scatter_reduce";
  detail::check_defined(x, op);
  detail::check_defined(index, op, "index");
  detail::check_defined(src, op, "src");
  const ScatterMode mode = parse_mode(reduce);
  detail::check_same_device(x, src, op);
  EMBER_CHECK(src.dtype() == x.dtype(), "[scatter_reduce] src must have the input's dtype: input ",
              x.dtype(), ", src ", src.dtype());
  EMBER_CHECK(src.rank() == x.rank(), "[scatter_reduce] src must have the input's rank: input ",
              x.shape(), ", src ", src.shape());
  EMBER_CHECK(mode != ScatterMode::Mean || x.dtype() != DType::boolean,
              "[scatter_reduce] reduce 'mean' needs a numeric tensor, got bool");
  bool ok = true;
  const int d = detail::check_gather_shapes(x, dim, index, &src, op, ok);
  detail::check_supported(x, OpFamily::Scatter, x.dtype(), op);
  const DynTensor idx = cast(index, DType::i64);
  DynTensor out;
  if (!ok || index.numel() == 0) {  // nothing lands (or a deferred range error)
    out = clone(detach(x));
  } else if (x.rank() == 0) {  // as a 1-element vector, as scatter's kernels see it
    const DynTensor flat_idx = reshape(idx, Shape{-1});
    const DynTensor flat_src = expand(reshape(detach(src), Shape{1}), flat_idx.shape());
    out = reshape(scatter_reduce_forward(reshape(detach(x), Shape{1}), 0, flat_idx, flat_src, mode,
                                         include_self),
                  Shape{});
  } else {
    out = scatter_reduce_forward(detach(x), d, idx, detach(src), mode, include_self);
  }
  detail::record(ops::scatter_reduce, {&x, &src}, out,
                 ScatterReduceParams{d, idx, mode, include_self});
  return out;
}

DynTensor take_along_dim(const DynTensor& x, const DynTensor& indices, int64_t dim) {
  const char* op = "take_along_dim";
  detail::check_defined(x, op);
  detail::check_defined(indices, op, "indices");
  EMBER_CHECK(is_integral(indices.dtype()), "[take_along_dim] indices must be an Int tensor, got ",
              indices.dtype());
  EMBER_CHECK(x.rank() == indices.rank(),
              "[take_along_dim] input and indices must have the same rank: input ", x.shape(),
              ", indices ", indices.shape());
  if (x.rank() == 0) return gather(x, 0, indices);
  const int d = wrap_dim(dim, x.rank(), op);
  // Broadcast every dim but d; d keeps each operand's own size.
  Shape xs = x.shape(), is = indices.shape();
  xs[d] = 1;
  is[d] = 1;
  Shape both = broadcast_shapes(xs, is, op);
  Shape x_shape = both, i_shape = both;
  x_shape[d] = x.size(d);
  i_shape[d] = indices.size(d);
  return gather(expand(x, x_shape), d, expand(indices, i_shape));
}

DynTensor take_along_dim(const DynTensor& x, const DynTensor& indices) {
  detail::check_defined(x, "take_along_dim");
  detail::check_defined(indices, "take_along_dim", "indices");
  EMBER_CHECK(is_integral(indices.dtype()), "[take_along_dim] indices must be an Int tensor, got ",
              indices.dtype());
  return gather(reshape(x, Shape{x.numel()}), 0, reshape(indices, Shape{indices.numel()}));
}

namespace {

std::string wrapped_index_message(const RangeError& e) {
  return detail::cat("[", e.check.op, "] index ", e.index, " is out of bounds for dimension ",
                     static_cast<int64_t>(e.check.arg0), " with size ",
                     static_cast<int64_t>(e.check.arg1));
}

// Checks idx in [-size, size) where it lives; false when the error was deferred.
bool check_wrapped_index(const DynTensor& idx, int64_t size, int dim, const char* op) {
  RangeCheck check;
  check.lo = -static_cast<double>(size);
  check.hi = static_cast<double>(size - 1);
  check.op = op;
  check.arg0 = dim;
  check.arg1 = static_cast<double>(size);
  check.message = wrapped_index_message;
  return check_range(idx, check);
}

}  // namespace

DynTensor index_put(const DynTensor& x, const std::vector<DynTensor>& indices,
                    const DynTensor& values, bool accumulate) {
  const char* op = "index_put";
  detail::check_defined(x, op);
  detail::check_defined(values, op, "values");
  detail::check_same_device(x, values, op);
  EMBER_CHECK(values.dtype() == x.dtype(), "[index_put] values must have the input's dtype: input ",
              x.dtype(), ", values ", values.dtype());
  // Bool masks become their nonzero coordinates, one Int index per dim they cover.
  std::vector<DynTensor> idx;  // one entry per dim of x from the front (undefined: a full slice)
  for (const DynTensor& t : indices) {
    if (t.defined() && t.dtype() == DType::boolean) {
      detail::check_same_device(x, t, op);
      const int64_t at = static_cast<int64_t>(idx.size());
      EMBER_CHECK(at + t.rank() <= x.rank(), "[index_put] too many indices for a tensor of shape ",
                  x.shape());
      for (int k = 0; k < t.rank(); ++k) {
        EMBER_CHECK(t.size(k) == x.size(static_cast<int>(at) + k), "[index_put] the mask of shape ",
                    t.shape(), " does not match the indexed shape ", x.shape(), " at dim ", at + k);
      }
      const DynTensor nz = nonzero(t);  // [count, rank]: a host read, as in PyTorch
      for (int k = 0; k < t.rank(); ++k) idx.push_back(select(nz, 1, k));
      continue;
    }
    if (t.defined()) {
      detail::check_same_device(x, t, op);
      EMBER_CHECK(is_integral(t.dtype()), "[index_put] indices must be Int or Bool tensors, got ",
                  t.dtype());
    }
    idx.push_back(t);
  }
  EMBER_CHECK(static_cast<int>(idx.size()) <= x.rank(), "[index_put] ", idx.size(),
              " indices given for a tensor of shape ", x.shape());
  std::vector<int> adv;  // the dims indexed by a tensor
  Shape b;               // the index tensors broadcast together
  for (size_t j = 0; j < idx.size(); ++j) {
    if (!idx[j].defined()) continue;
    b = adv.empty() ? idx[j].shape() : broadcast_shapes(b, idx[j].shape(), op);
    adv.push_back(static_cast<int>(j));
  }
  EMBER_CHECK(!adv.empty(), "[index_put] needs at least one index tensor");
  const bool adjacent = adv.back() - adv.front() + 1 == static_cast<int>(adv.size());
  // x permuted to [indexed dims..., other dims...]; the indexed region's shape in PyTorch's
  // layout (b in place when the indexed dims are adjacent, else first).
  std::vector<int64_t> perm;
  Shape rest, region;
  for (int j : adv) perm.push_back(j);
  for (int j = 0; j < x.rank(); ++j) {
    if (std::find(adv.begin(), adv.end(), j) == adv.end()) {
      perm.push_back(j);
      rest.push_back(x.size(j));
    }
  }
  const int lead = adjacent ? adv.front() : 0;  // dims of `rest` that come before b
  for (int j = 0; j < lead; ++j) region.push_back(rest[j]);
  for (int j = 0; j < b.rank(); ++j) region.push_back(b[j]);
  for (int j = lead; j < rest.rank(); ++j) region.push_back(rest[j]);
  EMBER_CHECK(can_broadcast_to(values.shape(), region), "[index_put] values of shape ",
              values.shape(), " do not broadcast to the indexed shape ", region);
  // The linear position among the indexed dims, negative indices wrapped.
  bool ok = true;
  int64_t positions = 1;
  DynTensor lin = zeros(b, DType::i64, x.device());
  for (int j : adv) {
    const int64_t size = x.size(j);
    ok = check_wrapped_index(idx[j], size, j, op) && ok;
    DynTensor i = cast(idx[j], DType::i64);
    i = where(lt(i, 0), add(i, size), i);
    lin = add(mul(lin, size), expand(i, b));
    positions *= size;
  }
  if (!ok || x.numel() == 0 || b.numel() == 0) return clone(x);
  // values as [b..., rest...] -> [n, rest...]
  DynTensor v = expand(values, region);
  if (lead > 0) {
    std::vector<int64_t> vperm;
    for (int j = 0; j < b.rank(); ++j) vperm.push_back(lead + j);
    for (int j = 0; j < lead; ++j) vperm.push_back(j);
    for (int j = lead + b.rank(); j < region.rank(); ++j) vperm.push_back(j);
    v = permute(v, vperm);
  }
  const int64_t n = b.numel();
  Shape flat_v{n}, flat_x{positions};
  for (int j = 0; j < rest.rank(); ++j) {
    flat_v.push_back(rest[j]);
    flat_x.push_back(rest[j]);
  }
  v = reshape(v, flat_v);
  const DynTensor xp = permute(x, perm);
  const DynTensor xf = reshape(xp, flat_x);
  const DynTensor lin_flat = reshape(lin, Shape{n});
  DynTensor yf;
  if (accumulate) {
    yf = index_add(xf, 0, lin_flat, v);
  } else {
    Shape one = Shape::filled(flat_v.rank(), 1);
    one[0] = n;
    yf = scatter(xf, 0, expand(reshape(lin_flat, one), flat_v), v);
  }
  // Back to x's layout.
  std::vector<int64_t> inv(perm.size());
  for (size_t j = 0; j < perm.size(); ++j)
    inv[static_cast<size_t>(perm[j])] = static_cast<int64_t>(j);
  return contiguous(permute(reshape(yf, xp.shape()), inv));
}

namespace {

std::string masked_scatter_message(const RangeError& e) {
  return detail::cat("[masked_scatter] the mask selects at least ", e.index + 1,
                     " elements, but source has only ", static_cast<int64_t>(e.check.arg1));
}

}  // namespace

DynTensor masked_scatter(const DynTensor& x, const DynTensor& mask, const DynTensor& source) {
  const char* op = "masked_scatter";
  detail::check_defined(x, op);
  detail::check_defined(mask, op, "mask");
  detail::check_defined(source, op, "source");
  detail::check_same_device(x, mask, op);
  detail::check_same_device(x, source, op);
  EMBER_CHECK(mask.dtype() == DType::boolean, "[masked_scatter] mask must be bool, got ",
              mask.dtype());
  EMBER_CHECK(source.dtype() == x.dtype(),
              "[masked_scatter] source must have the input's dtype: ", "input ", x.dtype(),
              ", source ", source.dtype());
  // x and mask broadcast together, as PyTorch's out-of-place masked_scatter.
  const Shape shape = broadcast_shapes(x.shape(), mask.shape(), op);
  const int64_t n = shape.numel(), available = source.numel();
  if (n == 0) return clone(expand(x, shape));
  const DynTensor m = reshape(expand(mask, shape), Shape{n});
  // Element i of x takes source[number of true mask values before i].
  const DynTensor pos = sub(cumsum(cast(m, DType::i64), 0), 1);
  RangeCheck check;
  check.lo = -1;
  check.hi = static_cast<double>(available - 1);
  check.op = op;
  check.arg1 = static_cast<double>(available);
  check.message = masked_scatter_message;
  if (!check_range(where(m, pos, Scalar(-1)), check) || available == 0) {
    return clone(expand(x, shape));
  }
  const DynTensor taken =
      index_select(reshape(source, Shape{available}), 0, where(m, pos, Scalar(0)));
  return where(mask, reshape(taken, shape), x);
}

DynTensor searchsorted(const DynTensor& sorted_sequence, const DynTensor& values, bool out_int32,
                       bool right, std::string_view side, const DynTensor& sorter) {
  const char* op = "searchsorted";
  detail::check_defined(sorted_sequence, op, "sorted_sequence");
  detail::check_defined(values, op, "values");
  detail::check_same_device(sorted_sequence, values, op);
  EMBER_CHECK(side.empty() || side == "left" || side == "right",
              "[searchsorted] side must be 'left' or 'right', got '", side, "'");
  EMBER_CHECK(!(right && side == "left"),
              "[searchsorted] side and right can't be set to opposites, got side 'left' and "
              "right = true");
  right = right || side == "right";
  const DynTensor& seq_in = sorted_sequence;
  EMBER_CHECK(seq_in.rank() >= 1, "[searchsorted] sorted_sequence must have at least one dim, got ",
              seq_in.shape());
  const bool one_d = seq_in.rank() == 1;
  if (!one_d) {
    bool lead_match = values.rank() == seq_in.rank();
    for (int k = 0; lead_match && k + 1 < seq_in.rank(); ++k)
      lead_match = seq_in.size(k) == values.size(k);
    EMBER_CHECK(lead_match, "[searchsorted] the leading dims of sorted_sequence ", seq_in.shape(),
                " and values ", values.shape(), " must match (or sorted_sequence be 1-D)");
  }
  const DType out_dtype = out_int32 ? DType::i32 : DType::i64;
  const int64_t n = seq_in.size(seq_in.rank() - 1);
  const int64_t rows = one_d ? 1 : seq_in.numel() / std::max<int64_t>(n, 1);
  const int64_t m = one_d ? values.numel() : (values.rank() ? values.size(values.rank() - 1) : 1);
  DynTensor seq = reshape(detach(seq_in), Shape{rows, n});
  if (sorter.defined()) {
    detail::check_same_device(seq_in, sorter, op);
    EMBER_CHECK(sorter.shape() == seq_in.shape(), "[searchsorted] sorter shape ", sorter.shape(),
                " must be sorted_sequence's ", seq_in.shape());
    const bool ok = detail::check_index(sorter, n, seq_in.rank() - 1, op);
    if (ok && n > 0) seq = gather(seq, 1, reshape(cast(sorter, DType::i64), Shape{rows, n}));
  }
  if (values.numel() == 0 || n == 0 || rows == 0) {
    return zeros(values.shape(), out_dtype, values.device());
  }
  const DType common = promote_types(seq.dtype(), values.dtype());
  seq = cast(seq, common);
  const DynTensor vals = cast(reshape(detach(values), Shape{rows, m}), common);
  // Merge: ties keep the earlier operand first (stable sort), so the values go after equal
  // sequence elements for "right" and before them for "left"; a value's answer is the number of
  // sequence elements sorted before it.
  const Device dev = values.device();
  const DynTensor is_seq = ones(Shape{rows, n}, DType::i64, dev);
  const DynTensor not_seq = zeros(Shape{rows, m}, DType::i64, dev);
  const DynTensor merged = right ? cat({seq, vals}, 1) : cat({vals, seq}, 1);
  const DynTensor flags = right ? cat({is_seq, not_seq}, 1) : cat({not_seq, is_seq}, 1);
  const DynTensor order = argsort(merged, 1, false, /*stable=*/true);
  const DynTensor before = cumsum(gather(flags, 1, order), 1);
  const DynTensor placed = scatter(zeros(Shape{rows, n + m}, DType::i64, dev), 1, order, before);
  const DynTensor answer = right ? slice(placed, 1, n, n + m) : slice(placed, 1, 0, m);
  return cast(reshape(answer, values.shape()), out_dtype);
}

DynTensor searchsorted(const DynTensor& sorted_sequence, const Scalar& value, bool out_int32,
                       bool right, std::string_view side, const DynTensor& sorter) {
  detail::check_defined(sorted_sequence, "searchsorted", "sorted_sequence");
  EMBER_CHECK(sorted_sequence.rank() == 1,
              "[searchsorted] a scalar value needs a 1-D sorted_sequence, got ",
              sorted_sequence.shape());
  const DType dtype = value.kind() == KindId::Float && !is_floating(sorted_sequence.dtype())
                          ? default_dtype(KindId::Float)
                          : sorted_sequence.dtype();
  return searchsorted(sorted_sequence, full(Shape{}, value, dtype, sorted_sequence.device()),
                      out_int32, right, side, sorter);
}

DynTensor bucketize(const DynTensor& x, const DynTensor& boundaries, bool out_int32, bool right) {
  detail::check_defined(boundaries, "bucketize", "boundaries");
  EMBER_CHECK(boundaries.rank() == 1, "[bucketize] boundaries must be 1-D, got ",
              boundaries.shape());
  return searchsorted(boundaries, x, out_int32, right);
}

DynTensor bucketize(const Scalar& x, const DynTensor& boundaries, bool out_int32, bool right) {
  detail::check_defined(boundaries, "bucketize", "boundaries");
  EMBER_CHECK(boundaries.rank() == 1, "[bucketize] boundaries must be 1-D, got ",
              boundaries.shape());
  return searchsorted(boundaries, x, out_int32, right);
}

}  // namespace ember
