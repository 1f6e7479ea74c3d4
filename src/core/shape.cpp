#include "ember/core/shape.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "ember/core/error.hpp"

namespace ember {

Shape::Shape(std::initializer_list<int64_t> dims) : Shape(std::span<const int64_t>(dims)) {}

Shape::Shape(std::span<const int64_t> dims) {
  EMBER_CHECK(dims.size() <= static_cast<size_t>(kMaxRank), "[shape] rank ", dims.size(),
              " exceeds Ember's maximum rank ", kMaxRank);
  rank_ = static_cast<int32_t>(dims.size());
  std::copy(dims.begin(), dims.end(), dims_);
}

Shape Shape::filled(int rank, int64_t fill) {
  Shape s;
  s.resize(rank, fill);
  return s;
}

int64_t Shape::at(int i) const { return dims_[wrap_dim(i, rank_, "size")]; }

void Shape::push_back(int64_t d) {
  EMBER_CHECK(rank_ < kMaxRank, "[shape] rank ", rank_ + 1, " exceeds Ember's maximum rank ",
              kMaxRank);
  dims_[rank_++] = d;
}

void Shape::insert(int pos, int64_t d) {
  EMBER_CHECK(rank_ < kMaxRank, "[shape] rank ", rank_ + 1, " exceeds Ember's maximum rank ",
              kMaxRank);
  for (int i = rank_; i > pos; --i) dims_[i] = dims_[i - 1];
  dims_[pos] = d;
  ++rank_;
}

void Shape::erase(int pos) {
  for (int i = pos; i + 1 < rank_; ++i) dims_[i] = dims_[i + 1];
  --rank_;
}

void Shape::resize(int rank, int64_t fill) {
  EMBER_CHECK(rank >= 0 && rank <= kMaxRank, "[shape] rank ", rank,
              " exceeds Ember's maximum rank ", kMaxRank);
  for (int i = rank_; i < rank; ++i) dims_[i] = fill;
  rank_ = rank;
}

bool operator==(const Shape& a, const Shape& b) {
  return a.rank_ == b.rank_ && std::equal(a.begin(), a.end(), b.begin());
}

void append(std::string& out, const Shape& s) {
  out.push_back('[');
  for (int i = 0; i < s.rank(); ++i) {
    if (i) out.append(", ");
    detail::append(out, static_cast<long long>(s[i]));
  }
  out.push_back(']');
}

std::string to_string(const Shape& s) {
  std::string out;
  append(out, s);
  return out;
}

Strides contiguous_strides(const Shape& shape) {
  Strides st = shape;  // same rank; every entry is overwritten
  int64_t acc = 1;
  for (int i = shape.rank() - 1; i >= 0; --i) {
    st[i] = acc;
    // The last product is never used as a stride: only the dims before it must fit.
    if (i > 0 && !checked_mul(acc, std::max<int64_t>(shape[i], 1), &acc)) {
      checked_numel(shape, "strides");  // fails, naming the shape
    }
  }
  return st;
}

Strides channels_last_strides(const Shape& shape) {
  if (shape.rank() < 3) return contiguous_strides(shape);
  Strides st = shape;
  int64_t acc = 1;
  const auto next = [&](int i) {
    st[i] = acc;
    if (!checked_mul(acc, std::max<int64_t>(shape[i], 1), &acc)) checked_numel(shape, "strides");
  };
  next(1);
  for (int i = shape.rank() - 1; i >= 2; --i) next(i);
  st[0] = acc;
  return st;
}

int64_t checked_numel(const Shape& shape, const char* op) {
  int64_t nonzero = 1;
  bool has_zero = false, overflow = false;
  for (int64_t d : shape) {
    EMBER_CHECK(d >= 0, "[", op, "] negative dimension ", d, " in shape ", shape);
    if (d == 0) {
      has_zero = true;
    } else {
      overflow |= !checked_mul(nonzero, d, &nonzero);
    }
  }
  if (overflow) [[unlikely]] {
    EMBER_CHECK(has_zero, "[", op, "] shape ", shape, " has more than 2^63 - 1 elements");
    EMBER_FAIL("[", op, "] shape ", shape,
               " is too large: its nonzero dimensions multiply past 2^63 - 1, so its strides would"
               " overflow");
  }
  return has_zero ? 0 : nonzero;
}

size_t checked_nbytes(const Shape& shape, size_t itemsize, const char* op) {
  const int64_t n = checked_numel(shape, op);
  int64_t bytes = 0;
  const bool fits = checked_mul(n, static_cast<int64_t>(itemsize), &bytes) &&
                    static_cast<uint64_t>(bytes) <= static_cast<uint64_t>(PTRDIFF_MAX);
  EMBER_CHECK(fits, "[", op, "] shape ", shape, " of ", itemsize, "-byte elements needs more than ",
              static_cast<long long>(PTRDIFF_MAX), " bytes, the most this machine can address");
  return static_cast<size_t>(bytes);
}

int wrap_dim(int64_t dim, int rank, const char* op) {
  const int64_t lo = rank == 0 ? -1 : -rank;
  const int64_t hi = rank == 0 ? 0 : rank - 1;
  EMBER_CHECK(dim >= lo && dim <= hi, "[", op, "] dimension ", dim,
              " out of range for a tensor of rank ", rank, " (expected ", lo, " to ", hi, ")");
  return static_cast<int>(dim < 0 ? dim + (rank == 0 ? 1 : rank) : dim);
}

bool can_broadcast_to(const Shape& from, const Shape& to) {
  if (from.rank() > to.rank()) return false;
  const int lead = to.rank() - from.rank();
  for (int i = 0; i < from.rank(); ++i) {
    if (from[i] != 1 && from[i] != to[lead + i]) return false;
  }
  return true;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const int rank = std::max(a.rank(), b.rank());
  Shape out = Shape::filled(rank, 1);
  for (int i = 0; i < rank; ++i) {
    const int ia = a.rank() - rank + i, ib = b.rank() - rank + i;
    const int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    EMBER_CHECK(da == db || da == 1 || db == 1, "[", op, "] shapes cannot be broadcast: ", a,
                " and ", b, " (dimension ", i, ": ", da, " vs ", db, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace ember
