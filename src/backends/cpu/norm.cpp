// Fused normalisation kernels: per-channel moments and dot products (threaded over channels,
// each channel summed in double by one thread in a fixed order) and the per-channel
// multiply-add that applies a normalisation or its gradient in one pass.
#include <algorithm>
#include <cstdint>

#include "../../core/kernel_shapes.hpp"
#include "cpu_backend.hpp"
#include "ember/core/error.hpp"
#include "loops.hpp"
#include "parallel.hpp"

namespace ember::cpu {
namespace {

// Channels per task: enough work that a task is worth a thread.
int64_t channel_grain(const Planes& p) {
  return std::max<int64_t>(1, kGrain / std::max<int64_t>(1, p.outer * p.inner));
}

template <class T>
void moments(const RawTensor& x, const RawTensor& out) {
  const Planes p = planes(x.shape);
  const T* xp = x.data_as<T>();
  T* o = out.data_as<T>();
  const double count = static_cast<double>(p.outer * p.inner);
  parallel_for(0, p.channels, channel_grain(p), [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      double s = 0;
      for (int64_t n = 0; n < p.outer; ++n) {
        s += run_sum(xp + (n * p.channels + c) * p.inner, p.inner,
                     [](T v, int64_t) { return static_cast<double>(v); });
      }
      const double mean = s / count;
      double ss = 0;  // a second pass over the channel, mostly from cache
      for (int64_t n = 0; n < p.outer; ++n) {
        ss += run_sum(xp + (n * p.channels + c) * p.inner, p.inner, [mean](T v, int64_t) {
          const double d = static_cast<double>(v) - mean;
          return d * d;
        });
      }
      o[c] = static_cast<T>(mean);
      o[p.channels + c] = static_cast<T>(ss / count);
    }
  });
}

template <class T>
void dot(const RawTensor& a, const RawTensor& b, const RawTensor& center, const RawTensor& out) {
  const Planes p = planes(a.shape);
  const T* ap = a.data_as<T>();
  const T* bp = b.data_as<T>();
  const T* cp = center.data_as<T>();
  T* o = out.data_as<T>();
  parallel_for(0, p.channels, channel_grain(p), [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const double m = static_cast<double>(cp[c]);
      double s = 0, sd = 0;
      for (int64_t n = 0; n < p.outer; ++n) {
        const int64_t at = (n * p.channels + c) * p.inner;
        const T* br = bp + at;
        s += run_sum(ap + at, p.inner, [](T v, int64_t) { return static_cast<double>(v); });
        sd += run_sum(ap + at, p.inner, [br, m](T v, int64_t i) {
          return static_cast<double>(v) * (static_cast<double>(br[i]) - m);
        });
      }
      o[c] = static_cast<T>(s);
      o[p.channels + c] = static_cast<T>(sd);
    }
  });
}

template <class T>
void fma(const RawTensor& a, const RawTensor& ka, const RawTensor& b, const RawTensor& kb,
         const RawTensor& k0, const RawTensor& out) {
  const Planes p = planes(a.shape);
  const T* ap = a.data_as<T>();
  const T* kap = ka.data_as<T>();
  const T* bp = b.defined() ? b.data_as<T>() : nullptr;
  const T* kbp = b.defined() ? kb.data_as<T>() : nullptr;
  const T* k0p = k0.data_as<T>();
  T* o = out.data_as<T>();
  const int64_t planes_n = p.outer * p.channels;
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(1, p.inner));
  parallel_for(0, planes_n, grain, [&](int64_t q0, int64_t q1) {
    for (int64_t q = q0; q < q1; ++q) {
      const int64_t c = q % p.channels;
      const T* ar = ap + q * p.inner;
      T* orow = o + q * p.inner;
      const T sa = kap[c], s0 = k0p[c];
      if (bp) {
        const T* br = bp + q * p.inner;
        const T sb = kbp[c];
        for (int64_t i = 0; i < p.inner; ++i) orow[i] = ar[i] * sa + br[i] * sb + s0;
      } else {
        for (int64_t i = 0; i < p.inner; ++i) orow[i] = ar[i] * sa + s0;
      }
    }
  });
}

template <template <class> class K, class... Args>
void dispatch(DType dtype, const char* op, Args&&... args) {
  switch (dtype) {
    case DType::f32:
      return K<float>::run(args...);
    case DType::f64:
      return K<double>::run(args...);
    default:
      EMBER_FAIL("[cpu] ", op, " supports f32 and f64, got ", dtype);
  }
}

template <class T>
struct Moments {
  static void run(const RawTensor& x, const RawTensor& out) { moments<T>(x, out); }
};
template <class T>
struct Dot {
  static void run(const RawTensor& a, const RawTensor& b, const RawTensor& c, const RawTensor& o) {
    dot<T>(a, b, c, o);
  }
};
template <class T>
struct Fma {
  static void run(const RawTensor& a, const RawTensor& ka, const RawTensor& b, const RawTensor& kb,
                  const RawTensor& k0, const RawTensor& o) {
    fma<T>(a, ka, b, kb, k0, o);
  }
};

}  // namespace

void CpuBackend::channel_moments(const RawTensor& x, const RawTensor& out) {
  dispatch<Moments>(x.dtype, "channel_moments", x, out);
}

void CpuBackend::channel_dot(const RawTensor& a, const RawTensor& b, const RawTensor& center,
                             const RawTensor& out) {
  dispatch<Dot>(a.dtype, "channel_dot", a, b, center, out);
}

void CpuBackend::channel_fma(const RawTensor& a, const RawTensor& ka, const RawTensor& b,
                             const RawTensor& kb, const RawTensor& k0, const RawTensor& out) {
  dispatch<Fma>(a.dtype, "channel_fma", a, ka, b, kb, k0, out);
}

}  // namespace ember::cpu
