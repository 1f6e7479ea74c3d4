// ONNX's elementwise operators, every opset version up to 17 (and a few later ones that cost
// nothing): arithmetic and comparisons with numpy broadcasting (Ember's own; the legacy
// broadcast/axis attributes of opsets 1-6 are mapped onto it), unary math, activations, Cast,
// quantization, window functions, DFT/STFT/MelWeightMatrix and the random generators; Identity
// and Constant.
//
// Ember promotes mixed dtypes as PyTorch does, ONNX never promotes: where the two differ (integer
// Div, Pow, Shrink on integers, ...) the result is cast back so that outputs keep ONNX's dtype.
#include <cmath>
#include <numbers>
#include <optional>

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

using Unary = DynTensor (*)(const DynTensor&);
using Binary = DynTensor (*)(const DynTensor&, const DynTensor&);

// ---- Helpers ----------------------------------------------------------------------------------

// Before opset 7, binary ops broadcast only with broadcast=1, B onto A, B's dims aligned with A's
// from `axis` on (trailing when absent, as numpy). Numpy broadcasting covers every legal case once
// B has trailing 1s appended for the dims of A past B's.
DynTensor legacy_rhs(const OpContext& c, const DynTensor& a, const DynTensor& b) {
  if (c.opset() >= 7 || c.attr_int("broadcast", 0) == 0 || !c.has_attr("axis")) return b;
  int64_t axis = c.attr_int("axis", 0);
  if (axis < 0) axis += a.rank();
  const int64_t trailing = a.rank() - axis - b.rank();
  if (axis < 0 || trailing < 0) {
    c.fail("legacy broadcast of B ", b.shape(), " onto A ", a.shape(), " at axis ",
           c.attr_int("axis", 0), " does not fit");
  }
  Shape s = b.shape();
  for (int64_t i = 0; i < trailing; ++i) s.push_back(1);
  return reshape(b, s);
}

OpFn unary(Unary f) {
  return [f](OpContext& c) { return one(f(c.in(0))); };
}
OpFn binary(Binary f) {
  return [f](OpContext& c) {
    const DynTensor& a = c.in(0);
    return one(f(a, legacy_rhs(c, a, c.in(1))));
  };
}

// Cast-1 named the type with a string ("FLOAT"); later versions use the enum.
DType cast_target(const OpContext& c) {
  const Attribute& to = c.attr("to");
  if (to.kind != Attribute::Kind::String) return dtype_from_onnx(c, c.attr_int("to", 0), "Cast to");
  static const std::pair<const char*, int64_t> names[] = {
      {"FLOAT", 1},   {"UINT8", 2},   {"INT8", 3},    {"UINT16", 4},   {"INT16", 5},
      {"INT32", 6},   {"INT64", 7},   {"STRING", 8},  {"BOOL", 9},     {"FLOAT16", 10},
      {"DOUBLE", 11}, {"UINT32", 12}, {"UINT64", 13}, {"BFLOAT16", 16}};
  for (const auto& [name, code] : names) {
    if (to.s == name) return dtype_from_onnx(c, code, "Cast to");
  }
  c.fail("unknown Cast target type '", to.s, "'");
}

// A quantization parameter shaped to broadcast against x: scalars and one-element tensors pass as
// they are; per-axis ones (1-D, one value per slice of x along `axis`) are reshaped; blocked ones
// (opset 21: x's shape but for `axis`, one value per block_size slices there) are repeated along
// it, the last block cut to fit.
DynTensor along_axis(const OpContext& c, const DynTensor& p, const DynTensor& x) {
  if (p.rank() == 0 || (p.rank() == 1 && p.numel() == 1)) return p;
  int64_t axis = c.attr_int("axis", 1);
  if (axis < 0) axis += x.rank();
  if (axis < 0 || axis >= x.rank()) {
    c.fail("axis ", c.attr_int("axis", 1), " is out of range for x ", x.shape());
  }
  const int64_t block = c.attr_int("block_size", 0);
  if (block > 0) {
    const int64_t n = x.size(int(axis));
    bool fits = p.rank() == x.rank() && p.size(int(axis)) == (n + block - 1) / block;
    for (int64_t d = 0; fits && d < x.rank(); ++d) {
      fits = d == axis || p.size(int(d)) == x.size(int(d));
    }
    if (!fits) {
      c.fail("blocked parameter of shape ", p.shape(), " does not fit x ", x.shape(),
             " with block_size ", block, " along axis ", axis);
    }
    return narrow(repeat_interleave(p, block, axis), axis, 0, n);
  }
  if (block < 0) c.fail("block_size must be non-negative, got ", block);
  if (p.rank() != 1) {
    c.fail("a quantization scale or zero point must be 0-d or 1-D, got ", p.shape());
  }
  if (x.size(int(axis)) != p.numel()) {
    c.fail("per-axis parameter of shape ", p.shape(), " does not match axis ",
           c.attr_int("axis", 1), " of x ", x.shape());
  }
  Shape s = Shape::filled(x.rank(), 1);
  s[int(axis)] = p.numel();
  return reshape(p, s);
}

// ---- Arithmetic -------------------------------------------------------------------------------

