// Fuzz target: any bytes, parsed as a safetensors file, with every tensor loaded (and converted
// once, to exercise the copy path). Only ember::Error may come out. Built with libFuzzer under
// -DEMBER_BUILD_FUZZ=ON (clang); fuzz_replay.cpp feeds it the files of a corpus directory with any
// compiler. docs/IO.md has the commands.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ember/io/safetensors.hpp"
#include "ember/tensor/ops/reduce.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const ember::io::SafetensorsFile f =
        ember::io::parse_safetensors(std::vector<unsigned char>(data, data + size), "fuzz");
    for (const std::string& name : f.names()) {
      if (!f.info(name).supported) continue;
      const ember::DynTensor t = f.tensor(name);
      if (t.numel() > 0 && t.numel() < (1 << 16)) {
        (void)ember::sum(f.tensor(name, ember::Device::cpu(), ember::DType::f64)).item<double>();
      }
    }
  } catch (const ember::Error&) {
    // Rejected cleanly: what the target checks for.
  }
  return 0;
}
