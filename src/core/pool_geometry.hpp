// Pooling geometry shared by the Cpu and Cuda kernels (EMBER_HD): the spatial sizes right-aligned
// in three slots (leading slots of size 1) and the average window of an output position, with
// PyTorch's rules for padding, ceil mode and adaptive windows.
#pragma once

#include <algorithm>
#include <cstdint>

#include "ember/core/host_device.hpp"
#include "ember/core/ops.hpp"
#include "ember/core/shape.hpp"

namespace ember::pool {

struct Geo {
  int64_t planes = 1;
  int64_t in[3], out[3], k[3], s[3], p[3], d[3];
  int64_t in_size = 1, out_size = 1;
  bool adaptive = false, count_include_pad = true;
};

/// The geometry of pooling x into y (out's shape gives the output size).
inline Geo geometry(const Shape& x, const Shape& y, const PoolParams& p) {
  Geo g;
  const int r = x.rank();
  for (int i = 0; i < r - p.spatial; ++i) g.planes *= x[i];
  for (int i = 0; i < 3; ++i) {
    const int j = i - (3 - p.spatial);
    const bool used = j >= 0;
    g.in[i] = used ? x[r - p.spatial + j] : 1;
    g.out[i] = used ? y[r - p.spatial + j] : 1;
    g.k[i] = used ? p.kernel[j] : 1;
    g.s[i] = used ? p.stride[j] : 1;
    g.p[i] = used ? p.padding[j] : 0;
    g.d[i] = used ? p.dilation[j] : 1;
    g.in_size *= g.in[i];
    g.out_size *= g.out[i];
  }
  g.adaptive = p.adaptive;
  g.count_include_pad = p.count_include_pad;
  return g;
}

/// The average window of output position o along slot i: [lo, hi) clipped to the input, and the
/// count it divides by.
struct Window {
  int64_t lo, hi, count;
};
EMBER_HD inline Window avg_window(const Geo& g, int i, int64_t o) {
  if (g.adaptive) {
    const int64_t lo = o * g.in[i] / g.out[i];
    const int64_t hi = ((o + 1) * g.in[i] + g.out[i] - 1) / g.out[i];
    return {lo, hi, hi - lo};
  }
  int64_t lo = o * g.s[i] - g.p[i];
  int64_t hi = std::min(lo + g.k[i], g.in[i] + g.p[i]);
  const int64_t padded = hi - lo;  // PyTorch: windows past the right padding are cut there
  lo = std::max<int64_t>(lo, 0);
  hi = std::min(hi, g.in[i]);
  return {lo, hi, g.count_include_pad ? padded : hi - lo};
}

/// The average of one output's window of `plane` (a [D, H, W] input plane), in the compute type
/// C, as T; an empty window (all padding) gives 0.
template <class C, class T>
EMBER_HD inline T window_average(const T* plane, const Geo& g, const Window& wd, const Window& wh,
                                 const Window& ww) {
  C sum = 0;
  for (int64_t id = wd.lo; id < wd.hi; ++id) {
    for (int64_t ih = wh.lo; ih < wh.hi; ++ih) {
      const T* row = plane + (id * g.in[1] + ih) * g.in[2];
      for (int64_t iw = ww.lo; iw < ww.hi; ++iw) sum += static_cast<C>(row[iw]);
    }
  }
  const int64_t count = wd.count * wh.count * ww.count;
  return static_cast<T>(count > 0 ? sum / static_cast<C>(count) : C(0));
}

}  // namespace ember::pool
