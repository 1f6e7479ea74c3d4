// Random fills with Philox4x32-10. Element i of dst takes the four words of
// philox::block(seed, offset + i) (normal: elements 2j and 2j + 1 share offset + 2j), so its value
// depends only on (seed, offset, i): the same whatever the thread count, at most one counter per
// element (the caller reserves numel counters).
#include <cmath>
#include <limits>
#include <type_traits>

#include "../../core/random_values.hpp"
#include "cpu_backend.hpp"
#include "ember/core/error.hpp"
#include "ember/core/philox.hpp"
#include "parallel.hpp"

namespace ember::cpu {
namespace {

using random_values::Words;

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

template <class T>
void normal(const RandomParams& prm, const RawTensor& dst) {
  const random_values::Normal<T> f(prm);
  T* d = dst.data_as<T>();
  const int64_t n = dst.numel();
  parallel_for(0, (n + 1) / 2, kRandomGrain / 2, [&](int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j) {
      T z0, z1;
      f(philox::block(prm.seed, prm.offset + 2 * static_cast<uint64_t>(j)), z0, z1);
      d[2 * j] = z0;
      if (2 * j + 1 < n) d[2 * j + 1] = z1;
    }
  });
}

template <class T>
void randint(const RandomParams& prm, const RawTensor& dst) {
  const int64_t lo = static_cast<int64_t>(prm.a), hi = static_cast<int64_t>(prm.b);
  EMBER_CHECK(hi > lo, "[randint] empty range [", lo, ", ", hi, ")");
  fill_random<T>(prm, dst, random_values::RandInt<T>(lo, hi));
}

}  // namespace

void CpuBackend::random(RandomOp op, const RandomParams& params, const RawTensor& dst) {
  if (dst.numel() == 0) return;
  visit_dtype(dst.dtype, [&](auto tag) {
    using T = decltype(tag);
    switch (op) {
      case RandomOp::Uniform:
        return fill_random<T>(params, dst, random_values::Uniform<T>(params));
      case RandomOp::Normal:
        return normal<T>(params, dst);
      case RandomOp::RandInt:
        return randint<T>(params, dst);
      case RandomOp::Bernoulli:
        return fill_random<T>(params, dst, random_values::Bernoulli<T>{params.a});
    }
  });
}

}  // namespace ember::cpu
