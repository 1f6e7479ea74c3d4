// torchvision's deform_conv2d as a composite: the sampling points (base grid + offsets) are
// elementwise ops, each of the 4 bilinear corners is one gather from the flattened input planes
// (indices clamped into range, the corner's weight zeroed where it falls outside), and the
// columns [N, C * K, L] meet the weight in one batched matmul per conv group. Autodiff gives the
// gradients of input, offset, mask, weight and bias; it runs on every backend.
#include <array>
#include <string>
#include <vector>

#include "ember/autodiff/autodiff.hpp"
#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/indexing.hpp"
#include "ember/tensor/ops/linalg.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "ember/tensor/ops/vision.hpp"
#include "internal.hpp"

namespace ember {
namespace {

std::array<int64_t, 2> pair_arg(const SpatialArg& v, const char* what, int64_t min) {
  EMBER_CHECK(v.size() == 1 || v.size() == 2, "[deform_conv2d] ", what,
              " needs 1 or 2 values, got ", v.size());
  const std::array<int64_t, 2> out{v[0], v.size() == 1 ? v[0] : v[1]};
  for (int64_t e : out) {
    EMBER_CHECK(e >= min, "[deform_conv2d] ", what, " must be >= ", min, ", got ", e);
  }
  return out;
}

}  // namespace

DynTensor deform_conv2d(const DynTensor& x, const DynTensor& offset, const DynTensor& weight,
                        const DynTensor& bias, const SpatialArg& stride, const SpatialArg& padding,
                        const SpatialArg& dilation, const DynTensor& mask) {
  const char* op = "deform_conv2d";
  detail::check_defined(x, op);
  detail::check_defined(offset, op, "offset");
  detail::check_defined(weight, op, "weight");
  EMBER_CHECK(x.rank() == 4 && is_floating(x.dtype()),
              "[deform_conv2d] expects a Float input [N, C, H, W], got ", x.shape(), " ",
              x.dtype());
  EMBER_CHECK(weight.rank() == 4 && weight.dtype() == x.dtype(),
              "[deform_conv2d] expects a weight [out, in / groups, kh, kw] of the input's dtype ",
              x.dtype(), ", got ", weight.shape(), " ", weight.dtype());
  const auto st = pair_arg(stride, "stride", 1);
  const auto pd = pair_arg(padding, "padding", 0);
  const auto dl = pair_arg(dilation, "dilation", 1);
  const int64_t n = x.size(0), cin = x.size(1), h = x.size(2), w = x.size(3);
  const int64_t cout = weight.size(0), kh = weight.size(2), kw = weight.size(3), k = kh * kw;
  EMBER_CHECK(weight.size(1) > 0 && cin % weight.size(1) == 0 && kh > 0 && kw > 0,
              "[deform_conv2d] weight ", weight.shape(), " does not fit input channels ", cin);
  const int64_t groups = cin / weight.size(1);
  EMBER_CHECK(cout % groups == 0, "[deform_conv2d] out channels ", cout,
              " must be a multiple of groups ", groups);
  const int64_t ho = (h + 2 * pd[0] - dl[0] * (kh - 1) - 1) / st[0] + 1;
  const int64_t wo = (w + 2 * pd[1] - dl[1] * (kw - 1) - 1) / st[1] + 1;
  EMBER_CHECK(ho > 0 && wo > 0, "[deform_conv2d] output size ", ho, "x", wo,
              " is too small for input ", x.shape(), " and kernel ", kh, "x", kw);
  EMBER_CHECK(offset.rank() == 4 && offset.dtype() == x.dtype() && offset.size(0) == n &&
                  offset.size(1) > 0 && offset.size(1) % (2 * k) == 0 && offset.size(2) == ho &&
                  offset.size(3) == wo,
              "[deform_conv2d] expects an offset [", n, ", 2 * offset_groups * ", k, ", ", ho, ", ",
              wo, "] of dtype ", x.dtype(), ", got ", offset.shape(), " ", offset.dtype());
  const int64_t og = offset.size(1) / (2 * k);
  EMBER_CHECK(cin % og == 0, "[deform_conv2d] input channels ", cin,
              " must be a multiple of offset_groups ", og);
  if (mask.defined()) {
    EMBER_CHECK(mask.rank() == 4 && mask.dtype() == x.dtype() && mask.size(0) == n &&
                    mask.size(1) == og * k && mask.size(2) == ho && mask.size(3) == wo,
                "[deform_conv2d] expects a mask [", n, ", ", og * k, ", ", ho, ", ", wo,
                "] of dtype ", x.dtype(), ", got ", mask.shape(), " ", mask.dtype());
  }
  if (bias.defined()) {
    EMBER_CHECK(bias.rank() == 1 && bias.size(0) == cout && bias.dtype() == x.dtype(),
                "[deform_conv2d] expects a bias [", cout, "] of dtype ", x.dtype(), ", got ",
                bias.shape(), " ", bias.dtype());
  }
  return as_op(op, [&] {
    const int64_t l = ho * wo, cg = cin / og;
    // The undeformed sampling point of tap (i, j) at output (oy, ox), [K, L].
    std::vector<double> by(static_cast<size_t>(k * l)), bx(by.size());
    for (int64_t i = 0; i < kh; ++i) {
      for (int64_t j = 0; j < kw; ++j) {
        for (int64_t oy = 0; oy < ho; ++oy) {
          for (int64_t ox = 0; ox < wo; ++ox) {
            const auto e = static_cast<size_t>((i * kw + j) * l + oy * wo + ox);
            by[e] = static_cast<double>(oy * st[0] - pd[0] + i * dl[0]);
            bx[e] = static_cast<double>(ox * st[1] - pd[1] + j * dl[1]);
          }
        }
      }
    }
    auto base = [&](const std::vector<double>& v) {
      return cast(from_data(TensorData::from(v, Shape{k, l}), x.device()), x.dtype());
    };
    const DynTensor off = reshape(offset, Shape{n, og, k, 2, l});
    const DynTensor py = add(select(off, 3, 0), base(by));  // [N, G, K, L]
    const DynTensor px = add(select(off, 3, 1), base(bx));
    const DynTensor y0 = floor(detach(py)), x0 = floor(detach(px));
    const DynTensor fy = sub(py, y0), fx = sub(px, x0);
    const DynTensor flat = reshape(x, Shape{n, og, cg, h * w});
    const Shape idx_shape{n, og, 1, k * l};
    auto corner = [&](const DynTensor& yi, const DynTensor& xi, const DynTensor& wgt) {
      const DynTensor valid =
          logical_and(logical_and(ge(yi, 0.0), le(yi, static_cast<double>(h - 1))),
                      logical_and(ge(xi, 0.0), le(xi, static_cast<double>(w - 1))));
      // Clamped before the cast so that far (or non-finite) points stay in range.
      const DynTensor yc = cast(clamp(yi, 0.0, static_cast<double>(h - 1)), DType::i64);
      const DynTensor xc = cast(clamp(xi, 0.0, static_cast<double>(w - 1)), DType::i64);
      const DynTensor index = reshape(add(mul(yc, w), xc), idx_shape);
      const DynTensor got = gather(flat, 3, expand(index, Shape{n, og, cg, k * l}));
      return mul(got, reshape(mul(wgt, cast(valid, x.dtype())), idx_shape));
    };
    const DynTensor y1 = add(y0, 1.0), x1 = add(x0, 1.0);
    const DynTensor gy = sub(1.0, fy), gx = sub(1.0, fx);
    DynTensor cols = add(add(corner(y0, x0, mul(gy, gx)), corner(y0, x1, mul(gy, fx))),
                         add(corner(y1, x0, mul(fy, gx)), corner(y1, x1, mul(fy, fx))));
    if (mask.defined()) cols = mul(cols, reshape(mask, idx_shape));
    // [N, G, Cg, K * L] -> [N, groups, Cin / groups * K, L]: rows ordered (channel, tap), as the
    // weight's [in / groups, kh, kw].
    cols = reshape(cols, Shape{n, groups, cin / groups * k, l});
    const DynTensor wm = reshape(weight, Shape{groups, cout / groups, cin / groups * k});
    DynTensor out = reshape(matmul(wm, cols), Shape{n, cout, ho, wo});
    if (bias.defined()) out = add(out, reshape(bias, Shape{1, cout, 1, 1}));
    return out;
  });
}

}  // namespace ember
