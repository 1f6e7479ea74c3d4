// Copies and casts, fills, iota and host transfers.
#include <cstring>

#include "convert.hpp"
#include "cpu_backend.hpp"
#include "loops.hpp"

namespace ember::cpu {

void CpuBackend::copy(const RawTensor& src, const RawTensor& dst) {
  if (src.dtype == dst.dtype && src.is_contiguous() && dst.is_contiguous()) {
    const auto* s = static_cast<const char*>(src.data());
    auto* d = static_cast<char*>(dst.data());
    const int64_t bytes = static_cast<int64_t>(src.nbytes());
    parallel_for(0, bytes, int64_t{1} << 20, [&](int64_t b, int64_t e) {
      std::memcpy(d + b, s + b, static_cast<size_t>(e - b));
    });
    return;
  }
  StridedLoop<2> loop(dst.shape, {&dst, &src});
  visit_dtype(src.dtype, [&](auto s_tag) {
    using S = decltype(s_tag);
    visit_dtype(dst.dtype, [&](auto d_tag) {
      using T = decltype(d_tag);
      loop.run([](char** p, const int64_t* st, int64_t n) {
        if (dense(st[0], sizeof(T)) && dense(st[1], sizeof(S))) {
          T* d = reinterpret_cast<T*>(p[0]);
          const S* s = reinterpret_cast<const S*>(p[1]);
          for (int64_t i = 0; i < n; ++i) d[i] = convert<T>(s[i]);
        } else {
          for (int64_t i = 0; i < n; ++i) {
            *reinterpret_cast<T*>(p[0] + i * st[0]) =
                convert<T>(*reinterpret_cast<const S*>(p[1] + i * st[1]));
          }
        }
      });
    });
  });
}

void CpuBackend::write_from_host(const void* host, const RawTensor& dst) {
  if (dst.nbytes()) std::memcpy(dst.data(), host, dst.nbytes());
}

void CpuBackend::read_to_host(const RawTensor& src, void* host) {
  if (src.nbytes()) std::memcpy(host, src.data(), src.nbytes());
}

void CpuBackend::fill(const RawTensor& dst, const Scalar& value) {
  StridedLoop<1> loop(dst.shape, {&dst});
  visit_dtype(dst.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T v =
        value.kind() == KindId::Float ? convert<T>(value.to_double()) : convert<T>(value.to_int());
    loop.run([v](char** p, const int64_t* st, int64_t n) {
      if (dense(st[0], sizeof(T))) {
        T* d = reinterpret_cast<T*>(p[0]);
        for (int64_t i = 0; i < n; ++i) d[i] = v;
      } else {
        for (int64_t i = 0; i < n; ++i) *reinterpret_cast<T*>(p[0] + i * st[0]) = v;
      }
    });
  });
}

void CpuBackend::iota(const RawTensor& dst, double start, double step) {
  visit_dtype(dst.dtype, [&](auto tag) {
    using T = decltype(tag);
    T* d = dst.data_as<T>();
    parallel_for(0, dst.numel(), kGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) d[i] = convert<T>(start + static_cast<double>(i) * step);
    });
  });
}

}  // namespace ember::cpu
