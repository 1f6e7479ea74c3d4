// ONNX's attention-era operators (opsets 23 and later): Attention, RMSNormalization,
// LpNormalization, RotaryEmbedding, Swish, LinearAttention and CausalConvWithState, written with
// Ember's matmul, softmax and masking ops (no data values read to the host).
#include <algorithm>
#include <cmath>
#include <limits>

#include "ember/tensor/ops/conv.hpp"
#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/indexing.hpp"
#include "ember/tensor/ops/linalg.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "ember/tensor/ops/reduce.hpp"
#include "ember/tensor/ops/shape_linalg.hpp"
#include "registry.hpp"

namespace ember::onnx {
namespace {

// ---- Attention (opset 23) -------------------------------------------------------------------

constexpr double kInf = std::numeric_limits<double>::infinity();

/// An additive bias of `dtype`: 0 where `allowed`, -inf elsewhere (select, not multiply, so
/// no 0 * -inf = NaN).
DynTensor bias_from(const DynTensor& allowed, DType dtype) {
  return masked_fill(zeros(allowed.shape(), dtype, allowed.device()), logical_not(allowed), -kInf);
}

DynTensor add_bias(const DynTensor& bias, const DynTensor& term) {
  return bias.defined() ? add(bias, term) : term;
}

/// [B, S, heads * size] -> [B, heads, S, size].
DynTensor split_heads(const OpContext& c, const DynTensor& x, int64_t heads, const char* what) {
  if (heads < 1 || x.size(2) % heads != 0)
    c.fail(what, " ", x.shape(), ": its hidden size is not a multiple of ", heads, " heads");
  return transpose(reshape(x, Shape{x.size(0), x.size(1), heads, x.size(2) / heads}), 1, 2);
}

/// softmax_precision: one of ONNX's float element types.
DType float_dtype(const OpContext& c, int64_t t) {
  const DType d = dtype_from_onnx(c, t, "softmax_precision");
  if (!is_floating(d)) c.fail("softmax_precision must be a float type, got ", type_name(t));
  return d;
}

// Scaled dot-product attention as ONNX's reference computes it: Q and K each scaled by
// sqrt(scale), softcap before the bias, the bias the sum of the (padded) mask, the causal and
// sliding-window frontiers (offset by the past length, or per batch by nonpad_kv_seqlen - S_q)
// and the padding of nonpad_kv_seqlen. A query row whose bias is all -inf outputs zeros.
std::vector<Value> attention(OpContext& c) {
  DynTensor q = c.in(0), k = c.in(1), v = c.in(2);
  const DType dtype = q.dtype();
  const bool three_d = q.rank() == 3;
  if (q.rank() != k.rank() || q.rank() != v.rank() || (q.rank() != 3 && q.rank() != 4))
    c.fail("Q ", q.shape(), ", K ", k.shape(), " and V ", v.shape(), " must all be 3-D or 4-D");
  const bool heads_given = c.has_attr("q_num_heads") || c.has_attr("kv_num_heads");
  if (three_d) {
    if (!c.has_attr("q_num_heads") || !c.has_attr("kv_num_heads"))
      c.fail("3-D inputs need q_num_heads and kv_num_heads");
    const int64_t kv_heads = c.attr_int("kv_num_heads", 0);
    q = split_heads(c, q, c.attr_int("q_num_heads", 0), "Q");
    k = split_heads(c, k, kv_heads, "K");
    v = split_heads(c, v, kv_heads, "V");
  } else if (c.opset() >= 25 && heads_given) {
    c.fail("q_num_heads and kv_num_heads must not be given for 4-D inputs");
  }
  if (c.has(4) != c.has(5)) c.fail("past_key and past_value must be given together");
  const bool has_past = c.has(4), has_nonpad = c.opset() >= 24 && c.has(6);
  if (has_past && has_nonpad) c.fail("nonpad_kv_seqlen cannot be combined with past_key");
  const int64_t past = has_past ? c.in(4).size(2) : 0;
  if (has_past) {
    k = cat({c.in(4), k}, 2);
    v = cat({c.in(5), v}, 2);
  }
  const DynTensor present_key = k, present_value = v;
  const int64_t batch = q.size(0), q_heads = q.size(1), kv_heads = k.size(1);
  const int64_t q_len = q.size(2), kv_len = k.size(2);
  const Device dev = q.device();

  DynTensor bias;  // undefined: no masking at all
  if (c.has(3)) {
    DynTensor mask = c.in(3);
    const int64_t short_by = kv_len - mask.size(-1);
    const bool boolean = mask.dtype() == DType::boolean;
    if (short_by > 0) {  // a mask shorter than the keys leaves the rest masked out
      Ints p{0, short_by};
      mask = boolean ? cast(pad(cast(mask, DType::u8), p), DType::boolean)
                     : pad(mask, p, PadMode::Constant, -kInf);
    }
    bias = boolean ? bias_from(mask, dtype) : cast(mask, dtype);
  }
  // The causal and window frontiers compare key j with query i + offset.
  const DynTensor i = reshape(arange(0, q_len, 1, DType::i64, dev), Shape{q_len, 1});
  const DynTensor j = reshape(arange(0, kv_len, 1, DType::i64, dev), Shape{1, kv_len});
  DynTensor at = add(i, past);  // [q, kv] or, with nonpad_kv_seqlen, [B, 1, q, 1]
  if (has_nonpad) {
    const DynTensor offset = sub(cast(c.in(6), DType::i64), q_len);
    at = add(i, reshape(offset, Shape{batch, 1, 1, 1}));
  }
  if (c.attr_int("is_causal", 0) != 0) bias = add_bias(bias, bias_from(le(j, at), dtype));
  const int64_t left = c.opset() >= 25 ? c.attr_int("left_window_size", -1) : -1;
  const int64_t right = c.opset() >= 25 ? c.attr_int("right_window_size", -1) : -1;
  if (left < -1 || right < -1) c.fail("left/right_window_size must be -1 or non-negative");
  if (left >= 0) bias = add_bias(bias, bias_from(le(sub(at, j), left), dtype));
  if (right >= 0) bias = add_bias(bias, bias_from(le(sub(j, at), right), dtype));
  if (has_nonpad) {
    const DynTensor valid = lt(j, reshape(cast(c.in(6), DType::i64), Shape{batch, 1}));
    bias = add_bias(bias, reshape(bias_from(valid, dtype), Shape{batch, 1, 1, kv_len}));
  }

  if (q_heads != kv_heads) {  // grouped-query: each KV head serves q_heads / kv_heads queries
    if (q_heads % kv_heads != 0 || v.size(1) != kv_heads)
      c.fail("q_num_heads ", q_heads, " is not a multiple of kv_num_heads ", kv_heads);
    k = repeat_interleave(k, q_heads / kv_heads, 1);
    v = repeat_interleave(v, q_heads / kv_heads, 1);
  }
  const double scale = c.has_attr("scale") ? c.attr_float("scale", 1.0)
                                           : 1.0 / std::sqrt(static_cast<double>(q.size(3)));
  // sqrt(scale) rounded to the inputs' type, as the reference and the function body do.
  const DynTensor root = cast(full(Shape{}, std::sqrt(scale), dtype, dev), dtype);
  DynTensor qk = matmul(mul(q, root), transpose(mul(k, root), 2, 3));
  const double softcap = c.attr_float("softcap", 0.0);
  if (softcap > 0) qk = mul(tanh(div(qk, softcap)), softcap);
  const int64_t mode = c.attr_int("qk_matmul_output_mode", 0);
  if (mode < 0 || mode > 3) c.fail("qk_matmul_output_mode ", mode, " is not 0 to 3");
  DynTensor scores = bias.defined() ? add(qk, bias) : qk;
  DynTensor qk_out = mode == 2 ? scores : qk;

  // Softmax in softmax_precision (f16 / bf16 widened to f32); fully masked rows give zeros.
  DType soft =
      c.has_attr("softmax_precision") ? float_dtype(c, c.attr_int("softmax_precision", 1)) : dtype;
  if (soft == DType::f16 || soft == DType::bf16) soft = DType::f32;
  scores = cast(scores, soft);
  DynTensor probs;
  if (bias.defined()) {
    const DynTensor dead = eq(amax(bias, {-1}, true), -kInf);
    probs = masked_fill(softmax(masked_fill(scores, dead, 0.0), -1), dead, 0.0);
  } else {
    probs = softmax(scores, -1);
  }
  probs = cast(probs, dtype);
  if (mode == 3) qk_out = probs;

  DynTensor y = matmul(probs, v);
  if (three_d) y = reshape(transpose(y, 1, 2), Shape{batch, q_len, -1});
  return {Value::of(y), Value::of(present_key), Value::of(present_value),
          Value::of(cast(qk_out, dtype))};
}

// ---- RMSNormalization, LpNormalization, RotaryEmbedding, Swish ------------------------------

// x / sqrt(mean(x^2) + eps) * scale over the dims [axis, rank); f16 / bf16 in f32
// (stash_type 1, the only one ONNX's reference defines).
std::vector<Value> rms_norm(OpContext& c) {
  const DynTensor& x = c.in(0);
  if (c.attr_int("stash_type", 1) != 1)
    c.fail("unsupported: stash_type ", c.attr_int("stash_type", 1));
  const int64_t axis = axis_of(c, c.attr_int("axis", -1), x.rank());
  Ints dims;
  for (int64_t i = axis; i < x.rank(); ++i) dims.push_back(i);
  const bool widen = x.dtype() == DType::f16 || x.dtype() == DType::bf16;
  const DynTensor xs = widen ? cast(x, DType::f32) : x;
  const DynTensor ms = mean(mul(xs, xs), dims, true);
  const DynTensor y = mul(mul(xs, rsqrt(add(ms, c.attr_float("epsilon", 1e-5)))), c.in(1));
  return one(cast(y, x.dtype()));
}

// x / ||x||_p along axis (p 1 or 2); a zero norm gives 0, not 0 / 0.
std::vector<Value> lp_norm(OpContext& c) {
  const DynTensor& x = c.in(0);
  const int64_t p = c.attr_int("p", 2);
  if (p != 1 && p != 2) c.fail("p must be 1 or 2, not ", p);
  const int64_t axis = axis_of(c, c.attr_int("axis", -1), x.rank());
  const DynTensor n = norm(x, static_cast<double>(p), {axis}, true);
  return one(cast(where(eq(n, 0.0), 0.0, div(x, n)), x.dtype()));
}

// Rotates the first rotary_embedding_dim features of every head by the cached angles: as
// pairs (x[2i], x[2i+1]) when interleaved, else (x[i], x[i + dim / 2]). The caches are
// [max_position, dim / 2] indexed by position_ids, or already [B, S, dim / 2].
std::vector<Value> rotary_embedding(OpContext& c) {
  const DynTensor& in = c.in(0);
  DynTensor x;  // [B, S, heads, head_size]
  if (in.rank() == 4) {
    x = transpose(in, 1, 2);
  } else if (in.rank() == 3) {
    const int64_t heads = c.attr_int("num_heads", 0);
    if (heads < 1 || in.size(2) % heads != 0)
      c.fail("input ", in.shape(), " needs num_heads dividing its hidden size, not ", heads);
    x = reshape(in, Shape{in.size(0), in.size(1), heads, in.size(2) / heads});
  } else {
    c.fail("input ", in.shape(), " must be 3-D or 4-D");
  }
  const int64_t head = x.size(3);
  int64_t dim = c.attr_int("rotary_embedding_dim", 0);
  if (dim == 0) dim = head;
  if (dim < 2 || dim > head || dim % 2 != 0)
    c.fail("rotary_embedding_dim ", dim, " must be even and at most the head size ", head);
  DynTensor cos_c = c.in(1), sin_c = c.in(2);
  if (c.has(3)) {
    const DynTensor& pos = c.in(3);
    const DynTensor flat = reshape(cast(pos, DType::i64), Shape{-1});
    cos_c = reshape(index_select(cos_c, 0, flat), Shape{pos.size(0), pos.size(1), -1});
    sin_c = reshape(index_select(sin_c, 0, flat), Shape{pos.size(0), pos.size(1), -1});
  }
  if (cos_c.size(-1) != dim / 2 || sin_c.size(-1) != dim / 2)
    c.fail("cos_cache ", cos_c.shape(), " and sin_cache ", sin_c.shape(), " need ", dim / 2,
           " values per position");
  cos_c = unsqueeze(cos_c, 2);
  sin_c = unsqueeze(sin_c, 2);
  const bool interleaved = c.attr_int("interleaved", 0) != 0;
  const DynTensor rot = slice(x, 3, 0, dim);
  const DynTensor x1 = interleaved ? slice(rot, 3, 0, dim, 2) : slice(rot, 3, 0, dim / 2);
  const DynTensor x2 = interleaved ? slice(rot, 3, 1, dim, 2) : slice(rot, 3, dim / 2, dim);
  const DynTensor real = sub(mul(cos_c, x1), mul(sin_c, x2));
  const DynTensor imag = add(mul(sin_c, x1), mul(cos_c, x2));
  DynTensor y = interleaved ? reshape(stack({real, imag}, -1), rot.shape()) : cat({real, imag}, 3);
  if (dim < head) y = cat({y, slice(x, 3, dim, head)}, 3);
  return one(in.rank() == 4 ? transpose(y, 1, 2) : reshape(y, in.shape()));
}

// x sigmoid(alpha x).
std::vector<Value> swish(OpContext& c) {
  const DynTensor& x = c.in(0);
  return one(cast(mul(x, sigmoid(mul(x, c.attr_float("alpha", 1.0)))), x.dtype()));
}

// ---- LinearAttention, CausalConvWithState (opset 27) ----------------------------------------

// The recurrence token by token, in f32, as ONNX's reference runs it (chunk_size is only a
// tuning hint): the state [B, H_kv, d_k, d_v] decays by exp(g_t) ("gated"), takes the outer
// product k_t v_t' (with v_t replaced by beta_t (v_t - S' k_t) for "delta"), and each query
// head reads scale q_t' S from its KV head.
std::vector<Value> linear_attention(OpContext& c) {
  const std::string rule = c.attr_string("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta")
    c.fail("unsupported: update_rule '", rule, "'");
  const bool gating = rule == "gated" || rule == "gated_delta";
  const bool delta = rule == "delta" || rule == "gated_delta";
  if (gating != c.has(4) || delta != c.has(5))
    c.fail("update_rule '", rule, "' ", gating ? "needs" : "forbids", " decay and ",
           delta ? "needs" : "forbids", " beta");
  const int64_t q_heads = c.attr_int("q_num_heads", 0), kv_heads = c.attr_int("kv_num_heads", 0);
  if (q_heads < 1 || kv_heads < 1 || q_heads % kv_heads != 0)
    c.fail("q_num_heads ", q_heads, " must be a positive multiple of kv_num_heads ", kv_heads);
  const DynTensor& query = c.in(0);
  if (query.rank() != 3 || c.in(1).rank() != 3 || c.in(2).rank() != 3)
    c.fail("query, key and value must be 3-D [B, T, heads * size]");
  const auto f32 = [](const DynTensor& t) { return cast(t, DType::f32); };
  const DynTensor q = f32(split_heads(c, query, q_heads, "query"));
  const DynTensor k = f32(split_heads(c, c.in(1), kv_heads, "key"));
  const DynTensor v = f32(split_heads(c, c.in(2), kv_heads, "value"));
  const int64_t b = q.size(0), t = q.size(2), d_k = q.size(3), d_v = v.size(3);
  const auto per_head = [&](const DynTensor& x, const char* what) {  // -> [B, heads, T, 1 or d_k]
    if (x.rank() != 3) c.fail(what, " ", x.shape(), " must be 3-D");
    if (x.size(2) == kv_heads * d_k) return f32(split_heads(c, x, kv_heads, what));
    return f32(transpose(reshape(x, Shape{b, t, x.size(2), 1}), 1, 2));
  };
  const DynTensor decay = gating ? per_head(c.in(4), "decay") : DynTensor();
  const DynTensor beta = delta ? per_head(c.in(5), "beta") : DynTensor();
  DynTensor state =
      c.has(3) ? f32(c.in(3)) : zeros(Shape{b, kv_heads, d_k, d_v}, DType::f32, q.device());
  if (state.shape() != Shape{b, kv_heads, d_k, d_v})
    c.fail("past_state ", state.shape(), " is not [", b, ", ", kv_heads, ", ", d_k, ", ", d_v, "]");
  const double scale = c.attr_float("scale", 0.0) != 0.0
                           ? c.attr_float("scale", 0.0)
                           : 1.0 / std::sqrt(static_cast<double>(d_k));
  std::vector<DynTensor> outs;
  for (int64_t i = 0; i < t; ++i) {
    const DynTensor k_t = select(k, 2, i);  // [B, H_kv, d_k]
    DynTensor v_t = select(v, 2, i);        // [B, H_kv, d_v]
    if (gating) state = mul(state, unsqueeze(exp(select(decay, 2, i)), -1));
    if (delta) {
      const DynTensor retrieved = squeeze(matmul(unsqueeze(k_t, 2), state), 2);
      v_t = mul(select(beta, 2, i), sub(v_t, retrieved));
    }
    state = add(state, mul(unsqueeze(k_t, -1), unsqueeze(v_t, -2)));
    const DynTensor read =
        q_heads == kv_heads ? state : repeat_interleave(state, q_heads / kv_heads, 1);
    outs.push_back(mul(matmul(unsqueeze(select(q, 2, i), 2), read), scale));  // [B, H_q, 1, d_v]
  }
  const DynTensor y = reshape(transpose(cat(outs, 2), 1, 2), Shape{b, t, q_heads * d_v});
  return {Value::of(cast(y, query.dtype())),
          Value::of(cast(state, c.has(3) ? c.in(3).dtype() : query.dtype()))};
}

// A depthwise causal 1-D convolution over [B, C, L] whose left context is past_state (zeros
// when absent); present_state is the last k - 1 positions of that padded input.
std::vector<Value> causal_conv_with_state(OpContext& c) {
  const DynTensor& x = c.in(0);
  const DynTensor& w = c.in(1);
  if (x.rank() != 3 || w.rank() != 3 || w.size(0) != x.size(1) || w.size(1) != 1)
    c.fail("input ", x.shape(), " must be [B, C, L] and weight ", w.shape(), " [C, 1, k]");
  const std::string act = c.attr_string("activation", "none");
  if (act != "none" && act != "silu" && act != "swish")
    c.fail("unsupported: activation '", act, "'");
  const int64_t k = w.size(2);
  const DynTensor past =
      c.has(3) ? c.in(3) : zeros(Shape{x.size(0), x.size(1), k - 1}, x.dtype(), x.device());
  const DynTensor padded = cat({past, x}, 2);
  ConvParams p;
  p.spatial = 1;
  p.groups = x.size(1);
  DynTensor y = cast(convolution(padded, w, c.has(2) ? c.in(2) : DynTensor(), p, false), x.dtype());
  if (act != "none") {
    const DynTensor y32 = cast(y, DType::f32);
    y = cast(mul(y32, sigmoid(y32)), x.dtype());
  }
  const int64_t len = padded.size(2);
  return {Value::of(y), Value::of(slice(padded, 2, len - (k - 1), len))};
}
}  // namespace

void register_attention_ops(Registry& r) {
  r.add("", "Attention", attention, 23);
  r.add("", "RMSNormalization", rms_norm, 23);
  r.add("LpNormalization", lp_norm);
  r.add("", "RotaryEmbedding", rotary_embedding, 23);
  r.add("", "Swish", swish, 24);
  r.add("", "LinearAttention", linear_attention, 27);
  r.add("", "CausalConvWithState", causal_conv_with_state, 27);
}

}  // namespace ember::onnx
