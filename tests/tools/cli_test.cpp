// The `ember` command line given hostile input, as the hardening issue tried it: non-regular
// files (a FIFO, /dev/zero, a directory) are refused instead of blocked on, no message is a bare
// library string ("stoll", "map::at", "vector::_M_range_check"), doctored checkpoints name the
// key, an empty test set and `--seed -1` are refused, a full disk or a closed pipe on stdout is a
// non-zero exit with a message, and `ember inspect` output is bounded and escaped.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ember/ember.hpp>
#include <ember/io/safetensors.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <sstream>
#include <thread>

#include "cli_util.hpp"
#include "train_test_util.hpp"  // tests/train: doctor()

namespace ember::cli_testing {
namespace {
namespace fs = std::filesystem;
using train::testing::doctor;

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Library strings that must never be a whole message.
void expect_no_bare_library_string(const Result& r) {
  for (const char* bare : {": stoll", ": stoull", ": map::at", "_M_range_check", "basic_ios"}) {
    EXPECT_FALSE(has(r.err, bare)) << r.err;
  }
}

#define EXPECT_FAILS_WITH(result, code, part)                                         \
  do {                                                                                \
    const Result& r_ = (result);                                                      \
    EXPECT_FALSE(r_.timed_out) << "hung";                                             \
    EXPECT_EQ(r_.status, code) << r_.err;                                             \
    EXPECT_TRUE(has(r_.err, part)) << "stderr: " << r_.err << "\nexpected: " << part; \
    expect_no_bare_library_string(r_);                                                \
  } while (0)

// A data directory of 40 training and 20 test images, shared by the tests that need one.
const std::string& data_dir() {
  static const std::string dir = [] {
    const std::string d = fresh_dir("fashion");
    write_fashion(d, 40, 20);
    return d;
  }();
  return dir;
}

std::vector<std::string> train_args(const std::string& out, int epochs) {
  return {"train",        "fashion-mnist",
          "--data",       data_dir(),
          "--out",        out,
          "--epochs",     std::to_string(epochs),
          "--batch-size", "8",
          "--workers",    "0",
          "--show",       "0"};
}

// A small safetensors file: tensors by name (one f32 each) and metadata.
void write_safetensors(const std::string& path, const std::vector<std::string>& names,
                       const std::map<std::string, std::string>& md = {}) {
  std::vector<std::pair<std::string, DynTensor>> tensors;
  for (const std::string& n : names) tensors.emplace_back(n, Tensor<1>::zeros({1}).dyn());
  io::save_safetensors(tensors, path, md);
}

// --- Non-regular files ---------------------------------------------------------------------

TEST(Cli, AFifoOrADeviceOrADirectoryIsRefusedNotBlockedOn) {
  const std::string dir = fresh_dir("fifo");
  const std::string fifo = dir + "/model.safetensors";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  EXPECT_FAILS_WITH(ember({"inspect", fifo}, Stdout::capture, 20), 2, "is a FIFO");
  EXPECT_FAILS_WITH(ember({"eval", fifo, "--data", data_dir()}, Stdout::capture, 20), 2,
                    "is a FIFO, not a regular file");
  EXPECT_FAILS_WITH(ember({"inspect", "/dev/zero"}, Stdout::capture, 20), 2,
                    "/dev/zero is a character device");
  EXPECT_FAILS_WITH(ember({"inspect", dir}, Stdout::capture, 20), 2, "is a directory");
}

TEST(Cli, AFifoAmongTheDataFilesIsRefused) {
  const std::string dir = fresh_dir("fifo_data");
  write_fashion(dir, 20, 10);
  fs::remove(dir + "/t10k-labels-idx1-ubyte");
  ASSERT_EQ(mkfifo((dir + "/t10k-labels-idx1-ubyte").c_str(), 0644), 0);
  EXPECT_FAILS_WITH(ember({"eval", "/dev/null", "--data", dir}, Stdout::capture, 20), 2,
                    "character device");  // the model argument is checked first
  const std::string model = fresh_dir("fifo_model") + "/m.safetensors";
  write_safetensors(model, {"x"});
  EXPECT_FAILS_WITH(ember({"eval", model, "--data", dir}, Stdout::capture, 20), 1,
                    "t10k-labels-idx1-ubyte is a FIFO, not a regular file");
  EXPECT_FAILS_WITH(ember({"train", "fashion-mnist", "--data", dir, "--out", fresh_dir("o")},
                          Stdout::capture, 20),
                    1, "t10k-labels-idx1-ubyte is a FIFO, not a regular file");
}

// The library's own check (io::load_safetensors), for programs that skip the CLI's: a FIFO is
// refused before open(), which would block until a writer came. In a child, so that a
// regression fails after 10 s instead of hanging the suite.
TEST(Cli, LoadSafetensorsRefusesAFifoWithoutBlocking) {
  const std::string fifo = fresh_dir("fifo_lib") + "/w.safetensors";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    try {
      io::load_safetensors(fifo);
    } catch (const Error& e) {
      _exit(std::string(e.what()).find("is not a regular file (it is a FIFO)") != std::string::npos
                ? 0
                : 1);
    }
    _exit(2);
  }
  int raw = 0;
  pid_t done = 0;
  for (int i = 0; i < 1000 && (done = waitpid(pid, &raw, WNOHANG)) == 0; ++i) usleep(10000);
  if (done == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &raw, 0);
    FAIL() << "load_safetensors blocked on a FIFO";
  }
  ASSERT_TRUE(WIFEXITED(raw));
  EXPECT_EQ(WEXITSTATUS(raw), 0) << "no error, or another message";
}

