// Checkpoints are atomic: a writer killed (SIGKILL) in the middle of a write leaves the previous
// checkpoint intact and loadable, and a resume ignores the leftover temp file.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "train_test_util.hpp"

namespace ember::train::testing {
namespace {
namespace fs = std::filesystem;

bool has_temp_file(const std::string& dir) {
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().find(".tmp.") != std::string::npos) return true;
  }
  return false;
}

TEST(Checkpoint, AWriteKilledMidwayLeavesThePreviousOneIntact) {
  const std::string dir = fresh_dir("atomic");
  const std::string ckpt_dir = dir + "/checkpoints";
  // A model large enough (16 MB of weights and Adam moments) that a write takes a while.
  manual_seed(5);
  TinyNet model(1 << 16);
  Learner learner(model, optim::AdamConfig().lr(1e-3).init(),
                  LearnerConfig().epochs(1).out_dir(dir).progress(Progress::none));
  const auto train = loader(quadrant_images(32, 1), false);
  learner.fit(train);
  const std::string path = ckpt_dir + "/epoch-0001.safetensors";
  ASSERT_TRUE(fs::exists(path));
  const auto saved = weights(model);

  // Children overwrite the checkpoint with other weights and are killed after a growing delay
  // until one dies with its temp file half written.
  model.fc1.weight.set(model.fc1.weight.value() * 2.0f);
  bool killed_midway = false;
  for (int attempt = 0; attempt < 40 && !killed_midway; ++attempt) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (;;) learner.save_checkpoint(path);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(2000 + 1500 * attempt));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status));
    killed_midway = has_temp_file(ckpt_dir);
    if (!killed_midway) {  // killed between writes: put the original back and try again
      model.fc1.weight.set(model.fc1.weight.value() * 0.5f);
      learner.save_checkpoint(path);
      model.fc1.weight.set(model.fc1.weight.value() * 2.0f);
    }
  }
  ASSERT_TRUE(killed_midway) << "no child was killed during a write";

  // The file at the path is the previous checkpoint, or the complete new one: never a torn one.
  manual_seed(5);
  TinyNet fresh(1 << 16);
  Learner reader(fresh, optim::AdamConfig().lr(1e-3).init(),
                 LearnerConfig().epochs(1).out_dir(dir).progress(Progress::none));
  ASSERT_NO_THROW(reader.load_checkpoint(path));
  const auto loaded = weights(fresh);
  auto doubled = saved;
  for (auto& [name, v] : doubled) {
    if (name == "fc1.weight") {
      for (float& x : v) x *= 2.0f;
    }
  }
  EXPECT_TRUE(loaded == saved || loaded == doubled);
  // The leftover temp file is not a checkpoint.
  const auto all = list_checkpoints(ckpt_dir);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].path, path);
}

TEST(Checkpoint, NamesAndOrder) {
  EXPECT_EQ(checkpoint_name(3, 0), "epoch-0003.safetensors");
  EXPECT_EQ(checkpoint_name(3, 120), "epoch-0004-batch-000120.safetensors");
  const std::string dir = fresh_dir("names");
  for (const char* f : {"epoch-0002.safetensors", "epoch-0003-batch-000007.safetensors",
                        "epoch-0010.safetensors", "notes.txt", ".epoch-0011.safetensors.tmp.1"}) {
    std::ofstream(dir + "/" + f) << "x";
  }
  const auto all = list_checkpoints(dir);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].epochs_done, 2);
  EXPECT_EQ(all[1].epochs_done, 2);
  EXPECT_EQ(all[1].batch, 7);
  EXPECT_EQ(all[2].epochs_done, 10);
  EXPECT_FALSE(list_checkpoints(dir + "/absent").size());
}

}  // namespace
}  // namespace ember::train::testing
