// Random fills with Philox4x32-10. Element i of dst takes the four words of
// philox::block(seed, offset + i) (normal: elements 2j and 2j + 1 share offset + 2j), so its value
// depends only on (seed, offset, i): the same whatever the thread count, at most one counter per
// element (the caller reserves numel counters).
#include <cmath>
#include <limits>
#include <type_traits>

#include "../../core/convert.hpp"
#include "cpu_backend.hpp"
#include "ember/core/error.hpp"
#include "ember/core/philox.hpp"
#include "parallel.hpp"

namespace ember::cpu {
namespace {

using Words = std::array<uint32_t, 4>;

// Box-Muller and the 53-bit uniforms cost more than a copy: smaller pieces still pay off.
constexpr int64_t kRandomGrain = kGrain / 8;

// dst[i] = f(words of element i), converted to T.
template <class T, class F>
void fill_random(const RandomParams& prm, const RawTensor& dst, F f) {
  T* d = dst.data_as<T>();
  parallel_for(0, dst.numel(), kRandomGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      d[i] = f(philox::block(prm.seed, prm.offset + static_cast<uint64_t>(i)));
    }
  });
}

// A uniform in [0, 1) with the precision of T: 53 bits for f64, 24 otherwise.
template <class T>
double unit(const Words& w) {
  if constexpr (std::is_same_v<T, double>) {
    return philox::to_unit_double(w[0], w[1]);
  } else {
    return static_cast<double>(philox::to_unit_float(w[0]));
  }
}

// The largest T below v (v finite).
template <class T>
T next_below(T v) {
  if constexpr (is_half_v<T>) {
    // Sign-magnitude bits: a positive value steps down by one, a negative one up; 0 goes to -0+.
    const uint16_t b = v.bits;
    if ((b & 0x7fffu) == 0) return T::from_bits(0x8001u);
    return T::from_bits(static_cast<uint16_t>((b & 0x8000u) ? b + 1 : b - 1));
  } else {
    return std::nextafter(v, -std::numeric_limits<T>::infinity());
  }
}

template <class T>
void uniform(const RandomParams& prm, const RawTensor& dst) {
  const double a = prm.a, span = prm.b - prm.a;
  if constexpr (std::is_floating_point_v<Compute<T>>) {
    // Rounding a + span * u to T can land on b (often, in 16 bits): step back to keep [a, b).
    const T hi = convert<T>(prm.b), below = next_below(hi);
    const auto hi_c = static_cast<Compute<T>>(hi);
    fill_random<T>(prm, dst, [=](const Words& w) {
      const T v = convert<T>(a + span * unit<T>(w));
      return span > 0 && static_cast<Compute<T>>(v) >= hi_c ? below : v;
    });
  } else {
    fill_random<T>(prm, dst, [=](const Words& w) { return convert<T>(a + span * unit<T>(w)); });
  }
}

// Elements 2j and 2j + 1 share counter offset + 2j and take the two halves of one Box-Muller
// pair (counter offset + 2j + 1 goes unused): half the logs and sines, still one counter each.
template <class T>
void normal(const RandomParams& prm, const RawTensor& dst) {
  const double mean = prm.a, std = prm.b;
  T* d = dst.data_as<T>();
  const int64_t n = dst.numel();
  parallel_for(0, (n + 1) / 2, kRandomGrain / 2, [&](int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j) {
      const Words w = philox::block(prm.seed, prm.offset + 2 * static_cast<uint64_t>(j));
      // u1 = 1 - u is in (0, 1], so log(u1) is finite.
      const double u1 = 1.0 - philox::to_unit_double(w[0], w[1]);
      const double u2 = philox::to_unit_double(w[2], w[3]);
      double z0, z1;
      philox::box_muller(u1, u2, z0, z1);
      d[2 * j] = convert<T>(mean + std * z0);
      if (2 * j + 1 < n) d[2 * j + 1] = convert<T>(mean + std * z1);
    }
  });
}

template <class T>
void randint(const RandomParams& prm, const RawTensor& dst) {
  const int64_t lo = static_cast<int64_t>(prm.a), hi = static_cast<int64_t>(prm.b);
  EMBER_CHECK(hi > lo, "[randint] empty range [", lo, ", ", hi, ")");
  // Modulo 64 random bits: the bias is below range / 2^64, invisible for any practical range.
  const uint64_t range = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
  fill_random<T>(prm, dst, [=](const Words& w) {
    const uint64_t bits = (static_cast<uint64_t>(w[0]) << 32) | w[1];
    const int64_t v = static_cast<int64_t>(static_cast<uint64_t>(lo) + bits % range);
    if constexpr (std::is_integral_v<T>) {
      return convert<T>(v);
    } else {
      return convert<T>(static_cast<double>(v));
    }
  });
}

template <class T>
void bernoulli(const RandomParams& prm, const RawTensor& dst) {
  const double p = prm.a;
  fill_random<T>(prm, dst, [=](const Words& w) {
    return convert<T>(philox::to_unit_double(w[0], w[1]) < p ? 1 : 0);
  });
}

}  // namespace

void CpuBackend::random(RandomOp op, const RandomParams& params, const RawTensor& dst) {
  if (dst.numel() == 0) return;
  visit_dtype(dst.dtype, [&](auto tag) {
    using T = decltype(tag);
    switch (op) {
      case RandomOp::Uniform:
        return uniform<T>(params, dst);
      case RandomOp::Normal:
        return normal<T>(params, dst);
      case RandomOp::RandInt:
        return randint<T>(params, dst);
      case RandomOp::Bernoulli:
        return bernoulli<T>(params, dst);
    }
  });
}

}  // namespace ember::cpu