// --- Checkpoints ---------------------------------------------------------------------------

// One epoch trained into a fresh --out: its checkpoint is the base of the doctored ones.
std::string trained_out() {
  const std::string out = fresh_dir("trained");
  const Result r = ember(train_args(out, 1));
  EXPECT_EQ(r.status, 0) << r.err;
  return out;
}

TEST(Cli, AStrayCheckpointNameIsIgnoredWithAWarning) {
  const std::string out = trained_out();
  const std::string stray = out + "/checkpoints/epoch-99999999999999999999.safetensors";
  write_text(stray, "not a checkpoint");
  ASSERT_EQ(mkfifo((out + "/checkpoints/epoch-0005.safetensors").c_str(), 0644), 0);
  const Result r = ember([&] {
    auto a = train_args(out, 2);
    a.push_back("--resume");
    return a;
  }());
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.status, 0) << r.err;  // was "ember train: error: stoll"
  EXPECT_TRUE(has(r.err, "warning: ignoring '" + stray +
                             "': its epoch or batch number does not fit in 64 bits"))
      << r.err;
  EXPECT_TRUE(has(r.err, "epoch-0005.safetensors': not a regular file")) << r.err;
  EXPECT_TRUE(has(r.out, "resumed from " + out + "/checkpoints/epoch-0001.safetensors")) << r.out;
  EXPECT_TRUE(fs::exists(stray)) << "a file Ember did not write is never deleted";
  expect_no_bare_library_string(r);
}

TEST(Cli, ADoctoredCheckpointNamesTheKeyAndTheValue) {
  const std::string out = trained_out();
  const std::string good = out + "/checkpoints/epoch-0001.safetensors";
  const std::string saved = fresh_dir("saved") + "/epoch-0001.safetensors";
  fs::copy_file(good, saved);
  struct Case {
    std::map<std::string, std::string> changes;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{{"batch", "-1"}}, "metadata 'batch' is -1, outside [0, "},
      {{{"rng.seed", "x"}}, "metadata 'rng.seed' is 'x', not an integer >= 0"},  // was "stoull"
      {{{"rng.offset", "-5"}}, "metadata 'rng.offset' is '-5', not an integer >= 0"},
      {{{"rng.seed", ""}}, "lacks the metadata key 'rng.seed'"},
      {{{"history", ""}}, "lacks the metadata key 'history'"},  // was "map::at"
      {{{"epoch", "2x"}}, "metadata 'epoch' is '2x', not an integer"},
      {{{"epoch", "99999999999999999999"}}, "metadata 'epoch' is '99999999999999999999'"},
      {{{"best", "fast"}}, "metadata 'best' is 'fast', not a number"},
      {{{"epoch", "3"}}, "metadata 'history' has 1 epochs, 'epoch' says 3"},
      {{{"best_epoch", "7"}}, "metadata 'best_epoch' is 7, outside [0, 1]"},
      {{{"top_k", "five"}}, "metadata 'top_k' is 'five', not an integer"},
      {{{"history", "epoch\n1,2\n"}}, "metadata 'history': [Learner] metrics row has"},
      // Was a cast of 1e300 to int64 (undefined behaviour) in the optimizer's state.
      {{{"optimizer.groups", "1e300"}},
       "[Adam] the saved state's \"groups\" is \"1e300\", not an integer in [1, 2^53]"},
  };
  for (const Case& c : cases) {
    doctor(saved, good, c.changes);
    auto args = train_args(out, 3);
    args.push_back("--resume");
    const Result r = ember(args);
    SCOPED_TRACE(c.message);
    EXPECT_FAILS_WITH(r, 1, "checkpoint '" + good + "'");
    EXPECT_TRUE(has(r.err, c.message)) << r.err;
  }
}

