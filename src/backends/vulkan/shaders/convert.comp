// dst = src converted between the dtypes of at most 32 bits (float32, int32, uint8, int8, bool,
// float16, bfloat16), as the Cpu converts (core/convert.hpp): floats to integers truncate toward
// zero and saturate (NaN gives 0), integers to narrower ones wrap, anything to bool is "not zero"
// (NaN included), float32 to float16 and bfloat16 round to nearest even. The
// source is strided (rank up to 6); the destination is contiguous, and an invocation writes
// whole 32-bit words of it (four bytes or two halves packed), so no two invocations share a
// word; a word the destination shares with other bytes (a view's ends) keeps them. The bound
// range is padded to whole words.
#version 450
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) readonly buffer Src { uint src[]; };
layout(std430, set = 0, binding = 1) buffer Dst { uint dst[]; };
layout(push_constant) uniform Params {
  uint count, rank, src_base, dst_byte;  // src_base in source elements, dst_byte in bytes
  uint src_type, dst_type, pad0, pad1;
  uint shape[6];
  int stride[6];
} p;

// Type codes (vulkan_backend.cpp's convert_code).
const uint F32 = 0u, I32 = 1u, U8 = 2u, I8 = 3u, BOOL = 4u, F16 = 5u, BF16 = 6u;

uint size_of(uint t) { return t <= I32 ? 4u : (t >= F16 ? 2u : 1u); }

// The bits of source element `at` (an element offset), right-aligned.
uint load(uint at, uint size) {
  if (size == 4u) return src[at];
  if (size == 2u) return (src[at >> 1u] >> (16u * (at & 1u))) & 0xffffu;
  return (src[at >> 2u] >> (8u * (at & 3u))) & 0xffu;
}

bool is_float(uint t) { return t == F32 || t == F16 || t == BF16; }

// float16 bits to float32, by bit manipulation: unpackHalf2x16 may flush subnormals.
float half_to_float(uint h) {
  const uint sign = (h & 0x8000u) << 16u, e = (h >> 10u) & 0x1fu, m = h & 0x3ffu;
  if (e == 0u) {  // zero or subnormal: m * 2^-24, a normal float32 (exact)
    return uintBitsToFloat(sign | floatBitsToUint(float(m) * 5.9604644775390625e-8));
  }
  if (e == 31u) return uintBitsToFloat(sign | 0x7f800000u | (m << 13u));  // inf, NaN
  return uintBitsToFloat(sign | ((e + 112u) << 23u) | (m << 13u));
}

float as_float(uint t, uint bits) {
  if (t == F32) return uintBitsToFloat(bits);
  if (t == F16) return half_to_float(bits);
  return uintBitsToFloat(bits << 16u);  // BF16
}

// Whether a float's bits are not zero (of either sign): a comparison with 0.0 may flush
// subnormals to zero, the Cpu's does not.
bool nonzero_bits(uint t, uint bits) {
  return (bits & (t == F32 ? 0x7fffffffu : 0x7fffu)) != 0u;
}

int as_int(uint t, uint bits) {
  if (t == I32) return int(bits);
  if (t == I8) return bitfieldExtract(int(bits), 0, 8);  // sign-extended
  if (t == BOOL) return bits != 0u ? 1 : 0;
  return int(bits);  // U8
}

// float32 to bfloat16 bits, round to nearest even; NaN stays a (quiet) NaN.
uint to_bf16(float f) {
  const uint b = floatBitsToUint(f);
  if (isnan(f)) return (b >> 16u) | 0x40u;
  return (b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u;
}

// float32 to float16 bits, round to nearest even, overflow to inf, NaN kept (packHalf2x16's
// rounding is left to the driver, so it is done here).
uint to_f16(float f) {
  const uint b = floatBitsToUint(f);
  const uint sign = (b >> 16u) & 0x8000u;
  const uint mag = b & 0x7fffffffu;
  if (mag >= 0x7f800000u) return sign | 0x7c00u | (mag > 0x7f800000u ? 0x200u : 0u);
  if (mag >= 0x477ff000u) return sign | 0x7c00u;  // rounds past 65504: inf
  if (mag < 0x38800000u) {  // a subnormal half (or zero): the value in units of 2^-24
    const float scaled = uintBitsToFloat(mag) * 16777216.0;  // exact: a power of two
    const float r = roundEven(scaled);
    return sign | uint(r);
  }
  const uint e = (mag >> 23u) - 112u;  // the half's exponent field
  const uint m = mag & 0x7fffffu;
  uint h = (e << 10u) | (m >> 13u);
  const uint rest = m & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u) == 1u)) h += 1u;  // carries into e
  return sign | h;
}

// A float into an integer type as the Cpu's convert(): NaN gives 0, values past the type's range
// its minimum or maximum, the rest truncate toward zero.
int saturate(float f, uint t) {
  if (isnan(f)) return 0;
  const float lo = t == I32 ? -2147483648.0 : (t == U8 ? 0.0 : -128.0);
  const float hi = t == I32 ? 2147483648.0 : (t == U8 ? 255.0 : 127.0);  // 2^31: the float nearest
  if (f <= lo) return t == I32 ? int(0x80000000u) : int(lo);
  if (f >= hi) return t == I32 ? 0x7fffffff : int(hi);
  return int(trunc(f));
}

uint store_bits(uint t, bool f_in, float f, int i) {
  if (t == F32) return floatBitsToUint(f_in ? f : float(i));
  if (t == F16) return to_f16(f_in ? f : float(i));
  if (t == BF16) return to_bf16(f_in ? f : float(i));
  if (t == BOOL) return i != 0 ? 1u : 0u;  // main() passes a float source's test as i
  const int v = f_in ? saturate(f, t) : i;
  if (t == I32) return uint(v);
  return uint(v) & 0xffu;  // U8, I8: the low byte (two's complement)
}

void main() {
  const uint ssize = size_of(p.src_type), dsize = size_of(p.dst_type);
  const uint first = p.dst_byte / 4u, last = (p.dst_byte + p.count * dsize - 1u) / 4u;
  const bool f_in = is_float(p.src_type);
  const bool same = p.src_type == p.dst_type;
  const uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint w = first + gl_GlobalInvocationID.x; w <= last; w += step) {
    uint word = 0u, mask = 0u;
    for (uint slot = 0u; slot < 4u; slot += dsize) {
      const uint byte = w * 4u + slot;
      if (byte < p.dst_byte) continue;
      const uint i = (byte - p.dst_byte) / dsize;
      if (i >= p.count) break;
      uint rest = i;
      int at = int(p.src_base);
      for (int d = int(p.rank) - 1; d >= 0; --d) {
        const uint c = rest % p.shape[d];
        rest /= p.shape[d];
        at += int(c) * p.stride[d];
      }
      const uint bits = load(uint(at), ssize);
      uint v;
      if (same) {
        v = bits;
      } else if (p.dst_type == BOOL && f_in) {
        v = nonzero_bits(p.src_type, bits) ? 1u : 0u;  // NaN too
      } else {
        v = store_bits(p.dst_type, f_in, f_in ? as_float(p.src_type, bits) : 0.0,
                       f_in ? 0 : as_int(p.src_type, bits));
      }
      const uint lane = dsize == 4u ? 0xffffffffu : (1u << (8u * dsize)) - 1u;
      word |= (v & lane) << (8u * slot);
      mask |= lane << (8u * slot);
    }
    // A word shared with bytes outside this tensor (a view's first or last) keeps them: the
    // word has no other writer in this dispatch, so a read-modify-write is safe.
    dst[w] = mask == 0xffffffffu ? word : (dst[w] & ~mask) | word;
  }
}
