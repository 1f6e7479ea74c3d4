// Strided elementwise iteration shared by the Cpu kernels. Operands have one shape and any
// strides; dims that are contiguous in every operand are merged, size-1 dims dropped, and the
// kernel is handed runs along the innermost dim: f(char* ptrs[N], const int64_t byte_strides[N],
// int64_t n). When every stride equals its element size the kernel's loop is contiguous and the
// compiler vectorises it. The iteration itself is compiled once (loops.cpp); only the small
// per-op row kernels are instantiated per op and dtype, which keeps compile times down.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <type_traits>

#include "ember/core/raw_tensor.hpp"
#include "parallel.hpp"

namespace ember::cpu {

using RowKernel = void (*)(char** ptrs, const int64_t* strides, int64_t n, const void* ctx);

template <int N>
class StridedLoop {
 public:
  StridedLoop(const Shape& shape, const std::array<const RawTensor*, N>& ops);

  int64_t numel() const { return numel_; }

  /// Runs the row kernel over every element, in parallel when there is enough work.
  void run(RowKernel kernel, const void* ctx, int64_t grain = kGrain) const;
  /// Runs the row kernel over the elements [begin, end) in row-major order, on this thread.
  void run_range(int64_t begin, int64_t end, RowKernel kernel, const void* ctx) const;

  template <class F>
  void run(const F& f, int64_t grain = kGrain) const {
    run(&thunk<F>, &f, grain);
  }
  template <class F>
  void run_range(int64_t begin, int64_t end, const F& f) const {
    run_range(begin, end, &thunk<F>, &f);
  }

 private:
  template <class F>
  static void thunk(char** p, const int64_t* s, int64_t n, const void* ctx) {
    (*static_cast<const F*>(ctx))(p, s, n);
  }

  std::array<char*, N> base_{};
  int64_t sizes_[kMaxRank] = {};
  std::array<int64_t, N> strides_[kMaxRank] = {};
  int rank_ = 0;
  int64_t numel_ = 0;
};

extern template class StridedLoop<1>;
extern template class StridedLoop<2>;
extern template class StridedLoop<3>;
extern template class StridedLoop<4>;

/// When every operand (all of one shape) is contiguous, runs f over flat ranges without the
/// strided bookkeeping and returns true. The common case, and the one per-op overhead rides on.
template <int N, class F>
bool run_contiguous(const std::array<const RawTensor*, N>& ops, const F& f,
                    int64_t grain = kGrain) {
  for (const RawTensor* t : ops) {
    if (!t->is_contiguous()) return false;
  }
  std::array<char*, N> base;
  std::array<int64_t, N> elem;
  for (int k = 0; k < N; ++k) {
    base[k] = static_cast<char*>(ops[k]->data());
    elem[k] = static_cast<int64_t>(dtype_size(ops[k]->dtype));
  }
  const int64_t n = ops[0]->numel();
  if (n <= grain) {
    if (n > 0) f(base.data(), elem.data(), n);
    return true;
  }
  parallel_for(0, n, grain, [&](int64_t b, int64_t e) {
    std::array<char*, N> p;
    for (int k = 0; k < N; ++k) p[k] = base[k] + b * elem[k];
    f(p.data(), elem.data(), e - b);
  });
  return true;
}

/// c ? a : b on the bit patterns (same-size unsigned integers): compilers keep it branch-free and
/// vectorise it, where a select on floats became a branch that mispredicts on data-dependent
/// conditions (ReLU's signs, max pooling).
template <class T>
T select_bits(bool c, T a, T b) {
  using U = std::conditional_t<
      sizeof(T) == 1, uint8_t,
      std::conditional_t<sizeof(T) == 2, uint16_t,
                         std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
  const U m = static_cast<U>(U(0) - static_cast<U>(c));
  return std::bit_cast<T>(static_cast<U>((std::bit_cast<U>(a) & m) | (std::bit_cast<U>(b) & ~m)));
}

/// Sum of f(x[i], i) over a run, in eight double lanes (the compiler vectorises the lanes; one
/// dependent chain would be four times slower and no more exact).
template <class T, class F>
double run_sum(const T* x, int64_t n, const F& f) {
  double lane[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) lane[j] += f(x[i + j], i + j);
  }
  for (; i < n; ++i) lane[0] += f(x[i], i);
  return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

/// True when run `s` is contiguous for an operand of `elem` bytes.
inline bool dense(int64_t s, size_t elem) { return s == static_cast<int64_t>(elem); }

}  // namespace ember::cpu
