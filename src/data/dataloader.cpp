// The DataLoader's worker pool: jobs (batches) claimed in order by worker threads, at most
// `capacity` ahead of the consumer, results handed over one by one in batch order.
#include "ember/data/dataloader.hpp"

#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <new>
#include <thread>
#include <typeinfo>

#if defined(__GLIBCXX__) || defined(_LIBCPP_VERSION)
#include <cxxabi.h>
#define EMBER_HAVE_CXXABI 1
#endif

#include "ember/core/error.hpp"

namespace ember::data::detail {

struct Prefetcher::State {
  std::function<void(size_t, size_t)> job;
  size_t num_jobs = 0, capacity = 0;
  std::mutex mutex;
  std::condition_variable work_cv, done_cv;
  size_t next_job = 0;       // the next job a worker claims
  size_t released = 0;       // jobs below this were taken by the consumer
  size_t failed = SIZE_MAX;  // the first job that threw: nothing after it is started
  bool stop = false;
  std::vector<char> done;
  std::vector<std::exception_ptr> errors;  // by slot, k % capacity
  std::vector<std::thread> threads;

  void work(size_t worker) {
    std::unique_lock lock(mutex);
    for (;;) {
      work_cv.wait(lock, [&] {
        return stop || next_job >= num_jobs || next_job > failed || next_job < released + capacity;
      });
      if (stop || next_job >= num_jobs || next_job > failed) return;
      const size_t k = next_job++;
      lock.unlock();
      std::exception_ptr error;
      try {
        job(k, worker);
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      if (error) {
        errors[k % capacity] = error;
        if (k < failed) failed = k;
      }
      done[k] = 1;
      done_cv.notify_all();
    }
  }
};

Prefetcher::Prefetcher(size_t num_jobs, size_t workers, size_t capacity,
                       std::function<void(size_t, size_t)> job)
    : state_(std::make_unique<State>()) {
  EMBER_CHECK(workers >= 1 && capacity >= workers,
              "[DataLoader] prefetcher needs at least one worker and a slot per worker, got ",
              workers, " workers and ", capacity, " slots");
  State& s = *state_;
  s.job = std::move(job);
  s.num_jobs = num_jobs;
  s.capacity = capacity;
  s.done.assign(num_jobs, 0);
  s.errors.resize(capacity);
  const size_t n = workers < num_jobs ? workers : num_jobs;
  s.threads.reserve(n);
  try {
    for (size_t i = 0; i < n; ++i) s.threads.emplace_back([&s, i] { s.work(i); });
  } catch (const std::exception& e) {
    stop_and_join();  // the threads already started; a joinable std::thread left would terminate
    EMBER_FAIL("[DataLoader] cannot start worker ", s.threads.size(), " of ", n, ": ", e.what());
  }
}

void Prefetcher::stop_and_join() {
  {
    std::lock_guard lock(state_->mutex);
    state_->stop = true;
  }
  state_->work_cv.notify_all();
  for (std::thread& t : state_->threads)
    if (t.joinable()) t.join();
}

Prefetcher::~Prefetcher() { stop_and_join(); }

void Prefetcher::wait(size_t k) {
  State& s = *state_;
  std::unique_lock lock(s.mutex);
  // A job past a failed one that no worker claimed will never run: waiting for it would hang.
  const auto never = [&] { return k > s.failed && k >= s.next_job; };
  s.done_cv.wait(lock, [&] { return s.done[k] != 0 || never(); });
  EMBER_CHECK(s.done[k] != 0, "[DataLoader] batch ", k, " will not be made: batch ", s.failed,
              " failed before it");
  if (std::exception_ptr error = s.errors[k % s.capacity]) std::rethrow_exception(error);
}

void Prefetcher::release(size_t k) {
  {
    std::lock_guard lock(state_->mutex);
    state_->released = k + 1;
  }
  state_->work_cv.notify_all();
}

size_t num_batches(size_t items, const DataLoaderConfig& config) {
  EMBER_CHECK(config.batch_size_ >= 1, "[DataLoader] batch_size must be at least 1, got ",
              config.batch_size_);
  return config.drop_last_ ? items / config.batch_size_
                           : (items + config.batch_size_ - 1) / config.batch_size_;
}

size_t shard_items(size_t size, const DataLoaderConfig& config) {
  EMBER_CHECK(config.shards_ >= 1 && config.shard_ < config.shards_, "[DataLoader] shard ",
              config.shard_, " of ", config.shards_, ": the index must be below the count");
  EMBER_CHECK(config.shards_ == 1 || size > 0,
              "[DataLoader] an empty dataset cannot be split "
              "into ",
              config.shards_, " shards");
  return (size + config.shards_ - 1) / config.shards_;
}

std::vector<size_t> take_shard(const std::vector<size_t>& order, const DataLoaderConfig& config) {
  const size_t per = shard_items(order.size(), config);
  std::vector<size_t> mine(per);
  // Position k * count + index of the order padded with its own start (DistributedSampler).
  for (size_t k = 0; k < per; ++k)
    mine[k] = order[(k * config.shards_ + config.shard_) % order.size()];
  return mine;
}

namespace {

// The type of the exception being handled, demangled where the C++ ABI allows.
std::string current_type_name() {
#ifdef EMBER_HAVE_CXXABI
  if (const std::type_info* type = abi::__cxa_current_exception_type()) {
    int status = 0;
    char* name = abi::__cxa_demangle(type->name(), nullptr, nullptr, &status);
    std::string out = status == 0 && name ? name : type->name();
    std::free(name);
    return out;
  }
#endif
  return "an exception of unknown type";
}

}  // namespace

void loader_error(size_t worker, size_t batch, size_t item) {
  std::string where = "[DataLoader] ";
  if (worker != kNone) where += "worker " + std::to_string(worker) + ", ";
  where += "batch " + std::to_string(batch) + ", ";
  where += item != kNone ? "dataset item " + std::to_string(item) : std::string("batcher");
  std::string what;
  try {
    throw;
  } catch (const std::exception& e) {
    what = ": caught " + current_type_name() + ": " + e.what();
  } catch (...) {
    what = ": caught " + current_type_name() + " (not derived from std::exception: no message)";
  }
  std::throw_with_nested(Error(where + what));
}

void epoch_reiterated() {
  EMBER_FAIL(
      "[DataLoader] an epoch can be iterated once; call loader.epoch(e) again for another "
      "pass");
}

}  // namespace ember::data::detail
