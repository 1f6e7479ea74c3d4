// DataLoader: batches of a Dataset, in a seeded per-epoch order, made on worker threads ahead of
// the training loop (Burn's DataLoader, PyTorch's torch.utils.data.DataLoader). A Batcher turns
// the items of a batch into tensors on the target device.
//
//   data::DataLoader loader(train, std::make_shared<data::ImageBatcher>(),
//                           data::DataLoaderConfig().batch_size(64).shuffle(42).workers(2));
//   for (uint64_t epoch = 0; epoch < 10; ++epoch)
//     for (data::ImageBatch& batch : loader.epoch(epoch)) { ... batch.images, batch.labels ... }
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/core/device.hpp"
#include "ember/core/error.hpp"
#include "ember/data/dataset.hpp"
#include "ember/tensor/background_work.hpp"

namespace ember::data {

/// Collates the items of one batch (in order) into a batch value, typically tensors on `device`.
/// Called from worker threads: it must be safe to call concurrently.
template <class T, class B>
class Batcher {
 public:
  using Input = T;
  using Output = B;
  virtual ~Batcher() = default;
  virtual B batch(std::vector<T> items, Device device) const = 0;
};

/// A Batcher from a function: make_batcher<T>([](std::vector<T> items, Device dev) { ... }).
template <class T, class B>
class FnBatcher : public Batcher<T, B> {
 public:
  explicit FnBatcher(std::function<B(std::vector<T>, Device)> fn) : fn_(std::move(fn)) {}
  B batch(std::vector<T> items, Device device) const override {
    return fn_(std::move(items), device);
  }

 private:
  std::function<B(std::vector<T>, Device)> fn_;
};
template <class T, class F, class B = std::invoke_result_t<F, std::vector<T>, Device>>
std::shared_ptr<const Batcher<T, B>> make_batcher(F fn) {
  return std::make_shared<FnBatcher<T, B>>(std::move(fn));
}

/// Options of a DataLoader (chained setters).
struct DataLoaderConfig {
  size_t batch_size_ = 1;
  bool shuffle_ = false;
  uint64_t seed_ = 0;
  bool drop_last_ = false;
  size_t shard_ = 0, shards_ = 1;  // this process's share of each epoch (shard())
  size_t workers_ = 0;             // 0: batches are made on the consuming thread, when asked for
  size_t prefetch_ = 0;            // batches made ahead of the consumer; 0: 2 per worker
  Device device_ = default_device();

  DataLoaderConfig& batch_size(size_t n) {
    batch_size_ = n;
    return *this;
  }
  /// A new order every epoch: epoch e's order is permutation(size, seed, e), whatever the workers.
  DataLoaderConfig& shuffle(uint64_t seed) {
    shuffle_ = true;
    seed_ = seed;
    return *this;
  }
  /// Data-parallel training (PyTorch's DistributedSampler): each epoch's order (shuffled or
  /// not) is split across `count` processes, process `index` taking positions index, index +
  /// count, ...; the order is first padded with its own start to a multiple of `count`, so every
  /// process gets ceil(size / count) items and as many batches. `shard(dist::rank(),
  /// dist::world_size())` under mpirun; the seed must be the same on every process.
  DataLoaderConfig& shard(size_t index, size_t count) {
    shard_ = index;
    shards_ = count;
    return *this;
  }
  DataLoaderConfig& drop_last(bool on = true) {
    drop_last_ = on;
    return *this;
  }
  DataLoaderConfig& workers(size_t n) {
    workers_ = n;
    return *this;
  }
  DataLoaderConfig& prefetch(size_t batches) {
    prefetch_ = batches;
    return *this;
  }
  DataLoaderConfig& device(Device d) {
    device_ = d;
    return *this;
  }
};

namespace detail {

/// Runs jobs 0..n-1 on `workers` threads, in claim order, never more than `capacity` jobs ahead of
/// the consumer's release(). Compiled once (src/data/dataloader.cpp). Destruction stops the
/// workers (a job already running finishes) and joins them. A job is called as job(k, worker).
class Prefetcher {
 public:
  Prefetcher(size_t num_jobs, size_t workers, size_t capacity,
             std::function<void(size_t, size_t)> job);
  ~Prefetcher();
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;
  /// Blocks until job k has run; rethrows what it threw. Raises an error at once for a job that
  /// will never run (an earlier job failed).
  void wait(size_t k);
  /// The consumer is done with job k (and every job before it): its slot may be reused.
  void release(size_t k);

 private:
  void stop_and_join();
  struct State;
  std::unique_ptr<State> state_;
};

/// The number of batches of `items` items (validates the config).
size_t num_batches(size_t items, const DataLoaderConfig& config);
/// Items per process under config.shard() (validates it): ceil(size / count).
size_t shard_items(size_t size, const DataLoaderConfig& config);
/// This process's positions of an epoch's order (DataLoaderConfig::shard).
std::vector<size_t> take_shard(const std::vector<size_t>& order, const DataLoaderConfig& config);
/// Raises "[DataLoader] an epoch can be iterated once" on a second begin().
[[noreturn]] void epoch_reiterated();
/// Marks "no worker" (the consuming thread) and "no item" (the batcher) for loader_error().
inline constexpr size_t kNone = SIZE_MAX;
/// Called in a catch block: raises an ember::Error naming the worker, the batch and the dataset
/// item (or the batcher) with the caught exception's type and message, whatever was thrown; the
/// original stays reachable through std::rethrow_if_nested.
[[noreturn]] void loader_error(size_t worker, size_t batch, size_t item);

}  // namespace detail

template <class T, class B>
class DataLoader {
 public:
  DataLoader(DatasetPtr<T> dataset, std::shared_ptr<const Batcher<T, B>> batcher,
             DataLoaderConfig config = {})
      : dataset_(std::move(dataset)), batcher_(std::move(batcher)), config_(config) {
    num_batches();  // validates the config
  }

