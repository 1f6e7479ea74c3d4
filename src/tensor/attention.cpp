// Fused attention's building blocks (include/ember/tensor/ops/attention.hpp).
#include "ember/tensor/ops/attention.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "ember/autodiff/autodiff.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "internal.hpp"

namespace ember {

bool fused_attention_supported(const DynTensor& q, const DynTensor& k, const DynTensor& v,
                               const DynTensor& bias) {
  if (!q.defined() || !k.defined() || !v.defined()) return false;
  if (k.device() != q.device() || v.device() != q.device()) return false;
  if (bias.defined() && bias.device() != q.device()) return false;
  const Backend& be = detail::backend_of(q);
  return be.supports(OpFamily::Attention, q.dtype()) &&
         be.attention_supports(q.raw(), k.raw(), v.raw(),
                               bias.defined() ? bias.raw() : RawTensor());
}

FusedAttention fused_attention(const DynTensor& q, const DynTensor& k, const DynTensor& v,
                               const AttentionParams& p, const DynTensor& bias) {
  constexpr const char* op = "scaled_dot_product_attention";
  EMBER_CHECK(fused_attention_supported(q, k, v, bias), "[", op,
              "] the fused kernels do not take q ", q.shape(), ", k ", k.shape(), ", v ", v.shape(),
              bias.defined() ? " and that mask" : "", " of ", q.dtype(), " on ", q.device());
  const int64_t b = q.size(0), h = q.size(1), l = q.size(2), ev = v.size(3);
  // Written as [B, L, H, Ev]: merging the heads afterwards (transpose(1, 2), reshape) is free.
  const DynTensor blhe = detail::make_empty(Shape{b, l, h, ev}, q.dtype(), q.device(), op);
  FusedAttention r;
  r.out = transpose(blhe, 1, 2);
  r.lse = detail::make_empty(Shape{b, h, l}, DType::f32, q.device(), op);
  r.bias = bias.defined() ? detach(bias) : DynTensor();
  detail::backend_of(q).attention(q.raw(), k.raw(), v.raw(),
                                  bias.defined() ? bias.raw() : RawTensor(), p, r.out.raw(),
                                  r.lse.raw());
  return r;
}

namespace {

// Whether views of one strides never reach one element twice: sorted by stride, each stride
// passes every element the smaller ones reach (how a slice of a dense buffer is laid out).
bool nested(std::vector<std::pair<int64_t, int64_t>> stride_size) {
  std::sort(stride_size.begin(), stride_size.end());
  int64_t reach = 0;  // the largest offset the smaller dims reach
  for (const auto& [stride, size] : stride_size) {
    if (size == 1) continue;
    if (stride <= reach) return false;
    reach += stride * (size - 1);
  }
  return true;
}

// Gradients for q, k and v: where they are the three slices of one view (the heads of a packed
// qkv projection, split), one buffer laid out as that view, so that the projection's gradient
// is the buffer itself (autodiff finds the split's pieces in place) instead of three copies.
std::array<DynTensor, 3> gradient_buffers(const DynTensor& q, const DynTensor& k,
                                          const DynTensor& v, const char* op) {
  const RawTensor &rq = q.raw(), &rk = k.raw(), &rv = v.raw();
  std::array<const RawTensor*, 3> by_offset{&rq, &rk, &rv};
  std::sort(by_offset.begin(), by_offset.end(),
            [](const RawTensor* a, const RawTensor* b) { return a->offset < b->offset; });
  const int64_t step = by_offset[1]->offset - by_offset[0]->offset;
  bool packed = rk.storage == rq.storage && rv.storage == rq.storage && rk.shape == rq.shape &&
                rv.shape == rq.shape && rk.strides == rq.strides && rv.strides == rq.strides &&
                step > 0 && by_offset[2]->offset - by_offset[1]->offset == step;
  std::vector<std::pair<int64_t, int64_t>> dims{{step, 3}};
  int64_t extent = 2 * step + 1;
  for (int d = 0; packed && d < rq.shape.rank(); ++d) {
    packed = rq.strides[d] >= 0;
    dims.emplace_back(rq.strides[d], rq.shape[d]);
    extent += rq.strides[d] * (rq.shape[d] - 1);
  }
  // Exactly dense (no holes): a buffer over sparse slices of something larger would cost more
  // memory than three separate gradients.
  if (!packed || !nested(dims) || extent != 3 * q.numel()) {
    return {detail::make_empty(q.shape(), q.dtype(), q.device(), op),
            detail::make_empty(k.shape(), k.dtype(), k.device(), op),
            detail::make_empty(v.shape(), v.dtype(), v.device(), op)};
  }
  const DynTensor buffer = detail::make_empty(Shape{extent}, q.dtype(), q.device(), op);
  const int64_t base = by_offset[0]->offset;
  auto like = [&](const RawTensor& t) {
    return DynTensor(buffer.raw().view(t.shape, t.strides, t.offset - base));
  };
  return {like(rq), like(rk), like(rv)};
}

}  // namespace

std::array<DynTensor, 3> fused_attention_backward(const DynTensor& q, const DynTensor& k,
                                                  const DynTensor& v, const FusedAttention& fwd,
                                                  const DynTensor& grad_out,
                                                  const AttentionParams& p) {
  constexpr const char* op = "scaled_dot_product_attention_backward";
  // The gradient arrives in whatever layout the ops after the attention left it; the kernels
  // need a unit last stride.
  const DynTensor g = grad_out.strides()[3] == 1 ? grad_out : contiguous(grad_out);
  std::array<DynTensor, 3> d = gradient_buffers(q, k, v, op);
  detail::backend_of(q).attention_backward(
      q.raw(), k.raw(), v.raw(), fwd.bias.defined() ? fwd.bias.raw() : RawTensor(), fwd.out.raw(),
      g.raw(), fwd.lse.raw(), p, d[0].raw(), d[1].raw(), d[2].raw());
  return d;
}

}  // namespace ember
