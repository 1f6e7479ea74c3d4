// DataLoader: batch sizes, drop_last, per-epoch shuffles that do not depend on the worker count,
// errors from workers, early break; and the image batcher.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <new>
#include <numeric>
#include <regex>
#include <stdexcept>
#include <thread>

#include "ember/core/error.hpp"
#include "ember/data/dataloader.hpp"
#include "ember/data/image.hpp"

#include "data_test_util.hpp"

using namespace ember;
using namespace ember::data;
using ember::data::testing::error_of;

namespace {

DatasetPtr<int> range(int n) {
  std::vector<int> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return in_memory(v);
}

// A batch as plain values plus a tensor made on the batch's device, so that the worker path
// that builds tensors is exercised too.
struct IntBatch {
  std::vector<int> values;
  Tensor<1, Int> tensor;
};

std::shared_ptr<const Batcher<int, IntBatch>> int_batcher() {
  return make_batcher<int>([](std::vector<int> items, Device dev) {
    std::vector<int64_t> wide(items.begin(), items.end());
    return IntBatch{std::move(items), Tensor<1, Int>::from_vector(wide, dev)};
  });
}

// The threads of this process, to see that a failed epoch leaves none behind (0 where there is no
// /proc/self/task: the check then passes trivially).
size_t thread_count() {
  std::error_code ec;
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task", ec)) n += e.exists();
  return n;
}

// thread_count() once it has come down to `want`, waiting up to two seconds: a joined thread can
// stay listed in /proc for a moment after pthread_join returns (the kernel clears its tid before
// the task is reaped), which a sanitizer's slowdown makes visible.
size_t thread_count_settled(size_t want) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  size_t n = thread_count();
  while (n > want && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    n = thread_count();
  }
  return n;
}

// Runs an epoch to its error and returns the message ("<no error>" without one).
std::string epoch_error(const DataLoader<int, std::vector<int>>& loader, size_t* delivered) {
  try {
    for (std::vector<int>& b : loader.epoch(0)) {
      (void)b;
      ++*delivered;
    }
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

std::vector<std::vector<int>> run_epoch(const DataLoader<int, IntBatch>& loader, uint64_t e) {
  std::vector<std::vector<int>> out;
  for (IntBatch& b : loader.epoch(e)) {
    EXPECT_EQ(b.tensor.to_vector<int64_t>(),
              std::vector<int64_t>(b.values.begin(), b.values.end()));
    out.push_back(b.values);
  }
  return out;
}

}  // namespace

TEST(DataLoader, BatchesInOrderWithoutShuffle) {
  DataLoader loader(range(10), int_batcher(), DataLoaderConfig().batch_size(4));
  EXPECT_EQ(loader.num_batches(), 3u);
  const auto batches = run_epoch(loader, 0);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0], (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(batches[2], (std::vector<int>{8, 9}));
  EXPECT_EQ(run_epoch(loader, 5), batches);  // no shuffle: every epoch the same
}

TEST(DataLoader, DropLast) {
  for (size_t workers : {0u, 2u}) {
    DataLoader loader(range(10), int_batcher(),
                      DataLoaderConfig().batch_size(4).drop_last().workers(workers));
    EXPECT_EQ(loader.num_batches(), 2u);
    const auto batches = run_epoch(loader, 0);
    ASSERT_EQ(batches.size(), 2u);
    EXPECT_EQ(batches[1], (std::vector<int>{4, 5, 6, 7}));
  }
  DataLoader small(range(3), int_batcher(), DataLoaderConfig().batch_size(4).drop_last());
  EXPECT_EQ(small.num_batches(), 0u);
  EXPECT_TRUE(run_epoch(small, 0).empty());
  DataLoader empty(range(0), int_batcher(), DataLoaderConfig().batch_size(4).workers(2));
  EXPECT_TRUE(run_epoch(empty, 0).empty());
}

// shard(): the processes' shares of an epoch's order, padded with its start (DistributedSampler):
// together they are the whole order, each has as many batches, and the batch k of every process
// together is the batch k of one process with the batch size times the process count.
TEST(DataLoader, ShardsSplitEachEpochsOrderAcrossProcesses) {
  const DataLoader whole(range(10), int_batcher(), DataLoaderConfig().batch_size(6).shuffle(3));
  std::vector<std::vector<std::vector<int>>> parts;
  for (size_t rank = 0; rank < 2; ++rank) {
    DataLoader mine(range(10), int_batcher(),
                    DataLoaderConfig().batch_size(3).shuffle(3).shard(rank, 2).workers(rank));
    EXPECT_EQ(mine.items(), 5u);
    EXPECT_EQ(mine.num_batches(), 2u);
    parts.push_back(run_epoch(mine, 1));
  }
  const auto batches = run_epoch(whole, 1);
  ASSERT_EQ(batches.size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    std::vector<int> both = parts[0][k];
    both.insert(both.end(), parts[1][k].begin(), parts[1][k].end());
    std::vector<int> want = batches[k];
    std::sort(both.begin(), both.end());
    std::sort(want.begin(), want.end());
    EXPECT_EQ(both, want) << "batch " << k;
  }
  // 7 items in 3 shards: 3 each, the order's first two items taken again.
  std::vector<int> seen;
  for (size_t rank = 0; rank < 3; ++rank) {
    DataLoader mine(range(7), int_batcher(), DataLoaderConfig().batch_size(8).shard(rank, 3));
    for (const auto& b : run_epoch(mine, 0)) seen.insert(seen.end(), b.begin(), b.end());
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<int>{0, 0, 1, 1, 2, 3, 4, 5, 6}));
  try {
    DataLoader bad(range(3), int_batcher(), DataLoaderConfig().shard(2, 2));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "[DataLoader] shard 2 of 2: the index must be below the count");
  }
}

