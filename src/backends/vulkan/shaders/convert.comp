// dst = src converted between the dtypes of at most 32 bits (float32, int32, uint8, int8, bool,
// float16, bfloat16), and in the WIDE variant (word.glsl) int64 and float64 too, with values held
// in double and int64 there, as the Cpu converts (core/convert.hpp): floats to integers truncate toward
// zero and saturate (NaN gives 0), integers to narrower ones wrap, anything to bool is "not zero"
// (NaN included), float32 to float16 and bfloat16 round to nearest even. The
// source is strided (rank up to 6). A contiguous destination is written a whole 32-bit word per
// invocation (four bytes or two halves packed), so no two invocations share a word, and a word
// it shares with other bytes (a view's ends) keeps them; a strided one (`strided`) an element per
// invocation, those under 4 bytes with atomics on their word. The bound range is padded to whole
// words.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "word.glsl"
#include "half.glsl"
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) readonly buffer Src { uint src[]; };
layout(std430, set = 0, binding = 1) buffer Dst { uint dst[]; };
layout(push_constant) uniform Params {
  uint count, rank, src_base, dst_byte;  // src_base in source elements, dst_byte in bytes
  uint src_type, dst_type, strided, iota;  // strided: write through dst_stride
  uint shape[6];
  int stride[6];
  int dst_stride[6];
#ifdef WIDE
  uint first, pad1;    // iota: the piece's first element (a tensor wider than a binding)
  double start, step;  // iota: element i is start + (first + i) * step, as a double source
#endif
} p;

// Type codes (vulkan_backend.cpp's convert_code).
const uint F32 = 0u, I32 = 1u, U8 = 2u, I8 = 3u, BOOL = 4u, F16 = 5u, BF16 = 6u, I64 = 7u,
           F64 = 8u;

uint size_of(uint t) { return t >= I64 ? 8u : (t <= I32 ? 4u : (t >= F16 ? 2u : 1u)); }

// The bits of source element `at` (an element offset), right-aligned.
WORD load(uint at, uint size) {
#ifdef WIDE
  if (size == 8u) return uint64_t(src[2u * at]) | (uint64_t(src[2u * at + 1u]) << 32);
#endif
  if (size == 4u) return src[at];
  if (size == 2u) return (src[at >> 1u] >> (16u * (at & 1u))) & 0xffffu;
  return (src[at >> 2u] >> (8u * (at & 3u))) & 0xffu;
}

bool is_float(uint t) { return t == F32 || t == F16 || t == BF16 || t == F64; }

FLOAT as_float(uint t, WORD bits) {
#ifdef WIDE
  if (t == F64) return AS_FLOAT(bits);
#endif
  if (t == F32) return uintBitsToFloat(uint(bits));
  if (t == F16) return half_to_float(uint(bits));
  return uintBitsToFloat(uint(bits) << 16u);  // BF16
}

// Whether a float's bits are not zero (of either sign): a comparison with 0.0 may flush
// subnormals to zero, the Cpu's does not.
bool nonzero_bits(uint t, WORD bits) {
  if (t == F64) return (bits & MAGNITUDE_BITS) != WORD(0);
  return (uint(bits) & (t == F32 ? 0x7fffffffu : 0x7fffu)) != 0u;
}

INT as_int(uint t, WORD bits) {
  if (t == I32) return INT(int(uint(bits)));  // sign-extended in the WIDE variant
  if (t == I8) return INT(bitfieldExtract(int(uint(bits)), 0, 8));
  if (t == BOOL) return bits != WORD(0) ? INT(1) : INT(0);
  return INT(bits);  // U8, I64
}

// A float into an integer type as the Cpu's convert(): NaN gives 0, values past the type's range
// its minimum or maximum (the bounds as the nearest FLOAT: 2^31 for int32's in float32), the rest
// truncate toward zero.
INT saturate(FLOAT f, uint t) {
  if (isnan(f)) return INT(0);
#ifdef WIDE
  if (t == I64) {
    if (f <= -9223372036854775808.0LF) return INT(0x8000000000000000UL);
    if (f >= 9223372036854775808.0LF) return INT(0x7fffffffffffffffUL);
    return INT(trunc(f));
  }
#endif
  const FLOAT lo = t == I32 ? FLOAT(-2147483648.0) : (t == U8 ? FLOAT(0.0) : FLOAT(-128.0));
  const FLOAT hi = t == I32 ? FLOAT(2147483647.0) : (t == U8 ? FLOAT(255.0) : FLOAT(127.0));
  if (f <= lo) return t == I32 ? INT(int(0x80000000u)) : INT(lo);
  if (f >= hi) return t == I32 ? INT(0x7fffffff) : INT(hi);
  return INT(trunc(f));
}

