// fill: the words of a contiguous tensor get `lo` (elements of up to 4 bytes, 1- and 2-byte values
// repeated through the word by the caller) or the 64-bit pattern lo, hi (8-byte elements). A
// word the tensor shares with bytes outside it (a view of 1- or 2-byte elements) keeps them: it
// has no other writer in the dispatch, so a read-modify-write is safe. The range is padded to
// whole words.
#version 450
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) buffer Out { uint words[]; };
layout(push_constant) uniform Params {
  uint count;       // elements
  uint first_byte;  // of the tensor in the binding
  uint size;        // bytes an element
  uint lo, hi;
} p;

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  if (p.size == 8u) {
    const uint base = p.first_byte / 4u;
    for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) {
      words[base + 2u * i] = p.lo;
      words[base + 2u * i + 1u] = p.hi;
    }
    return;
  }
  const uint end = p.first_byte + p.count * p.size;  // one past the last byte
  const uint first = p.first_byte / 4u, last = (end - 1u) / 4u;
  for (uint w = first + gl_GlobalInvocationID.x; w <= last; w += stride) {
    const uint lo_byte = max(w * 4u, p.first_byte) - w * 4u;
    const uint hi_byte = min(w * 4u + 4u, end) - w * 4u;
    if (lo_byte == 0u && hi_byte == 4u) {
      words[w] = p.lo;
    } else {
      const uint mask = ((hi_byte == 4u ? 0u : (1u << (8u * hi_byte))) - (1u << (8u * lo_byte)));
      words[w] = (words[w] & ~mask) | (p.lo & mask);
    }
  }
}
