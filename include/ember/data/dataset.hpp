// Datasets (Burn's `Dataset` trait, PyTorch's map-style `Dataset`): random access to plain C++
// items by index, and wrappers that compose them (mapped, shuffled, partial, concatenated,
// windowed). Tensors are made later, a batch at a time, by a Batcher (dataloader.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

namespace ember::data {

namespace detail {
/// Raises "[<what>] index <index> is out of range for a dataset of <size> items".
[[noreturn]] void index_error(const char* what, size_t index, size_t size);
/// Raises unless begin <= end <= size.
void check_range(const char* what, size_t begin, size_t end, size_t size);
/// Raises "[<what>] <name> must be at least 1, got 0" when value is 0.
void check_positive(const char* what, const char* name, size_t value);
}  // namespace detail

/// A seeded permutation of 0..n-1 (Fisher-Yates over Philox draws): the same (n, seed, stream)
/// give the same order on every platform. The DataLoader uses stream = epoch.
std::vector<size_t> permutation(size_t n, uint64_t seed, uint64_t stream = 0);

/// Random access to `size()` items. `get(i)` returns std::nullopt exactly when i >= size(); a
/// failure to produce an item that exists (a corrupt file) is an ember::Error. `at(i)` returns
/// the item or raises an ember::Error naming the index and the size. `get` must be safe to call
/// from several threads at once (DataLoader workers do).
template <class T>
class Dataset {
 public:
  using Item = T;
  virtual ~Dataset() = default;
  virtual std::optional<T> get(size_t index) const = 0;
  virtual size_t size() const = 0;

  bool empty() const { return size() == 0; }
  T at(size_t index) const {
    std::optional<T> item = get(index);
    if (!item) detail::index_error("Dataset::at", index, size());
    return std::move(*item);
  }
};

/// Datasets are shared, immutable and handed around by pointer; wrappers hold their sources.
template <class T>
using DatasetPtr = std::shared_ptr<const Dataset<T>>;

/// Items held in a vector.
template <class T>
class InMemoryDataset : public Dataset<T> {
 public:
  explicit InMemoryDataset(std::vector<T> items) : items_(std::move(items)) {}
  /// Reads every item of `source` into memory.
  static std::shared_ptr<InMemoryDataset> from(const Dataset<T>& source) {
    std::vector<T> items;
    items.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) items.push_back(source.at(i));
    return std::make_shared<InMemoryDataset>(std::move(items));
  }
  std::optional<T> get(size_t index) const override {
    if (index >= items_.size()) return std::nullopt;
    return items_[index];
  }
  size_t size() const override { return items_.size(); }
  const std::vector<T>& items() const { return items_; }

 private:
  std::vector<T> items_;
};

/// Applies `fn` to each item as it is read (Burn's MapperDataset, a torchvision transform).
template <class T, class U>
class MappedDataset : public Dataset<U> {
 public:
  MappedDataset(DatasetPtr<T> source, std::function<U(T)> fn)
      : source_(std::move(source)), fn_(std::move(fn)) {}
  std::optional<U> get(size_t index) const override {
    std::optional<T> item = source_->get(index);
    if (!item) return std::nullopt;
    return fn_(std::move(*item));
  }
  size_t size() const override { return source_->size(); }

 private:
  DatasetPtr<T> source_;
  std::function<U(T)> fn_;
};

/// The items of `source` in a fixed order drawn from `seed` (permutation(size, seed)).
template <class T>
class ShuffledDataset : public Dataset<T> {
 public:
  ShuffledDataset(DatasetPtr<T> source, uint64_t seed)
      : source_(std::move(source)), order_(permutation(source_->size(), seed)) {}
  std::optional<T> get(size_t index) const override {
    if (index >= order_.size()) return std::nullopt;
    return source_->get(order_[index]);
  }
  size_t size() const override { return order_.size(); }

 private:
  DatasetPtr<T> source_;
  std::vector<size_t> order_;
};