// Element bits of type t, right-aligned, from a float (f_in) or an integer value.
WORD store_bits(uint t, bool f_in, FLOAT f, INT i) {
#ifdef WIDE
  if (t == F64) return FLOAT_BITS(f_in ? f : FLOAT(i));
  if (t == I64) return WORD(f_in ? saturate(f, t) : i);
#endif
  // float32, and the 16-bit floats through it (as the Cpu converts a double into them)
  const float f32 = f_in ? float(f) : float(i);
  if (t == F32) return WORD(floatBitsToUint(f32));
  if (t == F16) return WORD(to_f16(f32));
  if (t == BF16) return WORD(to_bf16(f32));
  if (t == BOOL) return i != INT(0) ? WORD(1) : WORD(0);  // main() passes a float's test as i
  const INT v = f_in ? saturate(f, t) : i;
  if (t == I32) return WORD(uint(v));
  return WORD(uint(v) & 0xffu);  // U8, I8: the low byte (two's complement)
}

// Element i of the destination, converted from its source element (or from iota's value).
WORD converted(uint i, uint ssize, bool f_in, bool same) {
#ifdef WIDE
  if (p.iota != 0u) {
    const double v = p.start + double(p.first + i) * p.step;
    if (p.dst_type == BOOL) return nonzero_bits(F64, FLOAT_BITS(v)) ? WORD(1) : WORD(0);
    return store_bits(p.dst_type, true, v, INT(0));
  }
#endif
  uint rest = i;
  int at = int(p.src_base);
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    const uint c = rest % p.shape[d];
    rest /= p.shape[d];
    at += int(c) * p.stride[d];
  }
  const WORD bits = load(uint(at), ssize);
  if (same) return bits;
  if (p.dst_type == BOOL && f_in) return nonzero_bits(p.src_type, bits) ? WORD(1) : WORD(0);
  return store_bits(p.dst_type, f_in, f_in ? as_float(p.src_type, bits) : FLOAT(0.0),
                    f_in ? INT(0) : as_int(p.src_type, bits));
}

// Writes element i of a strided destination (dst_stride): an element of 4 or 8 bytes as whole
// words, a smaller one with atomics on its word, whose other bytes other invocations may write.
void store_strided(uint i, uint dsize, WORD v) {
  uint rest = i;
  uint at = p.dst_byte / dsize;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    at += uint(int(rest % p.shape[d]) * p.dst_stride[d]);
    rest /= p.shape[d];
  }
  if (dsize >= 4u) {
    const uint w = at * (dsize / 4u);
    dst[w] = uint(v);
#ifdef WIDE
    if (dsize == 8u) dst[w + 1u] = uint(v >> 32);
#endif
    return;
  }
  const uint shift = 8u * ((at * dsize) & 3u), mask = ((1u << (8u * dsize)) - 1u) << shift;
  atomicAnd(dst[(at * dsize) >> 2u], ~mask);
  atomicOr(dst[(at * dsize) >> 2u], (uint(v) << shift) & mask);
}

void main() {
  const uint ssize = size_of(p.src_type), dsize = size_of(p.dst_type);
  const uint first = p.dst_byte / 4u, last = (p.dst_byte + p.count * dsize - 1u) / 4u;
  const bool f_in = is_float(p.src_type);
  const bool same = p.src_type == p.dst_type;
  const uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  if (p.strided != 0u) {
    for (uint i = gl_GlobalInvocationID.x; i < p.count; i += step) {
      store_strided(i, dsize, converted(i, ssize, f_in, same));
    }
    return;
  }
#ifdef WIDE
  if (dsize == 8u) {  // an element a pair of words (the destination starts on a whole word)
    for (uint i = gl_GlobalInvocationID.x; i < p.count; i += step) {
      const WORD v = converted(i, ssize, f_in, same);
      dst[first + 2u * i] = uint(v);
      dst[first + 2u * i + 1u] = uint(v >> 32);
    }
    return;
  }
#endif
  for (uint w = first + gl_GlobalInvocationID.x; w <= last; w += step) {
    uint word = 0u, mask = 0u;
    for (uint slot = 0u; slot < 4u; slot += dsize) {
      const uint byte = w * 4u + slot;
      if (byte < p.dst_byte) continue;
      const uint i = (byte - p.dst_byte) / dsize;
      if (i >= p.count) break;
      const uint v = uint(converted(i, ssize, f_in, same));
      const uint lane = dsize == 4u ? 0xffffffffu : (1u << (8u * dsize)) - 1u;
      word |= (v & lane) << (8u * slot);
      mask |= lane << (8u * slot);
    }
    // A word shared with bytes outside this tensor (a view's first or last) keeps them: the
    // word has no other writer in this dispatch, so a read-modify-write is safe.
    dst[w] = mask == 0xffffffffu ? word : (dst[w] & ~mask) | word;
  }
}
