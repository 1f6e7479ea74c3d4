#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "ember/core/error.hpp"
#include "file.hpp"

namespace ember::io::detail {
namespace {

std::string errno_text(int err) { return std::strerror(err); }

class MappedBytes final : public Bytes {
 public:
  MappedBytes(void* base, size_t size) : base_(base) {
    data_ = static_cast<const unsigned char*>(base);
    size_ = size;
  }
  ~MappedBytes() override {
    if (base_) munmap(base_, size_);
  }

 private:
  void* base_;
};

void close_quietly(int fd) {
  if (fd >= 0) ::close(fd);
}

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "neither a regular file nor a directory";
}

std::string dir_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// The temp files this process is writing now: a process that reuses a dead writer's pid (as
// the same command in a fresh container does) must not take its own for stale ones.
std::mutex g_in_flight_mutex;
std::set<std::string> g_in_flight;

// By file name: the pid, stamp and counter in it are unique within the process.
std::string file_name(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

void set_in_flight(const std::string& temp_path, bool on) {
  const std::lock_guard<std::mutex> lock(g_in_flight_mutex);
  if (on) {
    g_in_flight.insert(file_name(temp_path));
  } else {
    g_in_flight.erase(file_name(temp_path));
  }
}

bool all_digits(std::string_view s) {
  return !s.empty() && s.size() <= 19 && s.find_first_not_of("0123456789") == std::string::npos;
}

// ".<target>.tmp.<pid>.<stamp>.<counter>", AtomicFile's temp name: the target and the pid, or
// nothing for other names.
std::optional<std::pair<std::string, pid_t>> parse_temp_name(std::string_view name) {
  if (name.size() < 2 || name[0] != '.') return std::nullopt;
  std::string_view fields[3];
  for (auto& f : fields) {  // counter, stamp, pid: from the end
    const size_t dot = name.rfind('.');
    if (dot == std::string_view::npos) return std::nullopt;
    f = name.substr(dot + 1);
    name = name.substr(0, dot);
    if (!all_digits(f)) return std::nullopt;
  }
  if (!name.ends_with(".tmp") || name.size() <= 5) return std::nullopt;
  const long long pid = std::strtoll(std::string(fields[2]).c_str(), nullptr, 10);
  if (pid <= 0 || pid > INT_MAX) return std::nullopt;
  return std::make_pair(std::string(name.substr(1, name.size() - 5)), static_cast<pid_t>(pid));
}

bool process_alive(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

}  // namespace

std::vector<std::string> remove_stale_temp_files(
    const std::string& dir, const std::function<bool(const std::string&)>& is_target) {
  std::vector<std::string> removed;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return removed;  // no directory: nothing left behind
  const std::string prefix = dir == "/" ? "" : dir;
  std::vector<std::string> stale;
  while (const dirent* e = ::readdir(d)) {
    const auto parsed = parse_temp_name(e->d_name);
    if (!parsed || !is_target(parsed->first)) continue;
    const std::string path = prefix + "/" + e->d_name;
    if (parsed->second == getpid()) {
      const std::lock_guard<std::mutex> lock(g_in_flight_mutex);
      if (g_in_flight.count(e->d_name)) continue;
    } else if (process_alive(parsed->second)) {
      continue;  // another process may be writing it now
    }
    stale.push_back(path);
  }
  ::closedir(d);
  for (const std::string& path : stale) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::unlink(path.c_str()) == 0) {
      removed.push_back(path);
    }
  }
  return removed;
}

std::shared_ptr<const Bytes> map_file(const std::string& path, const char* what) {
  // A FIFO blocks open() until a writer comes, a device never ends: refuse both before opening,
  // and open with O_NONBLOCK in case the path was swapped for one since (fstat checks again).
  struct stat st {};
  EMBER_CHECK(::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode), what, " '", path,
              "' is not a regular file (it is ", file_kind(st.st_mode), ")");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  EMBER_CHECK(fd >= 0, what, " cannot open '", path, "': ", errno_text(errno));
  const bool stat_ok = fstat(fd, &st) == 0;
  if (!stat_ok || !S_ISREG(st.st_mode)) {
    const int err = stat_ok ? 0 : errno;
    close_quietly(fd);
    EMBER_FAIL(what, " '", path, "' is not a readable regular file",
               stat_ok ? " (it is " + std::string(file_kind(st.st_mode)) + ")" : std::string(),
               err != 0 ? ": " + errno_text(err) : std::string());
  }
  const auto size = static_cast<size_t>(st.st_size);
  if (size == 0) {  // mmap refuses length 0; the parser reports the short file
    close_quietly(fd);
    return std::make_shared<BufferBytes>(std::vector<unsigned char>{});
  }
  // Private and writable, as torch.load(mmap=True) maps: tensors loaded zero-copy can be updated
  // in place (a fused optimizer step, copy_into); a written page becomes this process's own copy
  // and the file never changes. NORESERVE: no swap is committed for pages never written.
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, fd, 0);
  if (base != MAP_FAILED) {
    close_quietly(fd);  // the mapping keeps the file open
    return std::make_shared<MappedBytes>(base, size);
  }
  // Strict overcommit (vm.overcommit_memory=2) charges a writable private mapping in full, and a
  // large file may not fit: read it into memory instead, which is as writable.
  const int map_err = errno;
  std::vector<unsigned char> buffer;
  try {
    buffer.resize(size);
  } catch (const std::bad_alloc&) {
    close_quietly(fd);
    EMBER_FAIL(what, " cannot mmap '", path, "' (", size, " bytes): ", errno_text(map_err),
               ", nor hold it in memory");
  }
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd, buffer.data() + done, size - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : 0;
      close_quietly(fd);
      EMBER_FAIL(what, " cannot read '", path, "' (", size, " bytes, ", done, " read)",
                 err ? ": " + errno_text(err) : std::string(": it shrank while being read"));
    }
    done += static_cast<size_t>(n);
  }
  close_quietly(fd);
  return std::make_shared<BufferBytes>(std::move(buffer));
}