TEST(Cli, ACheckpointPastTheEpochsOfTheRunIsRefused) {
  const std::string out = fresh_dir("past");
  ASSERT_EQ(ember(train_args(out, 2)).status, 0);
  auto args = train_args(out, 1);
  args.push_back("--resume");
  EXPECT_FAILS_WITH(ember(args), 1,
                    "epoch-0002.safetensors' is at epoch 2, past the 1 epochs of this run");
  // The same number of epochs: nothing left to train, the model is written again.
  args = train_args(out, 2);
  args.push_back("--resume");
  EXPECT_EQ(ember(args).status, 0);
}

TEST(Cli, AResumeFromAFolderThatIsNotADirectoryIsAnError) {
  const std::string dir = fresh_dir("notdir");
  write_text(dir + "/file", "x");
  auto args = train_args(dir + "/file", 1);
  args.push_back("--resume");
  EXPECT_FAILS_WITH(ember(args), 1, "the output folder '" + dir + "/file' is not a directory");
  fs::create_directories(dir + "/run");
  write_text(dir + "/run/checkpoints", "x");  // was taken for "no checkpoint"
  args = train_args(dir + "/run", 1);
  args.push_back("--resume");
  EXPECT_FAILS_WITH(ember(args), 1,
                    "the checkpoint folder '" + dir + "/run/checkpoints' is not a directory");
  // A folder with no checkpoint yet: a start from epoch 1, said on stderr.
  args = train_args(dir + "/new", 1);
  args.push_back("--resume");
  const Result r = ember(args);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.err, "[Learner] note: no checkpoint to resume from in '" + dir +
                             "/new/checkpoints': starting from epoch 1"))
      << r.err;
}

TEST(Cli, AFreshRunIntoAnEarlierRunIsRefusedUnlessOverwriting) {
  const std::string out = fresh_dir("again");
  ASSERT_EQ(ember(train_args(out, 2)).status, 0);
  const std::string metrics = read_text(out + "/metrics.csv");
  EXPECT_FAILS_WITH(ember(train_args(out, 1)), 1,
                    "ember train: error: [Learner] '" + out +
                        "/checkpoints' holds 2 checkpoint(s) of an earlier run "
                        "(epoch-0001.safetensors, epoch-0002.safetensors)");
  EXPECT_EQ(read_text(out + "/metrics.csv"), metrics);
  auto args = train_args(out, 1);
  args.push_back("--overwrite");
  const Result r = ember(args);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.err, "deleted 2 checkpoint(s) of an earlier run")) << r.err;
  EXPECT_TRUE(fs::exists(out + "/checkpoints/epoch-0001.safetensors"));
  EXPECT_FALSE(fs::exists(out + "/checkpoints/epoch-0002.safetensors"));
  args.push_back("--resume");
  EXPECT_FAILS_WITH(ember(args), 2, "--resume excludes --overwrite");
}

TEST(Cli, TrainsInMixedPrecision) {
  for (const char* p : {"bf16", "f16"}) {
    const std::string out = fresh_dir(std::string("amp_") + p);
    auto args = train_args(out, 1);
    args.insert(args.end(), {"--precision", p});
    const Result r = ember(args);
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(has(r.out, std::string(p) + " autocast")) << r.out;
    EXPECT_TRUE(has(r.out, "test accuracy after 1 epochs")) << r.out;
  }
  auto args = train_args(fresh_dir("amp_bad"), 1);
  args.insert(args.end(), {"--precision", "f8"});
  EXPECT_FAILS_WITH(ember(args), 2, "--precision: f8 not in {f32,bf16,f16}");
}

