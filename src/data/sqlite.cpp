// SQLite-backed datasets: pooled read-only connections and a transactional writer (the item
// codecs are in codec.cpp, built without SQLite too).
#include "ember/data/sqlite.hpp"

#include <sqlite3.h>

#include <cstring>
#include <mutex>

#include "ember/core/error.hpp"
#include "file_util.hpp"

namespace ember::data {

namespace {

void check_table_name(const std::string& table, const std::string& path) {
  bool ok = !table.empty() && !(table[0] >= '0' && table[0] <= '9');
  for (char c : table)
    ok = ok &&
         ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_');
  EMBER_CHECK(ok, "[sqlite] ", path, ": table name \"", table,
              "\" must be letters, digits and '_', not starting with a digit");
}

std::string db_error(sqlite3* db) { return db ? sqlite3_errmsg(db) : "out of memory"; }

}  // namespace

bool sqlite_available() { return true; }

// ---- reading ----

struct SqliteStore::Pool {
  struct Conn {
    sqlite3* db = nullptr;
    sqlite3_stmt* stmt = nullptr;
  };
  std::mutex mutex;
  std::vector<Conn> free;

  ~Pool() {
    for (Conn& c : free) close(c);
  }
  static void close(Conn& c) {
    sqlite3_finalize(c.stmt);
    sqlite3_close(c.db);
  }
  static Conn open(const std::string& path, const std::string& table) {
    Conn c;
    const int rc =
        sqlite3_open_v2(path.c_str(), &c.db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) {
      const std::string msg = db_error(c.db);
      sqlite3_close(c.db);
      EMBER_FAIL("[SqliteDataset] ", path, ": cannot open: ", msg);
    }
    const std::string sql = "SELECT item FROM \"" + table + "\" WHERE id = ?1";
    if (sqlite3_prepare_v2(c.db, sql.c_str(), -1, &c.stmt, nullptr) != SQLITE_OK) {
      const std::string msg = db_error(c.db);
      sqlite3_close(c.db);
      EMBER_FAIL("[SqliteDataset] ", path, ": table \"", table, "\": ", msg);
    }
    return c;
  }
};

SqliteStore::SqliteStore(const std::string& path, const std::string& table)
    : path_(path), table_(table), pool_(std::make_unique<Pool>()) {
  check_table_name(table, path);
  check_regular_file(path, "SqliteDataset");
  Pool::Conn c = Pool::open(path, table);  // checks the file and the table
  sqlite3_stmt* count = nullptr;
  const std::string sql = "SELECT COUNT(*), MIN(id), MAX(id) FROM \"" + table + "\"";
  int rc = sqlite3_prepare_v2(c.db, sql.c_str(), -1, &count, nullptr);
  if (rc == SQLITE_OK) rc = sqlite3_step(count);
  if (rc != SQLITE_ROW) {
    const std::string msg = db_error(c.db);
    sqlite3_finalize(count);
    Pool::close(c);
    EMBER_FAIL("[SqliteDataset] ", path, ": table \"", table, "\": ", msg);
  }
  const int64_t n = sqlite3_column_int64(count, 0);
  const int64_t lo = sqlite3_column_int64(count, 1), hi = sqlite3_column_int64(count, 2);
  sqlite3_finalize(count);
  pool_->free.push_back(c);
  EMBER_CHECK(n == 0 || (lo == 0 && hi == n - 1), "[SqliteDataset] ", path, ": table \"", table,
              "\": ids must be 0..", n - 1, ", found ", lo, "..", hi);
  size_ = static_cast<size_t>(n);
}

SqliteStore::~SqliteStore() = default;

std::optional<std::vector<uint8_t>> SqliteStore::get(size_t index) const {
  if (index >= size_) return std::nullopt;
  Pool::Conn c;
  {
    std::lock_guard lock(pool_->mutex);
    if (!pool_->free.empty()) {
      c = pool_->free.back();
      pool_->free.pop_back();
    }
  }
  if (!c.db) c = Pool::open(path_, table_);
  sqlite3_bind_int64(c.stmt, 1, static_cast<sqlite3_int64>(index));
  const int rc = sqlite3_step(c.stmt);
  std::optional<std::vector<uint8_t>> blob;
  std::string error;
  if (rc == SQLITE_ROW) {
    const auto* p = static_cast<const uint8_t*>(sqlite3_column_blob(c.stmt, 0));
    const int n = sqlite3_column_bytes(c.stmt, 0);
    blob.emplace(p, p + n);
  } else {
    error = rc == SQLITE_DONE ? "no row" : db_error(c.db);
  }
  sqlite3_reset(c.stmt);
  {
    std::lock_guard lock(pool_->mutex);
    pool_->free.push_back(c);
  }
  EMBER_CHECK(blob.has_value(), "[SqliteDataset] ", path_, ": table \"", table_, "\", id ", index,
              ": ", error);
  return blob;
}

// ---- writing ----

struct SqliteWriter::Impl {
  std::string path, table;
  sqlite3* db = nullptr;
  sqlite3_stmt* insert = nullptr;
  bool open_tx = false;

