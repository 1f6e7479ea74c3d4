// Pooling over 1 to 3 trailing spatial dims of contiguous tensors: max (PyTorch's flat indices
// within each plane, NaN wins, first maximum wins), average and adaptive average, forward and
// backward, as the Cpu's pool.cpp. One thread per output (forward) or per input (average
// backward, gathering its windows in the Cpu's order); 16-bit floats accumulate in f32.
#include <cmath>
#include <cstdint>
#include <string>

#include "../../core/pool_geometry.hpp"
#include "common.cuh"
#include "cuda_backend.hpp"
#include "ember/core/device.hpp"

namespace ember::cuda {
namespace {

using pool::avg_window;
using pool::Geo;
using pool::geometry;
using pool::Window;

std::string spatial_name(const char* kind, int spatial) {
  return std::string(kind) + std::to_string(spatial) + "d";
}

// Floor division for a possibly negative numerator (positive divisor).
__device__ int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return q * b > a ? q - 1 : q;
}

// A range [first, last] of the output positions along slot i whose average windows may hold
// input position x (a superset: the caller checks each against avg_window).
__device__ void windows_of(const Geo& g, int i, int64_t x, int64_t& first, int64_t& last) {
  if (g.adaptive) {
    first = x * g.out[i] / g.in[i];
    last = ((x + 1) * g.out[i] - 1) / g.in[i];
  } else {  // o s - p <= x < o s - p + k
    first = floor_div(x + g.p[i] - g.k[i], g.s[i]) + 1;
    last = floor_div(x + g.p[i], g.s[i]);
  }
  first = max(first, int64_t{0});
  last = min(last, g.out[i] - 1);
}

// Element o's plane and position within it, for spatial `sizes` of `size` elements.
struct At {
  int64_t b, od, oh, ow;
};
__device__ At position(int64_t o, const int64_t* sizes, int64_t size) {
  At a;
  a.b = o / size;
  const int64_t r = o - a.b * size;
  a.ow = r % sizes[2];
  a.oh = (r / sizes[2]) % sizes[1];
  a.od = r / (sizes[2] * sizes[1]);
  return a;
}

template <class T, class I>
__global__ void max_pool_kernel(const T* x, Geo g, T* y, I* indices) {
  using C = Compute<T>;
  EMBER_CUDA_FOR(o, g.planes * g.out_size) {
    const At a = position(o, g.out, g.out_size);
    const T* plane = x + a.b * g.in_size;
    // Per slot: the window's first index, step and length; adaptive_max_pool's windows are
    // PyTorch's [floor(o * in / out), ceil((o + 1) * in / out)).
    const int64_t pos[3] = {a.od, a.oh, a.ow};
    int64_t first[3], step[3], len[3];
    for (int i = 0; i < 3; ++i) {
      if (g.adaptive) {
        const Window w = avg_window(g, i, pos[i]);
        first[i] = w.lo;
        step[i] = 1;
        len[i] = w.hi - w.lo;
      } else {
        first[i] = pos[i] * g.s[i] - g.p[i];
        step[i] = g.d[i];
        len[i] = g.k[i];
      }
    }
    C best = -INFINITY;
    int64_t arg = -1;
    // The first in-range element seeds the max (an all -inf window points at it); a later one
    // wins when greater or NaN, as on the Cpu.
    for (int64_t kd = 0; kd < len[0]; ++kd) {
      const int64_t id = first[0] + kd * step[0];
      if (id < 0 || id >= g.in[0]) continue;
      for (int64_t kh = 0; kh < len[1]; ++kh) {
        const int64_t ih = first[1] + kh * step[1];
        if (ih < 0 || ih >= g.in[1]) continue;
        const int64_t row = (id * g.in[1] + ih) * g.in[2];
        for (int64_t kw = 0; kw < len[2]; ++kw) {
          const int64_t iw = first[2] + kw * step[2];
          if (iw < 0 || iw >= g.in[2]) continue;
          const C v = static_cast<C>(plane[row + iw]);
          if (arg < 0 || v > best || v != v) {
            best = v;
            arg = row + iw;
          }
        }
      }
    }
    y[o] = static_cast<T>(best);
    if (indices != nullptr) indices[o] = static_cast<I>(arg);  // null: the values only
  }
}

// grad_in += grad_out at the indices, accumulated in A (T, or float for the 16-bit floats) at
// `acc`, zeroed before. Indices outside the plane (-1: a window with no input) are skipped.
template <class T, class I, class A>
__global__ void max_unpool_atomic_kernel(const T* gy, const I* indices, Geo g, A* acc) {
  EMBER_CUDA_FOR(o, g.planes * g.out_size) {
    const int64_t at = static_cast<int64_t>(indices[o]);
    if (at < 0 || at >= g.in_size) continue;
    atomicAdd(acc + (o / g.out_size) * g.in_size + at, static_cast<A>(gy[o]));
  }
}

// The same in the Cpu's order, one thread per plane (use_deterministic_algorithms).
template <class T, class I, class A>
__global__ void max_unpool_ordered_kernel(const T* gy, const I* indices, Geo g, A* acc) {
  EMBER_CUDA_FOR(b, g.planes) {
    A* plane = acc + b * g.in_size;
    for (int64_t o = b * g.out_size; o < (b + 1) * g.out_size; ++o) {
      const int64_t at = static_cast<int64_t>(indices[o]);
      if (at >= 0 && at < g.in_size) plane[at] += static_cast<A>(gy[o]);
    }
  }
}

template <class T>
__global__ void round_kernel(const float* acc, int64_t n, T* out) {
  EMBER_CUDA_FOR(i, n) { out[i] = static_cast<T>(acc[i]); }
}

template <class T>
__global__ void avg_pool_kernel(const T* x, Geo g, T* y) {
  using C = Compute<T>;
  EMBER_CUDA_FOR(o, g.planes * g.out_size) {
    const At a = position(o, g.out, g.out_size);
    const T* plane = x + a.b * g.in_size;
    const Window wd = avg_window(g, 0, a.od), wh = avg_window(g, 1, a.oh),
                 ww = avg_window(g, 2, a.ow);
    y[o] = pool::window_average<C>(plane, g, wd, wh, ww);
  }
}

// One thread per input element: the sum of gy / count over the windows that hold it, in
// increasing output order (the order the Cpu adds them in).
template <class T>
__global__ void avg_pool_backward_kernel(const T* gy, Geo g, T* gx) {
  using C = Compute<T>;
  EMBER_CUDA_FOR(i, g.planes * g.in_size) {
    const At a = position(i, g.in, g.in_size);
    const T* plane = gy + a.b * g.out_size;
    int64_t d_first, d_last, h_first, h_last, w_first, w_last;
    windows_of(g, 0, a.od, d_first, d_last);
    windows_of(g, 1, a.oh, h_first, h_last);
    windows_of(g, 2, a.ow, w_first, w_last);
    C acc = 0;
    for (int64_t od = d_first; od <= d_last; ++od) {
      const Window wd = avg_window(g, 0, od);
      if (a.od < wd.lo || a.od >= wd.hi) continue;
      for (int64_t oh = h_first; oh <= h_last; ++oh) {
        const Window wh = avg_window(g, 1, oh);
        if (a.oh < wh.lo || a.oh >= wh.hi) continue;
        for (int64_t ow = w_first; ow <= w_last; ++ow) {
          const Window ww = avg_window(g, 2, ow);
          if (a.ow < ww.lo || a.ow >= ww.hi) continue;
          const int64_t count = wd.count * wh.count * ww.count;
          if (count <= 0) continue;
          acc +=
              static_cast<C>(plane[(od * g.out[1] + oh) * g.out[2] + ow]) / static_cast<C>(count);
        }
      }
    }
    gx[i] = static_cast<T>(acc);
  }
}

template <class T>
void launch_max_pool(const RawTensor& x, const Geo& g, const RawTensor& out,
                     const RawTensor& indices, const char* op) {
  const int64_t n = g.planes * g.out_size;
  const cudaStream_t stream = stream_of(out);
  if (indices.defined() && indices.dtype == DType::i32) {
    max_pool_kernel<T, int32_t><<<grid_for(n), kThreads, 0, stream>>>(
        x.data_as<T>(), g, out.data_as<T>(), indices.data_as<int32_t>());
  } else {
    max_pool_kernel<T, int64_t><<<grid_for(n), kThreads, 0, stream>>>(
        x.data_as<T>(), g, out.data_as<T>(),
        indices.defined() ? indices.data_as<int64_t>() : nullptr);
  }
  EMBER_CUDA_LAUNCHED(op);
}

template <class T, class I>
void max_pool_backward_as(const RawTensor& gy, const RawTensor& indices, const Geo& g,
                          const RawTensor& gx) {
  constexpr const char* op = "max_pool_backward";
  const cudaStream_t stream = stream_of(gx);
  const int64_t n = g.planes * g.in_size;
  // The 16-bit floats accumulate in an f32 scratch, rounded once at the end (as the Cpu).
  using A = Compute<T>;
  std::shared_ptr<Storage> scratch_acc;
  A* acc = nullptr;
  if constexpr (is_half_v<T>) {
    scratch_acc = scratch(static_cast<size_t>(n) * sizeof(float), gx.device());
    acc = static_cast<float*>(scratch_acc->data());
  } else {
    acc = gx.data_as<T>();
  }
  EMBER_CUDA_CHECK(cudaMemsetAsync(acc, 0, static_cast<size_t>(n) * sizeof(A), stream), op);
  if (deterministic_algorithms()) {
    max_unpool_ordered_kernel<T, I, A><<<grid_for(g.planes), kThreads, 0, stream>>>(
        gy.data_as<T>(), indices.data_as<I>(), g, acc);
  } else {
    // Atomics only race where windows overlap; their order then varies in the last bits.
    max_unpool_atomic_kernel<T, I, A><<<grid_for(g.planes * g.out_size), kThreads, 0, stream>>>(
        gy.data_as<T>(), indices.data_as<I>(), g, acc);
  }
  EMBER_CUDA_LAUNCHED(op);
  if constexpr (is_half_v<T>) {
    round_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(acc, n, gx.data_as<T>());
    EMBER_CUDA_LAUNCHED(op);
  }
}

template <class T>
void launch_max_pool_backward(const RawTensor& gy, const RawTensor& indices, const Geo& g,
                              const RawTensor& gx) {
  if (indices.dtype == DType::i32) return max_pool_backward_as<T, int32_t>(gy, indices, g, gx);
  max_pool_backward_as<T, int64_t>(gy, indices, g, gx);
}

template <class T>
void launch_avg_pool(const RawTensor& x, const Geo& g, const RawTensor& out, const char* op) {
  const int64_t n = g.planes * g.out_size;
  avg_pool_kernel<T>
      <<<grid_for(n), kThreads, 0, stream_of(out)>>>(x.data_as<T>(), g, out.data_as<T>());
  EMBER_CUDA_LAUNCHED(op);
}

template <class T>
void launch_avg_pool_backward(const RawTensor& gy, const Geo& g, const RawTensor& gx) {
  const int64_t n = g.planes * g.in_size;
  avg_pool_backward_kernel<T>
      <<<grid_for(n), kThreads, 0, stream_of(gx)>>>(gy.data_as<T>(), g, gx.data_as<T>());
  EMBER_CUDA_LAUNCHED("avg_pool_backward");
}

}  // namespace

