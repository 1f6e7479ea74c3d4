// Fuzz target: any bytes as the one image of an image folder (root/class/input.png; the decoder
// goes by the bytes, PNG or JPEG, not by the name), decoded as the file's own channels, grey or
// RGB (by the input's size), then batched. Only ember::Error may come out.
#include <cstddef>
#include <cstdint>

#include "ember/data/image.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember::data;
  try {
    const std::string path = ember::fuzz::write_input("folder/class/input.png", data, size);
    const int channels = static_cast<int>(size % 3) == 0 ? 0 : size % 3 == 1 ? 1 : 3;
    const auto folder =
        ImageFolder::open((ember::fuzz::scratch_dir() / "folder").string(), channels);
    const ImageItem item = *folder->get(0);
    if (item.pixels.size() <= (1u << 20)) (void)ImageBatcher().batch({item}, ember::Device::cpu());
  } catch (const ember::Error&) {
    // Rejected cleanly: what the target checks for.
  }
  return 0;
}