  /// Items of one epoch for this process: the dataset's size, or its share under shard().
  size_t items() const { return detail::shard_items(dataset_->size(), config_); }
  size_t num_batches() const { return detail::num_batches(items(), config_); }
  const DataLoaderConfig& config() const { return config_; }
  const DatasetPtr<T>& dataset() const { return dataset_; }

  /// Dataset indices of epoch `e` in the order they are batched (the identity without shuffle).
  std::vector<size_t> order(uint64_t e) const {
    const size_t n = dataset_->size();
    std::vector<size_t> idx;
    if (config_.shuffle_) {
      idx = permutation(n, config_.seed_, e);
    } else {
      idx.resize(n);
      for (size_t i = 0; i < n; ++i) idx[i] = i;
    }
    return config_.shards_ > 1 ? detail::take_shard(idx, config_) : idx;
  }

  class Epoch;
  /// One pass over the data: `for (B& batch : loader.epoch(e))`. Workers start at begin() and are
  /// stopped and joined when the Epoch is destroyed, also when the loop breaks early. An exception
  /// thrown while making a batch reaches the consumer at that batch as an ember::Error naming the
  /// worker, the batch and the dataset item; the epoch then ends (its workers are joined, a
  /// further ++ reaches end()), and loader.epoch(e) starts it afresh.
  Epoch epoch(uint64_t e) const { return Epoch(*this, e); }

  class Epoch {
   public:
    Epoch(const Epoch&) = delete;  // workers point at it once begin() ran
    Epoch& operator=(const Epoch&) = delete;
    class Iterator;
    struct End {};
    Iterator begin() {
      if (started_) detail::epoch_reiterated();
      started_ = true;
      const size_t cap = capacity();
      if (config_.workers_ > 0 && count_ > 0) {
        slots_.resize(cap);
        prefetcher_ = std::make_unique<detail::Prefetcher>(
            count_, config_.workers_, cap,
            [this, cap](size_t k, size_t worker) { slots_[k % cap] = make(k, worker); });
      }
      advance();
      return Iterator(this);
    }
    End end() { return {}; }
    size_t size() const { return count_; }

    class Iterator {
     public:
      B& operator*() const { return *epoch_->current_; }
      B* operator->() const { return &*epoch_->current_; }
      Iterator& operator++() {
        epoch_->advance();
        return *this;
      }
      bool operator==(End) const { return !epoch_->current_; }

     private:
      friend class Epoch;
      explicit Iterator(Epoch* e) : epoch_(e) {}
      Epoch* epoch_;
    };

   private:
    friend class DataLoader;
    Epoch(const DataLoader& loader, uint64_t e)
        : dataset_(loader.dataset_),
          batcher_(loader.batcher_),
          config_(loader.config_),
          order_(loader.order(e)),
          count_(loader.num_batches()) {}

    size_t capacity() const {
      const size_t want = config_.prefetch_ ? config_.prefetch_ : 2 * config_.workers_;
      return want < config_.workers_ ? config_.workers_ : want;
    }
    B make(size_t k, size_t worker) const {
      const size_t begin = k * config_.batch_size_;
      const size_t end = std::min(begin + config_.batch_size_, order_.size());
      size_t item = detail::kNone;  // the dataset item being read; kNone in the batcher
      // A worker's device work (reads, transforms, uploads) waits out a DeviceGraph capture on
      // the loop's thread.
      std::optional<BackgroundWork> held;
      try {
        if (worker != detail::kNone) held.emplace();
        std::vector<T> items;
        items.reserve(end - begin);
        for (size_t i = begin; i < end; ++i) {
          item = order_[i];
          items.push_back(dataset_->at(item));
        }
        item = detail::kNone;
        return batcher_->batch(std::move(items), config_.device_);
      } catch (...) {
        detail::loader_error(worker, k, item);
      }
    }
    void advance() {
      // Before anything else: ending the epoch below would join workers that wait for the
      // capture to end.
      EMBER_CHECK(!prefetcher_ || !capture_on_this_thread(), "[DataLoader] a batch was asked ",
                  "for inside a DeviceGraph capture: the workers wait for the capture to end; ",
                  "take the batch before capturing");
      current_.reset();
      if (next_ >= count_) return;
      const size_t k = next_++;
      try {
        if (!prefetcher_) {
          current_ = make(k, detail::kNone);
          return;
        }
        prefetcher_->wait(k);
      } catch (...) {
        next_ = count_;       // the epoch ends here
        prefetcher_.reset();  // and its workers are joined
        throw;
      }
      std::optional<B>& slot = slots_[k % slots_.size()];
      current_ = std::move(slot);
      slot.reset();
      prefetcher_->release(k);
    }

    DatasetPtr<T> dataset_;
    std::shared_ptr<const Batcher<T, B>> batcher_;
    DataLoaderConfig config_;
    std::vector<size_t> order_;
    size_t count_ = 0, next_ = 0;
    bool started_ = false;
    std::optional<B> current_;
    std::vector<std::optional<B>> slots_;
    std::unique_ptr<detail::Prefetcher> prefetcher_;  // last: joined before the slots go
  };

 private:
  DatasetPtr<T> dataset_;
  std::shared_ptr<const Batcher<T, B>> batcher_;
  DataLoaderConfig config_;
};

template <class D, class Bt>
DataLoader(std::shared_ptr<D>, std::shared_ptr<Bt>, DataLoaderConfig = {})
    -> DataLoader<typename D::Item, typename Bt::Output>;

}  // namespace ember::data