// Integer Div truncates toward zero (C's and ONNX Runtime's; the reference does the same), where
// Ember's div is true division: floor division, then one step back toward zero when the signs
// differ and the division is inexact. Integer math throughout, so int64 keeps every bit.
std::vector<Value> div_op(OpContext& c) {
  const DynTensor& a = c.in(0);
  const DynTensor b = legacy_rhs(c, a, c.in(1));
  if (is_floating(a.dtype())) return one(div(a, b));
  const DynTensor q = floor_divide(a, b);
  if (a.dtype() == DType::u8) return one(q);
  const DynTensor inexact = ne(remainder(a, b), 0);
  const DynTensor signs_differ = logical_xor(lt(a, 0), lt(b, 0));
  return one(add(q, cast(logical_and(inexact, signs_differ), q.dtype())));
}

// Pow: the result has the base's dtype (opset 12 allows mixed base and exponent types).
std::vector<Value> pow_op(OpContext& c) {
  const DynTensor& x = c.in(0);
  const DynTensor y = legacy_rhs(c, x, c.in(1));
  if (is_floating(x.dtype()) || !is_floating(y.dtype())) return one(pow(x, cast(y, x.dtype())));
  // An integer base to a float power: computed in double, then truncated (numpy's astype).
  return one(cast(pow(cast(x, DType::f64), cast(y, DType::f64)), x.dtype()));
}

// Mod: fmod=0 takes the divisor's sign (Python's %), fmod=1 the dividend's (C's fmod).
std::vector<Value> mod_op(OpContext& c) {
  const int64_t f = c.attr_int("fmod", 0);
  if (f != 0 && f != 1) c.fail("attribute 'fmod' must be 0 or 1, got ", f);
  return one(f == 1 ? fmod(c.in(0), c.in(1)) : remainder(c.in(0), c.in(1)));
}

// Min, Max, Sum, Mean: one or more inputs, broadcast together (from opset 8; same shapes before).
template <Binary F>
DynTensor fold(const OpContext& c) {
  if (c.num_inputs() == 0) c.fail("needs at least one input");
  DynTensor acc = c.in(0);
  for (size_t i = 1; i < c.num_inputs(); ++i) acc = F(acc, c.in(i));
  return acc;
}
std::vector<Value> min_op(OpContext& c) { return one(fold<minimum>(c)); }
std::vector<Value> max_op(OpContext& c) { return one(fold<maximum>(c)); }
std::vector<Value> sum_op(OpContext& c) { return one(fold<add>(c)); }
std::vector<Value> mean_op(OpContext& c) {
  return one(div(fold<add>(c), static_cast<double>(c.num_inputs())));
}

// Clip: bounds as attributes before opset 11, optional inputs after. minimum(maximum(x, lo), hi)
// is numpy's clip: NaN propagates, and where lo > hi everything becomes hi, as the spec says.
std::vector<Value> clip_op(OpContext& c) {
  DynTensor y = c.in(0);
  if (c.opset() < 11) {
    if (c.has_attr("min")) y = clamp_min(y, c.attr_float("min", 0));
    if (c.has_attr("max")) y = clamp_max(y, c.attr_float("max", 0));
    return one(y);
  }
  if (c.has(1)) y = maximum(y, c.in(1));
  if (c.has(2)) y = minimum(y, c.in(2));
  return one(y);
}

// ---- Comparisons, logic, bits -----------------------------------------------------------------

std::vector<Value> not_op(OpContext& c) { return one(logical_not(c.in(0))); }

std::vector<Value> where_op(OpContext& c) {
  const DynTensor& cond = c.in(0);
  if (cond.dtype() != DType::boolean) c.fail("condition must be bool, got ", cond.dtype());
  return one(where(cond, c.in(1), c.in(2)));
}

// BitShift: unsigned integers up to opset 27 (u8 is Ember's one), signed ones too from opset 28.
// A shift by a negative amount or by the bit width or more gives what the sign fill alone gives:
// -1 for a right shift of a negative x, 0 otherwise (the reference's rule; C leaves it undefined,
// so those lanes are shifted by 0 and replaced).
std::vector<Value> bitshift_op(OpContext& c) {
  const DynTensor &x = c.in(0), &y = c.in(1);
  if (x.dtype() != y.dtype() || is_floating(x.dtype()) || x.dtype() == DType::boolean) {
    c.fail("unsupported: BitShift of ", x.dtype(), " by ", y.dtype(),
           " (Ember has the integer dtypes u8, i8, i32, i64)");
  }
  const std::string dir = c.attr_string("direction", "");
  if (dir != "LEFT" && dir != "RIGHT") {
    c.fail("attribute 'direction' must be LEFT or RIGHT, got '", dir, "'");
  }
  const int64_t bits = 8 * int64_t(dtype_size(x.dtype()));
  const DynTensor valid = logical_and(ge(y, 0), lt(y, bits));
  const DynTensor amount = where(valid, y, zeros_like(y));
  const DynTensor shifted =
      dir == "LEFT" ? bitwise_left_shift(x, amount) : bitwise_right_shift(x, amount);
  DynTensor fill = zeros_like(shifted);
  if (dir == "RIGHT" && x.dtype() != DType::u8) fill = neg(cast(lt(x, 0), x.dtype()));
  return one(where(valid, shifted, fill));
}

