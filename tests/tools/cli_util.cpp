#include "cli_util.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <ember/data/idx.hpp>

namespace ember::cli_testing {
namespace fs = std::filesystem;

namespace {

// execv's argv: "ember" then the arguments.
std::vector<char*> argv_of(const std::vector<std::string>& args, std::vector<std::string>& keep,
                           const std::vector<std::string>& launcher = {}) {
  keep = args;
  keep.insert(keep.begin(), EMBER_CLI_PATH);
  keep.insert(keep.begin(), launcher.begin(), launcher.end());
  std::vector<char*> argv;
  for (std::string& a : keep) argv.push_back(a.data());
  argv.push_back(nullptr);
  return argv;
}

int status_of(int raw) {
  if (WIFEXITED(raw)) return WEXITSTATUS(raw);
  if (WIFSIGNALED(raw)) return 128 + WTERMSIG(raw);
  return -1;
}

}  // namespace

Result ember(const std::vector<std::string>& args, Stdout mode, double timeout_s,
             const std::vector<std::string>& launcher) {
  const std::string dir = fresh_dir("run");
  const std::string out_path = dir + "/stdout", err_path = dir + "/stderr";
  int pipe_fds[2] = {-1, -1};
  if (mode == Stdout::closed_pipe && pipe(pipe_fds) != 0) return {};
  std::vector<std::string> keep;
  std::vector<char*> argv = argv_of(args, keep, launcher);
  const pid_t pid = fork();
  if (pid == 0) {
    int out = -1;
    if (mode == Stdout::capture) out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (mode == Stdout::dev_full) out = open("/dev/full", O_WRONLY);
    if (mode == Stdout::closed_pipe) {
      close(pipe_fds[0]);
      out = pipe_fds[1];
    }
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, 1);
    dup2(err, 2);
    execv(argv[0], argv.data());
    _exit(127);
  }
  if (mode == Stdout::closed_pipe) {
    // Read one byte, as `| head -c1` does, and close the pipe.
    close(pipe_fds[1]);
    char byte = 0;
    [[maybe_unused]] const ssize_t n = read(pipe_fds[0], &byte, 1);
    close(pipe_fds[0]);
  }
  Result r;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int raw = 0;
  while (waitpid(pid, &raw, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &raw, 0);
      r.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  r.status = status_of(raw);
  if (mode == Stdout::capture) r.out = read_text(out_path);
  r.err = read_text(err_path);
  return r;
}

pid_t start_ember(const std::vector<std::string>& args, const std::string& log_dir,
                  const std::vector<std::string>& launcher) {
  const std::string out_path = log_dir + "/stdout", err_path = log_dir + "/stderr";
  std::vector<std::string> keep;
  std::vector<char*> argv = argv_of(args, keep, launcher);
  const pid_t pid = fork();
  if (pid == 0) {
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(out, 1);
    dup2(err, 2);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

int wait_for(pid_t pid) {
  int raw = 0;
  waitpid(pid, &raw, 0);
  return status_of(raw);
}

std::string fresh_dir(const std::string& name) {
  // One root per test process, removed when it exits.
  static const fs::path root = [] {
    auto r = fs::temp_directory_path() / ("ember_cli_test_" + std::to_string(getpid()));
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(fs::temp_directory_path() / ("ember_cli_test_" + std::to_string(getpid())),
                     ec);
    });
    return r;
  }();
  static int counter = 0;
  const auto dir = root / (name + "_" + std::to_string(counter++));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

void write_fashion(const std::string& dir, size_t train, size_t test, int bad_label) {
  fs::create_directories(dir);
  auto write = [&](const std::string& split, size_t n) {
    data::IdxArray images, labels;
    images.dims = {static_cast<int64_t>(n), 28, 28};
    images.data.resize(n * 28 * 28);
    uint32_t state = 12345;
    for (uint8_t& p : images.data) {
      state = state * 1664525u + 1013904223u;
      p = static_cast<uint8_t>(state >> 24);
    }
    labels.dims = {static_cast<int64_t>(n)};
    for (size_t i = 0; i < n; ++i) labels.data.push_back(static_cast<uint8_t>(i % 10));
    if (split == "t10k" && bad_label >= 0 && n > 3)
      labels.data[3] = static_cast<uint8_t>(bad_label);
    data::write_idx(dir + "/" + split + "-images-idx3-ubyte", images);
    data::write_idx(dir + "/" + split + "-labels-idx1-ubyte", labels);
  };
  write("train", train);
  write("t10k", test);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::vector<std::string> temp_files(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.find(".tmp.") != std::string::npos) out.push_back(name);
  }
  return out;
}

}  // namespace ember::cli_testing
