// A dataset stored in SQLite (Burn's SqliteDataset): one row per item, the item encoded as a blob,
// read on demand, so the data may be larger than memory. Tables are
//   CREATE TABLE <name> (id INTEGER PRIMARY KEY, item BLOB NOT NULL)   -- ids 0..N-1
// and a file may hold several (e.g. "train" and "test"). SQLite is optional: in an Ember built
// without it (no libsqlite3-dev, or EMBER_WITH_SQLITE=OFF) this API is still declared, the codecs
// work, and opening or writing a table raises ember::Error ("built without SQLite").
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ember/data/csv.hpp"
#include "ember/data/dataset.hpp"
#include "ember/data/image.hpp"

namespace ember::data {

/// Whether this Ember was built with SQLite; without it SqliteDataset and SqliteWriter raise.
bool sqlite_available();

/// How an item type becomes a blob and back; specialise it for your own items:
///   static void encode(const T& item, std::vector<uint8_t>& out);   // appends to out
///   static T decode(std::span<const uint8_t> blob);                 // ember::Error when bad
/// Ember provides ImageItem and TabularItem (little-endian, versioned by a leading tag byte).
template <class T>
struct Codec;

template <>
struct Codec<ImageItem> {
  static void encode(const ImageItem& item, std::vector<uint8_t>& out);
  static ImageItem decode(std::span<const uint8_t> blob);
};
template <>
struct Codec<TabularItem> {
  static void encode(const TabularItem& item, std::vector<uint8_t>& out);
  static TabularItem decode(std::span<const uint8_t> blob);
};

/// The blobs of one table, read on demand; safe to use from several threads (one read-only
/// connection per concurrent reader, pooled).
class SqliteStore {
 public:
  SqliteStore(const std::string& path, const std::string& table);
  ~SqliteStore();
  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;
  size_t size() const { return size_; }
  std::optional<std::vector<uint8_t>> get(size_t index) const;
  const std::string& path() const { return path_; }
  const std::string& table() const { return table_; }

 private:
  struct Pool;
  std::string path_, table_;
  size_t size_ = 0;
  std::unique_ptr<Pool> pool_;
};

template <class T>
class SqliteDataset : public Dataset<T> {
 public:
  static std::shared_ptr<const SqliteDataset> open(const std::string& path,
                                                   const std::string& table = "items") {
    return std::make_shared<SqliteDataset>(path, table);
  }
  SqliteDataset(const std::string& path, const std::string& table) : store_(path, table) {}
  std::optional<T> get(size_t index) const override {
    std::optional<std::vector<uint8_t>> blob = store_.get(index);
    if (!blob) return std::nullopt;
    return Codec<T>::decode(*blob);
  }
  size_t size() const override { return store_.size(); }

 private:
  SqliteStore store_;
};

/// Writes items into a table, replacing a table of that name, in one transaction: nothing is
/// visible until commit(), and a writer destroyed before commit() rolls everything back.
class SqliteWriter {
 public:
  SqliteWriter(const std::string& path, const std::string& table = "items");
  ~SqliteWriter();
  SqliteWriter(const SqliteWriter&) = delete;
  SqliteWriter& operator=(const SqliteWriter&) = delete;
  void append(std::span<const uint8_t> blob);
  void commit();
  size_t count() const { return count_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  size_t count_ = 0;
};

/// Writes every item of `source` into `table` of the SQLite file at `path`.
template <class T>
void write_sqlite(const Dataset<T>& source, const std::string& path,
                  const std::string& table = "items") {
  SqliteWriter writer(path, table);
  std::vector<uint8_t> blob;
  for (size_t i = 0; i < source.size(); ++i) {
    blob.clear();
    Codec<T>::encode(source.at(i), blob);
    writer.append(blob);
  }
  writer.commit();
}

}  // namespace ember::data
