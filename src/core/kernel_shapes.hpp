// Small views of shapes and element widths that the Cpu and Cuda kernels both take.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ember/core/shape.hpp"

namespace ember {

/// A [N, C, *] tensor viewed as [outer, C, inner] (the norm kernels' per-channel view).
struct Planes {
  int64_t outer = 1, channels = 1, inner = 1;
};

inline Planes planes(const Shape& s) {
  Planes p;
  p.outer = s[0];
  p.channels = s[1];
  for (int i = 2; i < s.rank(); ++i) p.inner *= s[i];
  return p;
}

/// Calls f(U{}) with U the unsigned integer of `size` bytes: copies need only the element size.
template <class F>
void visit_size(size_t size, F&& f) {
  switch (size) {
    case 1:
      return f(uint8_t{});
    case 2:
      return f(uint16_t{});
    case 4:
      return f(uint32_t{});
    default:
      return f(uint64_t{});
  }
}

}  // namespace ember
