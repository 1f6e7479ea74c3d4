#include "loops.hpp"

#include <algorithm>

namespace ember::cpu {

template <int N>
StridedLoop<N>::StridedLoop(const Shape& shape, const std::array<const RawTensor*, N>& ops) {
  std::array<int64_t, N> elem{};
  for (int k = 0; k < N; ++k) {
    base_[k] = static_cast<char*>(ops[k]->data());
    elem[k] = static_cast<int64_t>(dtype_size(ops[k]->dtype));
  }
  // Keep non-trivial dims, innermost last, merging where every operand is contiguous across.
  for (int d = 0; d < shape.rank(); ++d) {
    if (shape[d] == 1) continue;
    std::array<int64_t, N> st;
    for (int k = 0; k < N; ++k) st[k] = ops[k]->strides[d] * elem[k];
    if (rank_ > 0) {
      bool merge = true;
      for (int k = 0; k < N; ++k) merge &= strides_[rank_ - 1][k] == st[k] * shape[d];
      if (merge) {
        sizes_[rank_ - 1] *= shape[d];
        strides_[rank_ - 1] = st;
        continue;
      }
    }
    sizes_[rank_] = shape[d];
    strides_[rank_] = st;
    ++rank_;
  }
  numel_ = shape.numel();
}

template <int N>
void StridedLoop<N>::run(RowKernel kernel, const void* ctx, int64_t grain) const {
  if (numel_ == 0) return;
  parallel_for(0, numel_, grain, [&](int64_t b, int64_t e) { run_range(b, e, kernel, ctx); });
}

template <int N>
void StridedLoop<N>::run_range(int64_t begin, int64_t end, RowKernel kernel,
                               const void* ctx) const {
  if (rank_ == 0) {  // a single element
    std::array<char*, N> p = base_;
    std::array<int64_t, N> s{};
    kernel(p.data(), s.data(), 1, ctx);
    return;
  }
  const int inner = rank_ - 1;
  const int64_t n_inner = sizes_[inner];
  int64_t idx[kMaxRank] = {};
  int64_t rest = begin;
  for (int d = inner; d >= 0; --d) {
    idx[d] = rest % sizes_[d];
    rest /= sizes_[d];
  }
  std::array<int64_t, N> s = strides_[inner];
  for (int64_t pos = begin; pos < end;) {
    std::array<char*, N> p = base_;
    for (int d = 0; d < rank_; ++d) {
      for (int k = 0; k < N; ++k) p[k] += idx[d] * strides_[d][k];
    }
    const int64_t n = std::min(n_inner - idx[inner], end - pos);
    kernel(p.data(), s.data(), n, ctx);
    pos += n;
    idx[inner] += n;
    for (int d = inner; d > 0 && idx[d] == sizes_[d]; --d) {
      idx[d] = 0;
      ++idx[d - 1];
    }
  }
}

template class StridedLoop<1>;
template class StridedLoop<2>;
template class StridedLoop<3>;
template class StridedLoop<4>;

}  // namespace ember::cpu
