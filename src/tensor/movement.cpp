// Shape and layout ops. Views only rewrite shape, strides and offset; the rest copy through the
// backend's strided copy.
#include "ember/tensor/ops/movement.hpp"

#include <algorithm>
#include <optional>

#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/indexing.hpp"
#include "internal.hpp"
#include "record.hpp"

namespace ember {
namespace {

using detail::make_view;

// A view (or copy) of x recorded as a reshape when x is tracked.
DynTensor reshaped(const DynTensor& x, DynTensor out) {
  detail::record(ops::reshape, {&x}, out);
  return out;
}

// Strides that let `shape` view memory laid out as (old_shape, old_strides), if any exist
// (the algorithm of ATen's computeStride).
std::optional<Strides> view_strides(const Shape& old_shape, const Strides& old_strides,
                                    const Shape& shape) {
  if (old_shape.numel() == 0 || old_shape.rank() == 0) return contiguous_strides(shape);
  Strides st = Shape::filled(shape.rank(), 1);
  int view_d = shape.rank() - 1;
  int64_t chunk_base = old_strides[old_shape.rank() - 1];
  int64_t tensor_numel = 1, view_numel = 1;
  for (int d = old_shape.rank() - 1; d >= 0; --d) {
    tensor_numel *= old_shape[d];
    if (d == 0 || (old_shape[d - 1] != 1 && old_strides[d - 1] != tensor_numel * chunk_base)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        st[view_d] = view_numel * chunk_base;
        view_numel *= shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base = old_strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return st;
}

// Resolves one -1 and checks the element count.
Shape infer_shape(const Shape& shape, int64_t numel, const char* op) {
  Shape out = shape;
  int infer = -1;
  int64_t known = 1;
  for (int i = 0; i < shape.rank(); ++i) {
    if (shape[i] == -1) {
      EMBER_CHECK(infer < 0, "[", op, "] only one dimension can be -1, got shape ", shape);
      infer = i;
    } else {
      EMBER_CHECK(shape[i] >= 0, "[", op, "] invalid dimension ", shape[i], " in shape ", shape);
      // A product that wraps could equal numel and pass the check below.
      EMBER_CHECK(checked_mul(known, shape[i], &known), "[", op, "] shape ", shape,
                  " has more than 2^63 - 1 elements");
    }
  }
  if (infer >= 0) {
    EMBER_CHECK(known != 0 && numel % known == 0, "[", op, "] shape ", shape,
                " is invalid for input of size ", numel);
    out[infer] = numel / known;
  }
  EMBER_CHECK(out.numel() == numel, "[", op, "] shape ", shape, " is invalid for input of size ",
              numel);
  return out;
}

}  // namespace

DynTensor contiguous(const DynTensor& x) {
  detail::check_defined(x, "contiguous");
  return x.is_contiguous() ? x : clone(x);
}

DynTensor reshape(const DynTensor& x, const Shape& shape) {
  detail::check_defined(x, "reshape");
  const Shape s = infer_shape(shape, x.numel(), "reshape");
  if (s == x.shape()) return x;
  if (auto st = view_strides(x.shape(), x.strides(), s)) {
    return reshaped(x, make_view(x, s, *st, x.raw().offset));
  }
  const DynTensor c = clone(detach(x));
  return reshaped(x, make_view(c, s, contiguous_strides(s), c.raw().offset));
}

DynTensor view(const DynTensor& x, const Shape& shape) {
  detail::check_defined(x, "view");
  const Shape s = infer_shape(shape, x.numel(), "view");
  auto st = view_strides(x.shape(), x.strides(), s);
  EMBER_CHECK(st.has_value(), "[view] shape ", shape, " is not compatible with the input's shape ",
              x.shape(), " and strides ", x.strides(), "; use reshape, which copies");
  return reshaped(x, make_view(x, s, *st, x.raw().offset));
}

DynTensor flatten(const DynTensor& x, int64_t start_dim, int64_t end_dim) {
  detail::check_defined(x, "flatten");
  if (x.rank() == 0) {
    wrap_dim(start_dim, 0, "flatten");
    wrap_dim(end_dim, 0, "flatten");
    return reshape(x, Shape{1});
  }
  const int s = wrap_dim(start_dim, x.rank(), "flatten");
  const int e = wrap_dim(end_dim, x.rank(), "flatten");
  EMBER_CHECK(s <= e, "[flatten] start_dim ", start_dim, " comes after end_dim ", end_dim);
  Shape shape;
  for (int i = 0; i < s; ++i) shape.push_back(x.size(i));
  int64_t n = 1;
  for (int i = s; i <= e; ++i) n *= x.size(i);
  shape.push_back(n);
  for (int i = e + 1; i < x.rank(); ++i) shape.push_back(x.size(i));
  return reshape(x, shape);
}

DynTensor squeeze(const DynTensor& x) {
  detail::check_defined(x, "squeeze");
  Shape shape;
  Strides st;
  for (int i = 0; i < x.rank(); ++i) {
    if (x.size(i) == 1) continue;
    shape.push_back(x.size(i));
    st.push_back(x.strides()[i]);
  }
  return reshaped(x, make_view(x, shape, st, x.raw().offset));
}

DynTensor squeeze(const DynTensor& x, int64_t dim) {
  detail::check_defined(x, "squeeze");
  const int d = wrap_dim(dim, x.rank(), "squeeze");
  if (x.rank() == 0 || x.size(d) != 1) return x;
  Shape shape = x.shape();
  Strides st = x.strides();
  shape.erase(d);
  st.erase(d);
  return reshaped(x, make_view(x, shape, st, x.raw().offset));
}

DynTensor unsqueeze(const DynTensor& x, int64_t dim) {
  detail::check_defined(x, "unsqueeze");
  const int d = wrap_dim(dim, x.rank() + 1, "unsqueeze");
  Shape shape = x.shape();
  Strides st = x.strides();
  const int64_t stride = d < x.rank() ? x.size(d) * x.strides()[d] : 1;
  shape.insert(d, 1);
  st.insert(d, stride);
  return reshaped(x, make_view(x, shape, st, x.raw().offset));
}

DynTensor transpose(const DynTensor& x, int64_t dim0, int64_t dim1) {
  detail::check_defined(x, "transpose");
  if (x.rank() == 0) {
    wrap_dim(dim0, 0, "transpose");
    wrap_dim(dim1, 0, "transpose");
    return x;
  }
  const int a = wrap_dim(dim0, x.rank(), "transpose");
  const int b = wrap_dim(dim1, x.rank(), "transpose");
  Shape shape = x.shape();
  Strides st = x.strides();
  std::swap(shape[a], shape[b]);
  std::swap(st[a], st[b]);
  DynTensor out = make_view(x, shape, st, x.raw().offset);
  detail::record(ops::transpose, {&x}, out, std::pair<int, int>(a, b));
  return out;
}

DynTensor permute(const DynTensor& x, const std::vector<int64_t>& dims) {
  detail::check_defined(x, "permute");
  EMBER_CHECK(static_cast<int>(dims.size()) == x.rank(), "[permute] expected ", x.rank(),
              " dims for a tensor of shape ", x.shape(), ", got ", dims.size());
  Shape shape = x.shape();
  Strides st = x.strides();
  uint32_t seen = 0;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int d = wrap_dim(dims[i], x.rank(), "permute");
    EMBER_CHECK(!(seen & (1u << d)), "[permute] dimension ", dims[i],
                " repeats in the permutation");
    seen |= 1u << d;
    shape[static_cast<int>(i)] = x.size(d);
    st[static_cast<int>(i)] = x.strides()[d];
  }
  DynTensor out = make_view(x, shape, st, x.raw().offset);
  detail::record(ops::permute, {&x}, out, dims);
  return out;
}

DynTensor expand(const DynTensor& x, const Shape& shape) {
  detail::check_defined(x, "expand");
  EMBER_CHECK(shape.rank() >= x.rank(), "[expand] cannot expand shape ", x.shape(), " to ", shape,
              ": fewer dimensions");
  const int lead = shape.rank() - x.rank();
  Shape out = shape;
  Strides st = Shape::filled(shape.rank(), 0);
  for (int i = 0; i < shape.rank(); ++i) {
    if (i < lead) {
      EMBER_CHECK(shape[i] >= 0, "[expand] cannot expand shape ", x.shape(), " to ", shape);
      continue;
    }
    const int64_t have = x.size(i - lead);
    if (shape[i] == -1 || shape[i] == have) {
      out[i] = have;
      st[i] = x.strides()[i - lead];
    } else {
      EMBER_CHECK(have == 1 && shape[i] >= 0, "[expand] cannot expand shape ", x.shape(), " to ",
                  shape, " (dimension ", i, ": ", have, " vs ", shape[i], ")");
    }
  }
  if (out == x.shape()) return x;
  // Stride-0 dims make any size cheap to ask for; the count must still fit int64.
  checked_numel(out, "expand");
  DynTensor view = make_view(x, out, st, x.raw().offset);
  detail::record(ops::expand, {&x}, view);
  return view;
}

DynTensor broadcast_to(const DynTensor& x, const Shape& shape) { return expand(x, shape); }

DynTensor slice(const DynTensor& x, int64_t dim, int64_t start, int64_t end, int64_t step) {
  detail::check_defined(x, "slice");
  EMBER_CHECK(x.rank() > 0, "[slice] cannot slice a 0-d tensor");
  const int d = wrap_dim(dim, x.rank(), "slice");
  EMBER_CHECK(step > 0, "[slice] step must be positive, got ", step);
  const int64_t n = x.size(d);
  // Python semantics: negative ends count from the back, out-of-range ends are clamped.
  auto clampi = [n](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + n : i, 0, n); };
  const int64_t s = clampi(start), e = std::max(clampi(end), clampi(start));
  Shape shape = x.shape();
  Strides st = x.strides();
  shape[d] = e == s ? 0 : (e - s - 1) / step + 1;  // no overflow for a step near 2^63
  // Only a step past the dim's size can overflow; the one element taken never uses its stride.
  if (!checked_mul(x.strides()[d], step, &st[d])) st[d] = x.strides()[d];
  DynTensor out = make_view(x, shape, st, x.raw().offset + s * x.strides()[d]);
  detail::record(ops::slice, {&x}, out, SliceParams{d, s, step});
  return out;
}

DynTensor narrow(const DynTensor& x, int64_t dim, int64_t start, int64_t length) {
  detail::check_defined(x, "narrow");
  EMBER_CHECK(x.rank() > 0, "[narrow] cannot narrow a 0-d tensor");
  const int d = wrap_dim(dim, x.rank(), "narrow");
  const int64_t n = x.size(d);
  const int64_t s = start < 0 ? start + n : start;
  EMBER_CHECK(s >= 0 && s <= n && length >= 0 && length <= n - s, "[narrow] start ", start,
              " and length ", length, " are out of range for dimension ", dim, " of size ", n,
              " (shape ", x.shape(), ")");
  return slice(x, d, s, s + length, 1);
}

DynTensor select(const DynTensor& x, int64_t dim, int64_t index) {
  detail::check_defined(x, "select");
  EMBER_CHECK(x.rank() > 0, "[select] cannot select from a 0-d tensor");
  const int d = wrap_dim(dim, x.rank(), "select");
  const int64_t n = x.size(d);
  EMBER_CHECK(index >= -n && index < n, "[select] index ", index, " is out of range for dimension ",
              dim, " of size ", n, " (shape ", x.shape(), ")");
  const int64_t i = index < 0 ? index + n : index;
  Shape shape = x.shape();
  Strides st = x.strides();
  const int64_t offset = x.raw().offset + i * st[d];
  shape.erase(d);
  st.erase(d);
  DynTensor out = make_view(x, shape, st, offset);
  detail::record(ops::select, {&x}, out, SliceParams{d, i, 1});
  return out;
}

DynTensor flip(const DynTensor& x, const std::vector<int64_t>& dims) {
  detail::check_defined(x, "flip");
  const uint32_t mask = dims.empty() ? 0u : detail::dims_mask(dims, x.rank(), "flip");
  // A negative-stride view exists only inside this function: it is copied at once, so users
  // (and BLAS) never see negative strides.
  Strides st = x.strides();
  int64_t offset = x.raw().offset;
  for (int d = 0; d < x.rank(); ++d) {
    if (!(mask & (1u << d)) || x.size(d) == 0) continue;
    offset += (x.size(d) - 1) * st[d];
    st[d] = -st[d];
  }
  DynTensor out = clone(make_view(x, x.shape(), st, offset));
  detail::record(ops::flip, {&x}, out, dims);
  return out;
}

DynTensor repeat(const DynTensor& x, const std::vector<int64_t>& repeats) {
  detail::check_defined(x, "repeat");
  const int r = static_cast<int>(repeats.size());
  EMBER_CHECK(r >= x.rank(), "[repeat] needs at least ", x.rank(),
              " repeat counts for a tensor of shape ", x.shape(), ", got ", r);
  // Built on an untracked x and recorded once at the end.
  const DynTensor xx = reshape(detach(x), [&] {
    Shape s = Shape::filled(r - x.rank(), 1);
    for (int64_t d : x.shape()) s.push_back(d);
    return s;
  }());
  Shape out_shape;
  for (int i = 0; i < r; ++i) {
    EMBER_CHECK(repeats[i] >= 0, "[repeat] repeat counts must be non-negative, got ", repeats[i]);
    int64_t n = 0;
    EMBER_CHECK(checked_mul(repeats[i], xx.size(i), &n), "[repeat] ", repeats[i],
                " repeats of dimension ", i, " of shape ", xx.shape(), " overflow int64");
    out_shape.push_back(n);
  }
  // Checked before any work: the result, and every view below, has this many elements.
  const int64_t total = checked_numel(out_shape, "repeat");
  DynTensor out;
  if (total == 0) {
    out = detail::make_empty(out_shape, x.dtype(), x.device(), "repeat");
  } else if (2 * r > kMaxRank) {
    // Too many dims for the interleaved view below: tile one dim at a time instead.
    out = xx;
    for (int i = 0; i < r; ++i) {
      if (repeats[i] != 1)
        out = cat(std::vector<DynTensor>(static_cast<size_t>(repeats[i]), out), i);
      if (repeats[i] == 0) {
        Shape s = out.shape();
        s[i] = 0;
        out = detail::make_empty(s, out.dtype(), out.device(), "repeat");
      }
    }
  } else {
    // View as [r0, d0, r1, d1, ...] with stride 0 on the repeat dims, then copy.
    Shape shape, st;
    for (int i = 0; i < r; ++i) {
      shape.push_back(repeats[i]);
      st.push_back(0);
      shape.push_back(xx.size(i));
      st.push_back(xx.strides()[i]);
    }
    out = reshape(clone(make_view(xx, shape, st, xx.raw().offset)), out_shape);
  }
  detail::record(ops::repeat, {&x}, out, repeats);
  return out;
}

DynTensor cat(const std::vector<DynTensor>& xs, int64_t dim) {
  EMBER_CHECK(!xs.empty(), "[cat] expects a non-empty list of tensors");
  // Legacy PyTorch behaviour: 1-D empty tensors are skipped whatever the others' shape.
  // The result dtype promotes over every input, skipped ones included (as PyTorch).
  std::vector<const DynTensor*> parts;
  DType dtype = xs[0].defined() ? xs[0].dtype() : DType::f32;
  for (const DynTensor& x : xs) {
    detail::check_defined(x, "cat");
    dtype = promote_types(dtype, x.dtype());
    if (!(x.rank() == 1 && x.numel() == 0)) parts.push_back(&x);
  }
  if (parts.empty()) return detail::make_empty(Shape{0}, dtype, xs[0].device(), "cat");
  const DynTensor& first = *parts[0];
  EMBER_CHECK(first.rank() > 0, "[cat] zero-dimensional tensors cannot be concatenated");
  const int d = wrap_dim(dim, first.rank(), "cat");
  int64_t total = 0;
  for (const DynTensor* p : parts) {
    detail::check_same_device(first, *p, "cat");
    EMBER_CHECK(p->rank() == first.rank(), "[cat] tensors must have the same rank: ", first.shape(),
                " and ", p->shape());
    for (int i = 0; i < first.rank(); ++i) {
      EMBER_CHECK(i == d || p->size(i) == first.size(i),
                  "[cat] sizes must match except in dimension ", d, ": ", first.shape(), " and ",
                  p->shape());
    }
    EMBER_CHECK(checked_add(total, p->size(d), &total), "[cat] the sizes along dimension ", d,
                " add up past 2^63 - 1");
  }
  Shape shape = first.shape();
  shape[d] = total;
  DynTensor out = detail::make_empty(shape, dtype, first.device(), "cat");
  int64_t at = 0;
  for (const DynTensor* p : parts) {
    detail::check_copy(detail::backend_of(out), p->dtype(), dtype, "cat");
    const DynTensor dst = narrow(out, d, at, p->size(d));
    detail::backend_of(out).copy(p->raw(), dst.raw());
    at += p->size(d);
  }
  if (std::any_of(xs.begin(), xs.end(), [](auto& x) { return x.requires_grad(); })) {
    std::vector<const DynTensor*> inputs;
    for (const DynTensor& x : xs) inputs.push_back(&x);
    detail::record(ops::cat, inputs, out, d);
  }
  return out;
}

DynTensor stack(const std::vector<DynTensor>& xs, int64_t dim) {
  EMBER_CHECK(!xs.empty(), "[stack] expects a non-empty list of tensors");
  const int d = wrap_dim(dim, xs[0].rank() + 1, "stack");
  std::vector<DynTensor> parts;
  parts.reserve(xs.size());
  for (const DynTensor& x : xs) {
    detail::check_defined(x, "stack");
    EMBER_CHECK(x.shape() == xs[0].shape(), "[stack] expects tensors of equal shape, got ",
                xs[0].shape(), " and ", x.shape());
    parts.push_back(unsqueeze(x, d));
  }
  return cat(parts, d);
}

std::vector<DynTensor> split(const DynTensor& x, int64_t split_size, int64_t dim) {
  detail::check_defined(x, "split");
  const int d = wrap_dim(dim, x.rank(), "split");
  EMBER_CHECK(split_size > 0 || (split_size == 0 && x.size(d) == 0),
              "[split] split_size must be positive, got ", split_size);
  std::vector<DynTensor> out;
  const int64_t n = x.size(d);
  if (n == 0) return {x};
  for (int64_t s = 0; s < n; s += split_size)
    out.push_back(narrow(x, d, s, std::min(split_size, n - s)));
  return out;
}

std::vector<DynTensor> split(const DynTensor& x, const std::vector<int64_t>& sizes, int64_t dim) {
  detail::check_defined(x, "split");
  const int d = wrap_dim(dim, x.rank(), "split");
  int64_t total = 0;
  for (int64_t s : sizes) {
    EMBER_CHECK(s >= 0, "[split] sizes must be non-negative, got ", s);
    total += s;
  }
  EMBER_CHECK(total == x.size(d), "[split] sizes sum to ", total, " but dimension ", dim,
              " has size ", x.size(d));
  std::vector<DynTensor> out;
  int64_t at = 0;
  for (int64_t s : sizes) {
    out.push_back(narrow(x, d, at, s));
    at += s;
  }
  return out;
}

std::vector<DynTensor> chunk(const DynTensor& x, int64_t chunks, int64_t dim) {
  detail::check_defined(x, "chunk");
  EMBER_CHECK(chunks > 0, "[chunk] number of chunks must be positive, got ", chunks);
  const int d = wrap_dim(dim, x.rank(), "chunk");
  const int64_t n = x.size(d);
  if (n == 0) return std::vector<DynTensor>(static_cast<size_t>(chunks), x);  // empty pieces
  return split(x, (n + chunks - 1) / chunks, d);
}

namespace {

// Source index for each padded position along one dim, made on the device from arange: a huge
// pad is refused by arange's checks instead of growing a host vector.
DynTensor pad_index(int64_t n, int64_t left, int64_t right, PadMode mode, Device device) {
  int64_t end = 0;
  EMBER_CHECK(checked_add(n, right, &end), "[pad] padding ", right, " overflows a dimension of ",
              n);
  const DynTensor i = arange(-left, end, 1, DType::i64, device);
  // Reflect: i < 0 -> -i, i >= n -> 2(n - 1) - i, in one expression valid for -n < i < 2n - 1.
  if (mode == PadMode::Reflect) return sub(n - 1, abs(sub(n - 1, abs(i))));
  // Circular: -n <= i < 2n wraps by one period.
  if (mode == PadMode::Circular) return where(lt(i, 0), add(i, n), where(ge(i, n), sub(i, n), i));
  return clamp(i, 0, n - 1);
}

}  // namespace

DynTensor pad(const DynTensor& x, const std::vector<int64_t>& pads, PadMode mode, double value) {
  detail::check_defined(x, "pad");
  EMBER_CHECK(pads.size() % 2 == 0 && static_cast<int>(pads.size()) / 2 <= x.rank(),
              "[pad] expects an even number of pads, at most twice the rank; got ", pads.size(),
              " for shape ", x.shape());
  const int np = static_cast<int>(pads.size()) / 2;
  if (mode == PadMode::Constant) {
    Shape shape = x.shape();
    DynTensor src = detach(x);  // recorded once below
    for (int i = 0; i < np; ++i) {
      const int d = x.rank() - 1 - i;
      const int64_t l = pads[2 * static_cast<size_t>(i)], r = pads[2 * static_cast<size_t>(i) + 1];
      EMBER_CHECK(checked_add(shape[d], l, &shape[d]) && checked_add(shape[d], r, &shape[d]),
                  "[pad] pads ", l, ", ", r, " overflow dimension ", d, " of shape ", x.shape());
      EMBER_CHECK(shape[d] >= 0, "[pad] pads ", l, ", ", r, " remove more than dimension ", d,
                  " of shape ", x.shape());
      // Negative pads crop.
      src = narrow(src, d, std::max<int64_t>(-l, 0),
                   src.size(d) - std::max<int64_t>(-l, 0) - std::max<int64_t>(-r, 0));
    }
    DynTensor out = full(shape, value, x.dtype(), x.device());
    DynTensor dst = out;
    for (int i = 0; i < np; ++i) {
      const int d = x.rank() - 1 - i;
      dst = narrow(dst, d, std::max<int64_t>(pads[2 * static_cast<size_t>(i)], 0), src.size(d));
    }
    detail::check_copy(detail::backend_of(out), x.dtype(), x.dtype(), "pad");
    detail::backend_of(out).copy(src.raw(), dst.raw());
    detail::record(ops::pad, {&x}, out, pads);
    return out;
  }
  DynTensor out = x;
  for (int i = 0; i < np; ++i) {
    const int d = x.rank() - 1 - i;
    const int64_t l = pads[2 * static_cast<size_t>(i)], r = pads[2 * static_cast<size_t>(i) + 1],
                  n = x.size(d);
    EMBER_CHECK(l >= 0 && r >= 0, "[pad] reflect, replicate and circular pads must be ",
                "non-negative, got ", l, ", ", r);
    if (mode == PadMode::Reflect) {
      EMBER_CHECK(l < n && r < n, "[pad] reflect padding (", l, ", ", r,
                  ") must be smaller than dimension ", d, " of shape ", x.shape());
    } else if (mode == PadMode::Circular) {
      EMBER_CHECK(l <= n && r <= n, "[pad] circular padding (", l, ", ", r,
                  ") wraps around more than once: at most dimension ", d, " of shape ", x.shape());
    } else {
      EMBER_CHECK(n > 0, "[pad] cannot replicate-pad an empty dimension of shape ", x.shape());
    }
    if (l == 0 && r == 0) continue;
    out = as_op("pad", [&] { return index_select(out, d, pad_index(n, l, r, mode, x.device())); });
  }
  return out;
}

}  // namespace ember