TEST(DataLoader, BadBatchSize) {
  try {
    DataLoader loader(range(3), int_batcher(), DataLoaderConfig().batch_size(0));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "[DataLoader] batch_size must be at least 1, got 0");
  }
}

TEST(DataLoader, SameSeedSameBatchesWhateverTheWorkers) {
  const auto make = [](size_t workers, uint64_t seed) {
    return DataLoader(range(103), int_batcher(),
                      DataLoaderConfig().batch_size(8).shuffle(seed).workers(workers));
  };
  const auto ref0 = run_epoch(make(0, 42), 0), ref1 = run_epoch(make(0, 42), 1);
  ASSERT_EQ(ref0.size(), 13u);
  EXPECT_NE(ref0, ref1);                       // a new order each epoch
  EXPECT_NE(ref0, run_epoch(make(0, 43), 0));  // and for another seed
  std::vector<int> seen;
  for (const auto& b : ref0) seen.insert(seen.end(), b.begin(), b.end());
  std::sort(seen.begin(), seen.end());
  std::vector<int> expect(103);
  std::iota(expect.begin(), expect.end(), 0);
  EXPECT_EQ(seen, expect);  // every item once
  for (size_t workers : {1u, 2u, 4u}) {
    for (size_t prefetch : {0u, 1u, 7u}) {
      auto loader = DataLoader(
          range(103), int_batcher(),
          DataLoaderConfig().batch_size(8).shuffle(42).workers(workers).prefetch(prefetch));
      EXPECT_EQ(run_epoch(loader, 0), ref0) << workers << " workers, prefetch " << prefetch;
      EXPECT_EQ(run_epoch(loader, 1), ref1) << workers << " workers, prefetch " << prefetch;
    }
  }
  // The order of epoch e depends on (seed, e) only: epoch 1 first gives the same epoch 1.
  auto fresh = make(2, 42);
  EXPECT_EQ(run_epoch(fresh, 1), ref1);
}

