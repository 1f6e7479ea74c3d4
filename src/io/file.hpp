// OS-dependent file access for the io layer, behind small classes: a read-only mapping of a whole
// file, and an atomic replace (temp file, fsync, rename, fsync of the directory). POSIX only; the
// embedded build does not build the io layer.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ember {
class Storage;
}

namespace ember::io::detail {

/// Bytes that tensors may share: a file mapping or an owned buffer.
class Bytes {
 public:
  virtual ~Bytes() = default;
  const unsigned char* data() const { return data_; }
  size_t size() const { return size_; }

 protected:
  const unsigned char* data_ = nullptr;
  size_t size_ = 0;
};

/// A heap buffer (parse_safetensors).
class BufferBytes final : public Bytes {
 public:
  explicit BufferBytes(std::vector<unsigned char> buffer) : buffer_(std::move(buffer)) {
    data_ = buffer_.data();
    size_ = buffer_.size();
  }

 private:
  std::vector<unsigned char> buffer_;
};

/// Bytes someone else owns and keeps alive (view_safetensors): an embedded file, a caller's buffer.
class ViewBytes final : public Bytes {
 public:
  ViewBytes(const unsigned char* data, size_t size) {
    data_ = data;
    size_ = size;
  }
};

/// A Cpu storage over [at, at + nbytes) of `bytes`, which it keeps alive: a tensor made on it
/// shares the file's memory (read-only: ops never write to their inputs).
std::shared_ptr<Storage> storage_over(std::shared_ptr<const Bytes> bytes, const unsigned char* at,
                                      size_t nbytes);

/// A whole file mapped read-only (PROT_READ, MAP_PRIVATE); unmapped when destroyed. `what` names
/// the caller in errors ("[safetensors]").
std::shared_ptr<const Bytes> map_file(const std::string& path, const char* what);

/// Deletes the temp files of AtomicFile writes that never finished in `dir`: names
/// ".<target>.tmp.<pid>.<stamp>.<counter>" with is_target(target) true, whose writing process is
/// gone (or is this one, and the write is not in progress). Returns the paths removed.
std::vector<std::string> remove_stale_temp_files(
    const std::string& dir, const std::function<bool(const std::string&)>& is_target);

/// Writes a file atomically: bytes go to a temp file beside `path`; commit() fsyncs it, renames it
/// over `path` and fsyncs the directory. Destroyed without commit() (an error midway), it removes
/// the temp file, so the old file at `path` stays as it was.
class AtomicFile {
 public:
  AtomicFile(const std::string& path, const char* what);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t nbytes);
  void commit();
  const std::string& temp_path() const { return temp_path_; }

 private:
  std::string path_;  // the target (a symlink's target when path is a symlink)
  std::string temp_path_;
  const char* what_;
  int fd_ = -1;
};

}  // namespace ember::io::detail
