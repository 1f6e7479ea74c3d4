// What a run killed mid-write leaves, and what resuming makes of it: stale temp files are removed
// (only the Learner's own, of dead writers), metrics.csv missing rows or holding extra ones is
// rewritten from the checkpoint's history, and checkpoint names or metadata that the Learner
// cannot have written fail (or are skipped) with a message naming the file and the key.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ember/io/file.hpp>
#include <ember/io/safetensors.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "file.hpp"  // src/io: AtomicFile, to hold a write in flight
#include "train_test_util.hpp"

namespace ember::train::testing {
namespace {
namespace fs = std::filesystem;

void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// A pid that no process has: a child that has exited and been reaped.
pid_t dead_pid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
}

struct TinyLearner {
  TinyNet model;
  Learner<TinyNet> learner;
  explicit TinyLearner(LearnerConfig config)
      : model((manual_seed(3), TinyNet())),
        learner(model, optim::AdamConfig().lr(1e-2).init(),
                std::move(config.progress(Progress::none))) {}
};

const auto& train_data() {
  static const auto ds = quadrant_images(64, 1);
  return ds;
}

// Two epochs written to `dir`; returns metrics.csv as they left it.
std::string two_epochs(const std::string& dir) {
  TinyLearner run(LearnerConfig().epochs(2).out_dir(dir));
  run.learner.fit(loader(train_data(), true));
  return read_text(dir + "/metrics.csv");
}

TEST(ResumeRepair, MetricsCsvMissingOrExtraRowsIsRewrittenFromTheCheckpoint) {
  const std::string dir = fresh_dir("repair_metrics");
  const std::string whole = two_epochs(dir);
  const auto rows = [](const std::string& csv) { return std::count(csv.begin(), csv.end(), '\n'); };
  ASSERT_EQ(rows(whole), 3);  // header + 2 epochs
  // Killed after the checkpoint of epoch 2 but before metrics.csv: a row missing. Killed after a
  // later metrics.csv whose checkpoint did not survive: a row too many.
  const std::string missing = whole.substr(0, whole.rfind('\n', whole.size() - 2) + 1);
  const std::string extra = whole + "3,0.5,0.5,1,0.5,0.5,1,0.01,100,1,1\n";
  for (const std::string& doctored : {missing, extra}) {
    write_text(dir + "/metrics.csv", doctored);
    TinyLearner resumed(LearnerConfig().epochs(2).out_dir(dir).resume());
    const FitResult r = resumed.learner.fit(loader(train_data(), true));
    EXPECT_EQ(r.epochs_done, 2);  // nothing left to train: only the files are mended
    EXPECT_EQ(read_text(dir + "/metrics.csv"), whole);
    EXPECT_EQ(history_from_csv(read_text(dir + "/metrics.csv"), 5).size(), 2u);
  }
}

TEST(ResumeRepair, StaleTempFilesOfDeadWritersAreRemovedOthersKept) {
  const std::string dir = fresh_dir("repair_temps");
  two_epochs(dir);
  const std::string ckpt = dir + "/checkpoints";
  const std::string dead = std::to_string(dead_pid()), self = std::to_string(getpid());
  const std::vector<std::string> stale = {
      dir + "/.metrics.csv.tmp." + dead + ".123.0",
      dir + "/.curves.svg.tmp." + dead + ".123.1",
      dir + "/.metrics.csv.tmp." + self + ".9.9",  // this pid, but no write of ours in flight
      ckpt + "/.epoch-0003.safetensors.tmp." + dead + ".5.2",
  };
  const std::vector<std::string> kept = {
      dir + "/.metrics.csv.tmp.1.123.0",           // pid 1 is alive: it may be writing
      dir + "/.notes.txt.tmp." + dead + ".1.2",    // not a file the Learner writes
      dir + "/.metrics.csv.tmp." + dead + ".x.2",  // not AtomicFile's name
      dir + "/metrics.csv.tmp." + dead + ".1.2",  ckpt + "/.model.safetensors.tmp." + dead + ".1.2",
  };
  for (const auto& p : stale) write_text(p, "partial");
  for (const auto& p : kept) write_text(p, "someone else's");
  TinyLearner resumed(LearnerConfig().epochs(2).out_dir(dir).resume());
  resumed.learner.fit(loader(train_data(), true));
  for (const auto& p : stale) EXPECT_FALSE(fs::exists(p)) << p;
  for (const auto& p : kept) EXPECT_TRUE(fs::exists(p)) << p;
}

// A temp file named with this process's pid (a container restarts a command with the same pid)
// is stale unless this process is writing it now.
TEST(ResumeRepair, ATempFileOfThisPidNotBeingWrittenIsStale) {
  const std::string dir = fresh_dir("repair_inflight");
  const std::string self = std::to_string(getpid());
  write_text(dir + "/.a.bin.tmp." + self + ".1.1", "x");
  const auto removed =
      io::remove_stale_temp_files(dir, [](const std::string& n) { return n == "a.bin"; });
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(removed[0], dir + "/.a.bin.tmp." + self + ".1.1");
  // One being written now by this process stays, until the write ends.
  {
    io::detail::AtomicFile writing(dir + "/a.bin", "[test]");
    writing.write("abc", 3);
    EXPECT_TRUE(io::remove_stale_temp_files(dir, [](const std::string& n) {
                  return n == "a.bin";
                }).empty());
    EXPECT_TRUE(fs::exists(writing.temp_path()));
  }
  EXPECT_TRUE(fs::is_empty(dir)) << "the unfinished write removed its own temp file";
  EXPECT_TRUE(io::remove_stale_temp_files(dir + "/absent", [](const std::string&) {
                return true;
              }).empty());
}

TEST(ResumeRepair, CheckpointNamesALearnerCannotHaveWrittenAreSkippedWithAReason) {
  const std::string dir = fresh_dir("repair_names");
  two_epochs(dir);
  const std::string ckpt = dir + "/checkpoints";
  write_text(ckpt + "/epoch-99999999999999999999.safetensors", "x");
  write_text(ckpt + "/epoch-0009-batch-99999999999999999999.safetensors", "x");
  write_text(ckpt + "/epoch-0000-batch-000004.safetensors", "x");
  write_text(ckpt + "/epoch-0007-batch-000000.safetensors", "x");
  fs::create_directory(ckpt + "/epoch-0008.safetensors");
  ASSERT_EQ(mkfifo((ckpt + "/epoch-0006.safetensors").c_str(), 0644), 0);
  std::vector<std::string> ignored;
  const auto latest = latest_checkpoint(ckpt, &ignored);  // was "stoll"
  ASSERT_TRUE(latest);
  EXPECT_EQ(fs::path(latest->path).filename(), "epoch-0002.safetensors");
  ASSERT_EQ(ignored.size(), 6u);
  std::string all;
  for (const auto& line : ignored) all += line + "\n";
  for (const char* part :
       {"epoch-99999999999999999999.safetensors': its epoch or batch number does not fit in 64",
        "epoch-0009-batch-99999999999999999999.safetensors': its epoch or batch number",
        "epoch-0000-batch-000004.safetensors': a mid-epoch checkpoint needs an epoch and a batch",
        "epoch-0007-batch-000000.safetensors': a mid-epoch checkpoint needs",
        "epoch-0008.safetensors': not a regular file",
        "epoch-0006.safetensors': not a regular file"}) {
    EXPECT_NE(all.find(part), std::string::npos) << part << "\n" << all;
  }
  // A resume goes on from epoch 2, and pruning leaves the foreign names alone.
  TinyLearner resumed(LearnerConfig().epochs(4).out_dir(dir).resume().keep_last(1));
  EXPECT_EQ(resumed.learner.fit(loader(train_data(), true)).epochs_done, 4);
  EXPECT_TRUE(fs::exists(ckpt + "/epoch-99999999999999999999.safetensors"));
  EXPECT_TRUE(fs::exists(ckpt + "/epoch-0000-batch-000004.safetensors"));
}

TEST(ResumeRepair, DoctoredMetadataIsRefusedNamingTheKeyAndChangesNothing) {
  const std::string dir = fresh_dir("repair_doctored");
  two_epochs(dir);
  const std::string good = dir + "/checkpoints/epoch-0002.safetensors";
  const std::string bad = dir + "/bad.safetensors";
  const std::vector<std::pair<std::map<std::string, std::string>, std::string>> cases = {
      {{{"batch", "-1"}}, "metadata 'batch' is -1, outside [0, 9223372036854775807]"},
      {{{"epoch", "-3"}}, "metadata 'epoch' is -3, outside"},
      {{{"epoch", "two"}}, "metadata 'epoch' is 'two', not an integer of 64 bits"},
      {{{"epoch", " 2"}}, "metadata 'epoch' is ' 2', not an integer"},
      {{{"rng.seed", "18446744073709551616"}}, "metadata 'rng.seed' is '18446744073709551616'"},
      {{{"rng.offset", ""}}, "lacks the metadata key 'rng.offset'"},
      {{{"history", ""}}, "lacks the metadata key 'history'"},
      {{{"partial.items", "-4"}}, "metadata 'partial.items' is -4, outside"},
      {{{"partial.loss_sum", "1.5.2"}}, "metadata 'partial.loss_sum' is '1.5.2', not a number"},
      {{{"bad_epochs", "3"}}, "metadata 'bad_epochs' is 3, outside [0, 2]"},
      {{{"epoch", "1"}}, "metadata 'history' has 2 epochs, 'epoch' says 1"},
      // Shown escaped and cut short: no escape sequence or megabyte reaches the terminal.
      {{{"rng.seed", "\x1b]0;pwned\x07" + std::string(100000, '9')}},
       "metadata 'rng.seed' is '\\x1b]0;pwned\\x07" + std::string(30, '9') + "... (100010 bytes)'"},
      {{{"optimizer.step.fc1.weight", "x"}}, "checkpoint '" + bad + "': [Adam] the saved state's"},
      {{{"optimizer.step.fc1.weight", "1e300"}},
       "[Adam] the saved state's \"step.fc1.weight\" is \"1e300\", not an integer in [0, 2^53]"},
      {{{"optimizer.group.0.lr", "nan"}}, "\"group.0.lr\" is \"nan\", not a finite number"},
  };
  for (const auto& [changes, message] : cases) {
    doctor(good, bad, changes);
    TinyLearner run(LearnerConfig().epochs(4));
    const auto before = weights(run.model);
    try {
      run.learner.load_checkpoint(bad);
      ADD_FAILURE() << "no error for " << message;
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("checkpoint '" + bad + "'"), std::string::npos) << what;
      EXPECT_NE(what.find(message), std::string::npos) << what << "\nexpected: " << message;
      EXPECT_LT(what.size(), 400u);
      EXPECT_EQ(what.find('\x1b'), std::string::npos);
    }
    EXPECT_EQ(weights(run.model), before) << message;
  }
}