TEST(DataLoader, WorkerErrorReachesTheConsumerAtItsBatch) {
  auto bad = map(range(40), [](int x) {
    if (x == 17) throw Error("item 17 is broken");
    return x;
  });
  for (size_t workers : {0u, 1u, 3u}) {
    DataLoader loader(bad, int_batcher(), DataLoaderConfig().batch_size(5).workers(workers));
    size_t delivered = 0;
    try {
      for (IntBatch& b : loader.epoch(0)) {
        (void)b;
        ++delivered;
      }
      FAIL() << "no error";
    } catch (const Error& e) {
      const std::string worker = workers == 0 ? "" : workers == 1 ? "worker 0, " : "worker ";
      EXPECT_EQ(std::string(e.what()).rfind("[DataLoader] " + worker, 0), 0u) << e.what();
      EXPECT_NE(std::string(e.what()).find(
                    "batch 3, dataset item 17: caught ember::Error: item 17 is broken"),
                std::string::npos)
          << e.what();
    }
    EXPECT_EQ(delivered, 3u) << workers << " workers";  // batches 0..2 came before batch 3
  }
}

// Whatever a dataset throws (an ember::Error, a std::runtime_error, a std::bad_alloc, an int, a
// type of its own) reaches the consumer as an ember::Error naming the worker, the batch and the
// dataset item, like PyTorch's "Caught ValueError in DataLoader worker process 2".
struct NotAnException {};
TEST(DataLoader, AnythingThrownBecomesAnErrorNamingWorkerBatchAndItem) {
  const std::vector<std::pair<std::function<void()>, std::string>> throws = {
      {[] { throw Error("[test] item 17 is broken"); },
       "caught ember::Error: [test] item 17 is broken"},
      {[] { throw std::runtime_error("disk on fire"); }, "caught std::runtime_error: disk on fire"},
      {[] { throw std::bad_alloc(); }, "caught std::bad_alloc: std::bad_alloc"},
      {[] { throw 42; }, "caught int (not derived from std::exception: no message)"},
      {[] { throw NotAnException{}; },
       "caught NotAnException (not derived from std::exception: no message)"},
  };
  const auto batcher = make_batcher<int>([](std::vector<int> items, Device) { return items; });
  for (const auto& [thrower, caught] : throws) {
    auto bad = map(range(40), [thrower = thrower](int x) {
      if (x == 17) thrower();
      return x;
    });
    for (size_t workers : {0u, 1u, 3u}) {
      // Shuffled: the dataset item (17) is not the position in the epoch's order.
      DataLoader loader(bad, batcher, DataLoaderConfig().batch_size(5).shuffle(7).workers(workers));
      const auto order = loader.order(0);
      const size_t batch =
          static_cast<size_t>(std::find(order.begin(), order.end(), 17) - order.begin()) / 5;
      size_t delivered = 0;
      const std::string e = epoch_error(loader, &delivered);
      const std::string where = workers == 0 ? "" : workers == 1 ? "worker 0, " : "worker [0-2], ";
      EXPECT_TRUE(std::regex_match(e, std::regex("\\[DataLoader\\] " + where + "batch " +
                                                 std::to_string(batch) + ", dataset item 17: .*")))
          << e;
      EXPECT_EQ(e.substr(e.size() - std::min(e.size(), caught.size())), caught);
      EXPECT_EQ(delivered, batch) << e;
    }
  }
  // The original is nested in the error.
  auto bad = map(range(4), [](int x) -> int { throw std::out_of_range("x" + std::to_string(x)); });
  DataLoader loader(bad, batcher, DataLoaderConfig().workers(1));
  try {
    for (auto& b : loader.epoch(0)) (void)b;
  } catch (const Error& e) {
    EXPECT_THROW(std::rethrow_if_nested(e), std::out_of_range);
  }
}