// ember quantize: the trained model's weights as int8, which ember eval then evaluates.
TEST(Cli, QuantizesAModelThatEvalThenRuns) {
  const std::string out = fresh_dir("quantize");
  ASSERT_EQ(ember(train_args(out, 1)).status, 0);
  const std::string int8 = out + "/model-int8.safetensors";
  const Result r = ember({"quantize", out + "/model.safetensors", int8});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "(4 weights as int8;")) << r.out;
  const io::SafetensorsFile f = io::load_safetensors(int8);
  EXPECT_EQ(f.dtype("conv2.weight"), DType::i8);
  EXPECT_EQ(f.shape("fc1.weight_scale"), Shape{128});
  EXPECT_EQ(f.dtype("fc1.bias"), DType::f32);
  const Result e = ember({"eval", int8, "--data", data_dir()});
  EXPECT_EQ(e.status, 0) << e.err;
  EXPECT_TRUE(has(e.out, "(int8 weights)")) << e.out;
  EXPECT_FAILS_WITH(ember({"quantize", int8, out + "/again.safetensors"}), 1,
                    "holds no float weight of rank 2 or more named *.weight");
  const std::string plain = out + "/biases.safetensors";
  write_safetensors(plain, {"fc.bias"});
  EXPECT_FAILS_WITH(ember({"quantize", plain, out + "/none.safetensors"}), 1,
                    "holds no float weight of rank 2 or more named *.weight");
}

TEST(Cli, TrainsWithGraphReplay) {
  const std::string out = fresh_dir("graph");
  auto args = train_args(out, 1);
  args.push_back("--graph");
  const Result r = ember(args);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "graph replay; writing to")) << r.out;
  EXPECT_TRUE(has(r.out, "test accuracy after 1 epochs")) << r.out;
  args = train_args(fresh_dir("graph_f16"), 1);
  args.insert(args.end(), {"--graph", "--precision", "f16"});
  EXPECT_FAILS_WITH(ember(args), 1, "graph replay with precision f16 is not supported");
}

// The rows of a metrics.csv after its header, each split at the commas.
std::vector<std::vector<std::string>> metric_rows(const std::string& csv) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(csv);
  std::string line;
  std::getline(lines, line);  // the header
  while (std::getline(lines, line)) {
    std::vector<std::string> cells;
    std::istringstream fields(line);
    for (std::string cell; std::getline(fields, cell, ',');) cells.push_back(cell);
    rows.push_back(cells);
  }
  return rows;
}

