// nn::scaled_dot_product_attention in bf16 and f16 against the float64 formula: outputs and the
// gradients of q, k and v, causal and not, head dims 64 and 128, queries and keys of different
// lengths, and q, k, v as strided views of one packed projection (GPT-2's layout). On Cuda this is
// the fused path (cuDNN's flash attention; the test checks that it was taken when the build has
// it); elsewhere the composite, checked the same way.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <ember/autodiff/node.hpp>
#include <ember/ember.hpp>
#include <ember/nn/nn.hpp>
#include <ember/tensor/ops/attention.hpp>

#include "tensor/test_util.hpp"

using namespace ember;
using namespace ember::test;

namespace {

// softmax(q k^T * scale + causal) v in f64, composed by hand.
DynTensor reference(const DynTensor& q, const DynTensor& k, const DynTensor& v, bool causal) {
  const double s = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  DynTensor scores = mul(matmul(q, transpose(k, -2, -1)), s);
  if (causal) {
    const int64_t l = q.size(-2), n = k.size(-2);
    std::vector<double> m(static_cast<size_t>(l * n));
    for (int64_t i = 0; i < l; ++i)
      for (int64_t j = 0; j < n; ++j) m[static_cast<size_t>(i * n + j)] = j > i ? -INFINITY : 0.0;
    scores = add(scores, Tensor<2, Float>::from_vector<double>(m, {l, n}).dyn());
  }
  return matmul(softmax(scores, -1), v);
}

struct Case {
  int64_t b, h, l, s, e;
  bool causal;
};

TEST(AttentionFused, MatchesFloat64ForwardAndBackward) {
  const bool on_cuda = default_device().type == DeviceType::Cuda;
  for (const Case c : {Case{2, 3, 70, 70, 64, true}, Case{2, 2, 33, 97, 64, false},
                       Case{1, 2, 80, 80, 128, true}, Case{1, 2, 40, 56, 128, false}}) {
    for (DType dt : {DType::bf16, DType::f16}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " E " + std::to_string(c.e) + " L " +
                   std::to_string(c.l) + " S " + std::to_string(c.s) + (c.causal ? " causal" : ""));
      // q from a packed [B, L, 3, H, E] projection (strided heads); k and v contiguous.
      const DynTensor packed64 =
          make_input(Shape{c.b, c.l, 3, c.h, c.e}, DType::f64, Layout::Contiguous, -2, 2, 61);
      const DynTensor k64 =
          make_input(Shape{c.b, c.h, c.s, c.e}, DType::f64, Layout::Contiguous, -2, 2, 62);
      const DynTensor v64 =
          make_input(Shape{c.b, c.h, c.s, c.e}, DType::f64, Layout::Contiguous, -1, 1, 63);
      const DynTensor g64 =
          make_input(Shape{c.b, c.h, c.l, c.e}, DType::f64, Layout::Contiguous, -1, 1, 64);
      const DynTensor packed = require_grad(cast(packed64, dt));
      const DynTensor k = require_grad(cast(k64, dt)), v = require_grad(cast(v64, dt));
      const DynTensor q = transpose(select(packed, 2, 0), 1, 2);  // [B, H, L, E], strided
      if (on_cuda && device_count(DeviceType::Cuda) > 0) {
#if EMBER_EXPECT_FUSED_ATTENTION
        EXPECT_TRUE(fused_attention_supported(q, k, v)) << "built with the cuDNN frontend";
#else
        std::printf("[attention] built without the cuDNN frontend: the composite runs\n");
#endif
      }
      const DynTensor out = nn::scaled_dot_product_attention(q, k, v, {}, 0.0, c.causal);
      EXPECT_EQ(out.dtype(), dt);
      const Gradients grads = backward(sum(mul(cast(out, DType::f32), cast(g64, DType::f32))));

      // The reference sees the same rounded inputs.
      const DynTensor qr = require_grad(cast(detach(q), DType::f64));
      const DynTensor kr = require_grad(cast(cast(k64, dt), DType::f64));
      const DynTensor vr = require_grad(cast(cast(v64, dt), DType::f64));
      const DynTensor want = reference(qr, kr, vr, c.causal);
      const Gradients rg = backward(sum(mul(want, g64)));
      const double tol = dt == DType::bf16 ? 3e-2 : 4e-3;
      EXPECT_LT(max_abs_diff(out, want), tol);
      const DynTensor dq = transpose(select(grads.get(packed), 2, 0), 1, 2);
      EXPECT_LT(max_abs_diff(dq, rg.get(qr)), 4 * tol);
      EXPECT_LT(max_abs_diff(grads.get(k), rg.get(kr)), 4 * tol);
      EXPECT_LT(max_abs_diff(grads.get(v), rg.get(vr)), 4 * tol);
    }
  }
}