AtomicFile::AtomicFile(const std::string& path, const char* what) : path_(path), what_(what) {
  // Replace the file a symlink points to, as a plain open() for writing would, not the link.
  struct stat lst {};
  if (lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
    char resolved[PATH_MAX];
    if (realpath(path.c_str(), resolved)) path_ = resolved;
  }
  EMBER_CHECK(!path_.empty() && path_.back() != '/', what_, " '", path, "' is not a file path");
  const std::string dir = dir_of(path_);
  const std::string base = path_.substr(path_.find_last_of('/') + 1);

  // A unique name in the same directory: rename() is atomic only within one filesystem.
  static std::atomic<uint64_t> counter{0};
  const auto stamp =
      static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  int err = 0;
  for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
    temp_path_ = (dir == "/" ? "" : dir) + "/." + base + ".tmp." + std::to_string(getpid()) + "." +
                 std::to_string(stamp % 1000000007) + "." + std::to_string(counter++);
    fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    err = errno;
    if (fd_ < 0 && err != EEXIST) break;
  }
  EMBER_CHECK(fd_ >= 0, what_, " cannot create a temp file in '", dir, "' to write '", path,
              "': ", errno_text(err));
  set_in_flight(temp_path_, true);
  // An overwritten file keeps its permissions, as it would when written in place.
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0 && S_ISREG(st.st_mode)) fchmod(fd_, st.st_mode & 07777);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) {
    close_quietly(fd_);
    ::unlink(temp_path_.c_str());
  }
  if (!temp_path_.empty()) set_in_flight(temp_path_, false);
}

void AtomicFile::write(const void* data, size_t nbytes) {
  EMBER_CHECK(fd_ >= 0, what_, " write to '", path_, "' after it was committed");
  const auto* p = static_cast<const unsigned char*>(data);
  while (nbytes > 0) {
    // Writes of more than ~2 GiB are split by the kernel anyway; keep each call bounded.
    const size_t chunk = nbytes < (size_t{1} << 30) ? nbytes : (size_t{1} << 30);
    const ssize_t n = ::write(fd_, p, chunk);
    if (n < 0 && errno == EINTR) continue;
    EMBER_CHECK(n > 0, what_, " writing '", path_,
                "' failed: ", n < 0 ? errno_text(errno) : std::string("no progress"),
                "; the previous file, if any, is unchanged");
    p += n;
    nbytes -= static_cast<size_t>(n);
  }
}

void AtomicFile::commit() {
  EMBER_CHECK(fd_ >= 0, what_, " '", path_, "' was already committed");
  if (fsync(fd_) != 0) {
    EMBER_FAIL(what_, " fsync of '", temp_path_, "' failed: ", errno_text(errno),
               "; the previous file, if any, is unchanged");
  }
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(temp_path_.c_str());
    EMBER_FAIL(what_, " closing '", temp_path_, "' failed: ", errno_text(err));
  }
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp_path_.c_str());
    EMBER_FAIL(what_, " cannot rename '", temp_path_, "' to '", path_, "': ", errno_text(err),
               "; the previous file, if any, is unchanged");
  }
  // The rename is durable only once the directory entry is on disk. Some filesystems cannot
  // fsync a directory (EINVAL): nothing more can be done there.
  const std::string dir = dir_of(path_);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    const int rc = fsync(dfd);
    const int err = errno;
    close_quietly(dfd);
    EMBER_CHECK(rc == 0 || err == EINVAL || err == ENOTSUP, what_, " '", path_,
                "' was written, but the fsync of its directory '", dir,
                "' failed: ", errno_text(err));
  }
}

}  // namespace ember::io::detail

namespace ember::io {

std::string non_regular_kind(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return "";
  return detail::file_kind(st.st_mode);
}

}  // namespace ember::io