// BitwiseAnd/Or/Xor/Not (opset 18) on the integer dtypes.
template <Unary F>
std::vector<Value> bitwise_unary_op(OpContext& c) {
  const DynTensor& x = c.in(0);
  if (is_floating(x.dtype()) || x.dtype() == DType::boolean) {
    c.fail("bitwise operands must be integers, got ", x.dtype());
  }
  return one(F(x));
}
template <Binary F>
std::vector<Value> bitwise_binary_op(OpContext& c) {
  const DynTensor &a = c.in(0), &b = c.in(1);
  if (a.dtype() != b.dtype() || is_floating(a.dtype()) || a.dtype() == DType::boolean) {
    c.fail("bitwise operands must be integers of one dtype, got ", a.dtype(), " and ", b.dtype());
  }
  return one(F(a, b));
}

std::vector<Value> isinf_op(OpContext& c) {
  const DynTensor& x = c.in(0);
  const bool pos = c.attr_int("detect_positive", 1) != 0,
             negative = c.attr_int("detect_negative", 1) != 0;
  if (pos && negative) return one(isinf(x));
  if (!pos && !negative) return one(zeros(x.shape(), DType::boolean, x.device()));
  return one(logical_and(isinf(x), pos ? gt(x, 0) : lt(x, 0)));
}

// ---- Unary math missing from Ember's primitives -----------------------------------------------

// asinh(x) = sign(x) log(|x| + hypot(x, 1)): odd by construction (no cancellation for x < 0),
// hypot keeps x^2 from overflowing.
DynTensor asinh_composite(const DynTensor& x) {
  const DynTensor ax = abs(x);
  return mul(sign(x), log(add(ax, hypot(ax, ones_like(ax)))));
}
// acosh(x) = log(x + sqrt((x - 1)(x + 1))), the product rather than x^2 - 1 to avoid overflow.
DynTensor acosh_composite(const DynTensor& x) {
  return log(add(x, sqrt(mul(sub(x, 1.0), add(x, 1.0)))));
}
// atanh(x) = (log1p(x) - log1p(-x)) / 2, accurate near 0.
DynTensor atanh_composite(const DynTensor& x) { return mul(sub(log1p(x), log1p(neg(x))), 0.5); }

// ---- Activations ------------------------------------------------------------------------------
// Negative branches take exp of min(x, 0) so that the branch where() drops never overflows (an
// inf there would turn the gradient into NaN).

DynTensor expm1_neg(const DynTensor& x) { return expm1(clamp_max(x, 0.0)); }

std::vector<Value> leaky_relu_op(OpContext& c) {
  const DynTensor& x = c.in(0);
  return one(where(lt(x, 0), mul(x, c.attr_float("alpha", 0.01)), x));
}

std::vector<Value> elu_op(OpContext& c) {
  const DynTensor& x = c.in(0);
  return one(where(lt(x, 0), mul(expm1_neg(x), c.attr_float("alpha", 1.0)), x));
}

std::vector<Value> selu_op(OpContext& c) {
  const DynTensor& x = c.in(0);
  const double alpha = c.attr_float("alpha", 1.67326319217681884765625),
               gamma = c.attr_float("gamma", 1.05070102214813232421875);
  return one(mul(where(le(x, 0), mul(expm1_neg(x), alpha), x), gamma));
}

// Celu: max(0, x) + min(0, alpha (exp(x / alpha) - 1)).
std::vector<Value> celu_op(OpContext& c) {
  const DynTensor& x = c.in(0);
  const double alpha = c.attr_float("alpha", 1.0);
  return one(add(relu(x), mul(expm1(div(clamp_max(x, 0.0), alpha)), alpha)));
}

std::vector<Value> thresholded_relu_op(OpContext& c) {
  const DynTensor& x = c.in(0);
  return one(where(gt(x, c.attr_float("alpha", 1.0)), x, Scalar(0)));
}

// HardSigmoid: max(0, min(1, alpha x + beta)); HardSwish is x times it at alpha 1/6, beta 1/2.
DynTensor hard_sigmoid(const DynTensor& x, double alpha, double beta) {
  return clamp(add(mul(x, alpha), beta), 0.0, 1.0);
}
std::vector<Value> hard_sigmoid_op(OpContext& c) {
  return one(hard_sigmoid(c.in(0), c.attr_float("alpha", 0.2), c.attr_float("beta", 0.5)));
}
std::vector<Value> hard_swish_op(OpContext& c) {
  const DynTensor& x = c.in(0);
  return one(mul(x, hard_sigmoid(x, 1.0 / 6.0, 0.5)));
}

// PRelu: the slope broadcasts to x (unidirectionally from opset 7). Before, a 1-D slope of one
// value per channel applied along dim 1 (Caffe2's convention, which PyTorch 0.3 exported).
std::vector<Value> prelu_op(OpContext& c) {
  const DynTensor& x = c.in(0);
  DynTensor slope = c.in(1);
  if (c.opset() < 7 && slope.rank() == 1 && x.rank() > 2 && slope.numel() == x.size(1) &&
      slope.numel() > 1) {
    Shape s = Shape::filled(x.rank() - 1, 1);
    s[0] = slope.numel();
    slope = reshape(slope, s);
  }
  return one(where(lt(x, 0), mul(x, slope), x));
}

std::vector<Value> softplus_op(OpContext& c) { return one(softplus(c.in(0), 1.0)); }
std::vector<Value> softsign_op(OpContext& c) {
  const DynTensor& x = c.in(0);
  return one(div(x, add(abs(x), 1.0)));
}
std::vector<Value> mish_op(OpContext& c) {
  const DynTensor& x = c.in(0);
  return one(mul(x, tanh(softplus(x, 1.0))));
}

