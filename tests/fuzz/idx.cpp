// Fuzz target: any bytes as an IDX file, plain or gzipped (read_idx tells them apart by the first
// bytes), then as MNIST-style images with labels when they have that shape. Only ember::Error may
// come out.
#include <cstddef>
#include <cstdint>

#include "ember/data/idx.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember::data;
  try {
    IdxArray a = read_idx(ember::fuzz::write_input("input.idx", data, size));
    // As images with labels; a file may hold billions of empty images, whose labels (made here,
    // not read) would be gigabytes: the harness's allocation, not the reader's.
    if (a.type == IdxType::u8 && a.dims.size() == 3 && a.dims[0] <= (1 << 16)) {
      IdxArray labels;
      labels.dims = {a.dims[0]};
      labels.data.assign(static_cast<size_t>(a.dims[0]), 0);
      const MnistDataset set(std::move(a), std::move(labels), "fuzz");
      if (set.size() > 0) (void)set.get(set.size() - 1);
    }
  } catch (const ember::Error&) {
    // Rejected cleanly: what the target checks for.
  }
  return 0;
}
