// Writes a safetensors file whose values follow simple formulas, for check_ember_written.py to
// read with Python's safetensors: every dtype, a 0-d and an empty tensor, a transposed (non-
// contiguous) tensor and metadata. Usage: io_write_sample <path>
#include <cstdio>
#include <exception>

#include "ember/io/safetensors.hpp"
#include "ember/tensor/tensor.hpp"

using namespace ember;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <path>\n", argv[0]);
    return 2;
  }
  try {
    // ramp: 0.25 * i - 1 for i in [0, 12), exact in every float dtype.
    const DynTensor ramp = reshape(sub(mul(arange(0, 12, 1, DType::f64), 0.25), 1.0), Shape{3, 4});
    std::vector<std::pair<std::string, DynTensor>> tensors = {
        {"u8", arange(250, 256, 1, DType::u8)},
        {"f16", cast(ramp, DType::f16)},
        {"f32", cast(ramp, DType::f32)},
        {"bool", from_data(TensorData::from(std::vector<bool>{true, false, true}, Shape{3}))},
        {"f64", ramp},
        {"bf16", cast(ramp, DType::bf16)},
        {"i64", mul(arange(-3, 4, 1, DType::i64), int64_t{1000000000000})},
        {"i32", arange(-5, 5, 1, DType::i32)},
        {"i8", arange(-128, 128, 51, DType::i8)},
        {"scalar", full(Shape{}, 2.5, DType::f32)},
        {"empty", zeros(Shape{2, 0}, DType::f32)},
        {"transposed", transpose(cast(ramp, DType::f32), 0, 1)},  // written as its 4x3 values
    };
    io::save_safetensors(tensors, argv[1], {{"format", "pt"}, {"writer", "ember"}});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
