// Copies and casts, fill, iota and where. Kernels that only move elements work on unsigned words
// of the element's width, so one kernel serves every dtype of that size.
#include <cstring>

#include "../../core/kernel_shapes.hpp"
#include "cuda_backend.hpp"
#include "elementwise.cuh"
#include "ember/backends/cuda/cuda.hpp"

namespace ember::cuda {
namespace {

template <class W>
void move_words(const RawTensor& src, const RawTensor& dst) {
  map<W, W>(
      "copy", dst, [] __device__(W v) { return v; }, src);
}

struct alignas(16) Word16 {
  uint32_t v[4];
};

// A strided copy whose rows (last dim) are contiguous on both sides, seen as a copy of 16-byte
// words: the strided kernel's index arithmetic per 16 bytes instead of per element (8x fewer
// for bf16: the heads' split and merge, slices' gradients). Shapes and strides in words; the
// dtype and element offset stay, so data() still finds the first byte.
bool as_rows_of_words(const RawTensor& src, const RawTensor& dst, RawTensor* ws, RawTensor* wd) {
  const int r = dst.rank();
  const int64_t e = static_cast<int64_t>(dtype_size(dst.dtype));
  if (r == 0 || e >= 16 || 16 % e != 0) return false;
  const int64_t k = 16 / e;
  const RawTensor* ts[] = {&src, &dst};
  for (const RawTensor* t : ts) {
    if (t->strides[r - 1] != 1 || !aligned_to(t->data(), 16)) return false;
    for (int d = 0; d + 1 < r; ++d) {
      if (t->shape[d] != 1 && t->strides[d] % k != 0) return false;
    }
  }
  if (dst.shape[r - 1] % k != 0) return false;
  Shape shape = dst.shape;
  shape[r - 1] /= k;
  auto words = [&](const RawTensor& t) {
    Strides st = t.strides;
    for (int d = 0; d + 1 < r; ++d) st[d] /= k;
    return t.view(shape, st, t.offset);
  };
  *ws = words(src);
  *wd = words(dst);
  return true;
}

// In is deduced from the null pointer, so the dispatch macros can supply Out.
template <class Out, class In>
void cast(const RawTensor& src, const RawTensor& dst, const In*) {
  // apply() converts: In to its compute type, then convert<Out> (saturating float -> int).
  map<Out, In>(
      "copy", dst, [] __device__(Compute<In> v) { return v; }, src);
}

template <class In>
void cast_from(const RawTensor& src, const RawTensor& dst) {
  EMBER_CUDA_DISPATCH_ALL(dst.dtype, cast, src, dst, static_cast<const In*>(nullptr))
}

template <class W>
void fill_words(const RawTensor& dst, W bits) {
  map<W>("fill", dst, [bits] __device__() { return bits; });
}

template <class T>
void fill_typed(const RawTensor& dst, const Scalar& value) {
  const T v =
      value.kind() == KindId::Float ? convert<T>(value.to_double()) : convert<T>(value.to_int());
  if constexpr (sizeof(T) == 1) {
    uint8_t bits;
    std::memcpy(&bits, &v, 1);
    fill_words<uint8_t>(dst, bits);
  } else if constexpr (sizeof(T) == 2) {
    uint16_t bits;
    std::memcpy(&bits, &v, 2);
    fill_words<uint16_t>(dst, bits);
  } else if constexpr (sizeof(T) == 4) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    fill_words<uint32_t>(dst, bits);
  } else {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    fill_words<uint64_t>(dst, bits);
  }
}

template <class T>
__global__ void iota_kernel(T* d, int64_t n, double start, double step) {
  EMBER_CUDA_FOR(i, n) d[i] = convert<T>(start + static_cast<double>(i) * step);
}

template <class T>
void iota_typed(const RawTensor& dst, double start, double step) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  iota_kernel<T><<<grid_for(n), kThreads, 0, stream_of(dst)>>>(dst.data_as<T>(), n, start, step);
  EMBER_CUDA_LAUNCHED("arange");
}

template <class W>
void where_words(const RawTensor& cond, const RawTensor& a, const RawTensor& b,
                 const RawTensor& out) {
  map<W, bool, W, W>(
      "where", out, [] __device__(bool c, W x, W y) { return c ? x : y; }, cond, a, b);
}

}  // namespace

void CudaBackend::copy(const RawTensor& src, const RawTensor& dst) {
  if (dst.numel() == 0) return;
  if (src.dtype == dst.dtype) {
    if (src.is_contiguous() && dst.is_contiguous()) {
      EMBER_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), dst.nbytes(),
                                       cudaMemcpyDeviceToDevice, stream_of(dst)),
                       "copy");
      return;
    }
    // Contiguous <-> channels-last: a tiled transpose, coalesced on both sides.
    if (relayout_channels(src, dst, "copy")) return;
    RawTensor ws, wd;
    if (as_rows_of_words(src, dst, &ws, &wd)) {
      move_words<Word16>(ws, wd);
      return;
    }
    visit_size(dtype_size(dst.dtype), [&](auto w) { move_words<decltype(w)>(src, dst); });
    return;
  }
  EMBER_CUDA_DISPATCH_ALL(src.dtype, cast_from, src, dst)
}

void CudaBackend::fill(const RawTensor& dst, const Scalar& value) {
  EMBER_CUDA_DISPATCH_ALL(dst.dtype, fill_typed, dst, value)
}

void CudaBackend::iota(const RawTensor& dst, double start, double step) {
  EMBER_CUDA_DISPATCH_ALL(dst.dtype, iota_typed, dst, start, step)
}

void CudaBackend::where(const RawTensor& cond, const RawTensor& a, const RawTensor& b,
                        const RawTensor& out) {
  visit_size(dtype_size(out.dtype), [&](auto w) { where_words<decltype(w)>(cond, a, b, out); });
}

}  // namespace ember::cuda
