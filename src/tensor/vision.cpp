// Vision and distance ops as composites (include/ember/tensor/ops/vision.hpp): reductions and
// elementwise arithmetic for the distances, reshape + permute for pixel_shuffle, one
// index_select / index_add over the flattened padded planes for unfold / fold. No kernel of their
// own: every backend runs them and autodiff differentiates them.
#include "ember/tensor/ops/vision.hpp"

#include <cmath>
#include <string>

#include "ember/autodiff/autodiff.hpp"
#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/indexing.hpp"
#include "ember/tensor/ops/linalg.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "ember/tensor/ops/reduce.hpp"
#include "internal.hpp"

namespace ember {
namespace {

std::string list(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

void check_float(const DynTensor& x, const char* op, const char* what = "input") {
  detail::check_defined(x, op, what);
  EMBER_CHECK(is_floating(x.dtype()), "[", op, "] needs a Float ", what, ", got ", x.dtype());
}

// sqrt(r) where r > 0, else 0, with a zero gradient there (PyTorch's cdist backward masks the
// zero distances; sqrt's own gradient at 0 is infinite).
DynTensor safe_sqrt(const DynTensor& r) {
  const DynTensor pos = gt(r, 0.0);
  return where(pos, sqrt(where(pos, r, 1.0)), 0.0);
}

// PyTorch's int-or-pair argument of unfold / fold: one value or one per spatial dim, each >= min.
std::vector<int64_t> pair_arg(const char* op, const char* what, const SpatialArg& v, int64_t min) {
  EMBER_CHECK(v.size() == 1 || v.size() == 2, "[", op, "] ", what, " needs 1 or 2 values, got ",
              list(v));
  std::vector<int64_t> out{v[0], v.size() == 1 ? v[0] : v[1]};
  for (int64_t e : out) {
    EMBER_CHECK(e >= min, "[", op, "] ", what, " must be at least ", min, ", got ", list(v));
  }
  return out;
}

// The flat index, in a padded plane of width `wp`, of each (kernel offset, block) pair: [K * L]
// with K = kh * kw offsets (row-major) and L = oh * ow blocks, as im2col orders them. Built from
// two short host vectors added on the device.
DynTensor block_index(const std::vector<int64_t>& k, const std::vector<int64_t>& dil,
                      const std::vector<int64_t>& st, int64_t oh, int64_t ow, int64_t wp,
                      Device device) {
  std::vector<int64_t> koff, loff;
  for (int64_t i = 0; i < k[0]; ++i) {
    for (int64_t j = 0; j < k[1]; ++j) koff.push_back(i * dil[0] * wp + j * dil[1]);
  }
  for (int64_t i = 0; i < oh; ++i) {
    for (int64_t j = 0; j < ow; ++j) loff.push_back(i * st[0] * wp + j * st[1]);
  }
  const int64_t nk = static_cast<int64_t>(koff.size()), nl = static_cast<int64_t>(loff.size());
  const DynTensor a = from_data(TensorData::from(koff, Shape{nk, 1}), device);
  const DynTensor b = from_data(TensorData::from(loff, Shape{1, nl}), device);
  return reshape(add(a, b), Shape{nk * nl});
}

// Number of sliding blocks along one dim, or an error naming the op when there is none.
int64_t blocks(const char* op, int64_t size, int64_t k, int64_t d, int64_t p, int64_t s) {
  const int64_t span = size + 2 * p - d * (k - 1) - 1;
  EMBER_CHECK(span >= 0, "[", op, "] kernel ", k, " (dilation ", d, ") does not fit in size ", size,
              " padded by ", p, " on each side");
  return span / s + 1;
}

}  // namespace

DynTensor normalize(const DynTensor& x, double p, int64_t dim, double eps) {
  check_float(x, "normalize");
  const int d = wrap_dim(dim, x.rank(), "normalize");
  return as_op("normalize", [&] { return div(x, clamp_min(norm(x, p, {d}, true), eps)); });
}

DynTensor cosine_similarity(const DynTensor& x1, const DynTensor& x2, int64_t dim, double eps) {
  check_float(x1, "cosine_similarity", "x1");
  check_float(x2, "cosine_similarity", "x2");
  const Shape shape = broadcast_shapes(x1.shape(), x2.shape(), "cosine_similarity");
  const int d = wrap_dim(dim, shape.rank(), "cosine_similarity");
  return as_op("cosine_similarity", [&] {
    const DynTensor a = expand(x1, shape), b = expand(x2, shape);
    // The clamp changes the value only: its gradient passes through as if it were not there.
    auto unit = [&](const DynTensor& v) {
      const DynTensor s = sum(square(v), {d}, true);
      return div(v, sqrt(add(s, detach(sub(clamp_min(s, eps * eps), s)))));
    };
    return sum(mul(unit(a), unit(b)), {d}, false);
  });
}

DynTensor pairwise_distance(const DynTensor& x1, const DynTensor& x2, double p, double eps,
                            bool keepdim) {
  check_float(x1, "pairwise_distance", "x1");
  check_float(x2, "pairwise_distance", "x2");
  const Shape shape = broadcast_shapes(x1.shape(), x2.shape(), "pairwise_distance");
  EMBER_CHECK(shape.rank() >= 1, "[pairwise_distance] needs inputs of rank 1 or more, got ",
              x1.shape(), " and ", x2.shape());
  return as_op("pairwise_distance",
               [&] { return norm(add(sub(x1, x2), eps), p, {shape.rank() - 1}, keepdim); });
}

DynTensor cdist(const DynTensor& x1, const DynTensor& x2, double p) {
  check_float(x1, "cdist", "x1");
  check_float(x2, "cdist", "x2");
  EMBER_CHECK(x1.rank() >= 2 && x2.rank() >= 2, "[cdist] needs x1 [..., P, M] and x2 [..., R, M], ",
              "got ", x1.shape(), " and ", x2.shape());
  EMBER_CHECK(x1.size(-1) == x2.size(-1), "[cdist] x1 and x2 must have the same number of ",
              "columns, got ", x1.shape(), " and ", x2.shape());
  EMBER_CHECK(p >= 0.0, "[cdist] p must be non-negative, got ", p);
  Shape b1 = x1.shape(), b2 = x2.shape();
  const int64_t rows1 = x1.size(-2), rows2 = x2.size(-2), m = x1.size(-1);
  b1.resize(b1.rank() - 2);
  b2.resize(b2.rank() - 2);
  Shape batch = broadcast_shapes(b1, b2, "cdist");
  Shape s1 = batch, s2 = batch, out = batch;
  s1.push_back(rows1);
  s1.push_back(m);
  s2.push_back(rows2);
  s2.push_back(m);
  out.push_back(rows1);
  out.push_back(rows2);
  return as_op("cdist", [&] {
    const DynTensor a = expand(x1, s1), b = expand(x2, s2);
    if (m == 0) return zeros(out, a.dtype(), a.device());  // no columns: distance 0
    if (p == 2.0 && (rows1 > 25 || rows2 > 25)) {
      // PyTorch's _euclidean_dist: [-2a, |a|^2, 1] . [b, 1, |b|^2] in one matmul.
      const DynTensor na = sum(square(a), {-1}, true), nb = sum(square(b), {-1}, true);
      const DynTensor ea = cat({mul(a, -2.0), na, ones_like(na)}, -1);
      const DynTensor eb = cat({b, ones_like(nb), nb}, -1);
      return safe_sqrt(matmul(ea, transpose(eb, -1, -2)));
    }
    const DynTensor diff = sub(unsqueeze(a, -2), unsqueeze(b, -3));  // [..., P, R, M]
    if (p == 2.0) return safe_sqrt(sum(square(diff), {-1}, false));
    return norm(diff, p, {-1}, false);
  });
}

DynTensor pixel_shuffle(const DynTensor& x, int64_t r) {
  detail::check_defined(x, "pixel_shuffle");
  EMBER_CHECK(x.rank() >= 3, "[pixel_shuffle] expects [*, C * r^2, H, W], got ", x.shape());
  EMBER_CHECK(r > 0, "[pixel_shuffle] upscale_factor must be positive, got ", r);
  const int k = x.rank() - 3;
  const int64_t c = x.size(k), h = x.size(k + 1), w = x.size(k + 2);
  EMBER_CHECK(c % (r * r) == 0, "[pixel_shuffle] channels ", c,
              " are not divisible by upscale_factor^2 = ", r * r, " (input ", x.shape(), ")");
  Shape lead = x.shape();
  lead.resize(k);
  Shape split = lead, merged = lead;
  for (int64_t v : {c / (r * r), r, r, h, w}) split.push_back(v);
  for (int64_t v : {c / (r * r), h * r, w * r}) merged.push_back(v);
  std::vector<int64_t> perm;
  for (int i = 0; i < k; ++i) perm.push_back(i);
  for (int i : {0, 3, 1, 4, 2}) perm.push_back(k + i);  // C, H, r, W, r
  return reshape(permute(reshape(x, split), perm), merged);
}

DynTensor pixel_unshuffle(const DynTensor& x, int64_t r) {
  detail::check_defined(x, "pixel_unshuffle");
  EMBER_CHECK(x.rank() >= 3, "[pixel_unshuffle] expects [*, C, H * r, W * r], got ", x.shape());
  EMBER_CHECK(r > 0, "[pixel_unshuffle] downscale_factor must be positive, got ", r);
  const int k = x.rank() - 3;
  const int64_t c = x.size(k), h = x.size(k + 1), w = x.size(k + 2);
  EMBER_CHECK(h % r == 0 && w % r == 0, "[pixel_unshuffle] height ", h, " and width ", w,
              " must be divisible by downscale_factor ", r, " (input ", x.shape(), ")");
  Shape lead = x.shape();
  lead.resize(k);
  Shape split = lead, merged = lead;
  for (int64_t v : {c, h / r, r, w / r, r}) split.push_back(v);
  for (int64_t v : {c * r * r, h / r, w / r}) merged.push_back(v);
  std::vector<int64_t> perm;
  for (int i = 0; i < k; ++i) perm.push_back(i);
  for (int i : {0, 2, 4, 1, 3}) perm.push_back(k + i);  // C, r, r, H, W
  return reshape(permute(reshape(x, split), perm), merged);
}

DynTensor unfold(const DynTensor& x, const SpatialArg& kernel_size, const SpatialArg& dilation,
                 const SpatialArg& padding, const SpatialArg& stride) {
  const char* op = "unfold";
  detail::check_defined(x, op);
  EMBER_CHECK(x.rank() == 3 || x.rank() == 4, "[unfold] expects [N, C, H, W] or [C, H, W], got ",
              x.shape());
  const std::vector<int64_t> k = pair_arg(op, "kernel_size", kernel_size, 1),
                             d = pair_arg(op, "dilation", dilation, 1),
                             p = pair_arg(op, "padding", padding, 0),
                             s = pair_arg(op, "stride", stride, 1);
  if (x.rank() == 3)
    return squeeze(unfold(unsqueeze(x, 0), kernel_size, dilation, padding, stride), 0);
  const int64_t n = x.size(0), c = x.size(1);
  const int64_t oh = blocks(op, x.size(2), k[0], d[0], p[0], s[0]),
                ow = blocks(op, x.size(3), k[1], d[1], p[1], s[1]);
  const int64_t hp = x.size(2) + 2 * p[0], wp = x.size(3) + 2 * p[1];
  return as_op(op, [&] {
    const DynTensor idx = block_index(k, d, s, oh, ow, wp, x.device());
    const DynTensor flat = reshape(pad(x, {p[1], p[1], p[0], p[0]}), Shape{n, c, hp * wp});
    return reshape(index_select(flat, 2, idx), Shape{n, c * k[0] * k[1], oh * ow});
  });
}

DynTensor fold(const DynTensor& x, const SpatialArg& output_size, const SpatialArg& kernel_size,
               const SpatialArg& dilation, const SpatialArg& padding, const SpatialArg& stride) {
  const char* op = "fold";
  detail::check_defined(x, op);
  EMBER_CHECK(x.rank() == 2 || x.rank() == 3, "[fold] expects [N, C * kh * kw, L] or ",
              "[C * kh * kw, L], got ", x.shape());
  const std::vector<int64_t> o = pair_arg(op, "output_size", output_size, 1),
                             k = pair_arg(op, "kernel_size", kernel_size, 1),
                             d = pair_arg(op, "dilation", dilation, 1),
                             p = pair_arg(op, "padding", padding, 0),
                             s = pair_arg(op, "stride", stride, 1);
  if (x.rank() == 2) {
    return squeeze(fold(unsqueeze(x, 0), output_size, kernel_size, dilation, padding, stride), 0);
  }
  const int64_t n = x.size(0), kk = k[0] * k[1];
  EMBER_CHECK(x.size(1) % kk == 0, "[fold] dim 1 of ", x.shape(),
              " must be divisible by the kernel's ", kk, " elements");
  const int64_t oh = blocks(op, o[0], k[0], d[0], p[0], s[0]),
                ow = blocks(op, o[1], k[1], d[1], p[1], s[1]);
  EMBER_CHECK(x.size(2) == oh * ow, "[fold] input ", x.shape(), " has ", x.size(2),
              " blocks, but output_size ", list(o), " with kernel ", list(k), " makes ", oh * ow,
              " (", oh, " x ", ow, ")");
  const int64_t c = x.size(1) / kk, hp = o[0] + 2 * p[0], wp = o[1] + 2 * p[1];
  return as_op(op, [&] {
    const DynTensor idx = block_index(k, d, s, oh, ow, wp, x.device());
    const DynTensor src = reshape(x, Shape{n, c, kk * oh * ow});
    const DynTensor plane =
        index_add(zeros(Shape{n, c, hp * wp}, x.dtype(), x.device()), 2, idx, src);
    return narrow(narrow(reshape(plane, Shape{n, c, hp, wp}), 2, p[0], o[0]), 3, p[1], o[1]);
  });
}

namespace {

// PyTorch's int-or-tuple argument of the pooling ops, into a PoolParams array.
void pool_arg(const std::string& op, const char* what, const SpatialArg& v, int spatial,
              int64_t min, int64_t* dst) {
  EMBER_CHECK(v.size() == 1 || v.size() == static_cast<size_t>(spatial), "[", op, "] ", what,
              " needs 1 or ", spatial, " values, got ", list(v));
  for (int i = 0; i < spatial; ++i) {
    dst[i] = v.size() == 1 ? v[0] : v[static_cast<size_t>(i)];
    EMBER_CHECK(dst[i] >= min, "[", op, "] ", what, " must be at least ", min, ", got ", list(v));
  }
}

PoolParams adaptive_params(const std::string& op, int spatial, const SpatialArg& output_size) {
  PoolParams p;
  p.spatial = spatial;
  p.adaptive = true;
  pool_arg(op, "output_size", output_size, spatial, 1, p.output_size);
  return p;
}

// max_pool over `spatial` dims: the values alone (indices only where the gradient needs them),
// or the values and i64 indices.
ValuesIndices max_pool_nd(const DynTensor& x, const PoolParams& p, bool values_only,
                          const char* op) {
  detail::check_defined(x, op);
  return as_op(op, [&] {
    return values_only ? ValuesIndices{max_pool_values(x, p), DynTensor()}
                       : max_pool(x, p, DType::i64);
  });
}

PoolParams window3d(const SpatialArg& kernel, const SpatialArg& stride, const SpatialArg& padding,
                    const SpatialArg& dilation, bool ceil_mode) {
  PoolParams p;
  p.spatial = 3;
  pool_arg("max_pool3d", "kernel_size", kernel, 3, 1, p.kernel);
  pool_arg("max_pool3d", "stride", stride.empty() ? kernel : stride, 3, 1, p.stride);
  pool_arg("max_pool3d", "padding", padding, 3, 0, p.padding);
  pool_arg("max_pool3d", "dilation", dilation, 3, 1, p.dilation);
  p.ceil_mode = ceil_mode;
  return p;
}

}  // namespace

DynTensor max_pool3d(const DynTensor& x, const SpatialArg& kernel_size, const SpatialArg& stride,
                     const SpatialArg& padding, const SpatialArg& dilation, bool ceil_mode) {
  return max_pool_nd(x, window3d(kernel_size, stride, padding, dilation, ceil_mode), true,
                     "max_pool3d")
      .values;
}
ValuesIndices max_pool3d_with_indices(const DynTensor& x, const SpatialArg& kernel_size,
                                      const SpatialArg& stride, const SpatialArg& padding,
                                      const SpatialArg& dilation, bool ceil_mode) {
  return max_pool_nd(x, window3d(kernel_size, stride, padding, dilation, ceil_mode), false,
                     "max_pool3d");
}

DynTensor adaptive_max_pool1d(const DynTensor& x, const SpatialArg& output_size) {
  const char* op = "adaptive_max_pool1d";
  return max_pool_nd(x, adaptive_params(op, 1, output_size), true, op).values;
}
DynTensor adaptive_max_pool2d(const DynTensor& x, const SpatialArg& output_size) {
  const char* op = "adaptive_max_pool2d";
  return max_pool_nd(x, adaptive_params(op, 2, output_size), true, op).values;
}
DynTensor adaptive_max_pool3d(const DynTensor& x, const SpatialArg& output_size) {
  const char* op = "adaptive_max_pool3d";
  return max_pool_nd(x, adaptive_params(op, 3, output_size), true, op).values;
}
ValuesIndices adaptive_max_pool1d_with_indices(const DynTensor& x, const SpatialArg& output_size) {
  const char* op = "adaptive_max_pool1d";
  return max_pool_nd(x, adaptive_params(op, 1, output_size), false, op);
}
ValuesIndices adaptive_max_pool2d_with_indices(const DynTensor& x, const SpatialArg& output_size) {
  const char* op = "adaptive_max_pool2d";
  return max_pool_nd(x, adaptive_params(op, 2, output_size), false, op);
}
ValuesIndices adaptive_max_pool3d_with_indices(const DynTensor& x, const SpatialArg& output_size) {
  const char* op = "adaptive_max_pool3d";
  return max_pool_nd(x, adaptive_params(op, 3, output_size), false, op);
}

std::vector<int64_t> same_padding(const std::vector<int64_t>& kernel, const SpatialArg& dilation,
                                  const char* op) {
  const size_t n = kernel.size();
  EMBER_CHECK(dilation.size() == 1 || dilation.size() == n, "[", op, "] dilation needs 1 or ", n,
              " values, got ", list(dilation));
  std::vector<int64_t> pads(2 * n, 0);
  for (size_t i = 0; i < n; ++i) {
    const int64_t dl = dilation.size() == 1 ? dilation[0] : dilation[i];
    EMBER_CHECK(dl >= 1, "[", op, "] dilation must be at least 1, got ", list(dilation));
    const int64_t total = dl * (kernel[i] - 1), left = total / 2;
    pads[2 * (n - 1 - i)] = left;
    pads[2 * (n - 1 - i) + 1] = total - left;
  }
  return pads;
}

namespace {

DynTensor conv_padded(int spatial, const DynTensor& x, const DynTensor& w, const DynTensor& bias,
                      const SpatialArg& stride, Padding padding, const SpatialArg& dilation,
                      int64_t groups) {
  const std::string op = "conv" + std::to_string(spatial) + "d";
  detail::check_defined(w, op.c_str(), "weight");
  EMBER_CHECK(padding != Padding::Explicit, "[", op,
              "] takes Padding::Same or Padding::Valid here; give explicit sizes as numbers");
  auto run = [&](const DynTensor& in, const SpatialArg& pad_sizes) {
    if (spatial == 1) return conv1d(in, w, bias, stride, pad_sizes, dilation, groups);
    if (spatial == 2) return conv2d(in, w, bias, stride, pad_sizes, dilation, groups);
    return conv3d(in, w, bias, stride, pad_sizes, dilation, groups);
  };
  if (padding == Padding::Valid) return run(x, {0});
  for (int64_t s : stride) {
    EMBER_CHECK(s == 1, "[", op, "] padding='same' needs stride 1 (as in PyTorch), got stride ",
                list(stride));
  }
  EMBER_CHECK(w.rank() == spatial + 2, "[", op, "] expects a ", spatial + 2, "-D weight, got ",
              w.shape());
  std::vector<int64_t> kernel;
  for (int i = 0; i < spatial; ++i) kernel.push_back(w.size(2 + i));
  const std::vector<int64_t> pads = same_padding(kernel, dilation, op.c_str());
  // Symmetric padding goes to the convolution; an odd total adds one on the right first.
  SpatialArg sym(static_cast<size_t>(spatial));
  std::vector<int64_t> extra(pads.size(), 0);
  bool odd = false;
  for (int i = 0; i < spatial; ++i) {
    const size_t at = 2 * static_cast<size_t>(spatial - 1 - i);
    sym[static_cast<size_t>(i)] = pads[at];
    extra[at + 1] = pads[at + 1] - pads[at];
    odd = odd || extra[at + 1] != 0;
  }
  return run(odd ? pad(x, extra) : x, sym);
}

}  // namespace

DynTensor conv1d(const DynTensor& x, const DynTensor& weight, const DynTensor& bias,
                 const SpatialArg& stride, Padding padding, const SpatialArg& dilation,
                 int64_t groups) {
  return conv_padded(1, x, weight, bias, stride, padding, dilation, groups);
}
DynTensor conv2d(const DynTensor& x, const DynTensor& weight, const DynTensor& bias,
                 const SpatialArg& stride, Padding padding, const SpatialArg& dilation,
                 int64_t groups) {
  return conv_padded(2, x, weight, bias, stride, padding, dilation, groups);
}
DynTensor conv3d(const DynTensor& x, const DynTensor& weight, const DynTensor& bias,
                 const SpatialArg& stride, Padding padding, const SpatialArg& dilation,
                 int64_t groups) {
  return conv_padded(3, x, weight, bias, stride, padding, dilation, groups);
}

}  // namespace ember