// After an error the epoch is over: its workers are joined at once (no thread is left, nothing
// hangs), a further ++ reaches the end, and a new epoch starts afresh.
TEST(DataLoader, AfterAnErrorTheEpochEndsAndANewOneWorks) {
  std::atomic<bool> broken{true};
  auto flaky = map(range(100), [&broken](int x) {
    if (x == 42 && broken) throw std::runtime_error("not yet");
    return x;
  });
  const auto batcher = make_batcher<int>([](std::vector<int> items, Device) { return items; });
  for (size_t workers : {0u, 2u, 4u}) {
    broken = true;
    DataLoader loader(flaky, batcher,
                      DataLoaderConfig().batch_size(4).workers(workers).prefetch(8));
    const size_t threads = thread_count();
    auto epoch = loader.epoch(0);
    auto it = epoch.begin();
    size_t seen = 0;
    EXPECT_THROW(
        {
          for (; !(it == epoch.end()); ++it) ++seen;
        },
        Error);
    EXPECT_EQ(seen, 10u);  // batches 0..9 came before batch 10 (items 40..43)
    // Workers joined although `epoch` lives on: at most the threads before (the count taken
    // then may include the last pass's workers, joined but not yet gone from /proc).
    EXPECT_LE(thread_count_settled(threads), threads);
    ++it;
    EXPECT_TRUE(it == epoch.end());  // and the epoch is over
    broken = false;
    int count = 0;
    for (auto& b : loader.epoch(0)) count += static_cast<int>(b.size());
    EXPECT_EQ(count, 100) << workers << " workers";
  }
}

TEST(DataLoader, BatcherErrorPropagates) {
  auto failing = make_batcher<int>([](std::vector<int> items, Device) -> int {
    if (items[0] >= 6) EMBER_FAIL("[test] batch from ", items[0], " refused");
    return items[0];
  });
  DataLoader loader(range(12), failing, DataLoaderConfig().batch_size(3).workers(2));
  std::vector<int> got;
  try {
    for (int first : loader.epoch(0)) got.push_back(first);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(std::regex_match(
        e.what(), std::regex("\\[DataLoader\\] worker [01], batch 2, batcher: caught "
                             "ember::Error: \\[test\\] batch from 6 refused")))
        << e.what();
  }
  EXPECT_EQ(got, (std::vector<int>{0, 3}));
}

TEST(DataLoader, EarlyBreakStopsWorkers) {
  std::atomic<int> made{0};
  auto slow = map(range(1000), [&made](int x) {
    ++made;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    return x;
  });
  DataLoader loader(slow, int_batcher(), DataLoaderConfig().batch_size(10).workers(2).prefetch(4));
  int batches = 0;
  for (IntBatch& b : loader.epoch(0)) {
    EXPECT_EQ(b.values.size(), 10u);
    if (++batches == 2) break;
  }
  // Epoch destroyed: workers joined. At most consumed + prefetch (+ one running per worker).
  const int after = made.load();
  EXPECT_LE(after, (2 + 4 + 2) * 10);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(made.load(), after);  // nothing runs any more
  // The loader is reusable after a break.
  int count = 0;
  for (IntBatch& b : loader.epoch(1)) count += static_cast<int>(b.values.size());
  EXPECT_EQ(count, 1000);
}

TEST(DataLoader, AnEpochIsIteratedOnce) {
  DataLoader loader(range(4), int_batcher(), DataLoaderConfig().batch_size(2));
  auto epoch = loader.epoch(0);
  EXPECT_EQ(epoch.size(), 2u);
  for (IntBatch& b : epoch) (void)b;
  EXPECT_THROW(epoch.begin(), Error);
}

