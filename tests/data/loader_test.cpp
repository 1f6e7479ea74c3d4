// DataLoader: batch sizes, drop_last, per-epoch shuffles that do not depend on the worker count,
// errors from workers, early break; and the image batcher.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <numeric>
#include <thread>

#include "ember/core/error.hpp"
#include "ember/data/dataloader.hpp"
#include "ember/data/image.hpp"

using namespace ember;
using namespace ember::data;

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
      EXPECT_STREQ(e.what(), "item 17 is broken");
    }
    EXPECT_EQ(delivered, 3u) << workers << " workers";  // batches 0..2 came before batch 3
  }
}

TEST(DataLoader, BatcherErrorPropagates) {
  auto failing = make_batcher<int>([](std::vector<int> items, Device) -> int {
    if (items[0] >= 6) EMBER_FAIL("[test] batch from ", items[0], " refused");
    return items[0];
  });
  DataLoader loader(range(12), failing, DataLoaderConfig().batch_size(3).workers(2));
  std::vector<int> got;
  EXPECT_THROW(
      {
        for (int first : loader.epoch(0)) got.push_back(first);
      },
      Error);
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
