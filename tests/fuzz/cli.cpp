// Fuzz target: any bytes as the files the `ember` command line reads. The real entry point
// (cli_main.cpp) runs `ember inspect FILE`, and for bytes that parse as safetensors also
// `ember eval FILE` and `ember train --resume` with FILE as the newest checkpoint, on a tiny
// Fashion-MNIST of 2 images. The same loaders (nn::load, Learner::load_checkpoint) then run on a
// 2x3 linear model, whose files fit in a fuzz input, so the fuzzer reaches the checkpoint's
// metadata. Only a clean failure (exit status 1, or an ember::Error) may come out.
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <streambuf>
#include <vector>

#include "ember/data/idx.hpp"
#include "ember/io/safetensors.hpp"
#include "ember/nn/serialize.hpp"
#include "fuzz_util.hpp"
#include "tiny_learner.hpp"

int ember_cli_main(int argc, char** argv);

namespace {

namespace fs = std::filesystem;
using namespace ember;

// Runs the CLI with `args`; it must exit 0 or 1 (2 is a usage error: the arguments are ours).
void run_cli(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int status = ember_cli_main(static_cast<int>(args.size()), argv.data());
  if (status != 0 && status != 1) std::abort();
}

// Four IDX files of 2 images each, as the CLI's --data expects.
std::string tiny_fashion_mnist() {
  const fs::path dir = fuzz::scratch_dir() / "data";
  fs::create_directories(dir);
  data::IdxArray images, labels;
  images.dims = {2, 28, 28};
  images.data.assign(2 * 28 * 28, 128);
  labels.dims = {2};
  labels.data = {3, 7};
  for (const char* split : {"train", "t10k"}) {
    data::write_idx((dir / (std::string(split) + "-images-idx3-ubyte")).string(), images);
    data::write_idx((dir / (std::string(split) + "-labels-idx1-ubyte")).string(), labels);
  }
  return dir.string();
}

}  // namespace

// EMBER_FUZZ_VERBOSE=1 shows the CLI's output and the loaders' errors (to check the seeds).
const bool verbose = std::getenv("EMBER_FUZZ_VERBOSE") != nullptr;

void rejected(const Error& e) {
  if (verbose) std::fprintf(stderr, "rejected: %s\n", e.what());
}

// A stream buffer that takes everything and keeps nothing: std::cerr's while fuzzing.
struct NullBuffer : std::streambuf {
  int overflow(int c) override { return c; }
};

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (verbose) return 0;
  // The CLI's output is not what is tested: stdout goes to /dev/null (std::cout with it, still
  // a good stream, as the CLI checks), std::cerr to nothing (libFuzzer reports on fd 2).
  const int null = ::open("/dev/null", O_WRONLY);
  if (null >= 0) ::dup2(null, STDOUT_FILENO);
  static NullBuffer nothing;
  std::cerr.rdbuf(&nothing);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string data_dir = tiny_fashion_mnist();
  const std::string file = fuzz::write_input("model.safetensors", data, size);
  run_cli({"ember", "inspect", file});
  try {
    (void)io::parse_safetensors(std::vector<unsigned char>(data, data + size), "fuzz");
  } catch (const Error& e) {
    rejected(e);
    return 0;  // the CLI's eval and train open it the same way: inspect covered this failure
  }
  run_cli({"ember", "eval", file, "--data", data_dir, "--batch-size", "2"});
  const fs::path out = fuzz::scratch_dir() / "run";
  fs::remove_all(out);
  fuzz::write_input("run/checkpoints/epoch-0001.safetensors", data, size);
  run_cli({"ember", "train", "fashion-mnist", "--resume", "--out", out.string(), "--epochs", "1",
           "--data", data_dir, "--workers", "0", "--show", "0"});
  try {
    fuzz::Tiny model{nn::Linear(2, 3)};
    (void)load(model, file);
  } catch (const Error& e) {
    rejected(e);
  }
  try {
    fuzz::TinyLearner().learner->load_checkpoint(file);
  } catch (const Error& e) {
    rejected(e);
  }
  return 0;
}