std::vector<Value> gelu_op(OpContext& c) {
  const std::string approx = c.attr_string("approximate", "none");
  if (approx != "none" && approx != "tanh") {
    c.fail("attribute 'approximate' must be 'none' or 'tanh', got '", approx, "'");
  }
  return one(gelu(c.in(0), approx == "tanh"));
}

// Shrink: x + bias below -lambd, x - bias above lambd, 0 between; integer inputs keep their dtype
// (computed in float, then truncated as the reference's astype).
std::vector<Value> shrink_op(OpContext& c) {
  const DynTensor& x = c.in(0);
  const double lambd = c.attr_float("lambd", 0.5), bias = c.attr_float("bias", 0.0);
  const DynTensor inner = where(gt(x, lambd), sub(x, bias), Scalar(0.0));
  return one(cast(where(lt(x, -lambd), add(x, bias), inner), x.dtype()));
}

// ---- Cast -------------------------------------------------------------------------------------

std::vector<Value> cast_op(OpContext& c) {
  // Float to integer truncates (NaN and out-of-range values saturate: ONNX leaves them undefined).
  return one(cast(c.in(0), cast_target(c)));
}

// BitCast (opset 26): the same bits read as another dtype of the same width. Ember has no bit
// reinterpretation op; between i8, u8 and bool a (two's complement, modular) cast keeps the
// bits, so those are supported, float <-> integer is not.
std::vector<Value> bitcast_op(OpContext& c) {
  const DynTensor& x = c.in(0);
  const DType to = dtype_from_onnx(c, c.attr_int("to", 0), "BitCast to");
  if (dtype_size(to) != dtype_size(x.dtype())) {
    c.fail("BitCast needs dtypes of one width, got ", x.dtype(), " to ", to);
  }
  if (to == x.dtype()) return one(x);
  auto bytewise = [](DType t) { return t == DType::i8 || t == DType::u8 || t == DType::boolean; };
  if (!bytewise(x.dtype()) || !bytewise(to)) {
    c.fail("unsupported: BitCast of ", x.dtype(), " to ", to,
           " (Ember has no bit reinterpretation between float and integer dtypes)");
  }
  return one(cast(x, to));
}

std::vector<Value> cast_like_op(OpContext& c) { return one(cast(c.in(0), c.in(1).dtype())); }

// ---- Quantization -----------------------------------------------------------------------------

// The saturation range of a quantized dtype.
std::pair<double, double> quant_range(const OpContext& c, DType t) {
  if (t == DType::u8) return {0.0, 255.0};
  if (t == DType::i8) return {-128.0, 127.0};
  c.fail("unsupported: quantization to ", t, " (Ember has u8 and i8)");
}

// y = saturate(round_half_even(x / scale) + zero_point), in the zero point's dtype, else
// output_dtype (opset 21), else u8. `precision` (opset 23) names the dtype of the division.
std::vector<Value> quantize_linear_op(OpContext& c) {
  const DynTensor& x = c.in(0);
  const DynTensor scale = along_axis(c, c.in(1), x);
  DType qtype = c.has_attr("output_dtype")
                    ? dtype_from_onnx(c, c.attr_int("output_dtype", 2), "QuantizeLinear to")
                    : DType::u8;
  if (c.has(2)) {
    if (c.has_attr("output_dtype") && c.in(2).dtype() != qtype) {
      c.fail("output_dtype ", qtype, " differs from the zero point's ", c.in(2).dtype());
    }
    qtype = c.in(2).dtype();
  }
  const auto [lo, hi] = quant_range(c, qtype);
  const DType ftype = c.has_attr("precision")
                          ? dtype_from_onnx(c, c.attr_int("precision", 1), "QuantizeLinear in")
                          : scale.dtype();
  DynTensor q = round(div(cast(x, ftype), cast(scale, ftype)));
  if (c.has(2)) q = add(q, cast(along_axis(c, c.in(2), x), ftype));
  return one(cast(clamp(q, lo, hi), qtype));
}

// y = (x - zero_point) * scale, in the scale's dtype or output_dtype (opset 23).
std::vector<Value> dequantize_linear_op(OpContext& c) {
  const DynTensor& x = c.in(0);
  const DynTensor scale = along_axis(c, c.in(1), x);
  DynTensor v = cast(x, scale.dtype());
  if (c.has(2)) v = sub(v, cast(along_axis(c, c.in(2), x), scale.dtype()));
  const DynTensor y = mul(v, scale);
  if (!c.has_attr("output_dtype")) return one(y);
  return one(cast(y, dtype_from_onnx(c, c.attr_int("output_dtype", 1), "DequantizeLinear to")));
}

// u8 quantization over the range of x widened to include 0: scale = (max - min) / 255,
// zero_point = saturate(round(-min / scale)). Outputs y, y_scale, y_zero_point.
std::vector<Value> dynamic_quantize_linear_op(OpContext& c) {
  const DynTensor& x = c.in(0);
  if (x.dtype() != DType::f32) c.fail("x must be float32, got ", x.dtype());
  const DynTensor lo = clamp_max(amin(x), 0.0), hi = clamp_min(amax(x), 0.0);
  const DynTensor scale = div(sub(hi, lo), 255.0);
  const DynTensor zp = clamp(round(div(neg(lo), scale)), 0.0, 255.0);
  const DynTensor y = clamp(add(round(div(x, scale)), zp), 0.0, 255.0);
  return {Value::of(cast(y, DType::u8)), Value::of(scale), Value::of(cast(zp, DType::u8))};
}