/// Items [begin, end) of `source`.
template <class T>
class PartialDataset : public Dataset<T> {
 public:
  PartialDataset(DatasetPtr<T> source, size_t begin, size_t end)
      : source_(std::move(source)), begin_(begin), end_(end) {
    detail::check_range("PartialDataset", begin, end, source_->size());
  }
  std::optional<T> get(size_t index) const override {
    if (index >= end_ - begin_) return std::nullopt;
    return source_->get(begin_ + index);
  }
  size_t size() const override { return end_ - begin_; }

 private:
  DatasetPtr<T> source_;
  size_t begin_, end_;
};

/// The items of several datasets one after the other.
template <class T>
class ConcatDataset : public Dataset<T> {
 public:
  explicit ConcatDataset(std::vector<DatasetPtr<T>> parts) : parts_(std::move(parts)) {
    size_t total = 0;
    for (const DatasetPtr<T>& p : parts_) ends_.push_back(total += p->size());
  }
  std::optional<T> get(size_t index) const override {
    size_t start = 0;
    for (size_t k = 0; k < parts_.size(); ++k) {  // few parts: a linear scan
      if (index < ends_[k]) return parts_[k]->get(index - start);
      start = ends_[k];
    }
    return std::nullopt;
  }
  size_t size() const override { return ends_.empty() ? 0 : ends_.back(); }

 private:
  std::vector<DatasetPtr<T>> parts_;
  std::vector<size_t> ends_;
};

/// Sliding windows of `window` consecutive items, starting every `stride` items (Burn's
/// WindowsDataset): item i is source[i * stride, i * stride + window). Windows that would run past
/// the end are left out.
template <class T>
class WindowsDataset : public Dataset<std::vector<T>> {
 public:
  WindowsDataset(DatasetPtr<T> source, size_t window, size_t stride = 1)
      : source_(std::move(source)), window_(window), stride_(stride) {
    detail::check_positive("WindowsDataset", "window", window);
    detail::check_positive("WindowsDataset", "stride", stride);
  }
  std::optional<std::vector<T>> get(size_t index) const override {
    if (index >= size()) return std::nullopt;
    std::vector<T> items;
    items.reserve(window_);
    for (size_t k = 0; k < window_; ++k) items.push_back(source_->at(index * stride_ + k));
    return items;
  }
  size_t size() const override {
    const size_t n = source_->size();
    return n < window_ ? 0 : (n - window_) / stride_ + 1;
  }

 private:
  DatasetPtr<T> source_;
  size_t window_, stride_;
};

// Helpers that build the wrappers and deduce their types.

template <class T>
DatasetPtr<T> in_memory(std::vector<T> items) {
  return std::make_shared<InMemoryDataset<T>>(std::move(items));
}
template <class T, class F, class U = std::invoke_result_t<F, T>>
DatasetPtr<U> map(DatasetPtr<T> source, F fn) {
  return std::make_shared<MappedDataset<T, U>>(std::move(source), std::function<U(T)>(fn));
}
template <class T>
DatasetPtr<T> shuffled(DatasetPtr<T> source, uint64_t seed) {
  return std::make_shared<ShuffledDataset<T>>(std::move(source), seed);
}
template <class T>
DatasetPtr<T> partial(DatasetPtr<T> source, size_t begin, size_t end) {
  return std::make_shared<PartialDataset<T>>(std::move(source), begin, end);
}
template <class T>
DatasetPtr<T> concat(std::vector<DatasetPtr<T>> parts) {
  return std::make_shared<ConcatDataset<T>>(std::move(parts));
}
template <class T>
DatasetPtr<std::vector<T>> windows(DatasetPtr<T> source, size_t window, size_t stride = 1) {
  return std::make_shared<WindowsDataset<T>>(std::move(source), window, stride);
}

/// Number of items in the first part of split(n, fraction): round(n * fraction). Fails unless
/// 0 <= fraction <= 1.
size_t split_point(size_t n, double fraction);

/// Splits `source` in order into [0, round(n * fraction)) and the rest (train / valid). Shuffle
/// first (`split(shuffled(ds, seed), 0.9)`) for a random split.
template <class T>
std::pair<DatasetPtr<T>, DatasetPtr<T>> split(DatasetPtr<T> source, double fraction) {
  const size_t n = source->size(), k = split_point(n, fraction);
  return {partial(source, 0, k), partial(source, k, n)};
}

}  // namespace ember::data
