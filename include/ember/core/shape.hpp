// Shape: the sizes (or strides) of a tensor, stored inline so handles copy without allocating.
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

namespace ember {

/// Largest rank Ember handles; an op asked for more fails with a clear error.
inline constexpr int kMaxRank = 12;

class Shape {
 public:
  Shape() = default;
  // Copies touch only the dims in use: shapes are copied on every op, so this is hot.
  // A fixed-size copy compiles to a few vector moves (a loop over rank_ becomes a memcpy call).
  Shape(const Shape& other) : rank_(other.rank_) { std::memcpy(dims_, other.dims_, sizeof dims_); }
  Shape& operator=(const Shape& other) {
    if (this != &other) {
      rank_ = other.rank_;
      std::memcpy(dims_, other.dims_, sizeof dims_);
    }
    return *this;
  }
  Shape(std::initializer_list<int64_t> dims);
  explicit Shape(std::span<const int64_t> dims);
  explicit Shape(const std::vector<int64_t>& dims) : Shape(std::span<const int64_t>(dims)) {}
  /// A shape of `rank` dims, each `fill`.
  static Shape filled(int rank, int64_t fill);

  int rank() const { return rank_; }
  bool empty_rank() const { return rank_ == 0; }
  int64_t operator[](int i) const { return dims_[i]; }
  int64_t& operator[](int i) { return dims_[i]; }
  /// Dimension with Python-style negative index; fails on out of range.
  int64_t at(int i) const;

  const int64_t* begin() const { return dims_; }
  const int64_t* end() const { return dims_ + rank_; }
  int64_t* begin() { return dims_; }
  int64_t* end() { return dims_ + rank_; }
  const int64_t* data() const { return dims_; }
  std::span<const int64_t> span() const { return {dims_, static_cast<size_t>(rank_)}; }
  std::vector<int64_t> vec() const { return {begin(), end()}; }

  /// Number of elements (1 for rank 0). Unchecked (hot): every tensor's shape went through
  /// checked_numel() when the tensor or view was made.
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < rank_; ++i) n *= dims_[i];
    return n;
  }

  void push_back(int64_t d);
  void insert(int pos, int64_t d);
  void erase(int pos);
  void resize(int rank, int64_t fill = 0);

  friend bool operator==(const Shape& a, const Shape& b);

 private:
  int32_t rank_ = 0;
  int64_t dims_[kMaxRank];  // only the first rank_ are meaningful
};

using Strides = Shape;

/// "[2, 3]" as PyTorch users expect in error messages.
std::string to_string(const Shape& s);
void append(std::string& out, const Shape& s);

/// Row-major (C-contiguous) strides of a shape, in elements.
Strides contiguous_strides(const Shape& shape);
/// Channels-last strides of an [N, C, *spatial] shape (rank >= 3): dense with C innermost, then
/// the spatial dims in order, N outermost (NHWC memory for an NCHW shape, as PyTorch's
/// channels_last). Lower ranks get contiguous strides.
Strides channels_last_strides(const Shape& shape);

/// a * b and a + b on sizes and offsets; false when the result does not fit in int64.
inline bool checked_mul(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}
inline bool checked_add(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}

/// The element count of a tensor of `shape`, failing with "[op] ..." on a negative dim or when
/// the dims (zeros aside, so strides fit too) multiply past 2^63 - 1. Every shape a tensor or a
/// view is made with goes through here (or checked_nbytes) once.
int64_t checked_numel(const Shape& shape, const char* op);
/// The bytes a contiguous tensor of `shape` takes with `itemsize`-byte elements: checked_numel,
/// then failing when the size exceeds PTRDIFF_MAX (byte offsets stay in range).
size_t checked_nbytes(const Shape& shape, size_t itemsize, const char* op);

/// Wraps a possibly negative dim into [0, rank); `op` names the caller in the error.
int wrap_dim(int64_t dim, int rank, const char* op);

/// Whether `from` broadcasts to exactly `to` (NumPy rules, one direction).
bool can_broadcast_to(const Shape& from, const Shape& to);

/// NumPy broadcast of two shapes; fails naming `op` and both shapes when they cannot broadcast.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

}  // namespace ember
