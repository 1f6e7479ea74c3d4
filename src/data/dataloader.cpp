// The DataLoader's worker pool: jobs (batches) claimed in order by worker threads, at most
// `capacity` ahead of the consumer, results handed over one by one in batch order.
#include "ember/data/dataloader.hpp"

#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

#include "ember/core/error.hpp"

namespace ember::data::detail {

struct Prefetcher::State {
  std::function<void(size_t)> job;
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

  void work() {
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
        job(k);
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
                       std::function<void(size_t)> job)
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
  for (size_t i = 0; i < n; ++i) s.threads.emplace_back([&s] { s.work(); });
}

Prefetcher::~Prefetcher() {
  {
    std::lock_guard lock(state_->mutex);
    state_->stop = true;
  }
  state_->work_cv.notify_all();
  for (std::thread& t : state_->threads) t.join();
}

void Prefetcher::wait(size_t k) {
  State& s = *state_;
  std::unique_lock lock(s.mutex);
  s.done_cv.wait(lock, [&] { return s.done[k] != 0; });
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

void epoch_reiterated() {
  EMBER_FAIL(
      "[DataLoader] an epoch can be iterated once; call loader.epoch(e) again for another "
      "pass");
}

}  // namespace ember::data::detail
