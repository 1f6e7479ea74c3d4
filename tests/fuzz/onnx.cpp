// Fuzz target: any bytes, as a .onnx file, through the importer's loader (protobuf parse, graph
// conversion, size checks, external-data confinement, planning) and inspect(). The model is not
// run: arbitrary graphs may ask for arbitrary amounts of memory, which is the caller's choice.
// Only ember::Error may come out.
#include <cstddef>
#include <cstdint>

#include "ember/import/onnx.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = ember::fuzz::write_input("model/model.onnx", data, size);
  try {
    (void)ember::onnx::inspect(path);
    (void)ember::onnx::load(path, ember::Device::cpu());
  } catch (const ember::Error&) {
    // Rejected cleanly: what the target checks for.
  }
  return 0;
}
