// grid_sample and affine_grid (torch.nn.functional) as composites: the sampling coordinates are
// computed from the grid with elementwise ops (so the gradient reaches the grid), and each
// corner of the bilinear (or the nearest) tap is one gather from the flattened input planes,
// masked where it falls outside. 2-D ([N, C, H, W]) and 3-D ([N, C, D, H, W]) inputs.
#include <string>

#include "ember/autodiff/autodiff.hpp"
#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/indexing.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "ember/tensor/ops/reduce.hpp"
#include "ember/tensor/ops/vision.hpp"
#include "internal.hpp"

namespace ember {
namespace {

// grid_sampler_unnormalize: [-1, 1] to pixel coordinates.
DynTensor unnormalize(const DynTensor& c, int64_t size, bool align_corners) {
  const double n = static_cast<double>(size);
  return align_corners ? mul(add(c, 1.0), (n - 1) / 2) : div(sub(mul(add(c, 1.0), n), 1.0), 2.0);
}

// reflect_coordinates: folds c into [twice_low / 2, twice_high / 2] by reflection.
DynTensor reflect(const DynTensor& c, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return mul(c, 0.0);
  const double lo = static_cast<double>(twice_low) / 2;
  const double span = static_cast<double>(twice_high - twice_low) / 2;
  const DynTensor a = abs(sub(c, lo));
  const DynTensor flips = floor(div(a, span));
  const DynTensor extra = sub(a, mul(flips, span));
  const DynTensor even = eq(sub(flips, mul(floor(div(flips, 2.0)), 2.0)), 0.0);
  return where(even, add(extra, lo), add(sub(span, extra), lo));
}

// grid_sampler_compute_source_index: unnormalize, then the padding mode's folding.
DynTensor source_index(const DynTensor& c, int64_t size, GridPadding padding, bool align_corners) {
  DynTensor ix = unnormalize(c, size, align_corners);
  if (padding == GridPadding::Zeros) return ix;
  if (padding == GridPadding::Reflection) {
    ix = align_corners ? reflect(ix, 0, 2 * (size - 1)) : reflect(ix, -1, 2 * size - 1);
  }
  return clamp(ix, 0.0, static_cast<double>(size - 1));  // clip_coordinates
}

}  // namespace

DynTensor grid_sample(const DynTensor& x, const DynTensor& grid, GridMode mode, GridPadding padding,
                      bool align_corners) {
  const char* op = "grid_sample";
  detail::check_defined(x, op);
  detail::check_defined(grid, op, "grid");
  EMBER_CHECK(x.rank() == 4 || x.rank() == 5, "[grid_sample] expects an input [N, C, H, W] or ",
              "[N, C, D, H, W], got ", x.shape());
  const int sp = x.rank() - 2;
  EMBER_CHECK(grid.rank() == x.rank() && grid.size(0) == x.size(0) && grid.size(-1) == sp,
              "[grid_sample] expects a grid [N, ", sp == 2 ? "H_out, W_out" : "D_out, H_out, W_out",
              ", ", sp, "] for input ", x.shape(), ", got ", grid.shape());
  EMBER_CHECK(is_floating(x.dtype()) && grid.dtype() == x.dtype(), "[grid_sample] needs Float ",
              "input and grid of one dtype, got ", x.dtype(), " and ", grid.dtype());
  return as_op(op, [&] {
    const int64_t n = x.size(0), c = x.size(1);
    Shape out_shape{n, c};
    int64_t points = 1, plane = 1;
    for (int i = 0; i < sp; ++i) {
      out_shape.push_back(grid.size(1 + i));
      points *= grid.size(1 + i);
      plane *= x.size(2 + i);
    }
    const DynTensor flat = reshape(x, Shape{n, c, plane});
    // Per spatial dim d (0 = depth or height ... last = width), the source coordinate [N, P]:
    // the grid's last dim lists x (width) first.
    std::vector<DynTensor> src(static_cast<size_t>(sp));
    std::vector<int64_t> sizes(static_cast<size_t>(sp));
    for (int d = 0; d < sp; ++d) {
      sizes[size_t(d)] = x.size(2 + d);
      const DynTensor coord = reshape(select(grid, -1, sp - 1 - d), Shape{n, points});
      src[size_t(d)] = source_index(coord, sizes[size_t(d)], padding, align_corners);
    }
    // One tap: integer positions per dim [N, P] and its weight [N, P].
    auto tap = [&](const std::vector<DynTensor>& pos, const DynTensor& weight) {
      DynTensor index, valid;
      for (int d = 0; d < sp; ++d) {
        const DynTensor p = pos[size_t(d)];
        const DynTensor in =
            logical_and(ge(p, 0.0), le(p, static_cast<double>(sizes[size_t(d)] - 1)));
        valid = d == 0 ? in : logical_and(valid, in);
        // Clamped before the cast, so that far (or non-finite) positions stay in range.
        const DynTensor pi =
            cast(clamp(p, 0.0, static_cast<double>(sizes[size_t(d)] - 1)), DType::i64);
        index = d == 0 ? pi : add(mul(index, sizes[size_t(d)]), pi);
      }
      index = where(valid, index, 0);
      const DynTensor gathered = gather(flat, 2, expand(unsqueeze(index, 1), Shape{n, c, points}));
      return mul(gathered, unsqueeze(mul(weight, cast(valid, x.dtype())), 1));
    };
    DynTensor y;
    if (mode == GridMode::Nearest) {
      std::vector<DynTensor> pos;
      for (const DynTensor& s : src) pos.push_back(round(detach(s)));  // half to even, as PyTorch
      y = tap(pos, ones(Shape{n, points}, x.dtype(), x.device()));
    } else {
      // Bilinear (trilinear in 3-D): 2^sp corners, each weighted by the product over dims.
      std::vector<DynTensor> lo(static_cast<size_t>(sp)), frac(lo.size());
      for (int d = 0; d < sp; ++d) {
        lo[size_t(d)] = floor(detach(src[size_t(d)]));
        frac[size_t(d)] = sub(src[size_t(d)], lo[size_t(d)]);
      }
      for (int corner = 0; corner < (1 << sp); ++corner) {
        std::vector<DynTensor> pos;
        DynTensor w;
        for (int d = 0; d < sp; ++d) {
          const bool high = (corner >> (sp - 1 - d)) & 1;
          pos.push_back(high ? add(lo[size_t(d)], 1.0) : lo[size_t(d)]);
          const DynTensor wd = high ? frac[size_t(d)] : sub(1.0, frac[size_t(d)]);
          w = d == 0 ? wd : mul(w, wd);
        }
        const DynTensor t = tap(pos, w);
        y = corner == 0 ? t : add(y, t);
      }
    }
    return reshape(y, out_shape);
  });
}

DynTensor affine_grid(const DynTensor& theta, const Shape& size, bool align_corners) {
  const char* op = "affine_grid";
  detail::check_defined(theta, op, "theta");
  EMBER_CHECK(size.rank() == 4 || size.rank() == 5, "[affine_grid] size must be [N, C, H, W] or ",
              "[N, C, D, H, W], got ", size);
  const int sp = size.rank() - 2;
  EMBER_CHECK(is_floating(theta.dtype()) && theta.rank() == 3 && theta.size(0) == size[0] &&
                  theta.size(1) == sp && theta.size(2) == sp + 1,
              "[affine_grid] expects a Float theta [", size[0], ", ", sp, ", ", sp + 1,
              "] for size ", size, ", got ", theta.shape(), " ", theta.dtype());
  return as_op(op, [&] {
    // Base coordinates per output point: (x, y[, z], 1), x along the last dim.
    Shape grid_shape{size[0]};
    int64_t points = 1;
    for (int i = 0; i < sp; ++i) {
      grid_shape.push_back(size[2 + i]);
      points *= size[2 + i];
    }
    std::vector<DynTensor> base;  // each [points]
    for (int k = 0; k < sp; ++k) {
      const int dim = sp - 1 - k;  // coordinate k runs along spatial dim `dim`
      const int64_t s = size[2 + dim];
      DynTensor lin = linspace(-1.0, 1.0, s, theta.dtype(), theta.device());
      if (!align_corners && s > 0)
        lin = mul(lin, static_cast<double>(s - 1) / static_cast<double>(s));
      if (s == 1) lin = zeros(Shape{1}, theta.dtype(), theta.device());
      Shape view = Shape::filled(sp, 1), full = Shape::filled(sp, 1);
      view[dim] = s;
      for (int i = 0; i < sp; ++i) full[i] = size[2 + i];
      base.push_back(reshape(expand(reshape(lin, view), full), Shape{points}));
    }
    base.push_back(ones(Shape{points}, theta.dtype(), theta.device()));
    const DynTensor b = stack(base, -1);  // [P, sp + 1]
    // grid[n, p, i] = sum_j base[p, j] * theta[n, i, j], elementwise (exact, no GEMM rounding).
    const DynTensor g =
        sum(mul(reshape(b, Shape{1, points, 1, sp + 1}), unsqueeze(theta, 1)), {-1});
    grid_shape.push_back(sp);
    return reshape(g, grid_shape);
  });
}

}  // namespace ember