void CudaBackend::max_pool(const RawTensor& x, const PoolParams& p, const RawTensor& out,
                           const RawTensor& indices) {
  const std::string op = spatial_name("max_pool", p.spatial);
  if (out.numel() == 0) return;
  const Geo g = geometry(x.shape, out.shape, p);
  EMBER_CUDA_DISPATCH_FLOAT(x.dtype, no_kernel(op, x.dtype), launch_max_pool, x, g, out, indices,
                            op.c_str())
}

void CudaBackend::max_pool_backward(const RawTensor& grad_out, const RawTensor& indices,
                                    const PoolParams& p, const RawTensor& grad_in) {
  if (grad_in.numel() == 0) return;
  const Geo g = geometry(grad_in.shape, grad_out.shape, p);
  EMBER_CUDA_DISPATCH_FLOAT(grad_in.dtype, no_kernel("max_pool_backward", grad_in.dtype),
                            launch_max_pool_backward, grad_out, indices, g, grad_in)
}

void CudaBackend::avg_pool(const RawTensor& x, const PoolParams& p, const RawTensor& out) {
  const std::string op = spatial_name(p.adaptive ? "adaptive_avg_pool" : "avg_pool", p.spatial);
  if (out.numel() == 0) return;
  const Geo g = geometry(x.shape, out.shape, p);
  EMBER_CUDA_DISPATCH_FLOAT(x.dtype, no_kernel(op, x.dtype), launch_avg_pool, x, g, out, op.c_str())
}

void CudaBackend::avg_pool_backward(const RawTensor& grad_out, const PoolParams& p,
                                    const RawTensor& grad_in) {
  if (grad_in.numel() == 0) return;
  const Geo g = geometry(grad_in.shape, grad_out.shape, p);
  EMBER_CUDA_DISPATCH_FLOAT(grad_in.dtype, no_kernel("avg_pool_backward", grad_in.dtype),
                            launch_avg_pool_backward, grad_out, g, grad_in)
}

}  // namespace ember::cuda
