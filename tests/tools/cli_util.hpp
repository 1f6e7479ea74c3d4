// Runs the built `ember` binary as a user would, for the CLI tests: arguments in, exit status,
// stdout and stderr out, with stdout sent to a file, /dev/full or a pipe closed after one byte.
// Also a tiny Fashion-MNIST directory for training and evaluation runs of a second or less.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ember::cli_testing {

enum class Stdout { capture, dev_full, closed_pipe };

struct Result {
  int status = -1;         // the exit status; 128 + N when killed by signal N
  bool timed_out = false;  // killed after the timeout: a hang
  std::string out, err;
};

/// Runs `ember args...`, killing it after `timeout_s` seconds (a hang fails, not blocks, a test).
/// `launcher` goes before the binary: {"/usr/bin/mpiexec", "-n", "2"}.
Result ember(const std::vector<std::string>& args, Stdout mode = Stdout::capture,
             double timeout_s = 60, const std::vector<std::string>& launcher = {});

/// Starts `ember args...` in the background with stdout and stderr to files in `log_dir`.
pid_t start_ember(const std::vector<std::string>& args, const std::string& log_dir,
                  const std::vector<std::string>& launcher = {});
/// Waits for a started process: its exit status, or 128 + N when killed by signal N.
int wait_for(pid_t pid);

/// A fresh empty directory under the test's temp root (removed when the test process exits).
std::string fresh_dir(const std::string& name);

/// A Fashion-MNIST directory: `train` and `test` 28x28 images with labels i % 10, except that
/// test image 3 gets `bad_label` when it is not -1.
void write_fashion(const std::string& dir, size_t train, size_t test, int bad_label = -1);

std::string read_text(const std::string& path);
void write_text(const std::string& path, const std::string& text);

/// Names in `dir` that contain ".tmp." (temp files of atomic writes).
std::vector<std::string> temp_files(const std::string& dir);

}  // namespace ember::cli_testing
