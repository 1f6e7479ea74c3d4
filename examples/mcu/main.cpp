// The Fashion-MNIST CNN on a microcontroller: the model written with nn (models::FashionCnn, or
// with EMBER_MCU_INT8 models::FashionCnnInt8 and the int8 weights of `ember quantize`), its
// weights and a few test images linked into flash (ember_embed), run on QEMU's mps2-an386
// board. Prints each image's class and logits in classify's format, so that
// examples/classify/reference.py checks them, then the footprint: the heap arena's use and the
// time per image. Exits with a failure if the heap grew after the first image.
#include <cstdio>
#include <ember/ember.hpp>
#include <ember/io/safetensors.hpp>
#include <ember/models/fashion_cnn.hpp>
#include <ember/nn/serialize.hpp>

#include "board.hpp"

using namespace ember;

namespace {

constexpr int64_t kSide = 28;
constexpr float kMean = 0.2860f, kStd = 0.3530f;  // the training job's normalisation
const char* const kClasses[] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

Tensor<4> input(const unsigned char* pixels) {
  std::vector<float> x(kSide * kSide);
  for (size_t i = 0; i < x.size(); ++i) x[i] = (pixels[i] / 255.0f - kMean) / kStd;
  return Tensor<4>::from_vector<float>(x, {1, 1, kSide, kSide});
}

}  // namespace

#if EMBER_MCU_INT8
using Model = models::FashionCnnInt8;
#else
using Model = models::FashionCnn;
#endif

int main() {
  set_panic_hook(board::panic);
  const size_t at_start = board::arena_used();
  Model model(Device::cpu());
  load(model, io::embedded_safetensors("fashion_cnn"));  // parameters now point into flash
  const size_t after_load = board::arena_used();

  const std::span<const unsigned char> images = embedded_file("images");
  const size_t count = images.size() / (kSide * kSide);
  size_t after_first = 0;
  uint64_t first_ns = 0, rest_ns = 0;
  for (size_t i = 0; i < count; ++i) {
    const uint64_t start = board::nanoseconds();
    const Tensor<2> logits = model(input(images.data() + i * kSide * kSide));
    const std::vector<float> z = logits.to_vector<float>();
    const std::vector<float> p = softmax(logits, 1).to_vector<float>();
    const uint64_t took = board::nanoseconds() - start;
    (i == 0 ? first_ns : rest_ns) += took;
    if (i == 0) after_first = board::arena_used();
    size_t k = 0;
    for (size_t c = 1; c < z.size(); ++c) k = z[c] > z[k] ? c : k;
    std::printf("mcu/%04u.png: %s (%.1f%%)", static_cast<unsigned>(i), kClasses[k],
                100.0 * static_cast<double>(p[k]));
    for (float v : z) std::printf(" %.9g", static_cast<double>(v));
    std::printf("\n");
  }
  const size_t after_last = board::arena_used();
  std::printf(
      "footprint: heap arena %u bytes, at most %u used; in use %u at start, %u after "
      "loading, %u after the first image, %u after the last\n",
      static_cast<unsigned>(board::arena_size()), static_cast<unsigned>(board::arena_peak()),
      static_cast<unsigned>(at_start), static_cast<unsigned>(after_load),
      static_cast<unsigned>(after_first), static_cast<unsigned>(after_last));
  // newlib-nano's printf has no %llu: microseconds fit in 32 bits.
  std::printf(
      "time: first image %lu us, then %lu us per image (board time: instructions/1000 "
      "under -icount shift=0)\n",
      static_cast<unsigned long>(first_ns / 1000),
      static_cast<unsigned long>(count > 1 ? rest_ns / (count - 1) / 1000 : 0));
  if (after_last != after_first) {
    std::printf("FAILED: the heap grew after the first image\n");
    return 1;
  }
  return 0;
}
