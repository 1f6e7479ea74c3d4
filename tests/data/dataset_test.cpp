// Dataset wrappers: in-memory, mapped, shuffled, partial / split, concatenated, windowed.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "ember/core/error.hpp"
#include "ember/data/dataset.hpp"

using namespace ember;
using namespace ember::data;

namespace {

DatasetPtr<int> range(int n, int start = 0) {
  std::vector<int> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), start);
  return in_memory(v);
}

std::vector<int> all(const Dataset<int>& ds) {
  std::vector<int> out;
  for (size_t i = 0; i < ds.size(); ++i) out.push_back(ds.at(i));
  return out;
}

bool is_permutation_of_range(std::vector<size_t> p) {
  std::sort(p.begin(), p.end());
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] != i) return false;
  return true;
}

}  // namespace

TEST(Dataset, InMemoryGetAtAndBounds) {
  auto ds = range(3, 10);
  EXPECT_EQ(ds->size(), 3u);
  EXPECT_FALSE(ds->empty());
  EXPECT_EQ(ds->get(2), 12);
  EXPECT_EQ(ds->get(3), std::nullopt);
  EXPECT_EQ(ds->at(0), 10);
  try {
    ds->at(7);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "[Dataset::at] index 7 is out of range for a dataset of 3 items");
  }
  auto copy = InMemoryDataset<int>::from(*ds);
  EXPECT_EQ(copy->items(), (std::vector<int>{10, 11, 12}));
}

TEST(Dataset, MappedChangesTypeAndKeepsSize) {
  auto ds = map(range(4), [](int x) { return std::to_string(x * x); });
  static_assert(std::is_same_v<decltype(ds), DatasetPtr<std::string>>);
  EXPECT_EQ(ds->size(), 4u);
  EXPECT_EQ(ds->at(3), "9");
  EXPECT_EQ(ds->get(4), std::nullopt);
}

TEST(Dataset, PermutationIsSeededAndPlatformFixed) {
  const auto a = permutation(1000, 7), b = permutation(1000, 7), c = permutation(1000, 8);
  EXPECT_TRUE(is_permutation_of_range(a));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, permutation(1000, 7, 1));  // another stream (epoch)
  EXPECT_TRUE(permutation(0, 1).empty());
  EXPECT_EQ(permutation(1, 1), std::vector<size_t>{0});
  // Fixed values: a change of the algorithm changes every seeded experiment, so it must be seen.
  EXPECT_EQ(permutation(8, 42), (std::vector<size_t>{0, 4, 3, 7, 5, 6, 1, 2}));
}

TEST(Dataset, ShuffledIsASeededPermutation) {
  auto src = range(50);
  auto s1 = shuffled(src, 3), s2 = shuffled(src, 3), s3 = shuffled(src, 4);
  std::vector<int> v1 = all(*s1);
  EXPECT_EQ(v1, all(*s2));
  EXPECT_NE(v1, all(*s3));
  EXPECT_NE(v1, all(*src));
  std::sort(v1.begin(), v1.end());
  EXPECT_EQ(v1, all(*src));
  EXPECT_EQ(s1->get(50), std::nullopt);
}

TEST(Dataset, PartialAndSplit) {
  auto src = range(10);
  auto p = partial(src, 2, 5);
  EXPECT_EQ(all(*p), (std::vector<int>{2, 3, 4}));
  EXPECT_EQ(p->get(3), std::nullopt);
  EXPECT_THROW(partial(src, 5, 11), Error);
  EXPECT_THROW(partial(src, 6, 5), Error);
  EXPECT_EQ(partial(src, 10, 10)->size(), 0u);

  auto [train, valid] = split(src, 0.8);
  EXPECT_EQ(all(*train), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(all(*valid), (std::vector<int>{8, 9}));
  auto [all_of_it, none] = split(src, 1.0);
  EXPECT_EQ(all_of_it->size(), 10u);
  EXPECT_EQ(none->size(), 0u);
  EXPECT_EQ(split_point(7, 0.5), 4u);  // rounds half away from zero
  try {
    split(src, 1.5);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "[split] fraction must be in [0, 1], got 1.5");
  }
  // A random split: shuffle, then split; the parts are disjoint and cover everything.
  auto [a, b] = split(shuffled(src, 1), 0.5);
  std::vector<int> both = all(*a), rest = all(*b);
  both.insert(both.end(), rest.begin(), rest.end());
  std::sort(both.begin(), both.end());
  EXPECT_EQ(both, all(*src));
}

TEST(Dataset, Concat) {
  auto ds = concat<int>({range(2), range(0), range(3, 100)});
  EXPECT_EQ(ds->size(), 5u);
  EXPECT_EQ(all(*ds), (std::vector<int>{0, 1, 100, 101, 102}));
  EXPECT_EQ(ds->get(5), std::nullopt);
  EXPECT_EQ(concat<int>({})->size(), 0u);
}

TEST(Dataset, Windows) {
  auto w = windows(range(5), 3);
  ASSERT_EQ(w->size(), 3u);
  EXPECT_EQ(w->at(0), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(w->at(2), (std::vector<int>{2, 3, 4}));
  EXPECT_EQ(w->get(3), std::nullopt);
  auto strided = windows(range(7), 3, 2);  // [0..3), [2..5), [4..7)
  ASSERT_EQ(strided->size(), 3u);
  EXPECT_EQ(strided->at(2), (std::vector<int>{4, 5, 6}));
  EXPECT_EQ(windows(range(2), 3)->size(), 0u);
  EXPECT_EQ(windows(range(3), 3)->size(), 1u);
  try {
    windows(range(3), 0);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "[WindowsDataset] window must be at least 1, got 0");
  }
}

TEST(Dataset, WrappersCompose) {
  // Burn-style pipeline: shuffle, take a part, map, window.
  auto ds = windows(map(partial(shuffled(range(20), 9), 0, 10), [](int x) { return x * 2; }), 2);
  EXPECT_EQ(ds->size(), 9u);
  for (size_t i = 0; i < ds->size(); ++i) {
    const std::vector<int> w = ds->at(i);
    EXPECT_EQ(w[0] % 2, 0);
    EXPECT_EQ(w[1], ds->at(i + 1 < ds->size() ? i + 1 : i)[i + 1 < ds->size() ? 0 : 1]);
  }
}
