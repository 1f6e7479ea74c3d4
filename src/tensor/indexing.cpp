// Indexing front end: shapes are checked here, and index ranges where the indices live
// (Backend::check_range), so kernels can trust them without a host read.
#include "ember/tensor/ops/indexing.hpp"

#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "ember/tensor/ops/reduce.hpp"
#include "ember/tensor/sync.hpp"
#include "indexing_internal.hpp"
#include "internal.hpp"
#include "record.hpp"

namespace ember {
namespace {

std::string index_message(const RangeError& e) {
  return detail::cat("[", e.check.op, "] index ", e.index, " is out of bounds for dimension ",
                     static_cast<int64_t>(e.check.arg0), " with size ",
                     static_cast<int64_t>(e.check.arg1));
}

std::string class_message(const RangeError& e) {
  return detail::cat("[", e.check.op, "] class values must be in [0, ",
                     static_cast<int64_t>(e.check.arg0), "), got ", e.index);
}

}  // namespace

namespace detail {

bool check_index(const DynTensor& index, int64_t size, int dim, const char* op) {
  EMBER_CHECK(is_integral(index.dtype()), "[", op, "] index must be an Int tensor, got ",
              index.dtype());
  RangeCheck check;
  check.lo = 0;
  check.hi = static_cast<double>(size - 1);
  check.op = op;
  check.arg0 = dim;
  check.arg1 = static_cast<double>(size);
  check.message = index_message;
  return check_range(index, check);
}

int check_gather_shapes(const DynTensor& x, int64_t dim, const DynTensor& index,
                        const DynTensor* src, const char* op, bool& ok) {
  detail::check_same_device(x, index, op);
  const int d = wrap_dim(dim, x.rank(), op);
  EMBER_CHECK(index.rank() == x.rank() || (x.rank() == 0 && index.rank() <= 1), "[", op,
              "] index must have the input's rank: input ", x.shape(), ", index ", index.shape());
  for (int i = 0; i < index.rank() && x.rank() > 0; ++i) {
    EMBER_CHECK(i == d || index.size(i) <= x.size(i), "[", op, "] index shape ", index.shape(),
                " is larger than input shape ", x.shape(), " outside dimension ", d);
    if (src) {
      EMBER_CHECK(index.size(i) <= src->size(i), "[", op, "] index shape ", index.shape(),
                  " is larger than src shape ", src->shape());
    }
  }
  ok = detail::check_index(index, x.rank() == 0 ? 1 : x.size(d), d, op);
  return d;
}

}  // namespace detail

namespace {

DynTensor as_i64(const DynTensor& index) { return cast(index, DType::i64); }

DynTensor scatter_impl(ScatterReduce reduce, const DynTensor& x, int64_t dim,
                       const DynTensor& index, const DynTensor& src, const char* op) {
  detail::check_same_device(x, src, op);
  EMBER_CHECK(src.rank() == x.rank(), "[", op, "] src must have the input's rank: input ",
              x.shape(), ", src ", src.shape());
  bool ok = true;
  const int d = detail::check_gather_shapes(x, dim, index, &src, op, ok);
  detail::check_supported(x, OpFamily::Scatter, x.dtype(), op);
  // Computed on untracked copies; recorded once here for scatter (tensor or scalar) and
  // scatter_add.
  DynTensor out = clone(detach(x));
  if (index.numel() > 0 && ok) {
    detail::backend_of(out).scatter(reduce, out.raw(), d, as_i64(index).raw(),
                                    cast(detach(src), x.dtype()).raw());
  }
  detail::record(reduce == ScatterReduce::Add ? ops::scatter_add : ops::scatter, {&x, &src}, out,
                 IndexParams{d, index});
  return out;
}

}  // namespace

DynTensor gather(const DynTensor& x, int64_t dim, const DynTensor& index) {
  bool ok = true;
  const int d = detail::check_gather_shapes(x, dim, index, nullptr, "gather", ok);
  detail::check_supported(x, OpFamily::Gather, x.dtype(), "gather");
  DynTensor out = detail::make_empty(index.shape(), x.dtype(), x.device(), "gather");
  if (!ok) {  // a deferred range error: zeros, and no kernel reads out of bounds
    detail::backend_of(out).fill(out.raw(), Scalar(0));
  } else if (out.numel() > 0) {
    detail::backend_of(x).gather(x.raw(), d, as_i64(index).raw(), out.raw());
  }
  detail::record(ops::gather, {&x}, out, IndexParams{d, index});
  return out;
}

DynTensor scatter(const DynTensor& x, int64_t dim, const DynTensor& index, const DynTensor& src) {
  return scatter_impl(ScatterReduce::None, x, dim, index, src, "scatter");
}

DynTensor scatter(const DynTensor& x, int64_t dim, const DynTensor& index, const Scalar& value) {
  detail::check_defined(x, "scatter");
  detail::check_defined(index, "scatter", "index");
  const DynTensor src = expand(full(Shape{}, value, x.dtype(), x.device()), index.shape());
  return scatter_impl(ScatterReduce::None, x, dim, index, src, "scatter");
}

DynTensor scatter_add(const DynTensor& x, int64_t dim, const DynTensor& index,
                      const DynTensor& src) {
  return scatter_impl(ScatterReduce::Add, x, dim, index, src, "scatter_add");
}

DynTensor index_select(const DynTensor& x, int64_t dim, const DynTensor& index) {
  detail::check_same_device(x, index, "index_select");
  EMBER_CHECK(index.rank() <= 1, "[index_select] index must be 0-d or 1-D, got shape ",
              index.shape());
  const DynTensor xr = x.rank() == 0 ? reshape(detach(x), Shape{1}) : detach(x);
  const int d = wrap_dim(dim, xr.rank(), "index_select");
  detail::check_supported(x, OpFamily::IndexSelect, x.dtype(), "index_select");
  const bool ok = detail::check_index(index, xr.size(d), d, "index_select");
  Shape shape = xr.shape();
  shape[d] = index.numel();
  DynTensor out = detail::make_empty(shape, x.dtype(), x.device(), "index_select");
  if (!ok) {  // a deferred range error
    detail::backend_of(out).fill(out.raw(), Scalar(0));
  } else if (out.numel() > 0) {
    detail::backend_of(x).index_select(
        xr.raw(), d, as_i64(reshape(index, Shape{index.numel()})).raw(), out.raw());
  }
  if (x.rank() == 0) out = reshape(out, Shape{});
  detail::record(ops::index_select, {&x}, out, IndexParams{d, index});
  return out;
}

DynTensor index_add(const DynTensor& x, int64_t dim, const DynTensor& index, const DynTensor& src,
                    const Scalar& alpha) {
  detail::check_same_device(x, index, "index_add");
  detail::check_same_device(x, src, "index_add");
  EMBER_CHECK(index.rank() <= 1, "[index_add] index must be 0-d or 1-D, got shape ", index.shape());
  const int d = wrap_dim(dim, x.rank(), "index_add");
  Shape expect = x.shape();
  if (x.rank() > 0) expect[d] = index.numel();
  EMBER_CHECK(src.shape() == expect, "[index_add] src shape ", src.shape(), " should be ", expect,
              " for input ", x.shape(), " and ", index.numel(), " indices");
  const bool ok = detail::check_index(index, x.rank() == 0 ? 1 : x.size(d), d, "index_add");
  detail::check_supported(x, OpFamily::Scatter, x.dtype(), "index_add");
  // Computed on untracked x and src, and recorded once at the end.
  const DynTensor xd = detach(x), sd = detach(src);
  DynTensor out;
  // alpha = 1 skips the multiply, which also keeps Bool tensors working (as in PyTorch).
  const bool unit = alpha.kind() != KindId::Float ? alpha.to_int() == 1 : alpha.to_double() == 1.0;
  if (src.numel() == 0 || !ok) {
    out = clone(xd);
  } else if (x.rank() == 0) {  // as a 1-element vector
    out = reshape(index_add(reshape(xd, Shape{1}), 0, reshape(index, Shape{-1}),
                            reshape(sd, Shape{-1}), alpha),
                  Shape{});
  } else {
    // index_add is scatter_add with the index broadcast along every other dim.
    out = clone(xd);
    const DynTensor scaled = cast(unit ? sd : mul(sd, alpha), x.dtype());
    const DynTensor idx = as_i64(reshape(index, Shape{index.numel()}));
    Strides st = Shape::filled(x.rank(), 0);
    st[d] = idx.strides()[0];
    const DynTensor idx_full = detail::make_view(idx, src.shape(), st, idx.raw().offset);
    detail::backend_of(out).scatter(ScatterReduce::Add, out.raw(), d, idx_full.raw(), scaled.raw());
  }
  detail::record(ops::index_add, {&x, &src}, out,
                 IndexParams{d, index, unit ? 1.0 : alpha.to_double()});
  return out;
}

DynTensor masked_fill(const DynTensor& x, const DynTensor& mask, const Scalar& value) {
  detail::check_same_device(x, mask, "masked_fill");
  EMBER_CHECK(mask.dtype() == DType::boolean, "[masked_fill] mask must be bool, got ",
              mask.dtype());
  EMBER_CHECK(can_broadcast_to(mask.shape(), x.shape()), "[masked_fill] mask shape ", mask.shape(),
              " must broadcast to the input shape ", x.shape());
  DynTensor out = where(mask, full(Shape{}, value, x.dtype(), x.device()), detach(x));
  detail::record(ops::masked_fill, {&x}, out, mask);
  return out;
}

DynTensor masked_select(const DynTensor& x, const DynTensor& mask) {
  detail::check_same_device(x, mask, "masked_select");
  EMBER_CHECK(mask.dtype() == DType::boolean, "[masked_select] mask must be bool, got ",
              mask.dtype());
  const Shape shape = broadcast_shapes(x.shape(), mask.shape(), "masked_select");
  const DynTensor flat_x = reshape(expand(detach(x), shape), Shape{shape.numel()});
  const DynTensor flat_m = reshape(expand(mask, shape), Shape{shape.numel()});
  const DynTensor idx = nonzero(flat_m);  // [count, 1]
  DynTensor out = index_select(flat_x, 0, reshape(idx, Shape{idx.size(0)}));
  detail::record(ops::masked_select, {&x}, out, mask);
  return out;
}

DynTensor nonzero(const DynTensor& x) {
  detail::check_defined(x, "nonzero");
  detail::check_supported(x, OpFamily::NonZero, x.dtype(), "nonzero");
  detail::host_sync(x.device());  // the result's size is data: the host waits for it
  return DynTensor(detail::backend_of(x).nonzero(x.raw()));
}

DynTensor one_hot(const DynTensor& x, int64_t num_classes) {
  detail::check_defined(x, "one_hot");
  EMBER_CHECK(is_integral(x.dtype()), "[one_hot] expects an Int tensor, got ", x.dtype());
  if (num_classes < 0) {  // inferred from the data: a host read, as in PyTorch
    EMBER_CHECK(x.numel() > 0, "[one_hot] cannot infer the number of classes of an empty tensor");
    num_classes = amax(x).item<int64_t>() + 1;
  }
  RangeCheck check;
  check.hi = static_cast<double>(num_classes - 1);
  check.op = "one_hot";
  check.arg0 = static_cast<double>(num_classes);
  check.message = class_message;
  check_range(x, check);  // a bad class gives a row of zeros: nothing is read
  const DynTensor classes = arange(0, num_classes, 1, DType::i64, x.device());
  return cast(eq(unsqueeze(cast(x, DType::i64), -1), classes), DType::i64);
}

DynTensor slice(const DynTensor& x, const std::vector<Slice>& slices) {
  detail::check_defined(x, "slice");
  EMBER_CHECK(static_cast<int>(slices.size()) <= x.rank(), "[slice] ", slices.size(),
              " slices given for a tensor of shape ", x.shape());
  DynTensor out = x;
  for (size_t d = 0; d < slices.size(); ++d) {
    out = slice(out, static_cast<int64_t>(d), slices[d].start, slices[d].end, slices[d].step);
  }
  return out;
}

DynTensor slice_assign(const DynTensor& x, const std::vector<Slice>& slices,
                       const DynTensor& value) {
  detail::check_same_device(x, value, "slice_assign");
  DynTensor out = clone(detach(x));  // recorded once below
  const DynTensor region = slice(out, slices);
  EMBER_CHECK(can_broadcast_to(value.shape(), region.shape()), "[slice_assign] value shape ",
              value.shape(), " does not broadcast to the region's shape ", region.shape());
  detail::check_copy(detail::backend_of(out), value.dtype(), x.dtype(), "slice_assign");
  detail::backend_of(out).copy(expand(detach(value), region.shape()).raw(), region.raw());
  detail::record(ops::slice_assign, {&x, &value}, out, slices);
  return out;
}

}  // namespace ember