// ---- Window functions (opset 17) --------------------------------------------------------------

// sum_k a_k cos(2 pi k n / N) for n in [0, size), N = size (periodic) or size - 1 (symmetric);
// computed in double, returned in output_datatype (default float).
DynTensor cosine_window(const OpContext& c, std::initializer_list<double> a) {
  const std::vector<int64_t> size = c.ints(0);
  if (size.size() != 1 || size[0] < 0) c.fail("size must be one non-negative integer");
  const DType out = dtype_from_onnx(c, c.attr_int("output_datatype", 1), "a window of");
  const bool periodic = c.attr_int("periodic", 1) != 0;
  const double n_den = static_cast<double>(periodic ? size[0] : size[0] - 1);
  const DynTensor n = arange(0, size[0], 1, DType::f64, c.device());
  DynTensor w = zeros(Shape{size[0]}, DType::f64, c.device());
  double k = 0;
  for (double ak : a) {
    w = add(w, mul(cos(mul(n, 2.0 * std::numbers::pi * k / n_den)), ak));
    k += 1;
  }
  return cast(w, out);
}

std::vector<Value> hann_window_op(OpContext& c) { return one(cosine_window(c, {0.5, -0.5})); }
std::vector<Value> hamming_window_op(OpContext& c) {
  constexpr double alpha = 25.0 / 46.0;
  return one(cosine_window(c, {alpha, -(1.0 - alpha)}));
}
std::vector<Value> blackman_window_op(OpContext& c) {
  return one(cosine_window(c, {0.42, -0.5, 0.08}));
}

// ---- Fourier transforms (opset 17) -----------------------------------------------------------
// Ember has no FFT: a DFT of length n is a matmul with the n x k matrices of cos and sin, O(n k)
// per signal but exact, on every backend and under autodiff. Complex values are ONNX's: a last
// dim of 2 (real, imaginary), or of 1 for real signals.

// x along `axis` (of the signal dims, the complex dim excluded) zero-padded or cut to `length`,
// transformed; onesided keeps the bins [0, length / 2]. The inverse divides by length.
DynTensor dft(const OpContext& c, const DynTensor& x, int64_t axis, int64_t length, bool inverse,
              bool onesided) {
  const int64_t last = x.rank() - 1;
  if (x.rank() < 2 || (x.size(-1) != 1 && x.size(-1) != 2)) {
    c.fail("the input must end in a dim of 1 (real) or 2 (complex), got ", x.shape());
  }
  if (axis < 0) axis += x.rank();
  if (axis < 0 || axis >= last) c.fail("axis ", axis, " is out of range for input ", x.shape());
  if (length < 1) c.fail("dft_length must be positive, got ", length);
  // The transformed dim last, so the transform is one matmul.
  auto prepare = [&](const DynTensor& part) {
    DynTensor t = transpose(part, axis, last - 1);
    const int64_t n = t.size(-1);
    return n > length ? narrow(t, -1, 0, length) : n < length ? pad(t, {0, length - n}) : t;
  };
  const DynTensor re = prepare(select(x, last, 0));
  const std::optional<DynTensor> im =
      x.size(-1) == 2 ? std::optional<DynTensor>(prepare(select(x, last, 1))) : std::nullopt;
  // angle[n][k] = -+2 pi (n k mod length) / length, reduced in integers so it stays exact.
  const int64_t bins = onesided ? length / 2 + 1 : length;
  const DynTensor n = unsqueeze(arange(0, length, 1, DType::i64, x.device()), 1);
  const DynTensor k = unsqueeze(arange(0, bins, 1, DType::i64, x.device()), 0);
  const double step = (inverse ? 2.0 : -2.0) * std::numbers::pi / static_cast<double>(length);
  const DynTensor angle = mul(cast(remainder(mul(n, k), length), DType::f64), step);
  const DynTensor cs = cast(cos(angle), x.dtype()), sn = cast(sin(angle), x.dtype());
  // (re + i im)(cos + i sin) summed over n.
  DynTensor out_re = matmul(re, cs), out_im = matmul(re, sn);
  if (im) {
    out_re = sub(out_re, matmul(*im, sn));
    out_im = add(out_im, matmul(*im, cs));
  }
  if (inverse) {
    out_re = div(out_re, static_cast<double>(length));
    out_im = div(out_im, static_cast<double>(length));
  }
  return stack({transpose(out_re, axis, last - 1), transpose(out_im, axis, last - 1)}, -1);
}

