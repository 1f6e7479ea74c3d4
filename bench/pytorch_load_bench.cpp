// The Ember half of bench/pytorch_load.py: one load of a state dict into a model of 24
// Linear(2048, 2048) layers (100.7M parameters), then every weight read once (a sum), timed, with
// the peak resident memory it added. Prints one line: "<seconds> <added MB> <sum>".
//   bench_pytorch_load FILE [pt|safetensors]
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "ember/nn/linear.hpp"
#include "ember/nn/serialize.hpp"
#include "ember/tensor/tensor.hpp"

using namespace ember;

namespace {

struct Stack {
  std::vector<nn::Linear> layers;
  EMBER_MODULE(Stack, layers)
};

double rss_mb() {  // resident now, from /proc/self/statm (pages)
  std::ifstream statm("/proc/self/statm");
  long size = 0, resident = 0;
  statm >> size >> resident;
  return static_cast<double>(resident) * 4096.0 / 1e6;
}

double peak_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1e3;  // KB
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s FILE pt|safetensors\n", argv[0]);
    return 2;
  }
  try {
    Stack model;
    for (int i = 0; i < 24; ++i) model.layers.emplace_back(2048, 2048);
    const double before = rss_mb();
    const auto start = std::chrono::steady_clock::now();
    const std::string mode = argv[2];
    if (mode == "pt") {
      load_pytorch(model, argv[1]);
    } else {
      load(model, argv[1]);
    }
    double sum = 0;
    for (const nn::Linear& l : model.layers) {
      sum += ember::sum(l.weight.dyn()).item<float>() + ember::sum(l.bias->dyn()).item<float>();
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%.4f %.1f %.6g\n", seconds, peak_mb() - before, sum);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_pytorch_load: %s\n", e.what());
    return 1;
  }
}