TEST(ImageBatcher, ScalesNormalisesAndStacks) {
  std::vector<ImageItem> items(2);
  for (int i = 0; i < 2; ++i) {
    ImageItem& im = items[static_cast<size_t>(i)];
    im.channels = 1;
    im.height = 2;
    im.width = 3;
    im.pixels = {0, 51, 102, 153, 204, 255};
    im.pixels[0] = static_cast<uint8_t>(i);
    im.label = 7 + i;
  }
  ImageBatch b = ImageBatcher().batch(items, Device::cpu());
  EXPECT_EQ(b.images.dims(), (std::array<int64_t, 4>{2, 1, 2, 3}));
  EXPECT_EQ(b.images.dtype(), DType::f32);
  EXPECT_EQ(b.labels.dtype(), DType::i64);
  EXPECT_EQ(b.labels.to_vector<int64_t>(), (std::vector<int64_t>{7, 8}));
  const auto v = b.images.to_vector<float>();
  EXPECT_FLOAT_EQ(v[1], 0.2f);
  EXPECT_FLOAT_EQ(v[5], 1.0f);
  EXPECT_FLOAT_EQ(v[6], 1.0f / 255.0f);

  ImageBatch n =
      ImageBatcher(ImageBatcherConfig().normalize({0.5f}, {0.25f})).batch(items, Device::cpu());
  EXPECT_FLOAT_EQ(n.images.to_vector<float>()[5], 2.0f);  // (1 - 0.5) / 0.25

  items[1].width = 2;
  items[1].pixels.resize(4);
  try {
    ImageBatcher().batch(items, Device::cpu());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "[ImageBatcher] item 1 is 1 x 2 x 2, item 0 is 1 x 2 x 3 (resize in a mapped "
                 "dataset first)");
  }
  EXPECT_THROW(ImageBatcher(ImageBatcherConfig().normalize({0.5f}, {0.0f})), Error);
  EXPECT_THROW(ImageBatcher(ImageBatcherConfig().normalize({0.5f, 0.4f}, {0.2f})), Error);
}

// Item fields are plain values (a decoded SQLite blob, a user's struct): shapes whose sizes
// overflow, negative ones, and a batch whose later items are empty are errors before anything is
// allocated from them (item 0's 2^40 x 2^40 used to wrap to a small, wrong allocation).
TEST(ImageBatcher, HostileShapesAreRefusedBeforeAllocating) {
  ImageItem big;
  big.channels = 1;
  big.height = big.width = int64_t{1} << 40;
  EXPECT_EQ(error_of([&] { ImageBatcher().batch({big}, Device::cpu()); }),
            "[ImageBatcher] item 0 has a bad shape 1 x 1099511627776 x 1099511627776 for a batch "
            "of 1");
  ImageItem neg = big;
  neg.height = -4;
  neg.width = -4;
  EXPECT_NE(error_of([&] { ImageBatcher().batch({neg}, Device::cpu()); }).find("bad shape"),
            std::string::npos);
  // Item 0 holds 1 MB, the other 999 claim the same shape but hold nothing: refused before the
  // 4 GB float buffer is allocated.
  ImageItem real;
  real.channels = 1;
  real.height = real.width = 1024;
  real.pixels.assign(1 << 20, 0);
  ImageItem shell = real;
  shell.pixels.clear();
  std::vector<ImageItem> items(1000, shell);
  items[0] = real;
  EXPECT_EQ(error_of([&] { ImageBatcher().batch(items, Device::cpu()); }),
            "[ImageBatcher] item 1 has 0 pixel values for 1 x 1024 x 1024");
}

TEST(ImageBatcher, InALoaderWithWorkers) {
  std::vector<ImageItem> items(10);
  for (size_t i = 0; i < items.size(); ++i) {
    items[i].channels = 3;
    items[i].height = items[i].width = 4;
    items[i].pixels.assign(48, static_cast<uint8_t>(i * 10));
    items[i].label = static_cast<int64_t>(i);
  }
  DataLoader loader(in_memory(items), std::make_shared<ImageBatcher>(),
                    DataLoaderConfig().batch_size(4).workers(2).shuffle(1).device(Device::cpu()));
  int64_t total = 0;
  for (ImageBatch& b : loader.epoch(0)) {
    EXPECT_TRUE(b.images.device().is_cpu());
    const auto labels = b.labels.to_vector<int64_t>();
    const auto px = b.images.to_vector<float>();
    for (size_t i = 0; i < labels.size(); ++i)
      EXPECT_FLOAT_EQ(px[i * 48], static_cast<float>(labels[i] * 10) / 255.0f);
    total += b.images.size(0);
  }
  EXPECT_EQ(total, 10);
}
