// `ember train` killed with SIGKILL at random moments, the moment a checkpoint's temp file appears
// (mid-write) and the moment a checkpoint is complete (before metrics.csv follows), then resumed:
// after every kill the newest checkpoint loads, a resume leaves metrics.csv equal to the
// checkpoint's history and no temp file behind, and the run ends with every epoch in metrics.csv.
// About 10-20 s on 2 busy cores.
#include <gtest/gtest.h>
#include <signal.h>

#include <ember/io/safetensors.hpp>
#include <ember/train/checkpoint.hpp>

#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include "cli_util.hpp"

namespace ember::cli_testing {
namespace {
namespace fs = std::filesystem;

std::vector<std::string> args(const std::string& data, const std::string& out, int64_t epochs) {
  return {"train",        "fashion-mnist",
          "--data",       data,
          "--out",        out,
          "--epochs",     std::to_string(epochs),
          "--batch-size", "8",
          "--workers",    "0",
          "--show",       "0",
          "--resume"};
}

size_t lines(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

// What a resume sees: the newest checkpoint's completed epochs and metrics history.
struct Latest {
  int64_t epochs = 0;
  std::string history;  // "" without a checkpoint
};

Latest latest(const std::string& out) {
  Latest l;
  const auto c = train::latest_checkpoint(out + "/checkpoints");
  if (!c) return l;
  const io::SafetensorsFile file = io::load_safetensors(c->path);  // a torn file fails here
  l.epochs = c->epochs_done;
  l.history = file.metadata().at("history");
  EXPECT_EQ(file.metadata().at("epoch"), std::to_string(c->epochs_done)) << c->path;
  return l;
}

TEST(CliKill, SigkillAtRandomMomentsThenResumeLosesNothingAndLeavesNoTempFile) {
  const std::string data = fresh_dir("kill_data"), out = fresh_dir("kill_out"),
                    logs = fresh_dir("kill_logs");
  write_fashion(data, 32, 10);
  // How long one epoch takes here, start-up included, sets the range of the random delays.
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(ember(args(data, fresh_dir("kill_calibrate"), 1)).status, 0);
  const double run_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::mt19937 rng(11);
  int killed = 0, mid_write = 0, stale_seen = 0, lagging = 0;
  for (int round = 0; round < 12; ++round) {
    const Latest before = latest(out);
    const pid_t pid = start_ember(args(data, out, before.epochs + 2), logs);
    // Three kinds of moment: any (a random delay), during a checkpoint write (its temp file has
    // appeared), and right after a checkpoint, before metrics.csv has followed it.
    bool in_write = false;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    auto poll = [&](auto&& done) {
      while (!done() && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    };
    if (round % 3 == 0) {
      std::uniform_real_distribution<double> delay(0.2 * run_s, 3 * run_s);
      std::this_thread::sleep_for(std::chrono::duration<double>(delay(rng)));
    } else if (round % 3 == 1) {
      poll([&] { return in_write = !temp_files(out + "/checkpoints").empty(); });
    } else {
      poll([&] {
        const auto c = train::latest_checkpoint(out + "/checkpoints");
        return c && c->epochs_done > before.epochs;
      });
    }
    kill(pid, SIGKILL);
    const int status = wait_for(pid);
    ASSERT_TRUE(status == 0 || status == 128 + SIGKILL) << "status " << status;
    killed += status != 0;
    mid_write += status != 0 && in_write;
    stale_seen += !temp_files(out + "/checkpoints").empty() || !temp_files(out).empty();

    // The newest checkpoint always loads; a resume with nothing left to train mends the rest.
    const Latest now = latest(out);
    lagging += !now.history.empty() && read_text(out + "/metrics.csv") != now.history;
    SCOPED_TRACE("round " + std::to_string(round) + ", killed after epoch " +
                 std::to_string(now.epochs));
    const Result resumed = ember(args(data, out, now.epochs));
    ASSERT_EQ(resumed.status, 0) << resumed.err;
    const std::string csv = read_text(out + "/metrics.csv");
    if (now.history.empty()) {
      EXPECT_EQ(lines(csv), 1u) << csv;  // the header only
    } else {
      EXPECT_EQ(csv, now.history);
    }
    EXPECT_EQ(temp_files(out), std::vector<std::string>{});
    EXPECT_EQ(temp_files(out + "/checkpoints"), std::vector<std::string>{});
  }
  const Latest end = latest(out);
  const Result last = ember(args(data, out, end.epochs + 1));
  ASSERT_EQ(last.status, 0) << last.err;
  const std::string csv = read_text(out + "/metrics.csv");
  EXPECT_EQ(lines(csv), static_cast<size_t>(end.epochs + 2)) << csv;
  EXPECT_EQ(csv, latest(out).history);
  EXPECT_GE(killed, 8) << "most rounds must end in a kill";
  EXPECT_GE(mid_write, 2) << "some kills must land in a checkpoint write";
  std::cout << "kills " << killed << ", in a checkpoint write " << mid_write
            << ", leaving a temp file " << stale_seen << ", metrics.csv behind the checkpoint "
            << lagging << "; " << end.epochs + 1 << " epochs in all\n";
  EXPECT_GE(lagging, 1) << "no kill left metrics.csv behind: the mending went untested";
  EXPECT_GE(stale_seen, 1) << "no kill left a temp file: the clean-up went untested";
}

}  // namespace
}  // namespace ember::cli_testing