TEST(ResumeRepair, APositionPastThisRunIsRefused) {
  const std::string dir = fresh_dir("repair_past");
  two_epochs(dir);
  const std::string good = dir + "/checkpoints/epoch-0002.safetensors";
  {
    TinyLearner run(LearnerConfig().epochs(1).out_dir(dir).resume());
    try {
      run.learner.fit(loader(train_data(), true));
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(
          std::string(e.what()).find("'" + good + "' is at epoch 2, past the 1 epochs of this run"),
          std::string::npos)
          << e.what();
    }
  }
  // Mid-epoch, after more batches than an epoch has here (another batch size).
  doctor(good, good, {{"batch", "50"}, {"epoch", "2"}});
  TinyLearner run(LearnerConfig().epochs(4).out_dir(dir).resume());
  try {
    run.learner.fit(loader(train_data(), true));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("stopped after 50 batches of epoch 3, but an epoch here "
                                         "has 4 batches"),
              std::string::npos)
        << e.what();
  }
}

// A Learner with a StepLR schedule (made on the optimizer before the Learner takes it).
struct ScheduledLearner {
  TinyNet model;
  Learner<TinyNet> learner;
  explicit ScheduledLearner(LearnerConfig config)
      : model((manual_seed(3), TinyNet())),
        learner(model, optim::AdamConfig().lr(1e-2).init(),
                std::move(config.progress(Progress::none))) {
    learner.set_scheduler(optim::StepLR(learner.optimizer(), 1, 0.5));
  }
};

