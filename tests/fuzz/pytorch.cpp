// Fuzz target: any bytes, read as a torch.save archive (the zip reader, the restricted unpickler,
// the view checks), with every tensor made and summed in f64. Only ember::Error may come out.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ember/io/pytorch.hpp"
#include "ember/tensor/ops/reduce.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const ember::io::PytorchFile f =
        ember::io::parse_pytorch(std::vector<unsigned char>(data, data + size), "fuzz");
    for (const std::string& name : f.names()) {
      const ember::DynTensor t = f.tensor(name, ember::Device::cpu());
      if (t.numel() > 0 && t.numel() < (1 << 16)) {
        (void)ember::sum(f.tensor(name, ember::Device::cpu(), ember::DType::f64)).item<double>();
      }
    }
  } catch (const ember::Error&) {
    // Rejected cleanly: what the target checks for.
  }
  return 0;
}