// The inverse of a onesided transform (numpy's irfft): the bins [0, length / 2] of a Hermitian
// spectrum along `axis` (cut or zero-padded to that many) -> a real signal of `length` samples,
// [..., 1]. x[t] = (1 / length) sum_k w_k Re(X_k e^{2 pi i k t / length}), w_k = 2 for the bins
// whose mirror image is implied, 1 for bin 0 and (length even) bin length / 2, whose imaginary
// parts are ignored as numpy does.
DynTensor irfft(const OpContext& c, const DynTensor& x, int64_t axis, int64_t length) {
  const int64_t last = x.rank() - 1;
  if (x.rank() < 2 || (x.size(-1) != 1 && x.size(-1) != 2)) {
    c.fail("the input must end in a dim of 1 (real) or 2 (complex), got ", x.shape());
  }
  if (axis < 0 || axis >= last) c.fail("axis ", axis, " is out of range for input ", x.shape());
  if (length < 1) c.fail("dft_length must be positive, got ", length);
  const int64_t bins = length / 2 + 1;
  auto prepare = [&](const DynTensor& part) {
    DynTensor t = transpose(part, axis, last - 1);
    const int64_t n = t.size(-1);
    return n > bins ? narrow(t, -1, 0, bins) : n < bins ? pad(t, {0, bins - n}) : t;
  };
  const DynTensor k = unsqueeze(arange(0, bins, 1, DType::i64, x.device()), 1);
  const DynTensor n = unsqueeze(arange(0, length, 1, DType::i64, x.device()), 0);
  const double step = 2.0 * std::numbers::pi / static_cast<double>(length);
  const DynTensor angle = mul(cast(remainder(mul(k, n), length), DType::f64), step);
  // The weights w_k / length folded into the tables.
  const DynTensor mirrored = logical_and(gt(k, 0), ne(mul(k, 2), length));
  const DynTensor w = div(add(cast(mirrored, DType::f64), 1.0), static_cast<double>(length));
  const DynTensor cs = cast(mul(cos(angle), w), x.dtype()),
                  sn = cast(mul(sin(angle), w), x.dtype());
  DynTensor out = matmul(prepare(select(x, last, 0)), cs);
  if (x.size(-1) == 2) out = sub(out, matmul(prepare(select(x, last, 1)), sn));
  return unsqueeze(transpose(out, axis, last - 1), -1);
}

// DFT: axis an attribute (default 1) in opset 17, an optional input (default -2) from opset 20.
// An inverse onesided transform takes the non-redundant half of a spectrum to a real signal, of
// 2 (n - 1) samples by default.
std::vector<Value> dft_op(OpContext& c) {
  const DynTensor& x = c.in(0);
  int64_t axis = c.attr_int("axis", 1);
  if (c.opset() >= 20) axis = c.has(2) ? c.ints(2).at(0) : -2;
  if (axis < 0) axis += x.rank();
  if (axis < 0 || axis >= x.rank()) c.fail("axis is out of range for input ", x.shape());
  const bool inverse = c.attr_int("inverse", 0) != 0, onesided = c.attr_int("onesided", 0) != 0;
  const int64_t n = x.size(int(axis));
  const int64_t length = c.has(1) ? c.ints(1).at(0) : inverse && onesided ? 2 * (n - 1) : n;
  if (inverse && onesided) return one(irfft(c, x, axis, length));
  return one(dft(c, x, axis, length, inverse, onesided));
}

// STFT: frames of frame_length every frame_step samples (those that fit), times the window, each
// transformed. signal [batch, length, 1 or 2] -> [batch, frames, bins, 2].
std::vector<Value> stft_op(OpContext& c) {
  const DynTensor& x = c.in(0);
  if (x.rank() != 3) c.fail("signal must be [batch, length, 1 or 2], got ", x.shape());
  const int64_t step = c.ints(1).at(0);
  const int64_t frame = c.has(3) ? c.ints(3).at(0) : c.has(2) ? c.in(2).numel() : x.size(1);
  if (step < 1 || frame < 1 || frame > x.size(1)) {
    c.fail("frame_step ", step, " and frame_length ", frame, " do not fit a signal of ", x.size(1),
           " samples");
  }
  const int64_t frames = 1 + (x.size(1) - frame) / step;
  std::vector<int64_t> index;  // sample f * step + j for frame f, offset j
  for (int64_t f = 0; f < frames; ++f) {
    for (int64_t j = 0; j < frame; ++j) index.push_back(f * step + j);
  }
  const DynTensor idx =
      to_device(from_data(TensorData::from(index, Shape{frames * frame})), x.device());
  DynTensor framed = reshape(index_select(x, 1, idx), Shape{x.size(0), frames, frame, x.size(2)});
  if (c.has(2)) {
    const DynTensor& w = c.in(2);
    if (w.rank() != 1 || w.numel() != frame) {
      c.fail("window must be 1-D of frame_length ", frame, ", got ", w.shape());
    }
    framed = mul(framed, reshape(w, Shape{1, 1, frame, 1}));
  }
  return one(dft(c, framed, 2, frame, false, c.attr_int("onesided", 1) != 0));
}

