// Strided elementwise iteration shared by the Cpu kernels. Operands have one shape and any
// strides; dims that are contiguous in every operand are merged, size-1 dims dropped, and the
// kernel is handed runs along the innermost dim: f(char* ptrs[N], const int64_t bytes_strides[N],
// int64_t n). When every stride equals its element size the kernel's loop is contiguous and the
// compiler vectorises it.
#pragma once

#include <array>
#include <cstdint>

#include "ember/core/raw_tensor.hpp"
#include "parallel.hpp"

namespace ember::cpu {

template <int N>
class StridedLoop {
 public:
  StridedLoop(const Shape& shape, const std::array<const RawTensor*, N>& ops) {
    for (int k = 0; k < N; ++k) {
      base_[k] = static_cast<char*>(ops[k]->data());
      elem_[k] = static_cast<int64_t>(dtype_size(ops[k]->dtype));
    }
    // Keep non-trivial dims, innermost last, merging where every operand is contiguous across.
    for (int d = 0; d < shape.rank(); ++d) {
      if (shape[d] == 1) continue;
      std::array<int64_t, N> st;
      for (int k = 0; k < N; ++k) st[k] = ops[k]->strides[d] * elem_[k];
      if (rank_ > 0) {
        bool merge = true;
        for (int k = 0; k < N; ++k) merge &= strides_[rank_ - 1][k] == st[k] * shape[d];
        if (merge) {
          sizes_[rank_ - 1] *= shape[d];
          for (int k = 0; k < N; ++k) strides_[rank_ - 1][k] = st[k];
          continue;
        }
      }
      sizes_[rank_] = shape[d];
      strides_[rank_] = st;
      ++rank_;
    }
    numel_ = shape.numel();
  }

  int64_t numel() const { return numel_; }

  /// Runs f over every element, in parallel when there is enough work (`grain` elements a piece).
  template <class F>
  void run(const F& f, int64_t grain = kGrain) const {
    if (numel_ == 0) return;
    parallel_for(0, numel_, grain, [&](int64_t b, int64_t e) { run_range(b, e, f); });
  }

  /// Runs f over the elements [begin, end) in row-major order.
  template <class F>
  void run_range(int64_t begin, int64_t end, const F& f) const {
    if (rank_ == 0) {  // a single element
      std::array<char*, N> p = base_;
      std::array<int64_t, N> s{};
      f(p.data(), s.data(), int64_t{1});
      return;
    }
    const int inner = rank_ - 1;
    const int64_t n_inner = sizes_[inner];
    // Multi-index of `begin`.
    int64_t idx[kMaxRank] = {};
    int64_t rest = begin;
    for (int d = inner; d >= 0; --d) {
      idx[d] = rest % sizes_[d];
      rest /= sizes_[d];
    }
    int64_t pos = begin;
    while (pos < end) {
      std::array<char*, N> p = base_;
      for (int d = 0; d < rank_; ++d) {
        for (int k = 0; k < N; ++k) p[k] += idx[d] * strides_[d][k];
      }
      const int64_t n = std::min(n_inner - idx[inner], end - pos);
      std::array<int64_t, N> s;
      for (int k = 0; k < N; ++k) s[k] = strides_[inner][k];
      f(p.data(), s.data(), n);
      pos += n;
      idx[inner] += n;
      for (int d = inner; d > 0 && idx[d] == sizes_[d]; --d) {
        idx[d] = 0;
        ++idx[d - 1];
      }
    }
  }

 private:
  std::array<char*, N> base_{};
  std::array<int64_t, N> elem_{};
  int64_t sizes_[kMaxRank] = {};
  std::array<int64_t, N> strides_[kMaxRank] = {};
  int rank_ = 0;
  int64_t numel_ = 0;
};

/// True when run `s` is contiguous for an operand of `elem` bytes.
inline bool dense(int64_t s, size_t elem) { return s == static_cast<int64_t>(elem); }

}  // namespace ember::cpu
