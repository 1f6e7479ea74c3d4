// Copies and casts, fills, iota and host transfers.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "../../core/convert.hpp"
#include "cpu_backend.hpp"
#include "loops.hpp"

namespace ember::cpu {
namespace {

// Copies [.., R, C] planes whose source is transposed (the R dim is the contiguous one) into a
// contiguous destination in 32 x 32 tiles: the element-by-element strided copy missed the cache
// on every read (a 2048 x 1024 f32 transpose took ~20 ms). Same dtype only.
template <class E>
void transpose_planes(const RawTensor& src, const RawTensor& dst) {
  const int r = dst.rank();
  const int64_t rows = dst.shape[r - 2], cols = dst.shape[r - 1];
  const int64_t src_row = src.strides[r - 2], src_col = src.strides[r - 1];
  const int64_t planes = dst.numel() / std::max<int64_t>(rows * cols, 1);
  const E* sp = static_cast<const E*>(src.data());
  E* dp = static_cast<E*>(dst.data());
  constexpr int64_t kTile = 32;
  const int64_t tiles_r = (rows + kTile - 1) / kTile;
  parallel_for(0, planes * tiles_r, std::max<int64_t>(1, kGrain / (kTile * cols)),
               [&](int64_t b, int64_t e) {
                 for (int64_t t = b; t < e; ++t) {
                   const int64_t plane = t / tiles_r, i0 = (t % tiles_r) * kTile;
                   // The plane's source offset, from its index over the leading dims.
                   int64_t off = 0, rest = plane;
                   for (int d = r - 3; d >= 0; --d) {
                     off += (rest % src.shape[d]) * src.strides[d];
                     rest /= src.shape[d];
                   }
                   const E* s = sp + off;
                   E* d = dp + plane * rows * cols;
                   const int64_t ni = std::min(kTile, rows - i0);
                   // Through a tile buffer: each source column piece is read, and each
                   // destination row piece written, in one contiguous burst (strided access
                   // inside the tile thrashed the cache at power-of-two sizes).
                   E buf[kTile][kTile];
                   for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
                     const int64_t nj = std::min(kTile, cols - j0);
                     for (int64_t j = 0; j < nj; ++j) {
                       const E* col = s + (j0 + j) * src_col + i0 * src_row;
                       for (int64_t i = 0; i < ni; ++i) buf[i][j] = col[i];
                     }
                     for (int64_t i = 0; i < ni; ++i) {
                       E* row = d + (i0 + i) * cols + j0;
                       for (int64_t j = 0; j < nj; ++j) row[j] = buf[i][j];
                     }
                   }
                 }
               });
}

// True when `src` is [.., R, C] with its R dim contiguous and C strided, and dst is contiguous.
bool is_transposed_copy(const RawTensor& src, const RawTensor& dst) {
  const int r = src.rank();
  return src.dtype == dst.dtype && r >= 2 && dst.is_contiguous() && src.strides[r - 2] == 1 &&
         src.strides[r - 1] != 1 && src.shape[r - 2] >= 32 && src.shape[r - 1] >= 32;
}

}  // namespace

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
  if (is_transposed_copy(src, dst)) {
    switch (dtype_size(src.dtype)) {
      case 1:
        return transpose_planes<uint8_t>(src, dst);
      case 2:
        return transpose_planes<uint16_t>(src, dst);
      case 4:
        return transpose_planes<uint32_t>(src, dst);
      case 8:
        return transpose_planes<uint64_t>(src, dst);
      default:
        break;
    }
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