#ifdef EMBER_MPIEXEC
// `mpirun -np 2 ember train`: each process trains on half of every batch, and the run is the
// one-process run of the doubled batch: the same metrics but for float rounding, the same model
// within Adam's rounding, files written and lines printed once (by rank 0), and a resume with
// another number of processes refused.
TEST(Cli, MpirunTrainsAsOneProcessOnTheDoubledBatch) {
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);  // CI runs as root
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
  setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 0);
  const std::vector<std::string> mpirun = {EMBER_MPIEXEC, "-n", "2"};
  const std::string data = fresh_dir("dp_data");
  write_fashion(data, 64, 20);
  auto args = [&](const std::string& out, int epochs, int batch) {
    return std::vector<std::string>{"train",        "fashion-mnist",
                                    "--data",       data,
                                    "--out",        out,
                                    "--epochs",     std::to_string(epochs),
                                    "--batch-size", std::to_string(batch),
                                    "--workers",    "0",
                                    "--show",       "0"};
  };
  const std::string one = fresh_dir("dp_one"), two = fresh_dir("dp_two");
  const Result r1 = ember(args(one, 2, 16));
  ASSERT_EQ(r1.status, 0) << r1.err;
  // OpenMPI's plugins keep memory to the end, unnamed for the sanitizer build's leak check
  // (tests/dist/CMakeLists.txt): none under mpirun.
  const char* asan = std::getenv("ASAN_OPTIONS");
  const std::string asan_before = asan ? asan : "";
  setenv("ASAN_OPTIONS", (asan_before + ":detect_leaks=0").c_str(), 1);
  const Result r2 = ember(args(two, 2, 8), Stdout::capture, 120, mpirun);
  setenv("ASAN_OPTIONS", asan_before.c_str(), 1);
  ASSERT_EQ(r2.status, 0) << r2.err;
  EXPECT_TRUE(has(r2.out, "data-parallel: 2 processes, 8 images each per step (16 in all)"))
      << r2.out;
  const std::string done = "test accuracy after 2 epochs";
  const size_t first = r2.out.find(done);
  EXPECT_NE(first, std::string::npos) << r2.out;
  EXPECT_EQ(r2.out.find(done, first + 1), std::string::npos) << "printed twice:\n" << r2.out;

  const auto m1 = metric_rows(read_text(one + "/metrics.csv"));
  const auto m2 = metric_rows(read_text(two + "/metrics.csv"));
  ASSERT_EQ(m1.size(), 2u);
  ASSERT_EQ(m2.size(), 2u);
  for (size_t epoch = 0; epoch < 2; ++epoch) {
    ASSERT_GE(m1[epoch].size(), 7u);
    ASSERT_EQ(m2[epoch].size(), m1[epoch].size());
    for (size_t col : {2u, 3u, 5u, 6u}) EXPECT_EQ(m2[epoch][col], m1[epoch][col]);
    for (size_t col : {1u, 4u}) {
      EXPECT_NEAR(std::stod(m2[epoch][col]), std::stod(m1[epoch][col]),
                  1e-5 * std::stod(m1[epoch][col]))
          << "epoch " << epoch + 1 << " column " << col;
    }
  }
  // Adam divides by the root of the squared gradients, so an element whose gradient is all but
  // zero moves by up to lr whatever its rounding: compare within a tenth of lr per step.
  const io::SafetensorsFile a = io::load_safetensors(one + "/model.safetensors");
  const io::SafetensorsFile b = io::load_safetensors(two + "/model.safetensors");
  ASSERT_EQ(a.names(), b.names());
  for (const std::string& name : a.names()) {
    const std::vector<float> x = a.tensor(name).to_vector<float>(),
                             y = b.tensor(name).to_vector<float>();
    ASSERT_EQ(x.size(), y.size());
    float worst = 0;
    for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(x[i] - y[i]));
    EXPECT_LT(worst, 8 * 1e-4) << name;  // 8 steps of lr 1e-3
  }
  EXPECT_TRUE(temp_files(two).empty());
  // The checkpoint's position holds for two processes only.
  auto more = args(two, 3, 16);
  more.push_back("--resume");
  EXPECT_FAILS_WITH(ember(more), 1, "was written by a run of 2 process(es), this one has 1");
}

// The pids of the ember processes whose command line holds `marker` (an mpirun job's ranks).
std::vector<pid_t> ranks_with(const std::string& marker) {
  std::vector<pid_t> out;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmd = read_text(entry.path().string() + "/cmdline");
    std::replace(cmd.begin(), cmd.end(), '\0', ' ');
    if (cmd.rfind(EMBER_CLI_PATH, 0) == 0 && has(cmd, marker)) out.push_back(std::stoi(name));
  }
  return out;
}