// MelWeightMatrix: triangular filters over the DFT bins, equally spaced on the mel scale. Its
// inputs are scalars that define a constant table, so it is built on the host (ONNX's reference
// algorithm, bin edges floored to integers) and moved to the device.
std::vector<Value> mel_weight_matrix_op(OpContext& c) {
  const int64_t mel_bins = c.ints(0).at(0), dft_length = c.ints(1).at(0),
                sample_rate = c.ints(2).at(0);
  const double lower_hz = c.scalar(3), upper_hz = c.scalar(4);
  if (mel_bins < 1 || dft_length < 1 || sample_rate < 1) {
    c.fail("num_mel_bins, dft_length and sample_rate must be positive, got ", mel_bins, ", ",
           dft_length, ", ", sample_rate);
  }
  const DType out = dtype_from_onnx(c, c.attr_int("output_datatype", 1), "a mel matrix of");
  const int64_t spectrogram_bins = dft_length / 2 + 1;
  auto to_mel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
  const double low_mel = to_mel(lower_hz),
               mel_step = (to_mel(upper_hz) - low_mel) / static_cast<double>(mel_bins + 2);
  std::vector<int64_t> edge(size_t(mel_bins + 2));
  for (int64_t i = 0; i < mel_bins + 2; ++i) {
    const double hz = 700.0 * (std::pow(10.0, (double(i) * mel_step + low_mel) / 2595.0) - 1.0);
    edge[size_t(i)] = static_cast<int64_t>(
        std::floor(double(dft_length + 1) * hz / static_cast<double>(sample_rate)));
    // The last edge only ends a range (exclusive), so it may be one past the last bin.
    const int64_t limit = i == mel_bins + 1 ? spectrogram_bins : spectrogram_bins - 1;
    if (edge[size_t(i)] < 0 || edge[size_t(i)] > limit) {
      c.fail("mel bin edge ", edge[size_t(i)], " falls outside the ", spectrogram_bins,
             " spectrogram bins (check the frequency range against sample_rate)");
    }
  }
  std::vector<double> w(size_t(spectrogram_bins * mel_bins), 0.0);
  auto at = [&](int64_t bin, int64_t mel) -> double& { return w[size_t(bin * mel_bins + mel)]; };
  for (int64_t i = 0; i < mel_bins; ++i) {
    const int64_t lo = edge[size_t(i)], mid = edge[size_t(i + 1)], hi = edge[size_t(i + 2)];
    if (mid == lo) {
      at(mid, i) = 1.0;
    } else {
      for (int64_t j = lo; j <= mid; ++j) at(j, i) = double(j - lo) / double(mid - lo);
    }
    for (int64_t j = mid; j < hi; ++j) at(j, i) = double(hi - j) / double(hi - mid);
  }
  const TensorData table = TensorData::from(w, Shape{spectrogram_bins, mel_bins});
  return one(cast(to_device(from_data(table), c.device()), out));
}

// ---- Random generators ------------------------------------------------------------------------
// With a 'seed' attribute each run draws the same numbers (a generator seeded per call); without
// one, Ember's default generator. Numbers never match another framework's stream.

std::optional<Generator> seeded(const OpContext& c) {
  if (!c.has_attr("seed")) return std::nullopt;
  const double seed = c.attr_float("seed", 0);
  return Generator(static_cast<uint64_t>(static_cast<int64_t>(seed)));
}

DType random_dtype(const OpContext& c, DType fallback) {
  const DType t = c.has_attr("dtype")
                      ? dtype_from_onnx(c, c.attr_int("dtype", 1), "random values of")
                      : fallback;
  if (!is_floating(t)) c.fail("unsupported: random values of ", t);
  return t;
}

std::vector<Value> bernoulli_op(OpContext& c) {
  const DynTensor& p = c.in(0);
  auto gen = seeded(c);
  const DType out = c.has_attr("dtype")
                        ? dtype_from_onnx(c, c.attr_int("dtype", 1), "Bernoulli output of")
                        : p.dtype();
  return one(cast(bernoulli(p, gen ? &*gen : nullptr), out));
}

template <bool Normal>
std::vector<Value> random_op(OpContext& c) {
  auto gen = seeded(c);
  const Shape shape(c.attr_ints("shape"));
  const DType t = random_dtype(c, DType::f32);
  if (Normal) {
    return one(randn(shape, t, c.device(), gen ? &*gen : nullptr, c.attr_float("mean", 0.0),
                     c.attr_float("scale", 1.0)));
  }
  return one(rand(shape, t, c.device(), gen ? &*gen : nullptr, c.attr_float("low", 0.0),
                  c.attr_float("high", 1.0)));
}

template <bool Normal>
std::vector<Value> random_like_op(OpContext& c) {
  const DynTensor& x = c.in(0);
  auto gen = seeded(c);
  const DType t = random_dtype(c, x.dtype());
  if (Normal) {
    return one(randn(x.shape(), t, x.device(), gen ? &*gen : nullptr, c.attr_float("mean", 0.0),
                     c.attr_float("scale", 1.0)));
  }
  return one(rand(x.shape(), t, x.device(), gen ? &*gen : nullptr, c.attr_float("low", 0.0),
                  c.attr_float("high", 1.0)));
}

// ---- Identity, Constant -----------------------------------------------------------------------

// Constant: exactly one of value (a tensor) or the value_* shorthands (opset 12).
std::vector<Value> constant(OpContext& c) {
  if (c.has_attr("value")) {
    const Attribute& a = c.attr("value");
    if (a.kind != Attribute::Kind::Tensor) c.fail("attribute 'value' must be a tensor");
    return one(to_device(from_data(a.t), c.device()));
  }
  if (c.has_attr("value_float")) {
    return one(full(Shape{}, c.attr_float("value_float", 0), DType::f32, c.device()));
  }
  if (c.has_attr("value_int")) {
    return one(full(Shape{}, c.attr_int("value_int", 0), DType::i64, c.device()));
  }
  if (c.has_attr("value_floats")) {
    const std::vector<double> v = c.attr_floats("value_floats");
    const std::vector<float> f(v.begin(), v.end());
    return one(to_device(from_data(TensorData::from(f, Shape{int64_t(f.size())})), c.device()));
  }
  if (c.has_attr("value_ints")) {
    const std::vector<int64_t> v = c.attr_ints("value_ints");
    return one(to_device(from_data(TensorData::from(v, Shape{int64_t(v.size())})), c.device()));
  }
  c.fail("unsupported: a Constant without 'value', 'value_float(s)' or 'value_int(s)'");
}

}  // namespace

