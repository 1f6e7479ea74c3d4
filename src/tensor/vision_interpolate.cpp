// interpolate (torch.nn.functional.interpolate) as a composite: every mode here is separable, so
// the spatial dims are resized one after the other, each by index_select of the source rows
// and a weighted sum (nearest, linear, cubic) or an adaptive average pool (area). Source indices
// and weights follow PyTorch 1.13's kernels (UpSample.h), computed on the host per output index.
#include <algorithm>
#include <cmath>
#include <string>

#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/indexing.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "ember/tensor/ops/vision.hpp"
#include "internal.hpp"

namespace ember {
namespace {

const char* mode_name(InterpolateMode m) {
  switch (m) {
    case InterpolateMode::Nearest:
      return "nearest";
    case InterpolateMode::Linear:
      return "linear";
    case InterpolateMode::Bilinear:
      return "bilinear";
    case InterpolateMode::NearestExact:
      return "nearest-exact";
    case InterpolateMode::Bicubic:
      return "bicubic";
    case InterpolateMode::Trilinear:
      return "trilinear";
    case InterpolateMode::Area:
      return "area";
  }
  return "?";
}

DynTensor index_tensor(const std::vector<int64_t>& v, Device device) {
  return from_data(TensorData::from(v, Shape{static_cast<int64_t>(v.size())}), device);
}

// Weights [out] shaped to broadcast along `dim` of x, in x's dtype.
DynTensor weight_tensor(const std::vector<double>& w, const DynTensor& x, int dim) {
  Shape shape = Shape::filled(x.rank(), 1);
  shape[dim] = static_cast<int64_t>(w.size());
  return cast(reshape(from_data(TensorData::from(w, Shape{shape[dim]}), x.device()), shape),
              x.dtype());
}

// One spatial dim of x resized to `out`. `scale` is the user's scale factor for this dim, or 0
// when the size was given (PyTorch's optional `scales`).
DynTensor resize_dim(const DynTensor& x, int dim, int64_t out, double scale, InterpolateMode mode,
                     bool align_corners) {
  const int64_t in = x.size(dim);
  const Device dev = x.device();
  if (mode == InterpolateMode::Area) {
    // adaptive_avg_pool1d over this dim, the others flattened into its batch.
    const DynTensor moved = transpose(x, dim, -1);
    Shape shape = moved.shape();
    const DynTensor pooled = adaptive_avg_pool1d(reshape(moved, Shape{-1, 1, in}), SpatialArg{out});
    shape[shape.rank() - 1] = out;
    return transpose(reshape(pooled, shape), dim, -1);
  }
  if (mode == InterpolateMode::Nearest || mode == InterpolateMode::NearestExact) {
    // PyTorch computes these in float (nearest_idx, nearest_neighbor_exact_compute_source_index).
    const float s = scale > 0 ? static_cast<float>(1.0 / scale)
                              : static_cast<float>(in) / static_cast<float>(out);
    std::vector<int64_t> src(static_cast<size_t>(out));
    for (int64_t i = 0; i < out; ++i) {
      int64_t j = 0;
      if (mode == InterpolateMode::NearestExact) {
        j = static_cast<int64_t>(std::floor((static_cast<double>(i) + 0.5) * s));
      } else if (out == in) {
        j = i;
      } else if (out == 2 * in) {
        j = i >> 1;
      } else {
        j = static_cast<int64_t>(std::floor(static_cast<float>(i) * s));
      }
      src[static_cast<size_t>(i)] = std::min(j, in - 1);
    }
    return index_select(x, dim, index_tensor(src, dev));
  }
  // area_pixel_compute_scale and area_pixel_compute_source_index.
  const bool cubic = mode == InterpolateMode::Bicubic;
  double ratio = 0.0;
  if (align_corners) {
    ratio = out > 1 ? static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
  } else {
    ratio = scale > 0 ? 1.0 / scale : static_cast<double>(in) / static_cast<double>(out);
  }
  auto source = [&](int64_t i) {
    if (align_corners) return ratio * static_cast<double>(i);
    const double s = ratio * (static_cast<double>(i) + 0.5) - 0.5;
    return (!cubic && s < 0) ? 0.0 : s;
  };
  if (!cubic) {
    std::vector<int64_t> lo(static_cast<size_t>(out)), hi(lo.size());
    std::vector<double> w(lo.size());
    for (int64_t i = 0; i < out; ++i) {
      const double s = source(i);
      const int64_t i0 = std::min<int64_t>(static_cast<int64_t>(std::floor(s)), in - 1);
      const size_t k = static_cast<size_t>(i);
      lo[k] = i0;
      hi[k] = std::min<int64_t>(i0 + 1, in - 1);
      w[k] = s - static_cast<double>(i0);
    }
    const DynTensor a = index_select(x, dim, index_tensor(lo, dev));
    const DynTensor b = index_select(x, dim, index_tensor(hi, dev));
    return add(a, mul(sub(b, a), weight_tensor(w, x, dim)));
  }
  // Cubic convolution (Keys, A = -0.75, PyTorch's), reading clamped neighbours i0 - 1 .. i0 + 2.
  constexpr double A = -0.75;
  auto near = [](double t) { return ((A + 2) * t - (A + 3)) * t * t + 1; };       // |t| <= 1
  auto far = [](double t) { return ((A * t - 5 * A) * t + 8 * A) * t - 4 * A; };  // 1 < |t| < 2
  std::vector<std::vector<int64_t>> idx(4, std::vector<int64_t>(static_cast<size_t>(out)));
  std::vector<std::vector<double>> w(4, std::vector<double>(static_cast<size_t>(out)));
  for (int64_t i = 0; i < out; ++i) {
    const double s = source(i);
    const int64_t i0 = static_cast<int64_t>(std::floor(s));
    const double t = s - static_cast<double>(i0);
    const double coeff[4] = {far(t + 1), near(t), near(1 - t), far(2 - t)};
    for (int k = 0; k < 4; ++k) {
      idx[size_t(k)][size_t(i)] = std::clamp<int64_t>(i0 - 1 + k, 0, in - 1);
      w[size_t(k)][size_t(i)] = coeff[k];
    }
  }
  DynTensor y;
  for (int k = 0; k < 4; ++k) {
    const DynTensor term = mul(index_select(x, dim, index_tensor(idx[size_t(k)], dev)),
                               weight_tensor(w[size_t(k)], x, dim));
    y = k == 0 ? term : add(y, term);
  }
  return y;
}

DynTensor interpolate_impl(const DynTensor& x, const std::vector<int64_t>& size,
                           const std::vector<double>& scales, InterpolateMode mode,
                           bool align_corners) {
  const int spatial = x.rank() - 2;
  const char* name = mode_name(mode);
  const int need = mode == InterpolateMode::Linear                                         ? 1
                   : mode == InterpolateMode::Bilinear || mode == InterpolateMode::Bicubic ? 2
                   : mode == InterpolateMode::Trilinear                                    ? 3
                                                                                           : 0;
  EMBER_CHECK(need == 0 || spatial == need, "[interpolate] ", name, " mode needs a ", need + 2,
              "-D input, got ", x.shape());
  const bool interpolating = need != 0;
  EMBER_CHECK(!align_corners || interpolating,
              "[interpolate] align_corners applies to the linear, bilinear, bicubic and "
              "trilinear modes only, not ",
              name);
  EMBER_CHECK(is_floating(x.dtype()), "[interpolate] needs a Float tensor, got ", x.dtype());
  DynTensor y = x;
  for (int i = 0; i < spatial; ++i) {
    const int64_t out = size[static_cast<size_t>(i)];
    EMBER_CHECK(out > 0, "[interpolate] output sizes must be positive, got ", out, " for input ",
                x.shape());
    y = resize_dim(y, 2 + i, out, scales[static_cast<size_t>(i)], mode, align_corners);
  }
  return y;
}

void check_rank(const DynTensor& x, size_t given, const char* what) {
  detail::check_defined(x, "interpolate");
  const int spatial = x.rank() - 2;
  EMBER_CHECK(spatial >= 1 && spatial <= 3, "[interpolate] expects [N, C, L], [N, C, H, W] or ",
              "[N, C, D, H, W], got ", x.shape());
  EMBER_CHECK(given == 1 || static_cast<int>(given) == spatial, "[interpolate] needs one ", what,
              " per spatial dim of ", x.shape(), " (or one for all), got ", given);
}

}  // namespace

DynTensor interpolate(const DynTensor& x, const std::vector<int64_t>& size, InterpolateMode mode,
                      bool align_corners) {
  check_rank(x, size.size(), "size");
  std::vector<int64_t> sizes;
  for (int i = 0; i < x.rank() - 2; ++i) {
    sizes.push_back(size[size.size() == 1 ? 0 : static_cast<size_t>(i)]);
  }
  return as_op("interpolate", [&] {
    return interpolate_impl(x, sizes, std::vector<double>(sizes.size(), 0.0), mode, align_corners);
  });
}

DynTensor interpolate(const DynTensor& x, const std::vector<double>& scale_factor,
                      InterpolateMode mode, bool align_corners) {
  check_rank(x, scale_factor.size(), "scale factor");
  std::vector<int64_t> sizes;
  std::vector<double> scales;
  for (int i = 0; i < x.rank() - 2; ++i) {
    const double f = scale_factor[scale_factor.size() == 1 ? 0 : static_cast<size_t>(i)];
    EMBER_CHECK(f > 0 && std::isfinite(f), "[interpolate] scale factors must be positive, got ", f);
    sizes.push_back(static_cast<int64_t>(std::floor(static_cast<double>(x.size(2 + i)) * f)));
    scales.push_back(f);  // PyTorch uses the given factor, not in/out, for source indices
  }
  return as_op("interpolate",
               [&] { return interpolate_impl(x, sizes, scales, mode, align_corners); });
}

}  // namespace ember