// A rank killed mid-run ends the whole run at once, with a message naming it (mpirun's), and a
// status that is not 0: no rank waits for the dead one.
TEST(Cli, ARankKilledMidRunEndsEveryRankAtOnce) {
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
  setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 0);
  const std::string data = fresh_dir("kill_data"), out = fresh_dir("kill_run"),
                    logs = fresh_dir("kill_logs");
  write_fashion(data, 2000, 20);
  const pid_t job = start_ember({"train", "fashion-mnist", "--data", data, "--out", out, "--epochs",
                                 "1000", "--batch-size", "8", "--workers", "0", "--show", "0"},
                                logs, {EMBER_MPIEXEC, "-n", "2"});
  // Both ranks started and the first epoch's checkpoint exists: they are mid-run.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::vector<pid_t> ranks;
  while (std::chrono::steady_clock::now() < deadline &&
         (ranks.size() < 2 || !fs::exists(out + "/checkpoints/epoch-0001.safetensors"))) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ranks = ranks_with(out);
  }
  ASSERT_EQ(ranks.size(), 2u) << read_text(logs + "/stderr");
  kill(ranks.back(), SIGKILL);
  const auto killed = std::chrono::steady_clock::now();
  int raw = 0;
  while (waitpid(job, &raw, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() - killed > std::chrono::seconds(30)) {
      kill(job, SIGKILL);
      waitpid(job, &raw, 0);
      FAIL() << "the run outlived a killed rank by 30 s";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_FALSE(WIFEXITED(raw) && WEXITSTATUS(raw) == 0);
  EXPECT_TRUE(has(read_text(logs + "/stderr") + read_text(logs + "/stdout"), "exited on signal 9"))
      << read_text(logs + "/stderr");
  EXPECT_TRUE(ranks_with(out).empty()) << "a rank outlived the run";
}
#endif

// The training job on a Vulkan device (lavapipe in CI) computes what it computes on the Cpu: the
// same accuracies every epoch and the same losses but for float rounding, and a model that
// `ember eval` scores as the Cpu's.
TEST(Cli, TrainsOnVulkanAsOnTheCpu) {
  if (device_count(DeviceType::Vulkan) == 0) GTEST_SKIP() << "no Vulkan device here";
  std::vector<std::vector<std::vector<std::string>>> metrics;
  std::string cpu_model;
  for (const char* device : {"cpu", "vulkan:0"}) {
    const std::string out = fresh_dir(std::string("on_") + (device[0] == 'c' ? "cpu" : "vulkan"));
    auto args = train_args(out, 2);
    args.insert(args.end(), {"--device", device});
    const Result r = ember(args);
    ASSERT_EQ(r.status, 0) << device << ": " << r.err;
    EXPECT_TRUE(has(r.out, std::string("on ") + device)) << r.out;
    metrics.push_back(metric_rows(read_text(out + "/metrics.csv")));
    if (cpu_model.empty()) cpu_model = out + "/model.safetensors";
  }
  // The Cpu's model scored on each device: the same report, class by class.
  const Result on_cpu = ember({"eval", cpu_model, "--data", data_dir(), "--device", "cpu"});
  const Result on_vulkan = ember({"eval", cpu_model, "--data", data_dir(), "--device", "vulkan:0"});
  ASSERT_EQ(on_cpu.status, 0) << on_cpu.err;
  ASSERT_EQ(on_vulkan.status, 0) << on_vulkan.err;
  EXPECT_TRUE(has(on_vulkan.out, "test accuracy: ")) << on_vulkan.out;
  EXPECT_EQ(on_vulkan.out, on_cpu.out);
  ASSERT_EQ(metrics[0].size(), 2u);
  ASSERT_EQ(metrics[1].size(), 2u);
  for (size_t epoch = 0; epoch < 2; ++epoch) {
    const auto &cpu = metrics[0][epoch], &vk = metrics[1][epoch];
    ASSERT_GE(cpu.size(), 7u);
    ASSERT_EQ(vk.size(), cpu.size());
    // epoch, train_loss, train_accuracy, train_top5, valid_loss, valid_accuracy, valid_top5
    for (size_t col : {2u, 3u, 5u, 6u}) EXPECT_EQ(vk[col], cpu[col]) << "epoch " << epoch + 1;
    for (size_t col : {1u, 4u}) {
      EXPECT_NEAR(std::stod(vk[col]), std::stod(cpu[col]), 1e-5 * std::stod(cpu[col]))
          << "epoch " << epoch + 1 << " column " << col;
    }
  }
}

// --- Data ------------------------------------------------------------------------------------

TEST(Cli, ALabelAboveNineIsAnErrorNamingTheFile) {
  const std::string dir = fresh_dir("labels");
  write_fashion(dir, 20, 10, 12);
  const std::string out = trained_out();
  EXPECT_FAILS_WITH(ember({"eval", out + "/model.safetensors", "--data", dir}), 1,
                    dir +
                        "/t10k-labels-idx1-ubyte: label 12 of image 3 is not a Fashion-MNIST "
                        "class (0 to 9)");  // was "vector::_M_range_check"
}

TEST(Cli, AnEmptyTestSetIsAnError) {
  const std::string dir = fresh_dir("empty");
  write_fashion(dir, 20, 0);
  const std::string out = trained_out();
  const Result r = ember({"eval", out + "/model.safetensors", "--data", dir});
  EXPECT_FAILS_WITH(r, 1, "the Fashion-MNIST test set in " + dir + " has no images");
  EXPECT_FALSE(has(r.out, "nan")) << r.out;
}

// --- Arguments -------------------------------------------------------------------------------

TEST(Cli, ANegativeSeedIsRefusedNotWrapped) {
  EXPECT_FAILS_WITH(ember({"train", "fashion-mnist", "--seed", "-1"}), 2,
                    "ember train: error: --seed: '-1' is not an integer 0 or more");
  EXPECT_FAILS_WITH(ember({"train", "fashion-mnist", "--seed", "18446744073709551616"}), 2,
                    "--seed: '18446744073709551616' is not an integer 0 or more");
}

TEST(Cli, RangeErrorsPrintReadableBounds) {
  EXPECT_FAILS_WITH(ember({"train", "fashion-mnist", "--batch-size", "0"}), 2,
                    "--batch-size: '0' is not an integer from 1 to 60000");
  EXPECT_FAILS_WITH(ember({"train", "fashion-mnist", "--limit", "-1"}), 2,
                    "--limit: '-1' is not an integer 0 or more");
  EXPECT_FAILS_WITH(ember({"train", "fashion-mnist", "--lr", "-1"}), 2,
                    "--lr: '-1' is not a number > 0");
  EXPECT_FAILS_WITH(ember({"train", "fashion-mnist", "--epochs", "1e3"}), 2,
                    "--epochs: '1e3' is not an integer from 0 to 100000");
  const Result r = ember({"train", "fashion-mnist", "--lr", "-1"});
  EXPECT_FALSE(has(r.err, "e+308")) << r.err;
}

// --- Standard output -------------------------------------------------------------------------

TEST(Cli, AFullDiskOnStdoutIsAnError) {
  const std::string path = fresh_dir("full") + "/small.safetensors";
  write_safetensors(path, {"w"});
  EXPECT_FAILS_WITH(ember({"inspect", path}, Stdout::dev_full), 1,
                    "cannot write to standard output: No space left on device");
  EXPECT_FAILS_WITH(ember({"--help"}, Stdout::dev_full), 1, "cannot write to standard output");
}

TEST(Cli, AClosedPipeOnStdoutIsAnError) {
  // Far more output than a pipe holds (64 KiB), so writes go on after the reader has gone.
  const std::string path = fresh_dir("pipe") + "/many.safetensors";
  std::vector<std::string> names;
  for (int i = 0; i < 5000; ++i)
    names.push_back("layer." + std::to_string(i) + ".weight_of_a_model");
  write_safetensors(path, names);
  EXPECT_FAILS_WITH(ember({"inspect", path}, Stdout::closed_pipe), 1,
                    "cannot write to standard output: Broken pipe");
}

// --- ember inspect ---------------------------------------------------------------------------

TEST(Cli, InspectOutputIsBoundedAndEscaped) {
  const std::string path = fresh_dir("inspect") + "/hostile.safetensors";
  std::vector<std::string> names = {std::string(1 << 20, 'n'), "evil\n\x1b[31mred\x1b[0m",
                                    "tab\there", "c1\xc2\x9b[2J", "caf\xc3\xa9 ok"};
  for (int i = 0; i < 1000; ++i) {
    std::string n = "w";  // appended: GCC 12 warns (-Wrestrict) on "w" + std::to_string(i)
    n += std::to_string(i);
    names.push_back(n);
  }
  write_safetensors(path, names,
                    {{"title", "\x1b]0;pwned\x07"}, {"note", std::string(100000, 'x')}});
  const Result r = ember({"inspect", path});
  ASSERT_EQ(r.status, 0) << r.err;
  // 1,005 rows of at most ~100 characters: the 1 MB name no longer pads every row.
  EXPECT_LT(r.out.size(), 150000u);
  EXPECT_TRUE(has(r.out, std::string(61, 'n') + "...")) << r.out.substr(0, 300);
  EXPECT_TRUE(has(r.out, "(1 name(s) longer than 64 characters are shown cut short"));
  EXPECT_TRUE(has(r.out, "evil\\n\\x1b[31mred\\x1b[0m"));
  EXPECT_TRUE(has(r.out, "tab\\there"));
  EXPECT_TRUE(has(r.out, "c1\\u009b[2J"));
  EXPECT_TRUE(has(r.out, "caf\xc3\xa9 ok"));  // printable UTF-8 stays as it is
  EXPECT_TRUE(has(r.out, "title: \\x1b]0;pwned\\x07"));
  EXPECT_TRUE(has(r.out, "note: " + std::string(57, 'x') + "... (100000 bytes)"));
  EXPECT_TRUE(has(r.out, "shown as escapes"));
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << "a raw escape reached the terminal";
  EXPECT_EQ(r.out.find('\x07'), std::string::npos);
  EXPECT_TRUE(has(r.out, "parameters (elements of every tensor): 1005"));
}

}  // namespace
}  // namespace ember::cli_testing
