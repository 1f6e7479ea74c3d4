// Fused attention's building blocks (include/ember/tensor/ops/attention.hpp).
#include "ember/tensor/ops/attention.hpp"

#include "ember/autodiff/autodiff.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "internal.hpp"

namespace ember {

bool fused_attention_supported(const DynTensor& q, const DynTensor& k, const DynTensor& v) {
  if (!q.defined() || !k.defined() || !v.defined()) return false;
  if (k.device() != q.device() || v.device() != q.device()) return false;
  const Backend& be = detail::backend_of(q);
  return be.supports(OpFamily::Attention, q.dtype()) &&
         be.attention_supports(q.raw(), k.raw(), v.raw());
}

FusedAttention fused_attention(const DynTensor& q, const DynTensor& k, const DynTensor& v,
                               const AttentionParams& p) {
  constexpr const char* op = "scaled_dot_product_attention";
  EMBER_CHECK(fused_attention_supported(q, k, v), "[", op, "] the fused kernels do not take q ",
              q.shape(), ", k ", k.shape(), ", v ", v.shape(), " of ", q.dtype(), " on ",
              q.device());
  const int64_t b = q.size(0), h = q.size(1), l = q.size(2), ev = v.size(3);
  // Written as [B, L, H, Ev]: merging the heads afterwards (transpose(1, 2), reshape) is free.
  const DynTensor blhe = detail::make_empty(Shape{b, l, h, ev}, q.dtype(), q.device(), op);
  FusedAttention r;
  r.out = transpose(blhe, 1, 2);
  r.lse = detail::make_empty(Shape{b, h, l}, DType::f32, q.device(), op);
  detail::backend_of(q).attention(q.raw(), k.raw(), v.raw(), p, r.out.raw(), r.lse.raw());
  return r;
}

std::array<DynTensor, 3> fused_attention_backward(const DynTensor& q, const DynTensor& k,
                                                  const DynTensor& v, const FusedAttention& fwd,
                                                  const DynTensor& grad_out,
                                                  const AttentionParams& p) {
  constexpr const char* op = "scaled_dot_product_attention_backward";
  // The gradient arrives in whatever layout the ops after the attention left it; the kernels
  // need a unit last stride.
  const DynTensor g = grad_out.strides()[3] == 1 ? grad_out : contiguous(grad_out);
  std::array<DynTensor, 3> d{detail::make_empty(q.shape(), q.dtype(), q.device(), op),
                             detail::make_empty(k.shape(), k.dtype(), k.device(), op),
                             detail::make_empty(v.shape(), v.dtype(), v.device(), op)};
  detail::backend_of(q).attention_backward(q.raw(), k.raw(), v.raw(), fwd.out.raw(), g.raw(),
                                           fwd.lse.raw(), p, d[0].raw(), d[1].raw(), d[2].raw());
  return d;
}

}  // namespace ember
