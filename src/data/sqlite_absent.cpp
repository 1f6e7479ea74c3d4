// The SQLite datasets of a build without SQLite (EMBER_WITH_SQLITE=OFF, or no libsqlite3-dev):
// the API stays declared, so code using it compiles; using it raises an error that says why.
#include "ember/core/error.hpp"
#include "ember/data/sqlite.hpp"

namespace ember::data {

namespace {

[[noreturn]] void fail_without_sqlite(const char* who, const std::string& path) {
  EMBER_FAIL("[", who, "] ", path, path.empty() ? "" : ": ",
             "this Ember was built without SQLite (install libsqlite3-dev, then configure and "
             "build Ember again)");
}

}  // namespace

bool sqlite_available() { return false; }

struct SqliteStore::Pool {};

SqliteStore::SqliteStore(const std::string& path, const std::string& table)
    : path_(path), table_(table) {
  fail_without_sqlite("SqliteDataset", path);
}
SqliteStore::~SqliteStore() = default;
std::optional<std::vector<uint8_t>> SqliteStore::get(size_t) const {
  fail_without_sqlite("SqliteDataset", path_);
}

struct SqliteWriter::Impl {};

SqliteWriter::SqliteWriter(const std::string& path, const std::string&) {
  fail_without_sqlite("SqliteWriter", path);
}
SqliteWriter::~SqliteWriter() = default;
void SqliteWriter::append(std::span<const uint8_t>) { fail_without_sqlite("SqliteWriter", ""); }
void SqliteWriter::commit() { fail_without_sqlite("SqliteWriter", ""); }

}  // namespace ember::data
