// Unary ops over a strided operand of rank up to 6, written to a contiguous output; the op is a
// specialisation constant (unary_code() in vulkan_backend.cpp), so that each op's pipeline holds
// its own code alone (with every op's, llvmpipe ran relu 30 times slower than add), with clamp's
// bounds, softplus's beta and
// threshold, and pow's exponent in `a` and `b`. Formulas follow the Cpu backend's; the precision
// of exp, log and the trigonometric functions is the driver's (docs/VULKAN.md).
// The default variant is float32, with the driver's float functions, for devices without float64.
// The ANY variant (elements.glsl) takes every dtype: the floats computed in double
// (math64.glsl) and rounded to their type, integers and Bool in int64, and the Bool-valued tests
// (isnan, isinf, logical_not) of any dtype.
#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint OP = 0u;
#include "math32.glsl"
#ifdef ANY
#include "elements.glsl"
#include "math64.glsl"
layout(std430, set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(std430, set = 0, binding = 1) buffer Out { uint o[]; };
#else
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Out { float o[]; };
#endif
layout(push_constant) uniform Params {
  uint count, rank, op, out_base;
  uint x_base, flags, types, pad1;  // flags: 1 clamp has a min, 2 a max; types (ANY): x | out << 8
  float a, b, pad2, pad3;
  uint shape[6];
  int x_stride[6];
#ifdef ANY
  double da, db;         // a and b for float64
  int64_t ilo, ihi;      // clamp's bounds converted to an integer dtype, as the Cpu converts them
#endif
} p;

const float kInvSqrt2 = 0.70710678118654752;
const float kSqrt2OverPi = 0.79788456080286536;

// erf to about 1e-7 (Abramowitz and Stegun 7.1.26 is 1.5e-7): GLSL has none.
float erf_approx(float v) {
  const float t = 1.0 / (1.0 + 0.3275911 * abs(v));
  const float poly =
      t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  return sign(v) * (1.0 - poly * exp(-v * v));
}

// The Cpu's results where GLSL leaves them undefined (x <= 0 for log and sqrt): -inf at 0, NaN
// below.
float log_of(float v) { return v > 0.0 ? log(v) : (v == 0.0 ? -inf_value() : nan_value()); }
float log2_of(float v) { return v > 0.0 ? log2(v) : (v == 0.0 ? -inf_value() : nan_value()); }

float apply(uint op, float v) {
  switch (op) {
    case 0u: return -v;
    case 1u: return abs(v);
    case 2u: return float(v > 0.0) - float(v < 0.0);  // NaN gives 0, as the Cpu's and PyTorch's
    case 3u: return v * v;
    case 4u: return isnan(v) ? v : max(v, 0.0);
    case 5u: return exp(v);
    case 6u: return exp2(v);
    case 7u: return log_of(v);
    case 8u: return log2_of(v);
    case 9u: return log_of(v) * 0.43429448190325182;
    case 10u: {  // log1p: log(u) * v / (u - 1) keeps the digits that 1 + v rounds away
      const float u = 1.0 + v;
      return u == 1.0 ? v : (isinf(u) || u <= 0.0 ? log_of(u) : log(u) * (v / (u - 1.0)));
    }
    case 11u: {  // expm1, by the same correction
      const float u = exp(v);
      if (u == 1.0) return v;
      const float um1 = u - 1.0;
      return (um1 == -1.0 || isinf(u)) ? um1 : um1 * (v / log(u));
    }
    case 12u: return v >= 0.0 ? sqrt(v) : nan_value();
    case 13u: {  // 1 / sqrt(+-0) is +-inf
      if (v == 0.0) return (floatBitsToUint(v) >> 31) != 0u ? -inf_value() : inf_value();
      return v > 0.0 ? inversesqrt(v) : nan_value();
    }
    case 14u: return 1.0 / v;
    case 15u: return sin(v);
    case 16u: return cos(v);
    case 17u: return tan(v);
    // asin and acos through atan2: drivers' own (lavapipe's) are good to about 1e-4 only.
    case 18u: return abs(v) > 1.0 ? nan_value() : atan2_of(v, sqrt((1.0 - v) * (1.0 + v)));
    case 19u: return abs(v) > 1.0 ? nan_value() : atan2_of(sqrt((1.0 - v) * (1.0 + v)), v);
    case 20u: return atan_of(v);
    case 21u: return sinh(v);
    case 22u: return cosh(v);
    case 23u: return tanh(v);
    case 24u: return erf_approx(v);
    case 25u: return 1.0 / (1.0 + exp(-v));
    case 26u: return 0.5 * v * (1.0 + erf_approx(v * kInvSqrt2));
    case 27u: return 0.5 * v * (1.0 + tanh(kSqrt2OverPi * (v + 0.044715 * v * v * v)));
    case 28u: return v / (1.0 + exp(-v));
    case 29u: {  // softplus(beta = a, threshold = b): linear above the threshold, as PyTorch's
      const float z = v * p.a;
      if (z > p.b) return v;
      const float u = exp(z);  // log1p(u) by the correction above: exact for tiny u
      const float w = 1.0 + u;
      return (w == 1.0 ? u : log(w) * (u / (w - 1.0))) / p.a;
    }
    case 30u: return floor(v);
    case 31u: return ceil(v);
    case 32u: return roundEven(v);  // half to even, as PyTorch's round
    case 33u: return trunc(v);
    case 34u: {  // clamp: NaN stays NaN
      if (isnan(v)) return v;
      float r = v;
      if ((p.flags & 1u) != 0u) r = max(r, p.a);
      if ((p.flags & 2u) != 0u) r = min(r, p.b);
      return r;
    }
    case 35u:  // as the Cpu's: the exponent 0.5 is the square root (-0 stays -0)
      return p.a == 0.5 ? (v >= 0.0 ? sqrt(v) : nan_value()) : pow_of(v, p.a);
    // the special functions (the ANY variant's codes)
    case 40u: return erfinv_of(v);
    case 41u: return lgamma_of(v);
    case 42u: return digamma_of(v);
    case 43u: return polygamma_of(int(p.a), v);  // n in a
  }
  return nan_value();  // not reached: the host sends known codes
}

#ifdef ANY
// Every float op in double (math64.glsl): float64's own, and the other float types' (rounded to
// them after), with the parameters as the Cpu takes them: in the float type (its `a`, `b`) for
// those, in double (da, db) for float64.
double apply_double(uint op, double v, bool f64) {
  const double pa = f64 ? p.da : double(p.a), pb = f64 ? p.db : double(p.b);
  const double nan = m64_nan(), inf = m64_inf();
  // The odd functions keep a zero's sign, as C's do (a series of -0 may round to +0).
  if (v == 0.0 && (op == 10u || op == 11u || op == 15u || op == 17u || op == 18u || op == 20u ||
                   op == 21u || op == 23u || op == 24u)) {
    return v;
  }
  switch (op) {
    case 0u: return -v;
    case 1u: return abs(v);
    case 2u: return double(v > 0.0) - double(v < 0.0);
    case 3u: return v * v;
    case 4u: return isnan(v) ? v : max(v, 0.0);
    case 5u: return m64_exp(v);
    case 6u: return m64_exp2(v);
    case 7u: return m64_log(v);
    case 8u: return m64_log(v) / M64_LN2;
    case 9u: return m64_log(v) / M64_LN10;
    case 10u: return m64_log1p(v);
    case 11u: return m64_expm1(v);
    case 12u: return v >= 0.0 ? sqrt(v) : nan;
    case 13u: {
      if (v == 0.0) return (doubleBitsToUint64(v) >> 63) != 0UL ? -inf : inf;
      return v > 0.0 ? 1.0 / sqrt(v) : nan;
    }
    case 14u: return 1.0 / v;
    case 15u: return m64_sin(v);
    case 16u: return m64_cos(v);
    case 17u: return m64_tan(v);
    case 18u: return abs(v) > 1.0 ? nan : m64_atan2(v, sqrt((1.0 - v) * (1.0 + v)));
    case 19u: return abs(v) > 1.0 ? nan : m64_atan2(sqrt((1.0 - v) * (1.0 + v)), v);
    case 20u: return m64_atan(v);
    case 21u: return m64_sinh(v);
    case 22u: return m64_cosh(v);
    case 23u: return m64_tanh(v);
    case 24u: return m64_erf(v);
    case 25u: return 1.0 / (1.0 + m64_exp(-v));
    case 26u: return 0.5 * v * (1.0 + m64_erf(v * 0.70710678118654752440LF));
    case 27u: {
      const double inner = 0.79788456080286535588LF * (v + 0.044715LF * v * v * v);
      return 0.5 * v * (1.0 + m64_tanh(inner));
    }
    case 28u: return v / (1.0 + m64_exp(-v));
    case 29u: {  // softplus(beta = a, default 1; threshold = b, default 20), as the Cpu's
      const double beta = (p.flags & 1u) != 0u ? pa : 1.0;
      const double threshold = (p.flags & 2u) != 0u ? pb : 20.0;
      return v * beta > threshold ? v : m64_log1p(m64_exp(v * beta)) / beta;
    }
    case 30u: return floor(v);
    case 31u: return ceil(v);
    case 32u: return m64_round_even(v);
    case 33u: return m64_trunc(v);
    case 34u: {
      if (isnan(v)) return v;
      double r = v;
      if ((p.flags & 1u) != 0u) r = r < pa ? pa : r;
      if ((p.flags & 2u) != 0u) r = r > pb ? pb : r;
      return r;
    }
    case 35u: return pa == 0.5 ? (v >= 0.0 ? sqrt(v) : nan) : m64_pow(v, pa);
    case 40u: return m64_erfinv(v);
    case 41u: return m64_lgamma(v);
    case 42u: return m64_digamma(v);
    case 43u: return m64_polygamma(int(pa), v);  // n in a
  }
  return nan;
}

// The integer ops, in int64 (the store keeps the dtype's low bytes: wrapping as the Cpu's).
int64_t apply_int(uint op, int64_t v) {
  switch (op) {
    case 0u: return -v;
    case 1u: return abs(v);
    case 2u: return int64_t(v > 0L) - int64_t(v < 0L);
    case 3u: return v * v;
    case 4u: return max(v, 0L);
    case 34u: {
      int64_t r = v;
      if ((p.flags & 1u) != 0u && r < p.ilo) r = p.ilo;
      if ((p.flags & 2u) != 0u && r > p.ihi) r = p.ihi;
      return r;
    }
    case 36u: return ~v;  // bitwise_not
  }
  return v;  // floor, ceil, round, trunc
}
#endif

void main() {
  const uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += step) {
    uint rest = i;
    int ix = int(p.x_base);
    for (int d = int(p.rank) - 1; d >= 0; --d) {
      const int c = int(rest % p.shape[d]);
      rest /= p.shape[d];
      ix += c * p.x_stride[d];
    }
#ifdef ANY
    const uint xt = p.types & 255u, ot = p.types >> 8;
    const uint64_t bits = LOAD_BITS(x, xt, uint(ix));
    uint64_t r;
    if (OP >= 37u && OP <= 39u) {  // the Bool-valued tests: isnan, isinf, logical_not
      const bool f = t_float(xt);
      const double v = f ? float_value(xt, bits) : 0.0;
      r = OP == 37u ? uint64_t(f && isnan(v))
          : OP == 38u ? uint64_t(f && isinf(v))
                        : uint64_t(!truthy(xt, bits));
    } else if (t_float(xt)) {
      r = float_bits(ot, apply_double(OP, float_value(xt, bits), xt == T_F64));
    } else if (xt == T_BOOL) {
      r = uint64_t(!truthy(xt, bits));  // bitwise_not of Bool is logical not
    } else {
      r = int_bits(ot, apply_int(OP, int_value(xt, bits)));
    }
    STORE_BITS(o, ot, p.out_base + i, r);
#else
    o[p.out_base + i] = apply(OP, x[ix]);
#endif
  }
}