  void exec(const std::string& sql) {
    char* msg = nullptr;
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg) != SQLITE_OK) {
      const std::string text = msg ? msg : db_error(db);
      sqlite3_free(msg);
      EMBER_FAIL("[SqliteWriter] ", path, ": ", text);
    }
  }
  ~Impl() {
    sqlite3_finalize(insert);
    if (open_tx) sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(db);
  }
};

SqliteWriter::SqliteWriter(const std::string& path, const std::string& table)
    : impl_(std::make_unique<Impl>()) {
  check_table_name(table, path);
  check_regular_file(path, "SqliteWriter");
  Impl& w = *impl_;
  w.path = path;
  w.table = table;
  if (sqlite3_open_v2(path.c_str(), &w.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK)
    EMBER_FAIL("[SqliteWriter] ", path, ": cannot open: ", db_error(w.db));
  w.exec("BEGIN IMMEDIATE");
  w.open_tx = true;
  w.exec("DROP TABLE IF EXISTS \"" + table + "\"");
  w.exec("CREATE TABLE \"" + table + "\" (id INTEGER PRIMARY KEY, item BLOB NOT NULL)");
  const std::string sql = "INSERT INTO \"" + table + "\" (id, item) VALUES (?1, ?2)";
  if (sqlite3_prepare_v2(w.db, sql.c_str(), -1, &w.insert, nullptr) != SQLITE_OK)
    EMBER_FAIL("[SqliteWriter] ", path, ": ", db_error(w.db));
}

SqliteWriter::~SqliteWriter() = default;

void SqliteWriter::append(std::span<const uint8_t> blob) {
  Impl& w = *impl_;
  EMBER_CHECK(w.open_tx, "[SqliteWriter] ", w.path, ": append after commit");
  EMBER_CHECK(blob.size() <= 1'000'000'000u, "[SqliteWriter] ", w.path, ": item of ", blob.size(),
              " bytes is over SQLite's blob limit");
  sqlite3_bind_int64(w.insert, 1, static_cast<sqlite3_int64>(count_));
  // An empty span may have a null data pointer, which SQLite would store as NULL.
  static const uint8_t kEmpty = 0;
  sqlite3_bind_blob(w.insert, 2, blob.empty() ? &kEmpty : blob.data(),
                    static_cast<int>(blob.size()), SQLITE_STATIC);
  const int rc = sqlite3_step(w.insert);
  sqlite3_reset(w.insert);
  sqlite3_clear_bindings(w.insert);
  EMBER_CHECK(rc == SQLITE_DONE, "[SqliteWriter] ", w.path, ": insert of item ", count_, ": ",
              db_error(w.db));
  ++count_;
}

void SqliteWriter::commit() {
  Impl& w = *impl_;
  EMBER_CHECK(w.open_tx, "[SqliteWriter] ", w.path, ": already committed");
  w.exec("COMMIT");
  w.open_tx = false;
}

}  // namespace ember::data
