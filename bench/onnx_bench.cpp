// bench_onnx: latency of one ONNX model run by Ember's executor on the Cpu, the inputs read from
// ONNX TensorProto files (bench/onnx_ort.py writes them and times ONNX Runtime on the same
// .onnx file and inputs; scripts/onnx_bench.sh runs the pair with the same thread count).
//
//   bench_onnx MODEL.onnx INPUT_0.pb [INPUT_1.pb ...] [--runs N] [--warmup N]
//
// Prints one line: "ember <model> median_ms min_ms runs".
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "ember/ember.hpp"
#include "ember/import/onnx.hpp"
#include "ir.hpp"

int main(int argc, char** argv) {
  using namespace ember;
  if (argc < 3) {
    std::fprintf(stderr, "usage: bench_onnx MODEL.onnx INPUT.pb... [--runs N] [--warmup N]\n");
    return 2;
  }
  int runs = 20, warmup = 3;
  std::vector<std::string> files;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc) {
      runs = std::stoi(argv[++i]);
    } else if (a == "--warmup" && i + 1 < argc) {
      warmup = std::stoi(argv[++i]);
    } else {
      files.push_back(a);
    }
  }
  try {
    const onnx::Model m = onnx::load(argv[1], Device::cpu());
    std::map<std::string, DynTensor> inputs;
    for (size_t i = 0; i < files.size() && i < m.inputs().size(); ++i) {
      inputs[m.inputs()[i].name] = from_data(onnx::read_tensor_file(files[i]));
    }
    const auto guard = no_grad();
    std::vector<double> ms;
    for (int r = 0; r < warmup + runs; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      const auto out = m.run(inputs);
      for (const auto& [name, t] : out) (void)t.to_vector<float>().size();  // the result is read
      const auto t1 = std::chrono::steady_clock::now();
      if (r >= warmup) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    std::printf("ember %s %.3f %.3f %d\n", argv[1], ms[ms.size() / 2], ms[0], runs);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_onnx: %s\n", e.what());
    return 1;
  }
  return 0;
}