TEST(ResumeRepair, ABadScheduleStateLeavesTheOptimizerAsItWas) {
  const std::string dir = fresh_dir("repair_sched");
  {
    ScheduledLearner run(LearnerConfig().epochs(2).out_dir(dir));
    run.learner.fit(loader(train_data(), true));
  }
  const std::string good = dir + "/checkpoints/epoch-0002.safetensors";
  const std::string bad = dir + "/bad.safetensors";
  // The optimizer's part is whole and loads first; the schedule's fails after it.
  doctor(good, bad, {{"scheduler.last_epoch", "1e300"}});
  ScheduledLearner run(LearnerConfig().epochs(4));
  const auto before = run.learner.optimizer().state(nn::module_tree(run.model)).metadata;
  try {
    run.learner.load_checkpoint(bad);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("checkpoint '" + bad +
                                         "': [StepLR] the saved state's \"last_epoch\" is "
                                         "\"1e300\", not an integer in [-2^53, 2^53]"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(run.learner.optimizer().steps(), 0);
  EXPECT_EQ(run.learner.optimizer().state(nn::module_tree(run.model)).metadata, before);
}

// fit()'s exception's message, or "" when it returns.
template <class L>
std::string fit_error(L& run) {
  try {
    run.learner.fit(loader(train_data(), true));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ResumeRepair, AResumeFromAFolderThatIsNotADirectoryIsAnErrorNamingIt) {
  const std::string dir = fresh_dir("repair_notdir");
  // --out names a file.
  write_text(dir + "/file", "x");
  TinyLearner into_file(LearnerConfig().epochs(1).out_dir(dir + "/file").resume());
  EXPECT_NE(fit_error(into_file).find("[Learner] the output folder '" + dir +
                                      "/file' is not a directory"),
            std::string::npos);
  // The checkpoint folder is a file: was taken for "no checkpoint" (then "cannot create").
  fs::create_directories(dir + "/run");
  write_text(dir + "/run/checkpoints", "x");
  TinyLearner into_run(LearnerConfig().epochs(1).out_dir(dir + "/run").resume());
  EXPECT_NE(fit_error(into_run).find("[Learner] the checkpoint folder '" + dir +
                                     "/run/checkpoints' is not a directory"),
            std::string::npos);
  // A folder that cannot be read (as root, a symlink loop rather than permissions).
  fs::create_directories(dir + "/loop");
  fs::create_symlink("checkpoints", dir + "/loop/checkpoints");
  TinyLearner into_loop(LearnerConfig().epochs(1).out_dir(dir + "/loop").resume());
  EXPECT_NE(fit_error(into_loop).find("[Learner] cannot read the checkpoint folder '" + dir +
                                      "/loop/checkpoints': Too many levels of symbolic links"),
            std::string::npos);
  EXPECT_EQ(list_checkpoints(dir + "/absent").size(), 0u);
  EXPECT_THROW(list_checkpoints(dir + "/run/checkpoints"), Error);
}

TEST(ResumeRepair, AnUnreadableCheckpointFolderIsAnError) {
  if (geteuid() == 0) GTEST_SKIP() << "root reads any folder";
  const std::string dir = fresh_dir("repair_unreadable");
  two_epochs(dir);
  ASSERT_EQ(chmod((dir + "/checkpoints").c_str(), 0), 0);
  TinyLearner run(LearnerConfig().epochs(3).out_dir(dir).resume());
  const std::string what = fit_error(run);
  chmod((dir + "/checkpoints").c_str(), 0755);
  EXPECT_NE(what.find("[Learner] cannot read the checkpoint folder '" + dir + "/checkpoints'"),
            std::string::npos)
      << what;
}

TEST(ResumeRepair, AResumeWithNoCheckpointStartsOverWithANote) {
  const std::string dir = fresh_dir("repair_empty");
  fs::create_directories(dir + "/checkpoints");
  write_text(dir + "/checkpoints/notes.txt", "not a checkpoint");
  TinyLearner run(LearnerConfig().epochs(1).out_dir(dir).resume());
  ::testing::internal::CaptureStderr();
  const FitResult r = run.learner.fit(loader(train_data(), true));
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(r.epochs_done, 1);
  EXPECT_NE(err.find("[Learner] note: no checkpoint to resume from in '" + dir +
                     "/checkpoints': starting from epoch 1"),
            std::string::npos)
      << err;
}

TEST(ResumeRepair, AFreshRunRefusesAnEarlierRunsCheckpointsUnlessOverwriting) {
  const std::string dir = fresh_dir("repair_fresh");
  const std::string ckpt = dir + "/checkpoints";
  const std::string metrics = two_epochs(dir);
  write_text(ckpt + "/notes.txt", "mine");
  // Without resume(): refused before anything is written (keep_last(1) would have deleted the
  // earlier run's epoch 1, and a later resume would have taken its epoch 2 for this run's).
  TinyLearner fresh(LearnerConfig().epochs(1).out_dir(dir).keep_last(1));
  const std::string what = fit_error(fresh);
  EXPECT_NE(what.find("[Learner] '" + ckpt +
                      "' holds 2 checkpoint(s) of an earlier run "
                      "(epoch-0001.safetensors, epoch-0002.safetensors): continue it with "
                      "resume() (ember train --resume), or delete them and start over with "
                      "overwrite() (--overwrite), or use another out_dir"),
            std::string::npos)
      << what;
  EXPECT_EQ(list_checkpoints(ckpt).size(), 2u);
  EXPECT_EQ(read_text(dir + "/metrics.csv"), metrics);
  // With overwrite(): the earlier checkpoints go, other files stay, and the run is its own.
  TinyLearner over(LearnerConfig().epochs(1).out_dir(dir).keep_last(1).overwrite());
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(over.learner.fit(loader(train_data(), true)).epochs_done, 1);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("deleted 2 checkpoint(s) of an earlier run from '" + ckpt + "'"),
            std::string::npos)
      << err;
  const auto left = list_checkpoints(ckpt);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].path, ckpt + "/epoch-0001.safetensors");
  EXPECT_TRUE(fs::exists(ckpt + "/notes.txt"));
  EXPECT_EQ(history_from_csv(read_text(dir + "/metrics.csv"), 5).size(), 1u);
  // The same Learner fitting again continues its own run: not refused.
  EXPECT_EQ(fit_error(over), "");
  // resume() and overwrite() exclude each other.
  EXPECT_THROW({ TinyLearner both(LearnerConfig().resume().overwrite()); }, Error);
}

}  // namespace
}  // namespace ember::train::testing