// q, k and v all heads of one packed [B, L, 3C] projection, split as GPT-2 splits its qkv: on
// Cuda their gradients are written into one buffer laid out as the projection, which is then the
// projection's gradient with no copy.
TEST(AttentionFused, PackedQkvGradientsMatchFloat64) {
  for (const Case c : {Case{2, 3, 70, 70, 64, true}, Case{1, 2, 48, 48, 128, false}}) {
    for (DType dt : {DType::bf16, DType::f16}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " E " + std::to_string(c.e) +
                   (c.causal ? " causal" : ""));
      const int64_t width = c.h * c.e;  // GPT-2's [B, L, 3C] projection, split and viewed
      const DynTensor packed64 =
          make_input(Shape{c.b, c.l, 3 * width}, DType::f64, Layout::Contiguous, -2, 2, 71);
      const DynTensor g64 =
          make_input(Shape{c.b, c.h, c.l, c.e}, DType::f64, Layout::Contiguous, -1, 1, 72);
      const DynTensor packed = require_grad(cast(packed64, dt));
      auto head = [&](const DynTensor& p, int64_t i) {
        return transpose(
            reshape(split(p, width, 2)[static_cast<size_t>(i)], Shape{c.b, c.l, c.h, c.e}), 1, 2);
      };
      const DynTensor out = nn::scaled_dot_product_attention(head(packed, 0), head(packed, 1),
                                                             head(packed, 2), {}, 0.0, c.causal);
      const DynTensor dpacked =
          backward(sum(mul(cast(out, DType::f32), cast(g64, DType::f32)))).get(packed);

      const DynTensor pr = require_grad(cast(detach(packed), DType::f64));
      const DynTensor want = reference(head(pr, 0), head(pr, 1), head(pr, 2), c.causal);
      const DynTensor dwant = backward(sum(mul(want, g64))).get(pr);
      const double tol = dt == DType::bf16 ? 3e-2 : 4e-3;
      EXPECT_LT(max_abs_diff(out, want), tol);
      for (int64_t i = 0; i < 3; ++i) {
        EXPECT_LT(
            max_abs_diff(narrow(dpacked, 2, i * width, width), narrow(dwant, 2, i * width, width)),
            4 * tol)
            << i;
      }
    }
  }
}

// Masks, bool (true: attend) and additive, broadcast over batch or heads: the fused kernels add
// them to the scores on Cuda (the recorded node is the fused one), the composite elsewhere.
TEST(AttentionFused, MaskedMatchesFloat64) {
  const bool fused_device = default_device().type == DeviceType::Cuda;
  const int64_t b = 2, h = 3, l = 40, s = 56, e = 64;
  // Bool [B, 1, 1, S]: batch 0 sees every key, batch 1 the first 30 (padding).
  std::vector<int64_t> keep(static_cast<size_t>(b * s), 1);
  for (int64_t j = 30; j < s; ++j) keep[static_cast<size_t>(s + j)] = 0;
  const DynTensor padding =
      cast(to_device(from_data(TensorData::from(keep, Shape{b, 1, 1, s})), default_device()),
           DType::boolean);
  // Additive [L, S]: random in [-2, 0], -inf on every third key of each row but never all.
  std::vector<double> extra(static_cast<size_t>(l * s));
  for (size_t i = 0; i < extra.size(); ++i) {
    extra[i] = i % 3 == 1 ? -INFINITY : -2.0 * static_cast<double>((i * 7919) % 101) / 100.0;
  }
  const DynTensor additive64 =
      to_device(from_data(TensorData::from(extra, Shape{l, s})), default_device());
  for (DType dt : {DType::bf16, DType::f16}) {
    for (int which = 0; which < 2; ++which) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + (which == 0 ? " bool padding" : " additive"));
      const DynTensor mask = which == 0 ? padding : cast(additive64, dt);
      const DynTensor q64 =
          make_input(Shape{b, h, l, e}, DType::f64, Layout::Contiguous, -2, 2, 73);
      const DynTensor k64 =
          make_input(Shape{b, h, s, e}, DType::f64, Layout::Contiguous, -2, 2, 74);
      const DynTensor v64 =
          make_input(Shape{b, h, s, e}, DType::f64, Layout::Contiguous, -1, 1, 75);
      const DynTensor g64 =
          make_input(Shape{b, h, l, e}, DType::f64, Layout::Contiguous, -1, 1, 76);
      const DynTensor q = require_grad(cast(q64, dt)), k = require_grad(cast(k64, dt)),
                      v = require_grad(cast(v64, dt));
      const DynTensor out = nn::scaled_dot_product_attention(q, k, v, mask);
#if EMBER_EXPECT_FUSED_ATTENTION
      if (fused_device) {
        EXPECT_STREQ(out.node()->name(), "scaled_dot_product_attention");
      }
#else
      (void)fused_device;
#endif
      const Gradients grads = backward(sum(mul(cast(out, DType::f32), cast(g64, DType::f32))));

      const DynTensor qr = require_grad(cast(detach(q), DType::f64));
      const DynTensor kr = require_grad(cast(detach(k), DType::f64));
      const DynTensor vr = require_grad(cast(detach(v), DType::f64));
      const DynTensor mr = which == 0
                               ? where(padding, zeros(Shape{}, DType::f64, default_device()),
                                       full(Shape{}, -INFINITY, DType::f64, default_device()))
                               : cast(mask, DType::f64);
      const DynTensor want = matmul(
          softmax(add(mul(matmul(qr, transpose(kr, -2, -1)), 1.0 / std::sqrt(64.0)), mr), -1), vr);
      const Gradients rg = backward(sum(mul(want, g64)));
      const double tol = dt == DType::bf16 ? 3e-2 : 4e-3;
      EXPECT_LT(max_abs_diff(out, want), tol);
      EXPECT_LT(max_abs_diff(grads.get(q), rg.get(qr)), 4 * tol);
      EXPECT_LT(max_abs_diff(grads.get(k), rg.get(kr)), 4 * tol);
      EXPECT_LT(max_abs_diff(grads.get(v), rg.get(vr)), 4 * tol);
    }
  }
}

}  // namespace