void register_elementwise_ops(Registry& r) {
  r.add("Identity", [](OpContext& c) { return std::vector<Value>{c.value(0)}; });
  r.add("Constant", constant);

  // Each op from the opset that introduced it; later versions only widened the dtypes, or are
  // told apart inside the op (c.opset(): legacy broadcasting, Clip's bounds).
  struct UnaryRow {
    const char* name;
    Unary f;
    int64_t since;
  };
  const UnaryRow unaries[] = {
      {"Abs", abs, 1},
      {"Neg", neg, 1},
      {"Exp", exp, 1},
      {"Log", log, 1},
      {"Sqrt", sqrt, 1},
      {"Reciprocal", reciprocal, 1},
      {"Floor", floor, 1},
      {"Ceil", ceil, 1},
      {"Relu", relu, 1},
      {"Sigmoid", sigmoid, 1},
      {"Tanh", tanh, 1},
      {"Sin", sin, 7},
      {"Cos", cos, 7},
      {"Tan", tan, 7},
      {"Asin", asin, 7},
      {"Acos", acos, 7},
      {"Atan", atan, 7},
      {"Sinh", sinh, 9},
      {"Cosh", cosh, 9},
      {"Asinh", asinh_composite, 9},
      {"Acosh", acosh_composite, 9},
      {"Atanh", atanh_composite, 9},
      {"Sign", sign, 9},
      {"Erf", erf, 9},
      {"IsNaN", isnan, 9},
      {"Round", round, 11},
  };
  for (const UnaryRow& u : unaries) r.add("", u.name, unary(u.f), u.since);

  struct BinaryRow {
    const char* name;
    Binary f;
    int64_t since;
  };
  const BinaryRow binaries[] = {
      {"Add", add, 1},
      {"Sub", sub, 1},
      {"Mul", mul, 1},
      {"MatMul", matmul, 1},
      {"Equal", eq, 1},
      {"Greater", gt, 1},
      {"Less", lt, 1},
      {"And", logical_and, 1},
      {"Or", logical_or, 1},
      {"Xor", logical_xor, 1},
      {"GreaterOrEqual", ge, 12},
      {"LessOrEqual", le, 12},
  };
  for (const BinaryRow& b : binaries) r.add("", b.name, binary(b.f), b.since);

  struct Row {
    const char* name;
    OpFn f;
    int64_t since;
  };
  const Row ops[] = {
      {"Div", div_op, 1},
      {"Pow", pow_op, 1},
      {"Min", min_op, 1},
      {"Max", max_op, 1},
      {"Sum", sum_op, 1},
      {"Mean", mean_op, 1},
      {"Clip", clip_op, 1},
      {"Not", not_op, 1},
      {"Cast", cast_op, 1},
      {"LeakyRelu", leaky_relu_op, 1},
      {"Elu", elu_op, 1},
      {"Selu", selu_op, 1},
      {"HardSigmoid", hard_sigmoid_op, 1},
      {"PRelu", prelu_op, 1},
      {"Softplus", softplus_op, 1},
      {"Softsign", softsign_op, 1},
      {"RandomUniform", random_op<false>, 1},
      {"RandomNormal", random_op<true>, 1},
      {"RandomUniformLike", random_like_op<false>, 1},
      {"RandomNormalLike", random_like_op<true>, 1},
      {"Where", where_op, 9},
      {"Shrink", shrink_op, 9},
      {"Mod", mod_op, 10},
      {"IsInf", isinf_op, 10},
      {"ThresholdedRelu", thresholded_relu_op, 10},
      {"QuantizeLinear", quantize_linear_op, 10},
      {"DequantizeLinear", dequantize_linear_op, 10},
      {"BitShift", bitshift_op, 11},
      {"DynamicQuantizeLinear", dynamic_quantize_linear_op, 11},
      {"Celu", celu_op, 12},
      {"HardSwish", hard_swish_op, 14},
      {"CastLike", cast_like_op, 15},
      {"Bernoulli", bernoulli_op, 15},
      {"HannWindow", hann_window_op, 17},
      {"HammingWindow", hamming_window_op, 17},
      {"BlackmanWindow", blackman_window_op, 17},
      {"DFT", dft_op, 17},
      {"STFT", stft_op, 17},
      {"MelWeightMatrix", mel_weight_matrix_op, 17},
      {"BitwiseAnd", bitwise_binary_op<bitwise_and>, 18},
      {"BitwiseOr", bitwise_binary_op<bitwise_or>, 18},
      {"BitwiseXor", bitwise_binary_op<bitwise_xor>, 18},
      {"BitwiseNot", bitwise_unary_op<bitwise_not>, 18},
      {"Mish", mish_op, 18},
      {"Gelu", gelu_op, 20},
      {"BitCast", bitcast_op, 26},
  };
  for (const Row& o : ops) r.add("", o.name, o.f, o.since);
}

}  // namespace ember::onnx
