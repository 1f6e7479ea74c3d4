// A range check (Backend::check_range): whether any value of a strided operand of rank up to 6
// lies outside [lo, hi] (NaN is outside), compared in double as the Cpu compares. One workgroup
// scans the operand, invocation t every 256th element, and merges in shared memory; invocation 0
// writes the result slot: the extremes of the bad values as order-preserving 64-bit keys (integer
// operands: the value with its sign bit flipped; floats: their bits made to order), whether a
// NaN and whether any bad value was seen, and whether the keys are integer ones. No atomics. Needs shaderInt64 and shaderFloat64.
#version 450
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Slot { uint64_t slot[]; };
layout(push_constant) uniform Params {
  uint count, rank, base, type;  // type: 0 f32, 1 i32, 2 f64, 3 i64, 4 u8, 5 i8 or Bool
  uint slot_at, pad0;            // the slot's first 64-bit word
  double lo, hi;
  uint shape[6];
  int stride[6];
} p;

shared uint64_t s_min[256];
shared uint64_t s_max[256];
shared uint s_flags[256];  // 1: bad, 2: NaN

const uint64_t kSign = 0x8000000000000000UL;

uint64_t float_key(double v) {
  const uint64_t u = doubleBitsToUint64(v);
  return (u & kSign) != 0UL ? ~u : (u | kSign);
}

// Element i's value as an int64 (integer operands) or a double, from 32-bit words; `base` counts
// elements from the binding's start.
void load(int at, out int64_t iv, out double fv, out bool integral) {
  integral = p.type == 1u || p.type >= 3u;
  iv = 0L;
  fv = 0.0;
  switch (p.type) {
    case 0u: fv = double(uintBitsToFloat(x[at])); break;
    case 1u: iv = int64_t(int(x[at])); break;
    case 2u: fv = uint64BitsToDouble(uint64_t(x[2 * at]) | (uint64_t(x[2 * at + 1]) << 32)); break;
    case 3u: iv = int64_t(uint64_t(x[2 * at]) | (uint64_t(x[2 * at + 1]) << 32)); break;
    case 4u: iv = int64_t((x[at >> 2] >> (8 * (at & 3))) & 0xffu); break;
    case 5u: iv = int64_t(bitfieldExtract(int(x[at >> 2]), 8 * (at & 3), 8)); break;
  }
}

void main() {
  const uint t = gl_LocalInvocationID.x;
  uint64_t lo_key = ~0UL, hi_key = 0UL;
  uint flags = 0u;
  for (uint i = t; i < p.count; i += 256u) {
    uint rest = i;
    int at = int(p.base);
    for (int d = int(p.rank) - 1; d >= 0; --d) {
      at += int(rest % p.shape[d]) * p.stride[d];
      rest /= p.shape[d];
    }
    int64_t iv;
    double fv;
    bool integral;
    load(at, iv, fv, integral);
    const double v = integral ? double(iv) : fv;
    if (isnan(v)) {
      flags |= 3u;
    } else if (v < p.lo || v > p.hi) {
      flags |= 1u;
      const uint64_t key = integral ? (uint64_t(iv) ^ kSign) : float_key(v);
      lo_key = min(lo_key, key);
      hi_key = max(hi_key, key);
    }
  }
  s_min[t] = lo_key;
  s_max[t] = hi_key;
  s_flags[t] = flags;
  barrier();
  for (uint width = 128u; width > 0u; width >>= 1) {
    if (t < width) {
      s_min[t] = min(s_min[t], s_min[t + width]);
      s_max[t] = max(s_max[t], s_max[t + width]);
      s_flags[t] |= s_flags[t + width];
    }
    barrier();
  }
  if (t == 0u) {
    slot[p.slot_at] = s_min[0];
    slot[p.slot_at + 1u] = s_max[0];
    slot[p.slot_at + 2u] = uint64_t(s_flags[0]);
    slot[p.slot_at + 3u] = (p.type == 1u || p.type >= 3u) ? 1UL : 0UL;  // integer keys
  }
}
